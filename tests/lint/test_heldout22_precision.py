"""Precision regressions from the twenty-second held-out set (public repositories linted before
any tuning, every finding judged): minimal programs of our own for each cause of a wrong
finding, beside the variant that must still be reported."""

from __future__ import annotations

from lint_lines import lines

# a detector keeps each training step's losses on itself for a `loss` property
STEP_LOSSES = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.box_loss = None
    @property
    def loss(self):
        return self.box_loss
    def forward(self, x, target=None):
        out = self.conv(x)
        if {test}:
            self.box_loss = F.mse_loss(out, target)
        return out + self.box_loss
net = Detector().to("cuda")
"""


def test_a_loss_recomputed_on_each_training_step_is_no_cache() -> None:
    assert lines(STEP_LOSSES.format(test="self.training"), "GPD105") == []
    # kept until a state of the module changes, it is a cache that `.to()` leaves behind
    assert lines(STEP_LOSSES.format(test="self.box_loss is None"), "GPD105") == [8]


# a sentence VAE moves every tensor of its batch dict in a loop over the items
ITEMS_LOOP = """\
import torch
import torch.nn as nn
def to_var(x):
    if torch.cuda.is_available():
        x = x.cuda()
    return x
model = nn.Embedding(10, 4)
if torch.cuda.is_available():
    model = model.cuda()
for batch in torch.utils.data.DataLoader(data):
    for k, v in batch.items():
        if torch.is_tensor(v):
            {store}
    out = model(batch["input"])
"""


def test_a_dict_whose_items_a_loop_moves_is_on_the_device() -> None:
    for store in ("batch[k] = to_var(v)", "batch[k] = v.cuda()"):
        assert lines(ITEMS_LOOP.format(store=store), "GPD101") == [], store
    # a loop that moves nothing leaves the batch on the host
    assert lines(ITEMS_LOOP.format(store="print(k, v.shape)"), "GPD101") == [14]


# a recommender's bag embedding caches its offsets and moves them where the input is
OFFSETS = """\
import torch
import torch.nn as nn
class BagEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.EmbeddingBag(10, 4, mode="sum")
        self._offsets = None
    def forward(self, indices):
        if self._offsets is None:
            self._offsets = torch.arange(0, indices.numel()).long()
            {move}
        return self.embeddings(indices.view(-1), self._offsets)
model = BagEmbedding().cuda()
"""


def test_an_attribute_the_method_moves_where_its_input_is_is_placed() -> None:
    moved = "if indices.is_cuda: self._offsets = self._offsets.cuda()"
    assert lines(OFFSETS.format(move=moved), "GPD106") == []
    assert lines(OFFSETS.format(move="pass"), "GPD106") == [10]
