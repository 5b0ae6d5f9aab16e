"""The check shown after every other: torch's own verdict, once the causes are listed."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import nvidia_gpu_present, torch_of
from gpudoc.info.model import Finding, InfoReport


@check(
    "torch.cuda.is_available() on a CUDA build",
    "fail/warn",
    pre.all_of(
        pre.torch_cuda_build, pre.reported("whether CUDA is available", "torch.cuda_available")
    ),
)
def cuda_unavailable(report: InfoReport) -> Iterator[Finding]:
    torch = torch_of(report)
    if torch.build != "cuda" or torch.cuda_available is not False:
        return
    reason = torch.unavailable_reason or "; ".join(torch.init_warnings)
    said = f"torch says: {reason}" if reason else "torch gives no reason"
    yield finding(
        "fail" if nvidia_gpu_present(report) else "warn",
        f"torch.cuda.is_available() is False; {said}.",
        "see the other findings for the cause; none found means CUDA sees no device "
        "(check CUDA_VISIBLE_DEVICES and `nvidia-smi`)",
    )
