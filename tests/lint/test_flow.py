"""The walk follows values through branches, loops and the file's own functions (flow.py,
functions.py): each case is a real shape of a device bug, or of correct code it must not flag."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpudoc.lint.analysis.flow import guard_polarity
from gpudoc.lint.engine import lint_source

HEADER = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
"""


def findings(body: str) -> set[tuple[int, str]]:
    source = HEADER + textwrap.dedent(body)
    result = lint_source(source, "case.py")
    assert result.error is None, result.error
    offset = HEADER.count("\n")
    return {(f.line - offset, f.code) for f in result.findings}


def test_a_loader_and_model_passed_to_a_helper_keep_their_places() -> None:
    assert findings(
        """\
        def evaluate(net, batches):
            for x, y in batches:
                net(x)
        model = nn.Linear(4, 2).to(device)
        evaluate(model, loader)
        """
    ) == {(3, "GPD101")}


def test_a_helper_called_with_a_host_model_is_quiet() -> None:
    """The same helper reached only with a model on the host: nothing is on the device."""
    assert (
        findings(
            """\
        def evaluate(net, batches):
            for x, y in batches:
                net(x)
        model = nn.Linear(4, 2)
        evaluate(model, loader)
        """
        )
        == set()
    )


def test_a_function_body_sees_names_bound_after_its_definition() -> None:
    assert findings(
        """\
        def evaluate():
            for x, y in loader:
                model(x)
        model = nn.Linear(4, 2).to(device)
        evaluate()
        """
    ) == {(3, "GPD101")}


def test_a_model_returned_by_a_builder_is_a_host_module() -> None:
    assert findings(
        """\
        def build():
            return nn.Linear(4, 2)
        model = build()
        model(torch.randn(2, 4).to(device))
        """
    ) == {(3, "GPD102")}


def test_a_helper_that_moves_the_model_in_place_places_it() -> None:
    assert (
        findings(
            """\
        def place(net, where):
            net.to(where)
        model = nn.Linear(4, 2)
        place(model, device)
        for x, y in loader:
            model(x.to(device))
        """
        )
        == set()
    )


def test_a_tensor_moved_in_one_branch_of_an_unrelated_test_is_host_on_some_path() -> None:
    assert findings(
        """\
        model = nn.Linear(4, 2).to(device)
        x = torch.randn(3, 4)
        if debug:
            pass
        else:
            x = x.to(device)
        model(x)
        """
    ) == {(7, "GPD101")}


def test_a_tensor_moved_under_an_availability_guard_is_placed() -> None:
    assert (
        findings(
            """\
        model = nn.Linear(4, 2).to(device)
        x = torch.randn(3, 4)
        if torch.cuda.is_available():
            x = x.cuda()
        model(x)
        """
        )
        == set()
    )


def test_a_branch_that_returns_does_not_reach_the_code_after_it() -> None:
    assert (
        findings(
            """\
        def run(x):
            model = nn.Linear(4, 2).to(device)
            if x is None:
                return None
            else:
                x = x.to(device)
            return model(x)
        run(torch.randn(3, 4))
        """
        )
        == set()
    )


def test_numpy_on_the_cpu_path_of_a_guard_is_quiet() -> None:
    assert (
        findings(
            """\
        train_on_gpu = torch.cuda.is_available()
        model = nn.Linear(4, 2).to(device)
        out = model(torch.randn(3, 4).to(device))
        a = out.numpy() if not train_on_gpu else out.cpu().numpy()
        if train_on_gpu:
            b = out.cpu().numpy()
        else:
            b = out.numpy()
        """
        )
        == set()
    )


def test_numpy_on_the_gpu_path_is_still_reported() -> None:
    assert findings(
        """\
        model = nn.Linear(4, 2).to(device)
        out = model(torch.randn(3, 4).to(device))
        if torch.cuda.is_available():
            b = out.numpy()
        """
    ) == {(4, "GPD202")}


def test_the_second_iteration_of_a_loop_sees_what_the_first_left() -> None:
    assert findings(
        """\
        model = nn.Linear(4, 4).to(device)
        hidden = torch.zeros(2, 4).to(device)
        for x, y in loader:
            hidden = model(hidden)
            hidden = hidden.cpu()
        """
    ) == {(4, "GPD101")}


