"""Recall through branches and checkpoints (issue 11): a module moved on one path of an `if`
only, a test that picks a GPU rather than GPU-or-CPU, and a whole module loaded to the CPU from
a checkpoint. Each bug next to the correct code of the same shape, which stays quiet."""

from __future__ import annotations

import textwrap

from gpudoc.lint.engine import lint_source

HEADER = """\
import torch
import torch.nn as nn
import torchvision
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.rand(8, 4).to(device)
"""


def findings(body: str) -> set[tuple[int, str]]:
    result = lint_source(HEADER + textwrap.dedent(body), "case.py")
    assert result.error is None, result.error
    offset = HEADER.count("\n")
    return {(f.line - offset, f.code) for f in result.findings}


# -- a module built on both paths of an `if`, moved on one ---------------------------------


def test_a_module_built_unmoved_on_one_path_is_reported_where_it_is_built() -> None:
    assert findings(
        """\
        if args.pretrained:
            model = torchvision.models.resnet18()
        else:
            model = nn.Linear(4, 2)
            model = model.to(device)
        out = model(x)
        """
    ) == {(2, "GPD102")}


def test_a_module_moved_by_assignment_in_one_branch_is_reported_at_the_move() -> None:
    assert findings(
        """\
        model = nn.Linear(4, 2)
        if args.finetune:
            model = model.to(device)
        out = model(x)
        """
    ) == {(3, "GPD102")}


def test_a_module_moved_on_every_path_of_an_if_is_quiet() -> None:
    assert (
        findings(
            """\
        if args.pretrained:
            model = torchvision.models.resnet18().to(device)
        else:
            model = nn.Linear(4, 2)
            model = model.to(device)
        out = model(x)
        """
        )
        == set()
    )


def test_a_module_moved_in_each_arm_of_an_elif_choice_is_quiet() -> None:
    """No `else`: the argument parser's choices cover the arms, no arm leaves it unmoved."""
    assert (
        findings(
            """\
        if args.arch == "resnet":
            model = torchvision.models.resnet18().to(device)
        elif args.arch == "linear":
            model = nn.Linear(4, 2).to(device)
        out = model(x)
        """
        )
        == set()
    )


def test_a_module_built_and_moved_on_a_first_iteration_is_quiet() -> None:
    assert (
        findings(
            """\
        for step in range(10):
            if step == 0:
                model = nn.Linear(4, 2).to(device)
            out = model(x)
        """
        )
        == set()
    )


# -- a test that picks a GPU: its other path is no CPU path ----------------------------------

CHOICE = """\
model = torchvision.models.resnet18()
if args.gpu is not None:
    model = model.cuda(args.gpu)
elif torch.cuda.is_available():
    model = nn.DataParallel(model).cuda()
criterion = nn.CrossEntropyLoss()
for images, target in torch.utils.data.DataLoader(dataset, batch_size=8):
    if args.gpu is not None:
        images = images.cuda(args.gpu, non_blocking=True)
        {target}
    output = model(images)
    loss = criterion(output, target)
"""


def test_a_target_moved_only_for_one_chosen_gpu_meets_data_parallel_output() -> None:
    """`args.gpu` None is the DataParallel path, on the GPU too: the host target meets the
    device output there (the inputs are fine: DataParallel scatters them)."""
    source = CHOICE.format(target="target = target.cuda(args.gpu, non_blocking=True)")
    assert findings(source) == {(12, "GPD101")}


def test_a_target_moved_on_every_gpu_path_is_quiet() -> None:
    source = CHOICE.format(target="pass").replace(
        "    output = model",
        "    target = target.cuda(args.gpu, non_blocking=True)\n    output = model",
    )
    # the unguarded `.cuda(args.gpu)` still fails on a CPU-only host (the header falls back to
    # the CPU): GPD203's finding, not a device mismatch
    assert findings(source) == {(11, "GPD203")}


def test_a_guard_whose_other_path_is_the_cpu_stays_a_guard() -> None:
    assert (
        findings(
            """\
        model = nn.Linear(4, 2)
        if args.cuda:
            model = model.cuda()
        criterion = nn.CrossEntropyLoss()
        for inputs, target in torch.utils.data.DataLoader(dataset, batch_size=8):
            if args.cuda:
                inputs, target = inputs.cuda(), target.cuda()
            loss = criterion(model(inputs), target)
        """
        )
        == set()
    )


# -- a whole module from a checkpoint mapped to the CPU --------------------------------------

CHECKPOINT = """\
import torchvision.transforms.functional as TF
ckpt = torch.load("best.pt", {where}weights_only=False)
model = ckpt["model"].float()
model.eval()
{move}
img = TF.to_tensor(image).unsqueeze(0).to(device)
pred = model(img)
"""


def test_a_module_from_a_checkpoint_on_the_cpu_fed_device_images_is_reported() -> None:
    source = CHECKPOINT.format(where='map_location="cpu", ', move="")
    assert findings(source) == {(3, "GPD102")}


def test_a_module_from_a_checkpoint_moved_after_loading_is_quiet() -> None:
    source = CHECKPOINT.format(where='map_location="cpu", ', move="model.to(device)")
    assert findings(source) == set()


def test_a_module_from_a_checkpoint_loaded_where_it_was_saved_is_quiet() -> None:
    """Without map_location the module comes back where it was saved: unknown."""
    source = CHECKPOINT.format(where="", move="")
    assert {code for _, code in findings(source)} <= {"GPD201"}


def test_a_module_from_a_checkpoint_placed_by_a_helper_is_quiet() -> None:
    source = "def place(module, target):\n    module.to(target)\n" + CHECKPOINT.format(
        where='map_location="cpu", ', move="place(model, device)"
    )
    assert findings(source) == set()
