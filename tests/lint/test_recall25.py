"""Recall regressions from the twenty-fifth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

# report 16 (aepsych's device mixin): the getter moves each training input to the object's own
# device and discards the result; the device is a property of the mixin, not an nn.Module's
MIXIN = """\
import torch
class DeviceMixin:
    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device
    @property
    def train_inputs(self):
        for {name} in self._train_inputs:
            {name}.to(self.device)
        return self._train_inputs
    def set_input(self, x):
        x.to(self.device)
        self._x = x
"""


def test_discarded_moves_to_a_plain_classs_own_device() -> None:
    assert lines(MIXIN.format(name="input"), "GPD103") == [9, 12]


def test_discarded_move_of_a_tensor_named_loop_variable_names_the_container() -> None:
    result = lint_source(MIXIN.format(name="input"), "x.py", LintConfig(select=("GPD103",)))
    loop = result.findings[0]
    assert "`self._train_inputs` keeps the unmoved ones" in loop.message
    assert loop.fix is None  # rebinding the loop variable would change nothing


def test_loop_variables_that_may_be_modules_or_one_letter_are_left_alone() -> None:
    source = """\
import torch
def place(heads, xs, device):
    for head in heads:
        head.to(device)
    for features in heads:
        features.to(device)
    for t in xs:
        t.to(device)
"""
    assert lines(source, "GPD103") == []


# report 12 (model2vec's StaticModel): a placed module's own layer weights are on the device
STATIC = """\
import numpy as np
import torch
from torch import nn
class StaticModel(nn.Module):
    def __init__(self, vectors):
        super().__init__()
        self.embedding = {layer}
    def save_pretrained(self, path):
        np.save(path, self.embedding.weight.numpy())
model = StaticModel(np.zeros((10, 4), dtype=np.float32)).to("cuda")
model.save_pretrained("out.npy")
bias = model.head.bias.numpy() if hasattr(model, "head") else None
w = model.embedding.weight.cpu().numpy()
"""


def test_a_placed_modules_layer_weight_is_on_the_device() -> None:
    layer = "nn.EmbeddingBag.from_pretrained(torch.from_numpy(vectors), freeze=False)"
    assert lines(STATIC.format(layer=layer), "GPD202") == [9]
    assert lines(STATIC.format(layer="nn.Embedding(10, 4)"), "GPD202") == [9]


def test_an_unplaced_modules_layer_weight_is_on_the_host() -> None:
    source = STATIC.format(layer="nn.Embedding(10, 4)").replace('.to("cuda")', "")
    assert lines(source, "GPD202") == []


# report 01 (BraTs' load_model): the optimizer exists in training mode only, and its state is
# restored before the model moves to the GPU
LOAD_MODEL = """\
import torch
from torch.optim import SGD
def load_model(net, path, mode):
{choice}
    checkpoint = torch.load(path, map_location="cpu")
    if optimizer:
        optimizer.load_state_dict(checkpoint["optimizer_state"])
    if torch.cuda.is_available():
        net.cuda()
    return net, optimizer
"""
BRANCHES = """\
    if mode == "train":
        optimizer = SGD(net.parameters(), lr=0.1)
    elif mode == "test":
        optimizer = None
    else:
        raise ValueError(mode)"""
DEFAULT_NONE = """\
    optimizer = None
    if mode == "train":
        optimizer = SGD(net.parameters(), lr=0.1)"""


def test_an_optimizer_bound_on_some_paths_and_none_on_the_others_is_that_optimizer() -> None:
    assert lines(LOAD_MODEL.format(choice=BRANCHES), "GPD302") == [12]
    assert lines(LOAD_MODEL.format(choice=DEFAULT_NONE), "GPD302") == [9]


def test_an_optimizer_or_something_else_is_not_known() -> None:
    choice = BRANCHES.replace("optimizer = None", "optimizer = make_optimizer(net)")
    assert lines(LOAD_MODEL.format(choice=choice), "GPD302") == []


# report 13 (CogDL's OAG-BERT): `self.bert` comes from the base class's `__init__`; the
# subclass's own method feeds it a host tensor on an instance the caller placed
INHERITED = """\
import torch
from torch import nn
class BertBase(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = nn.Embedding(100, 8)
class Encoder(BertBase):
    def encode_paper(self, input_ids):
        return self.bert.forward(torch.LongTensor(input_ids).unsqueeze(0){move})
model = Encoder().cuda()
print(model.encode_paper([1, 2, 3]))
"""


def test_a_submodule_set_by_a_base_class_moves_with_the_instance() -> None:
    assert lines(INHERITED.format(move=""), "GPD101") == [9]
    assert lines(INHERITED.format(move=".cuda()"), "GPD101") == []


# report 05 (project-azua's TorchModel): `save` and `load` each build their own `model_path`;
# the classmethod loads what an earlier run saved, not this one's file
TORCH_MODEL = """\
import os
import torch
class TorchModel(torch.nn.Module):
    _model_file = "model.pt"
    def save(self):
        model_path = os.path.join(self.save_dir, self._model_file)
        torch.save(self.state_dict(), model_path)
    @classmethod
    def load(cls, save_dir, device="gpu"):
        if device == "cpu" or not torch.cuda.is_available():
            torch_device = torch.device("cpu")
        else:
            torch_device = torch.device("cuda:0")
        model = cls().to(torch_device)
        model_path = {path}
        model.load_state_dict(torch.load(model_path))
        return model
"""


def test_two_locals_of_one_name_are_two_paths() -> None:
    assert lines(TORCH_MODEL.format(path="os.path.join(save_dir, cls._model_file)"), "GPD201") == [
        16
    ]


def test_one_local_per_function_built_the_same_way_is_one_path() -> None:
    source = TORCH_MODEL.format(path="os.path.join(self.save_dir, self._model_file)")
    assert lines(source, "GPD201") == []
