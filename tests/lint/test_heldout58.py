"""Regressions of held-out set 58 (public repositories) and of set 57's recall reports, reduced
and rewritten here: the correct code each rule must leave alone, next to the bug it finds."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

# alibi-detect's notebook: a model never moved, trained by the package's own trainer, which
# the package's __init__ re-exports under its module's name
TRAINER = """\
import torch


def trainer(model, loss_fn, dataloader, device, preprocess_fn=None, epochs=2):
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        for x, y in dataloader:
            if callable(preprocess_fn):
                x = preprocess_fn(x)
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
"""

NOTEBOOK = """\
import torch
import torch.nn as nn
from detect.models import trainer

data = torch.utils.data.TensorDataset(torch.randn(64, 11), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=32)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
reg = nn.Sequential(nn.Linear(11, 16), nn.ReLU(), nn.Linear(16, 1)){move}
trainer(reg, nn.MSELoss(), loader, device)
"""


def test_a_package_re_exporting_a_function_under_its_module_name_calls_the_function(
    tmp_path: Path,
) -> None:
    models = tmp_path / "detect" / "models"
    models.mkdir(parents=True)
    (tmp_path / "detect" / "__init__.py").write_text("")
    (models / "__init__.py").write_text("from .trainer import trainer\n")
    (models / "trainer.py").write_text(TRAINER)
    # the batch is of unknown kind on one path (`preprocess_fn(x)`), moved on both
    assert project_lines(tmp_path, {"main.py": NOTEBOOK.format(move="")}, "GPD102") == [8]
    moved = NOTEBOOK.format(move=".to(device)")
    assert project_lines(tmp_path, {"main.py": moved}, "GPD102") == []


# isc-demos: each rank's GPU index kept on the settings object
RANK_DEVICE = """\
import os
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    dist.init_process_group("nccl")
    args.device_id = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(args.device_id)
    model = nn.Linear(8, 2){move}
    return DDP(model, device_ids=[args.device_id])
"""


def test_a_module_moved_to_a_device_index_kept_on_the_settings_is_placed() -> None:
    assert lines(RANK_DEVICE.format(move=".to(args.device_id)"), "GPD401") == []
    assert lines(RANK_DEVICE.format(move=""), "GPD401") == [13]


# torchvision's detection reference transforms: random crop offsets drawn with torch.rand
CROP = """\
import torch
import torchvision.transforms.functional as F
from torch import nn


class RandomCrop(nn.Module):
    def forward(self, image):
        _, h, w = F.get_dimensions(image)
        r = torch.rand(2)
        top, left = int(h * r[0]), int(w * r[1])
        return image{use}
"""


def test_a_random_draw_read_as_python_numbers_needs_no_device() -> None:
    assert lines(CROP.format(use="[..., top:, left:]"), "GPD106") == []
    # the draw itself meets the image: reported
    assert lines(CROP.format(use=" * r[0]"), "GPD106") == [9]


# BigGAN's utils: GPU-only helpers beside one regulariser that follows its weight's device
GPU_ONLY = """\
import torch


def ortho(w, strength=1e-4):
    eye = torch.eye(w.shape[0], device=w.device)
    return strength * ((w @ w.t()) * (1.0 - eye)).pow(2).sum()


def draw_labels(batch_size, num_classes, device="cuda"):
    return torch.randint(0, num_classes, (batch_size,), device=device)


def sample(G, n, num_classes):
    z = torch.randn(n, G.dim_z, device={device})
    return G(z, draw_labels(n, num_classes))
"""

# diffwave's inference: the only device is the default; what follows it is made on it
OWN_DEVICE = """\
import torch


def synthesize(net, spec, device=torch.device("cuda")):
    spec = spec.to(device)
    audio = torch.randn(spec.shape[0], 1, spec.shape[-1], device=device)
    step = torch.tensor([0.5], device={followed}.device)
    return audio * step + net(spec)


def main(net, spec):
    return synthesize(net, spec).cpu()
"""


def test_following_a_tensor_is_no_cpu_fallback_in_code_that_asks_for_cuda() -> None:
    assert lines(GPU_ONLY.format(device='"cuda"'), "GPD206") == []
    # the sampler follows its generator instead: the helpers serve any device
    assert lines(GPU_ONLY.format(device="G.device"), "GPD206") == [9]
    assert lines(OWN_DEVICE.format(followed="audio"), "GPD206") == []
    # following the caller's network is code written for any device
    assert lines(OWN_DEVICE.format(followed="next(net.parameters())"), "GPD206") == [4]


# latent diffusion's samplers: a buffer not on CUDA is moved there, on every machine
SAMPLER = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Sampler:
    def __init__(self, model):
        self.model = model

    def register_buffer(self, name, attr):
        if type(attr) == torch.Tensor:
            if attr.device != torch.device("cuda"):
                attr = attr.to({target})
        setattr(self, name, attr)


Sampler(None).register_buffer("betas", torch.ones(3))
"""


def test_a_move_to_cuda_of_what_is_not_on_cuda_is_reported_where_it_moves() -> None:
    assert lines(SAMPLER.format(target='torch.device("cuda")'), "GPD203") == [13]
    # the guarded arm of a tensor's own device test: CUDA exists there
    on_gpu = SAMPLER.format(target='torch.device("cuda")').replace("!= torch", "== torch")
    assert lines(on_gpu, "GPD203") == []
    assert lines(SAMPLER.format(target="device"), "GPD203") == []


# lightning-bolts' GAN (set 59 recall 01): a label tensor "moved" onto itself
GAN_STEP = """\
import torch
import pytorch_lightning as pl
import torch.nn.functional as F


class GAN(pl.LightningModule):
    def discriminator_loss(self, x):
        d_x = self.discriminator(x)
        fake = torch.zeros(x.size(0), 1)
        fake = fake.type_as({other})
        return F.binary_cross_entropy(d_x, fake)

    def training_step(self, batch, batch_idx):
        x, _ = batch
        return self.discriminator_loss(x)
"""


def test_a_tensor_cast_to_its_own_type_stays_where_it_is() -> None:
    assert lines(GAN_STEP.format(other="fake"), "GPD106") == [9]
    assert lines(GAN_STEP.format(other="x"), "GPD106") == []


# MyrtleSoftware's deepspeech (set 59 recall 05): a weights file named for its state dict
RELOAD = """\
import torch
from model import Net

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def get_model(state_dict_path):
    model = Net()
    model.load_state_dict(torch.load(state_dict_path))
    return model.to(device)
"""


def test_a_path_named_for_a_state_dict_is_a_checkpoint_not_data() -> None:
    assert lines(RELOAD, "GPD201") == [9]
    # a file of data named for a dictionary of splits is not
    assert lines(RELOAD.replace("state_dict_path", "split_dict_path"), "GPD201") == []


# speechbrain's InputNormalization (set 59 recall 14): statistics read through `.data`
NORMALIZATION = """\
import torch


class InputNormalization(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.glob_mean = torch.tensor([0])
        self.glob_std = torch.tensor([0])

    def forward(self, x):
        return (x - self.glob_mean{read}) / self.glob_std{read}
"""


def test_an_attribute_read_through_data_is_read() -> None:
    assert lines(NORMALIZATION.format(read=".data"), "GPD105") == [7, 8]
    assert lines(NORMALIZATION.format(read=".data.to(x.device)"), "GPD105") == []
