"""A discarded move before a placed model, then NumPy on its output (GPD103 and GPD202: both
fixes are safe here, and `gpudoc lint --fix` alone applies them)."""

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
x = torch.randn(3, 4)
x.to(device)
out = model(x)
print("predictions", out.argmax(1).numpy())
