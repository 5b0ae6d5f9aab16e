"""pytorch/examples word_language_model, reduced: a whole model reloaded from a checkpoint the
script did not write, then fed data on the device the script chose (GPD201 with a fix)."""

import sys

import torch

if torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")
with open(sys.argv[1], "rb") as f:
    model = torch.load(f, weights_only=False)
data = torch.randn(3, 4).to(device)
print("output on", model(data).device)
