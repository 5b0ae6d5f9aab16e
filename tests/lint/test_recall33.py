"""Recall regressions from the thirty-third and thirty-fourth recall sets (bug reports of public
projects) and the re-scores after them, reduced and rewritten here: the bug each rule must find,
next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# CrypTen's autograd sum: the backward's ones are made on the host, the gradient on the device
AUTOGRAD_BACKWARD = """\
import torch


class Sum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, dim):
        ctx.save_for_backward(input)
        return input.sum(dim)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output.mul(torch.ones({size})), None
"""


def test_a_factory_in_an_autograd_backward_is_on_the_host() -> None:
    assert lines(AUTOGRAD_BACKWARD.format(size="input.size()"), "GPD106") == [13]
    placed = "input.size(), device=grad_output.device"
    assert lines(AUTOGRAD_BACKWARD.format(size=placed), "GPD106") == []


def test_the_fix_names_the_gradient_not_ctx() -> None:
    from gpudoc.lint.config import LintConfig
    from gpudoc.lint.engine import lint_source

    result = lint_source(AUTOGRAD_BACKWARD.format(size="input.size()"), "x.py", LintConfig())
    (finding,) = [f for f in result.findings if f.code == "GPD106"]
    assert "device=grad_output.device" in finding.message
    assert "ctx.device" not in finding.message


# an autograd protocol of a library's own base class: still a `backward(ctx, grad_output)`
OWN_BASE = """\
import torch


class AutogradFunction(object):
    pass


class AutogradMean(AutogradFunction):
    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.div(torch.ones(ctx.shape) * ctx.count)
"""


def test_an_autograd_protocol_of_a_library_base_counts_too() -> None:
    assert lines(OWN_BASE, "GPD106") == [11]
    # a plain static method of that name without `ctx` is not the protocol
    plain = OWN_BASE.replace("backward(ctx, grad_output)", "backward(grad_output)")
    plain = plain.replace("ctx.shape) * ctx.count", "3)")
    assert lines(plain, "GPD106") == []


# a 0-dim tensor of a size's element: PyTorch lets a 0-dim host tensor meet any device
SIZE_ELEMENT = """\
import torch
import torch.nn as nn


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        n = x.size()[{index}]
        return self.proj(x) / torch.tensor(n)
"""


def test_a_0_dim_tensor_of_a_size_element_is_a_number() -> None:
    assert lines(SIZE_ELEMENT.format(index="0"), "GPD106") == []
    # a slice of the size is a tuple: a 1-dim tensor, on the host
    assert lines(SIZE_ELEMENT.format(index="1:"), "GPD106") == [12]


# the RL codebases' initialiser: `init_(nn.Linear(...))` returns the module it is given
INITIALISED = """\
import torch.nn as nn
from utils import init


class Critic(nn.Module):
    def __init__(self, hidden, outs):
        super().__init__()

        def init_(m):
            return init(m, nn.init.orthogonal_, lambda x: nn.init.constant_(x, 0))

        self.heads = [{item} for _ in range(outs)]
"""


def test_modules_passed_through_an_initialiser_in_a_plain_list() -> None:
    assert lines(INITIALISED.format(item="init_(nn.Linear(hidden, 1))"), "GPD104") == [12]
    assert lines(INITIALISED.format(item="layer_init(nn.Linear(hidden, 1))"), "GPD104") == [12]
    assert lines(
        INITIALISED.format(item="nn.utils.spectral_norm(nn.Linear(hidden, 1))"), "GPD104"
    ) == [12]
    # a call that makes something else of the module (its parameters' count) is no module
    assert lines(INITIALISED.format(item="count(nn.Linear(hidden, 1))"), "GPD104") == []


PASS_THROUGH = """\
import torch.nn as nn


def orthogonal(layer, gain=1.0):
    nn.init.orthogonal_(layer.weight, gain)
    return layer


class Critic(nn.Module):
    def __init__(self, hidden, outs):
        super().__init__()
        self.heads = [orthogonal(nn.Linear(hidden, 1)) for _ in range(outs)]
"""


def test_a_function_of_the_file_that_returns_the_module_it_is_given() -> None:
    assert lines(PASS_THROUGH, "GPD104") == [12]
    sized = PASS_THROUGH.replace("return layer", "return layer.weight.numel()")
    assert lines(sized, "GPD104") == []


# multitask-CycleGAN: `type(img)` is `torch.Tensor` on any device, so the batch goes back
LEGACY_TYPES = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

if torch.cuda.is_available():
    dtype = torch.cuda.FloatTensor
else:
    dtype = torch.FloatTensor
net = nn.Linear(4, 2).type(dtype)
loader = DataLoader(data, batch_size=4)
for image, label in loader:
    image = image.type(dtype)
    part = {part}
    net(part)
"""


def test_a_tensor_cast_to_its_own_python_type_goes_back_to_the_host() -> None:
    assert lines(LEGACY_TYPES.format(part="image.type(type(image))"), "GPD101") == [14]
    assert lines(LEGACY_TYPES.format(part="image.type(torch.FloatTensor)"), "GPD101") == [14]
    assert lines(LEGACY_TYPES.format(part="image.type(dtype)"), "GPD101") == []
    assert lines(LEGACY_TYPES.format(part="image.type(image.type())"), "GPD101") == []
    # the module cast with the chosen type is placed; the guarded choice hard-codes nothing
    assert lines(LEGACY_TYPES.format(part="image"), "GPD203") == []


def test_a_legacy_cuda_type_places_tensors() -> None:
    source = LEGACY_TYPES.format(part="image.type(torch.cuda.FloatTensor)")
    numpy = source.replace("    net(part)\n", "    part.numpy()\n")
    assert lines(numpy, "GPD202") == [14]


# YOLOv7's TRT_NMS: an exporter's stub, whose forward only shapes placeholder outputs
EXPORT_STUB = """\
import torch


class TRT_NMS(torch.autograd.Function):
    @staticmethod
    def forward(ctx, boxes, scores, max_output_boxes=100):
        batch_size, num_boxes, num_classes = scores.shape
        det_boxes = torch.randn(batch_size, max_output_boxes, 4)
        return det_boxes
{symbolic}
"""


def test_an_export_stubs_placeholder_outputs_are_not_reported() -> None:
    symbolic = (
        "\n    @staticmethod\n    def symbolic(g, boxes, scores, max_output_boxes=100):\n"
        '        return g.op("TRT::EfficientNMS_TRT", boxes, scores)\n'
    )
    assert lines(EXPORT_STUB.format(symbolic=symbolic), "GPD106") == []
    assert lines(EXPORT_STUB.format(symbolic=""), "GPD106") == [8]
