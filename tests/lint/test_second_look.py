"""A second look at the session's new analysis (a review of its diff): each heuristic stays as
narrow as its reason, and the bug next to it is still found."""

from __future__ import annotations

from lint_lines import lines

# a module moved in place by train() is moved for test() and for what test() calls in turn
TWO_DEEP = """\
import torch
model = torch.nn.Linear(4, 2)
loader = torch.utils.data.DataLoader(data)
def evaluate(x):
    return model(x)
def test():
    for x, y in loader:
        evaluate(x)
def train():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    test()
if __name__ == "__main__":
    train()
"""


def test_a_moved_global_reaches_the_callees_of_callees() -> None:
    assert lines(TWO_DEEP, "GPD101") == [5]


# `.type(torch.FloatTensor)` is a cast to the host, not a move where the attribute is used
CAST = """\
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scale = torch.ones(3)
    def forward(self, x):
        return self.fc(x) * self.scale.type({cast})
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
"""


def test_a_cast_to_a_host_tensor_type_moves_nothing() -> None:
    assert lines(CAST.format(cast="torch.FloatTensor"), "GPD105") == [7]
    assert lines(CAST.format(cast='"torch.cuda.FloatTensor"'), "GPD105") == []


# `Net(**options)` may pass any device: the `device="cuda"` default decides nothing
STARRED = """\
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self, device="cuda"):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.to(device)
    def forward(self, x):
        return self.fc(x)
net = Net({args})
net(torch.randn(1, 2))
"""


def test_a_starred_call_leaves_the_device_default_unknown() -> None:
    assert lines(STARRED.format(args='**{"device": "cpu"}'), "GPD101") == []
    assert lines(STARRED.format(args=""), "GPD101") == [11]


# a transform that casts (`x.to(torch.float32)`) moves nothing to a device
CASTING_TRANSFORM = """\
import torch
import torchvision
from torchvision import transforms
tf = transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda x: x.to({to}))])
loader = torch.utils.data.DataLoader(torchvision.datasets.MNIST(".", transform=tf))
model = torchvision.models.resnet18().cuda()
for x, y in loader:
    model(x)
"""


def test_a_casting_transform_keeps_samples_on_the_host() -> None:
    assert lines(CASTING_TRANSFORM.format(to="torch.float32"), "GPD101") == [8]
    assert lines(CASTING_TRANSFORM.format(to="dtype=torch.float32"), "GPD101") == [8]
    assert lines(CASTING_TRANSFORM.format(to='"cuda"'), "GPD101") == []


# transformers' data collators are no modules
COLLATOR = """\
import torch
from transformers import {base}
class Masker({base}):
    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        self.probs = torch.full((512,), 0.15)
    def forward(self, x):
        return x * self.probs
"""


def test_a_data_collator_subclass_is_no_module() -> None:
    assert lines(COLLATOR.format(base="DataCollatorForLanguageModeling"), "GPD105") == []
    assert lines(COLLATOR.format(base="BertForMaskedLM"), "GPD105") == [6]


# a reload from another folder is no instance of this run's templated saves
OTHER_FOLDER = """\
import os
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2).to(device)
for epoch in range(2):
    torch.save(net.state_dict(), os.path.join("models", "net-{{}}.ckpt".format(epoch)))
net.load_state_dict(torch.load("{path}"))
"""


def test_a_parent_folder_is_another_folder() -> None:
    assert lines(OTHER_FOLDER.format(path="./models/net-1.ckpt"), "GPD201") == []
    assert lines(OTHER_FOLDER.format(path="../models/net-1.ckpt"), "GPD201") == [8]
