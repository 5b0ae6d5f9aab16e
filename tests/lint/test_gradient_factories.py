"""GPD106 on gradients: a tensor factory without ``device=`` handed as the gradient of outputs
on the device (PyTorch-GAN's wgan_div), wherever the training loop is."""

from __future__ import annotations

from pathlib import Path

from lint_lines import project_lines

from gpudoc.lint.engine import lint_source

LOOP = """\
import torch
import torch.nn as nn
cuda = torch.cuda.is_available()
critic = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
if cuda:
    critic.cuda()
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
for real, _ in torch.utils.data.DataLoader(dataset, batch_size=16):
    real = real.to("cuda" if cuda else "cpu").requires_grad_(True)
    score = critic(real)
    grad = torch.autograd.grad(score, real, {gradient}, create_graph=True)[0]
    score.backward({backward})
"""


def codes(gradient: str, backward: str = "") -> set[tuple[int, str]]:
    result = lint_source(LOOP.format(gradient=gradient, backward=backward), "wgan.py")
    return {(f.line, f.code) for f in result.findings}


def test_a_host_gradient_of_device_outputs_in_a_module_level_loop() -> None:
    assert codes("torch.ones(real.size(0), 1)") == {(11, "GPD106")}


def test_the_argument_of_backward_is_a_gradient_too() -> None:
    found = codes("torch.ones_like(score)", "gradient=torch.ones(16, 1)")
    assert found == {(12, "GPD106")}


def test_gradients_made_on_the_outputs_device_are_fine() -> None:
    assert codes("torch.ones(real.size(0), 1, device=real.device)") == set()
    assert codes("torch.ones(real.size(0), 1).to(score.device)") == set()
    assert codes("torch.ones_like(score)") == set()


TYPED = """\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, q, k):
        scores = torch.matmul(q, k.transpose(1, 2))
        return scores / torch.sqrt(torch.tensor(self.dim).{follow})
"""


def test_a_factory_typed_by_the_input_type_lands_on_the_current_device() -> None:
    """linformer-pytorch#22: ``.type(q.type())`` makes a ``torch.cuda.FloatTensor`` on the
    current device, not q's: under DDP on cuda:1, in a rank that never picked its GPU, it
    meets q there."""
    ddp = TYPED.format(follow="type(q.type())") + DDP_SCRIPT
    result = lint_source(ddp, "attention.py")
    assert {(f.line, f.code) for f in result.findings} == {(12, "GPD106")}
    assert "current CUDA device" in result.findings[0].message


def test_a_factory_typed_by_the_input_type_is_fine_where_one_gpu_is_current() -> None:
    """DrQA (set 68): DataParallel makes each replica's GPU current in its thread, and a
    file that runs no process group and names no second GPU runs on the current one."""
    assert lint_source(TYPED.format(follow="type(q.type())"), "attention.py").findings == ()


DDP_SCRIPT = """

def main(rank):
    torch.distributed.init_process_group("nccl")
    model = Attention(8).to(f"cuda:{rank}")
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
"""


def test_a_factory_moved_to_the_input_device_is_fine() -> None:
    result = lint_source(TYPED.format(follow="to(q.device)"), "attention.py")
    assert result.findings == ()


GAN_STEP = """\
import torch
import torch.nn as nn
from torch.autograd import grad
class GAN:
    def __init__(self, gpu_mode):
        self.gpu_mode = gpu_mode
        self.D = nn.Linear(8, 1)
        if self.gpu_mode:
            self.D.cuda()
    def penalty(self, x):
        pred = self.D(x)
        if self.gpu_mode:
            ones = {gpu_arm}
        else:
            ones = torch.ones(pred.size())
        return grad(outputs=pred, inputs=x, grad_outputs=ones, create_graph=True)[0]
    def penalty_inline(self, x):
        pred = self.D(x)
        if self.gpu_mode:
            return grad(outputs=pred, inputs=x, grad_outputs={gpu_arm})[0]
        else:
            return grad(outputs=pred, inputs=x, grad_outputs=torch.ones(pred.size()))[0]
"""


def test_the_cpu_arm_of_a_gpu_flag_is_not_a_device_gradient() -> None:
    """znxlwm's DRAGAN/WGAN_GP: `torch.ones(...)` in the `else:` of `if self.gpu_mode:`."""
    source = GAN_STEP.format(gpu_arm="torch.ones(pred.size()).cuda()")
    assert [f for f in lint_source(source, "gan.py").findings if f.code == "GPD106"] == []
    bug = GAN_STEP.format(gpu_arm="torch.ones(pred.size())")
    found = {(f.line, f.code) for f in lint_source(bug, "gan.py").findings}
    assert {(20, "GPD106")} <= found  # the GPU arm of penalty_inline


def test_a_typed_factory_in_a_file_a_ddp_script_imports(tmp_path: Path) -> None:
    """linformer-pytorch#22 as it is laid out: the attention module, and the DDP script that
    imports it and never makes its rank's GPU current."""
    script = "from main import Attention\n" + DDP_SCRIPT
    (tmp_path / "train.py").write_text("import torch\n" + script)
    typed = TYPED.format(follow="type(q.type())")
    assert project_lines(tmp_path, {"main.py": typed}, "GPD106") == [12]
    # the script makes each rank's GPU current: the current device is q's
    current = script.replace(
        "    model = Attention", "    torch.cuda.set_device(rank)\n    model = Attention"
    )
    (tmp_path / "train.py").write_text("import torch\n" + current)
    assert project_lines(tmp_path, {"main.py": typed}, "GPD106") == []
