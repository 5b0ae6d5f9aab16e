"""Regressions of held-out set 63 and the recall reports found since, reduced and rewritten
here: the correct code each rule must leave alone, next to the bug it finds."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

# togheppi's cDCGAN (set 63): a GPU-only script whose one availability test sits in a helper
# that nothing calls
LEFTOVER_HELPER = """\
import torch
import torch.nn as nn


def to_var(t):
    if torch.cuda.is_available():
        t = t.cuda()
    return t


gen = nn.Linear(16, 32)
gen.cuda()
for step in range(10):
    z = torch.randn(8, 16).cuda()
    loss = gen({z}).mean()
"""


def test_a_cpu_choice_in_a_helper_nothing_calls_is_no_cpu_path() -> None:
    assert lines(LEFTOVER_HELPER.format(z="z"), "GPD203") == []
    # called, the helper is the script's fallback, and the hard-coded moves break it
    assert lines(LEFTOVER_HELPER.format(z="to_var(z)"), "GPD203") == [12, 14]


# FaceMaskDetection (recall set 62): the loader module's inference helper picks the CPU, and the
# demo script that imports it calls it
LOADER_MODULE = """\
import sys
import torch
sys.path.append("models/")


def load_model(path):
    return torch.load(path)


def infer(model, batch):
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    return model.to(device)(torch.tensor(batch).to(device))
"""


def test_a_helper_another_script_calls_keeps_its_cpu_choice(tmp_path: Path) -> None:
    demo = "from main import load_model, infer\nprint(infer(load_model('m.pth'), [1.0]))\n"
    files = {"main.py": LOADER_MODULE, "demo.py": demo}
    assert project_lines(tmp_path, files, "GPD201") == [7]
    # a library (its top level only sets up): its functions are for others to call
    alone = tmp_path / "alone"
    alone.mkdir()
    assert project_lines(alone, {"main.py": LOADER_MODULE}, "GPD201") == [7]
    # a program whose `__main__` never calls the helper, and no script names it: a leftover
    program = LOADER_MODULE + '\nif __name__ == "__main__":\n    print(load_model("m.pth"))\n'
    unused = tmp_path / "unused"
    unused.mkdir()
    assert project_lines(unused, {"main.py": program}, "GPD201") == []


# jfassett1's acoustic attack (set 63): whisper computes a filter bank where it is told
FOREIGN_CPU = """\
import torch
from whisper.audio import mel_filters

DEVICE = "cuda"
bank = mel_filters({device}, 80)
centres = torch.from_numpy(bank.numpy().mean(axis=1))


def weights(batch):
    return centres.to(DEVICE).expand(batch, -1)
"""


def test_a_cpu_device_handed_to_another_library_is_no_cpu_path() -> None:
    assert lines(FOREIGN_CPU.format(device='"cpu"'), "GPD203") == []


# the same project: an STFT window made where the signal is, on whichever path it was moved
FOLLOWS_SIGNAL = """\
import torch
import torch.nn.functional as F


def spectrum(signal, device=None, pad=0):
    if not torch.is_tensor(signal):
        signal = torch.from_numpy(signal)
    if device is not None:
        signal = signal.to(device)
    if pad > 0:
        signal = F.pad(signal, (0, pad))
    window = torch.hann_window(400).to(signal.device)
    return torch.stft(signal, 400, 160, window=window, return_complex=True)


if __name__ == "__main__":
    dev = "cuda"
    x = torch.randn(2, 16000).to(dev)
    print(spectrum(x).shape)
"""


def test_a_tensor_moved_to_another_ones_device_is_where_that_one_is() -> None:
    assert lines(FOLLOWS_SIGNAL, "GPD101") == []


# pytorch/text#1977 (a recall report): a causal mask made on the host, converted to bool
MASK_CONVERTED = """\
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(8, 2)

    def forward(self, tokens, memory):
        n = tokens.shape[0]
        mask = torch.triu(torch.ones((n, n)), diagonal=1)
        mask = mask.to({target})
        return self.layer(tokens, memory, tgt_mask=mask)
"""


def test_a_dtype_conversion_is_no_move() -> None:
    assert lines(MASK_CONVERTED.format(target="torch.bool"), "GPD106") == [12]
    assert lines(MASK_CONVERTED.format(target="dtype=tokens.dtype"), "GPD106") == [12]
    assert lines(MASK_CONVERTED.format(target="tokens.device"), "GPD106") == []


# deep-diver's image search (a recall report): CLIP's scores, sorted in a method, then NumPy
CLIP_SCORES = """\
import torch
from transformers import CLIPModel


class Search:
    def __init__(self):
        self.model = CLIPModel.from_pretrained("openai/clip-vit-base-patch32")
        self.device = "cuda" if torch.cuda.is_available() else "cpu"

    def search(self, inputs):
        model = self.model.to(self.device)
        outputs = model(**inputs)
        return self.top(outputs.logits_per_image)

    def top(self, scores):
        values, indices = scores.squeeze().topk(3)
        return [int(index{host}.numpy()) for index in indices], [
            round(score{host}.numpy().tolist(), 3) for score, _ in zip(values, indices)
        ]


if __name__ == "__main__":
    print(Search().search({{}}))
"""


def test_a_model_outputs_scores_followed_through_a_method_and_zip() -> None:
    assert lines(CLIP_SCORES.format(host=""), "GPD202") == [17, 18]
    assert lines(CLIP_SCORES.format(host=".cpu()"), "GPD202") == []


# TextGAN-PyTorch (set 21's real findings, kept): a trainer class whose methods move under the
# config's `CUDA` switch, with one `.cuda()` left unconditional; its methods are no leftover
# helpers, whatever the walk of the base class's file reads
INSTRUCTOR_BASE = """\
import torch
import config as cfg


class BasicInstructor:
    def __init__(self):
        self.gen = torch.nn.Linear(4, 4)
        if cfg.CUDA:
            self.gen = self.gen.cuda()
"""
INSTRUCTOR = """\
import torch
import config as cfg
from base import BasicInstructor


class CatInstructor(BasicInstructor):
    def init_model(self):
        if cfg.CUDA:
            self.gen = self.gen.cuda()

    def train_epoch(self):
        real = torch.rand(4, 4).cuda()
        return self.gen(real)
"""
RUN = """\
import config as cfg
from main import CatInstructor

if __name__ == "__main__":
    cfg.CUDA = False
    CatInstructor().train_epoch()
"""


def test_a_methods_cpu_choice_is_kept_beside_a_base_class(tmp_path: Path) -> None:
    files = {
        "config.py": "CUDA = True\n",
        "base.py": INSTRUCTOR_BASE,
        "main.py": INSTRUCTOR,
        "run.py": RUN,
    }
    assert project_lines(tmp_path, files, "GPD203") == [12]
