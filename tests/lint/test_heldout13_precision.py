"""Precision regressions from the thirteenth held-out set of public repositories (an LLM
book's chapter code, a course's notebooks, interpretability and diffusion libraries), reduced
and rewritten here: correct code each rule must leave alone, next to the bug it must still
report."""

from __future__ import annotations

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def lines(source: str, code: str) -> list[int]:
    result = lint_source(source, "x.py", LintConfig(select=(code,)))
    return [finding.line for finding in result.findings]


# the tanh approximation of GELU, written out in forward
GELU = """\
import math
import torch
class GELU(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(
            torch.sqrt(torch.tensor({constant})) * (x + 0.044715 * torch.pow(x, 3))
        ))
"""


def test_a_tensor_of_a_number_expression_is_a_scalar() -> None:
    for constant in ("2.0 / torch.pi", "2.0 / math.pi", "-math.sqrt(2)", "float(2) ** 0.5"):
        assert lines(GELU.format(constant=constant), "GPD106") == [], constant


def test_a_tensor_of_a_list_in_forward_stays_gpd106() -> None:
    assert lines(GELU.format(constant="[2.0 / math.pi]"), "GPD106") == [6]
    assert lines(GELU.format(constant="scale"), "GPD106") == [6]


# a chapter script: a tiny model on the CPU for its test mode, the real one on the GPU
TEST_MODE = """\
import torch
def main(test_mode):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if test_mode:
        model = torch.nn.Linear(8, 2)
        device = "cpu"
    else:
        model = torch.nn.Linear(8, 4)
        model.load_state_dict(weights){move}
    batch = torch.randn(2, 8).to(device)
    print(model(batch))
"""


def test_a_path_that_makes_the_device_the_cpu_is_the_cpu_path() -> None:
    source = TEST_MODE.format(move="\n        model.to(device)")
    assert lines(source, "GPD102") == []
    assert lines(source, "GPD101") == []


def test_the_gpu_path_must_still_move_the_model() -> None:
    assert lines(TEST_MODE.format(move=""), "GPD102") == [8]


# a random crop of the discriminator's input, and the multi-crop wrapper's runs of equal sizes
CROPS = """\
import torch
class Discriminator(torch.nn.Module):
    def forward(self, input):
        h, w = input.size(2), input.size(3)
        y = torch.randint(h - 16, ())
        x = torch.randint(w - 16, ())
        input = input[:, :, y:y + 16, x:x + 16]
        return self.convs(input)
class MultiCropWrapper(torch.nn.Module):
    def forward(self, x):
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in x]), return_counts=True)[1], 0)
        start_idx, output = 0, torch.empty(0).to(x[0].device)
        for end_idx in idx_crops:
            out = self.backbone(torch.cat(x[start_idx:end_idx]))
            output = torch.cat((output, out))
            start_idx = end_idx
        return self.head(output)
"""


def test_tensors_read_only_as_slice_bounds_are_no_gpd106() -> None:
    assert lines(CROPS, "GPD106") == []


def test_a_loop_over_a_host_tensor_that_meets_the_input_stays_gpd106() -> None:
    source = CROPS.replace("start_idx = end_idx", "output = output * end_idx")
    assert lines(source, "GPD106") == [12]
    assert lines(CROPS.replace("y:y + 16", "y"), "GPD106") == []  # an index, as before
    assert lines(CROPS.replace("input[:, :, y:y + 16, x:x + 16]", "input * y * x"), "GPD106") == [
        5,
        6,
    ]
