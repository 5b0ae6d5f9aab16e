"""Precision regressions from the thirty-second held-out set (public repositories), reduced
and rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

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
