"""A test whose model stays on the CPU, with a discarded `x.cuda()` (GPD103): assigning it back
would break the test on every GPU machine, so that fix is unsafe."""

import torch

model = torch.nn.Linear(4, 2)
x = torch.randn(3, 4)
x.cuda()
assert model(x).shape == (3, 2)
print("shape ok")
