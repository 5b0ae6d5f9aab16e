"""`lsmod` (also `| grep nvidia`): the loaded GPU and RDMA kernel modules, as the live path keeps
them from /proc/modules (nvidia*, nv_peer_mem, nouveau, mlx*, ib_*, rdma*)."""

from __future__ import annotations

import re

from gpudoc.info.host_links import MODULE_PREFIXES
from gpudoc.info.reports.facts import Facts

FORMAT = "lsmod"
_HEADER = re.compile(r"^\s*Module\s+Size\s+Used by\s*$", re.MULTILINE)
_MODULE = re.compile(r"^\s*([a-z0-9_]+)\s+\d+\s+\d+(?:\s+\S+)?\s*$")


def looks_like(text: str) -> bool:
    names = [m.group(1) for line in text.splitlines() if (m := _MODULE.match(line))]
    return bool(_HEADER.search(text)) or (
        len(names) >= 2 and any(n.startswith("nvidia") for n in names)
    )


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    names = {m.group(1) for line in text.splitlines() if (m := _MODULE.match(line))}
    facts.host["kernel_modules"] = tuple(sorted(n for n in names if n.startswith(MODULE_PREFIXES)))
    return facts
