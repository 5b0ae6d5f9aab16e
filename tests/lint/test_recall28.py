"""Recall regressions from the twenty-eighth recall set (real bug reports), reduced and
rewritten here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# report 15: a model whose __init__ moves itself to a `device="cuda"` default
SELF_PLACED = """\
import torch
import torch.nn as nn
class ConvModel(nn.Module):
    def __init__(self, depth=1, device="cuda"):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.to(device)
    def forward(self, x):
        return self.fc(x)
if __name__ == "__main__":
    x = torch.randn(8, 4)
    model = ConvModel({args})
    out = model(x)
"""


def test_a_model_placed_by_its_own_cuda_default_meets_a_host_input() -> None:
    assert lines(SELF_PLACED.format(args="depth=2"), "GPD101") == [13]
    assert lines(SELF_PLACED.format(args='device="cuda:0"'), "GPD101") == [13]
    assert lines(SELF_PLACED.format(args='device="cpu"'), "GPD101") == []
    assert lines(SELF_PLACED.format(args="device=args.device"), "GPD101") == []


# report 10 (IBM's pytorch-seq2seq TopKDecoder): uninitialised legacy storage given sizes in
# forward, filled and added to the decoder's scores
SIZED = """\
import torch
import torch.nn as nn
class TopK(nn.Module):
    def __init__(self, rnn, k):
        super().__init__()
        self.rnn = rnn
        self.k = k
    def forward(self, inputs):
        batch_size = inputs.size(0)
        scores = {factory}
        scores.fill_(-float("inf"))
        out = self.rnn(inputs)
        scores += out.squeeze(1)
        return scores
"""


def test_legacy_storage_given_sizes_in_forward_is_a_host_factory() -> None:
    assert lines(SIZED.format(factory="torch.Tensor(batch_size * self.k, 1)"), "GPD106") == [10]
    assert lines(SIZED.format(factory="torch.FloatTensor(batch_size)"), "GPD106") == [10]
    # a conversion of data, or integer storage (an index buffer), is not what the rule is about
    assert lines(SIZED.format(factory="torch.Tensor(inputs.tolist())"), "GPD106") == []
    assert lines(SIZED.format(factory="torch.LongTensor(batch_size, 1)"), "GPD106") == []