def test_a_factory_in_a_helper_that_forward_calls_is_judged_in_forward() -> None:
    assert findings(
        """\
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x) + self.init_state(x.size(0))

            def init_state(self, n):
                return torch.zeros(n, 2)
        model = Net().to(device)
        """
    ) == {(10, "GPD106")}


def test_a_recursive_helper_ends() -> None:
    assert (
        findings(
            """\
        def walk(net, depth):
            if depth:
                return walk(net, depth - 1)
            return net
        model = walk(nn.Linear(4, 2), 3).to(device)
        """
        )
        == set()
    )


@pytest.mark.parametrize(
    ("test", "polarity"),
    [
        ("torch.cuda.is_available()", "gpu"),
        ("not torch.cuda.is_available()", "cpu"),
        ("use_cuda and not args.no_cuda", "gpu"),
        ("args.no_cuda", "cpu"),
        ("args.gpu is not None", "gpu"),
        ("args.gpu is None", "cpu"),
        ('device.type == "cuda"', "gpu"),
        ('device == "cpu"', "cpu"),
        ('args.device != "cpu"', "gpu"),
        ("torch.cuda.device_count() > 1", "gpu"),
        ("train_on_gpu", "gpu"),
        ("epoch > 3", None),
        ("debug", None),
    ],
)
def test_guard_polarity(test: str, polarity: str | None) -> None:
    assert guard_polarity(cst.parse_expression(test)) == polarity


def test_a_tensor_brought_back_on_the_gpu_path_is_on_the_host() -> None:
    """udacity's char-rnn `predict`: `if train_on_gpu: p = p.cpu()`, then `p.numpy()`."""
    assert (
        findings(
            """\
        train_on_gpu = torch.cuda.is_available()
        model = nn.Linear(4, 2).to(device)
        p = model(torch.randn(3, 4).to(device))
        if train_on_gpu:
            p = p.cpu()
        q = p.numpy()
        """
        )
        == set()
    )


def test_a_helper_whose_result_the_caller_moves_is_quiet() -> None:
    """pytorch/examples word_language_model: `self._mask(len(src)).to(device)` in forward."""
    assert (
        findings(
            """\
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def mask(self, n):
                return torch.log(torch.tril(torch.ones(n, n)))

            def forward(self, x):
                return self.fc(x) + self.mask(x.size(0)).to(x.device)
        model = Net().to(device)
        """
        )
        == set()
    )


def test_a_helper_that_returns_a_moved_tensor_is_quiet() -> None:
    """timm convit's `get_rel_indices`: built on the host, `return t.to(device=...)`."""
    assert (
        findings(
            """\
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def rel(self, n):
                t = torch.zeros(1, n, n)
                return t.to(device=self.fc.weight.device)

            def forward(self, x):
                return self.fc(x) + self.rel(x.size(0))
        model = Net().to(device)
        """
        )
        == set()
    )


def test_a_batch_moved_unless_a_prefetcher_places_it_is_quiet() -> None:
    """timm's validate(): `if not args.prefetcher: input = input.to(device)`, where only the
    parameter's name says the loader is on the host."""
    assert (
        findings(
            """\
        def validate(model, loader, args):
            for input, target in loader:
                if not args.prefetcher:
                    input = input.to(device)
                model(input)
        """
        )
        == set()
    )


def test_modules_built_under_a_device_context_are_not_on_the_host() -> None:
    """pytorch/examples FSDP2: `with torch.device("meta"): model = Net()`, then sharded."""
    assert (
        findings(
            """\
        with torch.device("meta"):
            model = nn.Linear(4, 2)
        model.to_empty(device=device)
        model(torch.randn(2, 4, device=device))
        """
        )
        == set()
    )


def test_a_device_batch_handed_to_a_numpy_helper_is_reported_at_the_call() -> None:
    """udacity's cifar notebooks: `imshow(images[idx])` after `images = images.cuda()`; the
    helper is right for the NumPy array another call hands it, so the call is the bug (the fix
    commit changed it), and its `.cpu()` fix is unsafe: the helper may also need the device."""
    source = HEADER + textwrap.dedent(
        """\
        import numpy as np
        train_on_gpu = torch.cuda.is_available()
        def imshow(img):
            img = img / 2 + 0.5
            return np.transpose(img, (1, 2, 0))
        images, labels = iter(loader).next()
        imshow(images.numpy()[0])
        if train_on_gpu:
            images = images.cuda()
        model = nn.Linear(4, 2).to(device)
        imshow(images[0])
        """
    )
    result = lint_source(source, "case.py")
    offset = HEADER.count("\n")
    assert [(f.line - offset, f.code) for f in result.findings] == [(11, "GPD202")]
    fix = result.findings[0].fix
    assert fix is not None and not fix.safe
    assert fix.edits[0].text == ".cpu()"
    assert "`images[0]` is on the device and `imshow()` converts it" in result.findings[0].message


