"""Precision regressions from the thirty-second held-out set (public repositories), reduced
and rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.engine import lint_paths

# dgcnn.pytorch's ScanNet script: the GPU count only sizes the batch of a GPU-only script
GPU_COUNT = """\
import torch
import torch.nn as nn
def evaluate(model, batches):
    per_step = {size}
    model = nn.DataParallel(model, device_ids=range(torch.cuda.device_count())).cuda()
    for x in batches:
        out = model(x[:per_step].cuda())
"""


def test_a_gpu_count_that_sizes_a_batch_is_no_cpu_fallback() -> None:
    assert lines(GPU_COUNT.format(size="6 * torch.cuda.device_count()"), "GPD203") == []
    test = "6 if torch.cuda.device_count() > 0 else 1"
    assert lines(GPU_COUNT.format(size=test), "GPD203") == [5, 7]


# qfettes' DeepRL-Tutorials: the base agent's __init__ calls the subclass's hook that builds the
# networks, then moves them to the device
BASE_AGENT = """\
import torch
class Agent:
    def __init__(self, device):
        self.device = device
        self.declare_networks()
        {move}
"""

SUBCLASS = """\
import torch
from base import Agent
class DistAgent(Agent):
    def declare_networks(self):
        self.model = torch.nn.Linear(4, 2)
    def act(self, s):
        x = torch.tensor([s], device=self.device)
        return self.model(x).argmax(1)
"""


def test_networks_a_hook_builds_and_the_base_init_moves(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\\nname = 'x'\\n")
    agent = tmp_path / "agent.py"
    agent.write_text(SUBCLASS)
    base = tmp_path / "base.py"
    base.write_text(BASE_AGENT.format(move="self.model = self.model.to(self.device)"))
    assert lint_paths([str(agent)], jobs=1, use_cache=False).findings == ()
    base.write_text(BASE_AGENT.format(move="pass"))
    found = lint_paths([str(agent)], jobs=1, use_cache=False).findings
    assert [(f.line, f.code) for f in found] == [(5, "GPD102")]


# nlp-with-transformers' NER notebook: a parameter named like a device global holds NumPy
SHADOWED = """\
import numpy as np
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 3).to(device)
predictions = torch.argmax(model(torch.randn(2, 8).to(device)), dim=-1)
def align({params}):
    return np.argmax(predictions, axis=1)
def compute_metrics(eval_pred):
    return align(eval_pred.predictions, eval_pred.label_ids)
"""


def test_a_parameter_hides_the_global_of_its_name() -> None:
    assert lines(SHADOWED.format(params="predictions, label_ids"), "GPD202") == []
    assert lines(SHADOWED.format(params="preds, label_ids"), "GPD202") == [7]
