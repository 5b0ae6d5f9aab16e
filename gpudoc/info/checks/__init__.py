"""The doctor's checks, in the order the report shows them.

Each module declares its checks with `@check` (checks/base.py); the list below is the only
place that orders the groups. The summary check comes last: torch's own verdict, once the
causes are listed.
"""

from __future__ import annotations

from gpudoc.info.checks import (
    env,
    fabric,
    gpu,
    gpu_state,
    health,
    host,
    interconnect,
    pcie,
    software,
    summary,
)
from gpudoc.info.checks.base import Check, checks_of

GROUPS = (software, host, env, gpu, gpu_state, health, pcie, interconnect, fabric, summary)


def all_checks() -> tuple[Check, ...]:
    return tuple(declared for group in GROUPS for declared in checks_of(group.__name__))


__all__ = ["Check", "all_checks"]