def test_a_helper_called_once_with_a_device_tensor_is_reported_in_the_helper() -> None:
    """SA-ConvLSTM's evaluator: the only caller hands device predictions to a plotting helper,
    whose conversion is the line to fix."""
    assert findings(
        """\
        import numpy as np
        def save(pred):
            return np.asarray(pred[0])
        model = nn.Linear(4, 2).to(device)
        save(model(torch.randn(3, 4).to(device)))
        """
    ) == {(3, "GPD202")}


def test_a_modules_parameter_handed_to_a_helper_follows_the_module() -> None:
    """timm's mvitv2: `cal_rel_pos(q, self.rel_pos_h)` indexes the parameter on q's device."""
    assert (
        findings(
            """\
        def rel_pos(q, table):
            index = torch.arange(q.size(1), device=q.device)
            return q + table[index]
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = nn.Parameter(torch.zeros(16, 4))

            def forward(self, q):
                return rel_pos(q, self.table)
        model = Attention().to(device)
        """
        )
        == set()
    )


def test_calls_inside_an_f_string_are_walked() -> None:
    """`print(f"{torch.cuda.device_count()} GPUs")` initialises CUDA before the variable."""
    assert findings(
        """\
        import os
        print(f"{torch.cuda.device_count()} GPUs")
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        """
    ) == {(3, "GPD403")}


def test_a_plain_class_method_is_walked_with_the_instance_call_values() -> None:
    """A noise schedule built on the CPU in a plain class, indexed by device timesteps that
    only the caller of `q_sample` knows about; a schedule that moves its table is clean."""
    assert findings(
        """\
        class Schedule:
            def __init__(self, steps):
                self.alpha = torch.linspace(0.9, 0.1, steps)
            def q_sample(self, x, t):
                return self.alpha[t].view(-1, 1) * x
        class PlacedSchedule:
            def __init__(self, steps, where):
                self.alpha = torch.linspace(0.9, 0.1, steps).to(where)
            def q_sample(self, x, t):
                return self.alpha[t].view(-1, 1) * x
        x = torch.randn(8, 4, device=device)
        t = torch.randint(0, 100, (8,), device=device)
        Schedule(100).q_sample(x, t)
        placed = PlacedSchedule(100, device)
        placed.q_sample(x, t)
        """
    ) == {(5, "GPD108")}


def test_a_store_at_device_indices_into_a_host_tensor_is_reported() -> None:
    assert findings(
        """\
        labels = torch.randint(0, 10, (8,)).to(device)
        onehot = torch.zeros(8, 10)
        onehot[torch.arange(8), labels] = 1.0
        counts = torch.zeros(10)
        for label in labels:
            counts[label] += 1
        """
    ) == {(3, "GPD108")}


def test_a_module_moved_through_a_chain_of_its_in_place_methods_is_placed_there() -> None:
    # `model.train().to(device)` moves `model` itself: the state loaded before it is stale
    assert findings(
        """\
        model = nn.Linear(4, 2)
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        opt.load_state_dict(torch.load("c.pt", map_location="cpu")["opt"])
        model.train().to(device)
        for x in torch.randn(3, 2, 4):
            model(x.to(device)).sum().backward()
            opt.step()
        """
    ) == {(3, "GPD302")}


def test_a_one_line_if_body_is_walked_like_a_block() -> None:
    """spro/practical-pytorch's `if USE_CUDA: var = var.cuda()`: the move on the GPU path counts."""
    body = """\
        USE_CUDA = True
        encoder = nn.Embedding(10, 4)
        if USE_CUDA:
            encoder.cuda()
        def variable_from_sentence(indexes):
            var = torch.LongTensor(indexes).view(-1, 1)
            SUITE
            return var
        encoder(variable_from_sentence([1, 2]))
        """
    assert findings(body.replace("SUITE", "if USE_CUDA: var = var.cuda()")) == set()
    assert findings(body.replace("SUITE", "pass")) == {(9, "GPD101")}
