"""Recall regressions from the twenty-sixth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

# report 13 (PyPOTS' VaDER) and recall 25's report 09 (PatchmatchNet's loss): a legacy
# constructor builds a CPU tensor in forward or a loss, and it meets the device outputs
VADER = """\
import torch
import torch.nn as nn
class VaDER(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, x):
        log_2pi = torch.log({constant})
        return self.fc(x) + log_2pi
model = VaDER().cuda()
model(torch.randn(2, 4).cuda())
"""
LOSS = """\
import torch
import torch.nn.functional as F
def patch_loss(depth, target):
    loss = torch.Tensor([0])
    loss = loss + F.smooth_l1_loss(depth, target, reduction="mean")
    return loss
out = torch.nn.Linear(4, 4).cuda()(torch.randn(2, 4).cuda())
patch_loss(out, torch.randn(2, 4).cuda()).backward()
"""


def test_a_legacy_constructor_in_forward_is_a_host_factory() -> None:
    result = lint_source(
        VADER.format(constant="torch.FloatTensor([6.28])"), "x.py", LintConfig(select=("GPD106",))
    )
    assert [f.line for f in result.findings] == [8]
    finding = result.findings[0]
    # `torch.FloatTensor([...], device=...)` raises: the advice names torch.tensor, no fix
    assert "build it with `torch.tensor(..., device=x.device)`" in finding.message
    assert finding.fix is None
    assert lines(VADER.format(constant="torch.tensor([6.28], device=x.device)"), "GPD106") == []


def test_a_legacy_constructor_that_meets_a_loss_on_the_device() -> None:
    assert lines(LOSS, "GPD106") == [4]
    assert lines(LOSS, "GPD101") == []  # one finding, GPD106's


# report 14 (semantic-loss-pytorch's circuit): the host factory reaches the device tensor
# through a list that `torch.stack` reads
CIRCUIT = """\
import torch
def circuit(trueprobs):
    false_tensor = torch.zeros(1)
    res = [trueprobs[:, 0], false_tensor]
    return torch.stack(res, dim=0).sum(dim=0)
print(circuit(torch.rand(4, 3).cuda()))
"""


def test_a_host_factory_in_a_list_stacked_with_device_tensors() -> None:
    assert lines(CIRCUIT, "GPD106") == [3]
    assert (
        lines(
            CIRCUIT.replace("torch.zeros(1)", "torch.zeros(1, device=trueprobs.device)"), "GPD106"
        )
        == []
    )


# report 07 (uORF's models): the base class picks the first listed GPU or the CPU; the subclasses
# build their perceptual nets with `.cuda()`
BASE = """\
import torch
class BaseModel:
    def __init__(self, opt):
        self.gpu_ids = opt.gpu_ids
        self.device = {choice}
"""
GAN = """\
import torch.nn as nn
from base_model import BaseModel
class GanModel(BaseModel):
    def __init__(self, opt):
        BaseModel.__init__(self, opt)
        self.perceptual_net = nn.Sequential(nn.Conv2d(3, 8, 3)).cuda()
"""
FIRST_OR_CPU = "torch.device(f'cuda:{self.gpu_ids[0]}') if self.gpu_ids else torch.device('cpu')"


def _gan(root: Path, choice: str) -> list[int]:
    (root / "base_model.py").write_text(BASE.format(choice=choice))
    (root / "gan_model.py").write_text(GAN)
    config = LintConfig(select=("GPD203",))
    return [
        f.line for f in lint_paths([str(root / "gan_model.py")], config, use_cache=False).findings
    ]


def test_the_first_listed_gpu_or_the_cpu_is_a_cpu_path() -> None:
    source = BASE.format(choice=FIRST_OR_CPU) + GAN.split("\n", 2)[2].replace(
        "BaseModel.__init__(self, opt)", "super().__init__(opt)"
    )
    assert lines("import torch.nn as nn\n" + source, "GPD203") == [10]


def test_a_cpu_path_in_the_base_classs_file_is_the_subclasss(tmp_path: Path) -> None:
    assert _gan(tmp_path, FIRST_OR_CPU) == [6]
    assert _gan(tmp_path, "torch.device('cuda:0')") == []


def test_an_availability_test_alone_in_the_base_classs_file_is_no_cpu_path(tmp_path: Path) -> None:
    # pix2pixHD's BaseModel: `if len(gpu_ids) and torch.cuda.is_available(): network.cuda()`
    # after saving a CPU copy; nothing there picks the CPU for the run
    resaved = (
        "None\n    def save(self, network):\n"
        "        if torch.cuda.is_available():\n            network.cuda()"
    )
    assert _gan(tmp_path, resaved) == []
