"""The known-correct shapes the issue lists: each is a small script that must draw no finding."""

from __future__ import annotations

import pytest

from gpudoc.lint.engine import lint_source

PRELUDE = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
"""
SHAPES = {
    "Net().to(device)": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(x)
net = Net().to(device)
for x, y in loader:
    out = net(x.to(device))
""",
    "model = model.to(device)": """
model = nn.Linear(4, 2)
model = model.to(device)
for x, y in loader:
    x = x.to(device)
    out = model(x)
""",
    "batch moved by a helper": """
def move(batch, device):
    return [t.to(device) for t in batch]
model = nn.Linear(4, 2).to(device)
for batch in loader:
    x, y = move(batch, device)
    out = model(x)
""",
    "batch moved by a collate function": """
def collate(samples):
    return torch.stack(samples).to(device)
fast = torch.utils.data.DataLoader(dataset, collate_fn=collate)
model = nn.Linear(4, 2).to(device)
for x in fast:
    out = model(x)
""",
    "batch moved by a dict comprehension": """
model = nn.Linear(4, 2).to(device)
for batch in loader:
    batch = {k: v.to(device) for k, v in batch.items()}
    out = model(**batch)
""",
    "non_blocking=True": """
model = nn.Linear(4, 2).cuda() if torch.cuda.is_available() else nn.Linear(4, 2)
for x, y in loader:
    x = x.to(device, non_blocking=True)
    out = model(x)
""",
    "device=x.device and *_like": """
class Head(nn.Module):
    def forward(self, x):
        mask = torch.ones(x.shape[0], device=x.device)
        noise = torch.randn_like(x)
        return x * mask[:, None] + noise
head = Head().to(device)
""",
    "register_buffer": """
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
    def forward(self, x):
        return x - self.mean
norm = Norm().to(device)
""",
    "accelerate prepare": """
from accelerate import Accelerator
accelerator = Accelerator()
model = nn.Linear(4, 2)
model, loader = accelerator.prepare(model, loader)
for x, y in loader:
    out = model(x)
""",
    "Lightning module": """
import pytorch_lightning as pl
class Lit(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.fc(x), y)
model = Lit()
trainer = pl.Trainer(accelerator="gpu")
trainer.fit(model, loader)
""",
    "set_default_device": """
torch.set_default_device("cuda")
model = nn.Linear(4, 2)
for x, y in loader:
    out = model(torch.randn(8, 4))
""",
    ".detach().cpu().numpy() and .item()": """
model = nn.Linear(4, 2).to(device)
for x, y in loader:
    out = model(x.to(device))
    arr = out.detach().cpu().numpy()
    val = out.sum().item()
    lst = out.tolist()
""",
    "BatchEncoding.to(device)": """
from transformers import AutoModel, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
model = AutoModel.from_pretrained("bert-base-uncased").to(device)
inputs = tokenizer("hello", return_tensors="pt")
inputs.to(device)
out = model(**inputs)
""",
    "0-dim CPU tensor with device tensors": """
model = nn.Linear(4, 2).to(device)
scale = torch.tensor(0.5)
for x, y in loader:
    out = model(x.to(device)) * scale
    loss = (out - y.to(device)).pow(2).mean() + torch.tensor(1e-3)
""",
    "a Dataset that moves its items": """
class OnDevice(torch.utils.data.Dataset):
    def __getitem__(self, i):
        return self.items[i].to(device)
model = nn.Linear(4, 2).to(device)
for x in torch.utils.data.DataLoader(OnDevice()):
    out = model(x)
""",
    "a plain list wrapped later in __init__": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4) for _ in range(2)]
        self.layers = nn.ModuleList(self.layers)
net = Net().to(device)
""",
    "CPU-only script": """
model = nn.Linear(4, 2)
model.load_state_dict(torch.load("w.pt"))
for x, y in loader:
    print(model(x).detach().numpy())
""",
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_known_correct_shape_is_quiet(name: str) -> None:
    prelude = (
        PRELUDE
        if name != "CPU-only script"
        else PRELUDE.replace(
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', ""
        )
    )
    result = lint_source(prelude + SHAPES[name], "shape.py")
    assert result.error is None
    assert [(f.line, f.code, f.message) for f in result.findings] == []
