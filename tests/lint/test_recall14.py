"""Recall regressions from the fourteenth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# report 07: a `to()` override that carries two attributes along, not the third
OVERRIDE = """\
import torch
class Policy(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.mean = torch.nn.Linear(n, n)
        self.noise = torch.zeros(n)
        self.scale = torch.ones(n)
    def forward(self, x):
        return self.mean(x) * self.scale + self.noise.normal_()
    def to(self, device):
        {moves}
        return super().to(device)
"""


def test_a_to_override_covers_only_the_attributes_it_moves() -> None:
    assert lines(OVERRIDE.format(moves="self.scale = self.scale.to(device)"), "GPD105") == [6]
    both = "self.scale, self.noise = self.scale.to(device), self.noise.to(device)"
    assert lines(OVERRIDE.format(moves=both), "GPD105") == []
    generic = "for k, v in vars(self).items(): setattr(self, k, v)"
    assert lines(OVERRIDE.format(moves=generic), "GPD105") == []


# report 20: a notebook moves the tokenizer's `input_ids` to the device, never the model
ENCODED = """\
import torch
from transformers import T5Tokenizer, T5ForConditionalGeneration
device = "cuda" if torch.cuda.is_available() else "cpu"
tokenizer = T5Tokenizer.from_pretrained("t5-small")
model = T5ForConditionalGeneration.from_pretrained("t5-small"){move}
input_ids = tokenizer("a prompt", return_tensors="pt").input_ids.to(device)
print(model.generate(input_ids, max_new_tokens=8))
"""


def test_an_encoding_field_moved_to_the_device_is_a_device_tensor() -> None:
    assert lines(ENCODED.format(move=""), "GPD102") == [5]
    assert lines(ENCODED.format(move=".to(device)"), "GPD102") == []


# report 04: a model class's own save(path) and load(path, device): two callers' paths
SAVE_LOAD = """\
import torch
class Model(torch.nn.Module):
    def save(self, model_path):
        torch.save(self.state_dict(), model_path)
    def load(self, model_path, device="cuda"):
        self.to(device)
        self.load_state_dict(torch.load(model_path))
model = Model()
model.load("model.bin", device="cpu")
"""


def test_a_load_method_does_not_read_what_a_save_method_wrote() -> None:
    assert lines(SAVE_LOAD, "GPD201") == [7]


def test_a_function_reading_back_its_own_save_stays_quiet() -> None:
    source = SAVE_LOAD.replace("self.to(device)", "torch.save(self.state_dict(), model_path)")
    assert lines(source, "GPD201") == []


# a script's own save and load helpers: what each call of the loader passes decides
HELPERS = """\
import torch
model = torch.nn.Linear(2, 2)
if torch.cuda.is_available():
    model.cuda()
def model_save(fn):
    torch.save(model.state_dict(), fn)
def model_load(fn):
    model.load_state_dict(torch.load(fn))
{resume}model_save("best.pt")
model_load("best.pt")
"""


def test_a_loader_called_with_what_the_run_saved_is_quiet() -> None:
    assert lines(HELPERS.format(resume=""), "GPD201") == []


def test_a_loader_also_called_with_a_resume_path_is_reported() -> None:
    assert lines(HELPERS.format(resume='model_load("resume.pt")\n'), "GPD201") == [8]


# an engine's step callable: the batch's first element moved, the result discarded
STEP = """\
import torch
class TrainStep:
    def __init__(self, model, opt, device=None):
        self.model = model
        self.opt = opt
        self.device = device
    def __call__(self, engine, batch):
        x = batch[{key}]
        if self.device: x.to(self.device)
        return self.model(x)
model = torch.nn.Linear(4, 2).to("cuda")
step = TrainStep(model, None, "cuda")
"""


def test_a_discarded_move_of_a_batch_element_bound_to_a_name() -> None:
    assert lines(STEP.format(key="0"), "GPD103") == [9]


def test_a_batch_entry_that_may_hold_a_module_is_not_typed_as_a_tensor() -> None:
    assert lines(STEP.format(key='"model"'), "GPD103") == []


# a training loop's meters: a model's outputs unpacked, then numbers and accuracies in one array
METERS = """\
import numpy as np
import torch
import torch.nn as nn
model = nn.Linear(4, 2).cuda()
meters = np.zeros(3)
for step in range(10):
    x = torch.randn(8, 4).cuda()
    loss, acc = model(x)
    meters = meters + np.array([loss.item(), {acc}, step])
"""


def test_a_device_tensor_among_numbers_in_an_array_display() -> None:
    assert lines(METERS.format(acc="acc * 100"), "GPD202") == [9]


def test_numbers_only_in_an_array_display() -> None:
    assert lines(METERS.format(acc="acc.item() * 100"), "GPD202") == []
