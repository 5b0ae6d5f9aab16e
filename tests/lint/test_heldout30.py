"""Precision regressions from the thirtieth held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# Modern-Computer-Vision-with-PyTorch: a Dataset built from tensors already on the device
DEVICE_DATASET = """\
import torch
from torch.utils.data import Dataset, DataLoader
device = "cuda" if torch.cuda.is_available() else "cpu"
X = torch.rand(8, 2){where}
class DS(Dataset):
    def __init__(self, x):
        self.x = torch.tensor(x).float()
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return self.x[i]
net = torch.nn.Linear(2, 1).to(device)
for xb in DataLoader(DS(X), batch_size=2):
    out = net(xb)
"""


def test_a_data_set_of_device_tensors_yields_no_host_batches() -> None:
    assert lines(DEVICE_DATASET.format(where=".to(device)"), "GPD101") == []
    assert lines(DEVICE_DATASET.format(where=""), "GPD101") == [14]


# the same book's autoencoders: the transform moves every sample to the device
MOVING_TRANSFORM = """\
import torch
from torchvision import transforms
from torchvision.datasets import MNIST
device = "cuda" if torch.cuda.is_available() else "cpu"
tf = transforms.Compose([transforms.ToTensor(), {last}])
val_ds = MNIST("data", transform=tf, train=False)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 784)).to(device)
image, _ = val_ds[0]
out = model(image[None])
"""


def test_a_transform_that_moves_samples_puts_them_on_the_device() -> None:
    moving = "transforms.Lambda(lambda x: x.to(device))"
    assert lines(MOVING_TRANSFORM.format(last=moving), "GPD101") == []
    plain = "transforms.Normalize((0.5,), (0.5,))"
    assert lines(MOVING_TRANSFORM.format(last=plain), "GPD101") == [9]


# pSp's and ST-GCN's modules: an attribute made on the caller's device, or cast at every call
PLACED_ATTRIBUTES = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
class Block(nn.Module):
    def __init__(self, device="cpu", cuda=True):
        super().__init__()
        self.aux = torch.zeros((1,), device={device})
        self.k1 = torch.ones(3, 1, 4, 1) / 4
        self.suffix = ".cuda" if cuda else ""
        self.fc = nn.Linear(4, 1)
    def forward(self, x):
        w = self.k1{cast}
        return F.conv2d(x, w, groups=3).sum() + self.fc(x).sum() + self.aux
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(Block(device=dev).to(dev)(torch.ones(1, 3, 8, 4, device=dev)))
"""


def test_attributes_placed_by_a_device_argument_or_a_cast_at_every_call() -> None:
    cast = '.type("torch{}.FloatTensor".format(self.suffix))'
    assert lines(PLACED_ATTRIBUTES.format(device="device", cast=cast), "GPD105") == []
    found = lines(PLACED_ATTRIBUTES.format(device='"cpu"', cast=".float()"), "GPD105")
    assert found == [7, 8]


# waveglow's and SSL4MIS's helpers: a tensor built only to create CUDA's context
CONTEXT = """\
import torch
def occupy_gpu():
    torch.zeros(1).cuda()
    marker = torch.zeros(1)
    marker.cuda()
    return marker
"""


def test_a_discarded_move_of_a_temporary_is_no_lost_move() -> None:
    assert lines(CONTEXT, "GPD103") == [5]


# recall set 30, report 07 (a Microsoft tutorial): `train()` moves the module's model in place,
# then calls `test()`, which feeds it host images
GLOBAL_MOVE = """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2)
loader = torch.utils.data.DataLoader(data)
def test():
    for x, y in loader:
        out = model(x)
def train():
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    {move}
    for x, y in loader:
        out = model(x.to(device))
    test()
if __name__ == "__main__":
    train()
"""


def test_a_module_moved_in_place_by_a_function_is_moved_for_its_callees() -> None:
    assert lines(GLOBAL_MOVE.format(move="model.to(device)"), "GPD101") == [7]
    # a model of train()'s own is another object: the module's stays on the host
    own = "model = nn.Linear(4, 2)\n    model.to(device)"
    assert lines(GLOBAL_MOVE.format(move=own), "GPD101") == []


# recall set 30, report 12: a head on a transformers base class is an nn.Module
TRANSFORMERS_HEAD = """\
import torch
from transformers import RobertaModel
from transformers.models.roberta.modeling_roberta import RobertaPreTrainedModel
class RobertaForRegression(RobertaPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.norm_mean = torch.tensor(config.norm_mean)
        self.roberta = RobertaModel(config)
    def forward(self, x):
        return self.roberta(x)[0] * self.norm_mean
"""


def test_a_class_on_a_transformers_model_base_is_a_module() -> None:
    assert lines(TRANSFORMERS_HEAD, "GPD105") == [7]
