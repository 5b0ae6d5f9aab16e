"""Precision regressions from the twelfth held-out set of public repositories (a training
library's checkpoint tests, a text-to-image trainer that loads its VAE onto the CPU), reduced
and rewritten here: correct code each rule must leave alone, next to the bug it must still
report."""

from __future__ import annotations

from lint_lines import lines

# a test writes a checkpoint with the library's handler, then reads it back
HANDLER_TEST = """\
import pytest
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
def {name}(dirname):
    model = torch.nn.Linear(2, 2)
    handler = ModelCheckpoint(dirname, "mymodel")
    handler(engine, {{"model": model}})
    loaded = torch.load(handler.last_checkpoint)
    assert loaded["weight"].shape == (2, 2)
"""


def test_a_test_reads_back_what_it_wrote() -> None:
    assert lines(HANDLER_TEST.format(name="test_save_and_load"), "GPD201") == []
    assert lines(HANDLER_TEST.format(name="_test_tpu_saves_to_cpu"), "GPD201") == []


def test_a_function_of_the_suite_that_is_no_test_stays_gpd201() -> None:
    assert lines(HANDLER_TEST.format(name="load_pretrained"), "GPD201") == [8]


def test_a_script_function_named_test_is_no_pytest_test() -> None:
    source = HANDLER_TEST.format(name="test").replace("import pytest\n", "")
    assert lines(source, "GPD201") == [7]  # one line up: no `import pytest`


# the trainer loads a saved VAE onto the CPU first, and trains on CUDA only
GPU_TRAINER = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--dalle_path", default=None)
parser.add_argument("--vae_path", default=None)
args = parser.parse_args()
if args.dalle_path:
    loaded = torch.load(args.dalle_path, {mapping})
vae = torch.nn.Linear(4, 4)
vae.load_state_dict(torch.load(args.vae_path))
dalle = torch.nn.Linear(4, 2).cuda()
print(dalle(torch.randn(2, 4).cuda()))
"""


def test_a_map_location_of_cpu_is_no_cpu_path_of_the_script() -> None:
    for mapping in ("map_location='cpu'", "map_location=torch.device('cpu')", "'cpu'"):
        source = GPU_TRAINER.format(mapping=mapping)
        assert lines(source, "GPD201") == [], mapping
        assert lines(source, "GPD203") == [], mapping


def test_a_cpu_device_of_the_script_is_still_one() -> None:
    source = GPU_TRAINER.format(mapping="map_location='cpu'").replace(
        "dalle = torch.nn.Linear(4, 2).cuda()",
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "dalle = torch.nn.Linear(4, 2).cuda()",
    )
    assert lines(source, "GPD201") == [10]


# a metric's integration test takes the suite's device fixture and runs on the CPU anyway
FIXTURE = """\
{framework}import numpy as np
import torch
def test_integration(available_device):
    y = torch.from_numpy(np.random.rand(8))
    assert y.sum() > 0
"""


def test_an_unused_device_fixture_of_a_test_is_no_gpd113() -> None:
    assert lines(FIXTURE.format(framework="import pytest\n"), "GPD113") == []


def test_an_unused_device_parameter_of_a_script_function_stays_gpd113() -> None:
    assert lines(FIXTURE.format(framework=""), "GPD113") == [3]


# a notebook saves with the library's handler and reloads the newest file of that directory
HANDLER_NOTEBOOK = """\
import os
import torch
from ignite.handlers import ModelCheckpoint
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(2, 2).to(device)
checkpointer = ModelCheckpoint("./saved_models", "fashion", n_saved=2, create_dir=True)
def last_checkpoint(path):
    return os.path.join(path, sorted(os.listdir(path))[-1])
model.load_state_dict(torch.load(last_checkpoint({directory})))
"""


def test_a_directory_the_checkpoint_handler_writes_is_this_runs() -> None:
    assert lines(HANDLER_NOTEBOOK.format(directory='"./saved_models"'), "GPD201") == []


def test_another_directory_stays_gpd201() -> None:
    assert lines(HANDLER_NOTEBOOK.format(directory='"./pretrained"'), "GPD201") == [9]


# a metric test: the helper makes its tensors with `device=device`, which defaults to None
METRIC_TEST = """\
import torch
import torch.nn.functional as F
def y_test_1(requires_grad=False, device=None):
    return torch.tensor([[0.1, 0.9]], device=device).log(), torch.tensor([1], device=device)
def test_kwargs_loss(available_device):
    loss = Loss(F.nll_loss, device=available_device)
    y_pred, y = y_test_1({argument})
    weight = torch.tensor([0.1, 0.1])
    expected = F.nll_loss(y_pred, y, weight=weight)
    assert_almost_equal(loss.compute(), expected.numpy())
"""


def test_a_device_parameter_left_at_none_makes_host_tensors() -> None:
    for argument in ("", "device=None", "False, None"):
        source = METRIC_TEST.format(argument=argument)
        assert lines(source, "GPD101") == [], argument
        assert lines(source, "GPD202") == [], argument


def test_the_same_helper_given_the_device_still_mixes_places() -> None:
    source = METRIC_TEST.format(argument="device=available_device")
    # the host weight is reported where it is made, where its fix goes
    assert lines(source, "GPD106") == [8]
    assert lines(source, "GPD101") == []
    assert lines(source, "GPD202") == [10]


def test_a_move_to_a_none_device_keeps_the_place() -> None:
    source = """\
import torch
def prepare(x, device=None):
    return x.to(device)
model = torch.nn.Linear(2, 2).cuda()
print(model(prepare(torch.randn(1, 2).cuda())))
print(model(prepare(torch.randn(1, 2))))
"""
    assert lines(source, "GPD101") == [6]


# a test helper wraps the model in DDP only when its device is a GPU; one test calls it with "cpu"
DDP_HELPER = """\
import torch
def _setup(device, distributed=False, local_rank=0):
    model = torch.nn.Linear(2, 2){move}
    if distributed and "cuda" in torch.device(device).type:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    return model
def test_cpu():
    _setup("cpu", distributed=True)
def test_gpu(local_rank):
    _setup(f"cuda:{{local_rank}}", distributed=True, local_rank=local_rank)
"""


def test_a_gpu_branch_does_not_run_for_a_cpu_device() -> None:
    assert lines(DDP_HELPER.format(move=".to(device)"), "GPD401") == []


CHECK_HELPER = """\
import torch
def _check(device):
    model = torch.nn.Linear(2, 2).to(device)
    if device.type == "cuda":
        print(model(torch.randn(1, 2)))
def test_cpu():
    _check(torch.device("cpu"))
"""


def test_the_gpu_branch_is_judged_for_a_gpu_caller() -> None:
    assert lines(CHECK_HELPER, "GPD101") == []
    gpu_caller = 'def test_gpu():\n    _check(torch.device("cuda"))\n'
    assert lines(CHECK_HELPER + gpu_caller, "GPD101") == [5]


def test_a_device_that_is_the_cpu_on_one_path_only_keeps_the_gpu_branch() -> None:
    source = """\
import torch
device = torch.device("cuda")
if debug:
    device = torch.device("cpu")
x = torch.randn(2, 2)
if device.type == "cuda":
    model = torch.nn.Linear(2, 2).to(device)
    print(model(x))
"""
    assert lines(source, "GPD101") == [8]
