"""The training data: a learnable synthetic CIFAR-shaped set by default, real CIFAR-10 if given.

torchvision's FakeData draws each label independently of its image, so a network can only memorise
it: held-out accuracy stays at chance. Here each class has a fixed smooth colour template and a
sample is its template plus heavy noise, circularly shifted by up to 4 pixels: learnable by the
tutorial's Net (held-out accuracy 0.90-0.98 after 300 steps at batch 32, measured on four seeds),
so "the loss falls" and "accuracy above chance" mean something. Images are uint8, as in CIFAR-10.
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gpudoc.smoke.cifar import RawSplit, load_cifar

CLASSES = 10
TRAIN_COUNT = 4096
TEST_COUNT = 1024
NOISE = 3.0
CLIP = 2.0
MAX_SHIFT = 4


@dataclass(frozen=True)
class Data:
    """uint8 images (N, 3, 32, 32) and int64 labels, train and held-out, plus a content hash."""

    train_images: torch.Tensor
    train_labels: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor
    source: str
    sha256: str

    def to(self, device: torch.device) -> Data:
        """Move to ``device`` once; batches are then gathered there (no per-step copies)."""
        return Data(
            self.train_images.to(device),
            self.train_labels.to(device),
            self.test_images.to(device),
            self.test_labels.to(device),
            self.source,
            self.sha256,
        )


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The exact bytes of a tensor's values, from any device (no numpy needed)."""
    flat = tensor.detach().to("cpu").contiguous()
    return ctypes.string_at(flat.data_ptr(), flat.numel() * flat.element_size())


def normalise(images: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """uint8 -> [-1, 1], the tutorial's ``Normalize((0.5,) * 3, (0.5,) * 3)`` after ToTensor."""
    return images.to(dtype) / 127.5 - 1.0


def synthetic(seed: int = 1234) -> Data:
    """The embedded data set, generated on the CPU from ``seed`` (same bytes on every device)."""
    generator = torch.Generator().manual_seed(seed)
    templates = torch.randn(CLASSES, 3, 8, 8, generator=generator)
    templates = F.interpolate(templates, size=32, mode="bilinear", align_corners=False)
    templates = templates / templates.std(dim=(1, 2, 3), keepdim=True)
    train = _samples(templates, TRAIN_COUNT, generator)
    test = _samples(templates, TEST_COUNT, generator)
    return _with_hash(*train, *test, source="synthetic")


def _samples(
    templates: torch.Tensor, count: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    labels = torch.randint(0, CLASSES, (count,), generator=generator)
    images = torch.randn(count, 3, 32, 32, generator=generator).mul_(NOISE).add_(templates[labels])
    shifts = torch.randint(-MAX_SHIFT, MAX_SHIFT + 1, (count, 2), generator=generator)
    for dy, dx in torch.unique(shifts, dim=0).tolist():  # one roll per distinct shift: fast
        chosen = ((shifts[:, 0] == dy) & (shifts[:, 1] == dx)).nonzero()[:, 0]
        images[chosen] = torch.roll(images[chosen], (dy, dx), dims=(2, 3))
    scale = CLIP * NOISE  # +-2 sigma of the noise spans the uint8 range
    quantised = images.mul_(127.5 / scale).clamp_(-127.5, 127.5).add_(127.5).round_()
    return quantised.to(torch.uint8), labels


def from_cifar(root: str) -> Data:
    """Real CIFAR-10 through the safe reader in ``cifar.py``."""
    raw = load_cifar(root)
    source = f"cifar10:{raw.folder}" + (" (official)" if raw.official else "")
    return _with_hash(*_split_tensors(raw.train), *_split_tensors(raw.test), source=source)


def _split_tensors(split: RawSplit) -> tuple[torch.Tensor, torch.Tensor]:
    images = torch.frombuffer(bytearray(split.images), dtype=torch.uint8)
    return images.reshape(split.count, 3, 32, 32), torch.tensor(split.labels, dtype=torch.int64)


def _with_hash(
    train_images: torch.Tensor,
    train_labels: torch.Tensor,
    test_images: torch.Tensor,
    test_labels: torch.Tensor,
    source: str,
) -> Data:
    digest = hashlib.sha256()
    for tensor in (train_images, train_labels, test_images, test_labels):
        digest.update(tensor_bytes(tensor))
    return Data(train_images, train_labels, test_images, test_labels, source, digest.hexdigest())


def load(data_root: str | None) -> Data:
    return synthetic() if data_root is None else from_cifar(data_root)
