"""GPD204 on a TensorDataset of GPU tensors read by forked DataLoader workers (the shape of
pytorch/pytorch#4377, "Cuda error (3): initialization error" with num_workers > 0)."""

from __future__ import annotations

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(12, 4){move}
labels = torch.arange(12){move}
dataset = TensorDataset(features, labels)
loader = DataLoader(dataset, batch_size=4, {options})
for x, y in loader:
    print(x.sum() + y.sum())
"""


def lines(move: str, options: str) -> list[int]:
    source = SCRIPT.format(move=move, options=options)
    result = lint_source(source, "x.py", LintConfig(select=("GPD204",)))
    return [finding.line for finding in result.findings]


def test_gpu_tensors_indexed_by_forked_workers_are_reported_at_num_workers() -> None:
    assert lines(".to(device)", "num_workers=2") == [7]
    assert lines(".cuda()", "shuffle=True, num_workers=4") == [7]


def test_host_tensors_or_no_workers_or_spawned_workers_are_fine() -> None:
    assert lines("", "num_workers=2") == []
    assert lines(".to(device)", "num_workers=0") == []
    assert lines(".to(device)", "num_workers=2") == [7]
    assert lines(".to(device)", 'num_workers=2, multiprocessing_context="spawn"') == []
