"""Recall regressions from a second triage of real device-bug reports (recall set 13), reduced
and rewritten here: a list that starts with an element before device tensors are appended to
it, and a loss module that holds no weights (it must not draw "stays on the host"). Each bug
sits next to the correct code the rule must still leave alone."""

from __future__ import annotations

from lint_lines import lines

# a hypergraph convolution sums its layers' outputs with NumPy (DHCN)
LAYER_SUM = """\
import numpy as np
import torch
class HyperConv(torch.nn.Module):
    def forward(self, adjacency, embedding):
        final = [{first}]
        for _ in range(3):
            embedding = torch.sparse.mm(torch.eye(4).cuda(), embedding)
            final.append(embedding)
        return np.sum(final, 0) / 4
"""


def test_a_list_that_starts_with_an_element_then_gets_device_tensors() -> None:
    assert lines(LAYER_SUM.format(first="embedding"), "GPD202") == [9]


def test_a_list_of_host_tensors_only_stays_quiet() -> None:
    source = LAYER_SUM.format(first="embedding").replace("torch.eye(4).cuda()", "torch.eye(4)")
    assert lines(source, "GPD202") == []


# a GAN loss module that keeps only a loss and the tensor type its targets are made with
GAN_LOSS = """\
import torch
import torch.nn as nn
from torch.autograd import Variable
class GANLoss(nn.Module):
    def __init__(self, target_real_label=1.0, tensor=torch.FloatTensor):
        super().__init__()
        self.real_label = target_real_label
        self.real_label_var = None
        self.Tensor = tensor
        self.loss = nn.MSELoss()
    def get_target_tensor(self, input):
        if self.real_label_var is None:
            self.real_label_var = Variable(self.Tensor(input.size()).fill_(self.real_label))
        return self.real_label_var
    def __call__(self, input):
        return self.loss(input, self.get_target_tensor(input))
D = nn.Linear(4, 1).cuda()
criterion = GANLoss(tensor=torch.cuda.FloatTensor)
print(criterion(D(torch.randn(2, 4).cuda())))
"""


def test_a_loss_module_without_weights_needs_no_move() -> None:
    assert lines(GAN_LOSS, "GPD102") == []


def test_a_module_that_stores_a_layer_still_needs_its_move() -> None:
    source = GAN_LOSS.replace("nn.MSELoss()", "nn.Linear(1, 1)")
    assert lines(source, "GPD102") == [18]


# an sLSTM block of a library: recurrent states kept as plain attributes, read via aliases
SLSTM = """\
import torch
import torch.nn as nn
class sLSTMblock(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.gate = nn.Linear(size, size)
        self.init_states(size)
    def init_states(self, size):
        self.ht_1 = torch.zeros(1, 1, size)
        self.mt_1 = torch.zeros(1, 1, size)
        self.scale = torch.ones(size)
    def forward(self, x):
        ht_1 = self.ht_1
        i = torch.exp(self.gate(x) + self.gate(ht_1))
        m = torch.max(torch.log(i), self.mt_1[:, 0, :].unsqueeze(1))
        return m * self.rescale(self.scale)
    def rescale(self, s):
        return s.to(self.gate.weight.device)
"""


def test_state_attributes_read_through_aliases_and_subscripts_in_a_library() -> None:
    # `self.scale` goes through one of the class's own methods, which may move it
    assert lines(SLSTM, "GPD105") == [9, 10]


# fine-tuning: the classifier head is replaced after the model was moved
HEAD = """\
import torch
import torch.nn as nn
import torchvision
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torchvision.models.resnet18(weights="DEFAULT")
{before}model.to(device)
{after}images = torch.randn(2, 3, 64, 64).to(device)
print(model(images))
"""


def test_a_head_replaced_after_the_move_stays_on_the_host() -> None:
    assert lines(HEAD.format(before="", after="model.fc = nn.Linear(512, 10)\n"), "GPD102") == [7]


def test_a_head_replaced_before_the_move_or_moved_itself_is_placed() -> None:
    head = "model.fc = nn.Linear(512, 10)\n"
    assert lines(HEAD.format(before=head, after=""), "GPD102") == []
    assert lines(HEAD.format(before="", after=head + "model.fc.to(device)\n"), "GPD102") == []
    assert lines(HEAD.format(before="", after=head + "model = model.to(device)\n"), "GPD102") == []
    identity = "model.fc = nn.Identity()\n"  # nothing to move
    assert lines(HEAD.format(before="", after=identity), "GPD102") == []
