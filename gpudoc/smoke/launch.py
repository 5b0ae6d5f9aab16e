"""Where this process sits in a distributed job: torchrun's variables, else Slurm's. Stdlib only.

torchrun sets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``. Under
``srun`` without torchrun they are absent and Slurm's stand in: ``SLURM_PROCID`` is the rank,
``SLURM_LOCALID`` the local rank, ``SLURM_NTASKS`` the world size, and the first host of the step's
node list (where Slurm puts task 0) the rendezvous address. Variables a user sets win over Slurm's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpudoc.exit_codes import UsageError

DEFAULT_PORT = 29500
# Under srun without MASTER_PORT: a port derived from the job id, so that two jobs sharing a first
# node do not collide; 15000-29999 stays below Linux's ephemeral range (32768-60999).
SLURM_PORT_BASE, SLURM_PORT_SPAN = 15000, 15000

NO_LAUNCHER = (
    "--distributed needs a launcher: torchrun --nproc-per-node=N -m gpudoc smoke --distributed, "
    "or srun --ntasks-per-node=N gpudoc smoke --distributed (RANK/WORLD_SIZE or SLURM_PROCID/"
    "SLURM_NTASKS not set)"
)


class LaunchError(UsageError):
    """Not started by a launcher, or its variables make no sense: exit 2 on this rank."""


@dataclass(frozen=True)
class LaunchEnv:
    rank: int
    local_rank: int
    world_size: int
    master_addr: str
    master_port: int
    launcher: str  # "torchrun", "srun" or "env" (RANK etc. set by hand or by another tool)
    attempt: int = 0  # torchrun's restart count: keeps a restarted job's keys apart

    def variables(self) -> dict[str, str]:
        """The torch.distributed ``env://`` variables for this rank."""
        return {
            "RANK": str(self.rank),
            "LOCAL_RANK": str(self.local_rank),
            "WORLD_SIZE": str(self.world_size),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }


def from_environ(environ: Mapping[str, str]) -> LaunchEnv:
    """This rank's place in the job; LaunchError if no launcher started it."""
    if "RANK" in environ and "WORLD_SIZE" in environ:
        launcher = "torchrun" if "TORCHELASTIC_RUN_ID" in environ else "env"
        env = LaunchEnv(
            rank=_int(environ, "RANK"),
            local_rank=_int(environ, "LOCAL_RANK", default=environ.get("SLURM_LOCALID", "0")),
            world_size=_int(environ, "WORLD_SIZE"),
            master_addr=environ.get("MASTER_ADDR", "127.0.0.1"),
            master_port=_int(environ, "MASTER_PORT", default=str(DEFAULT_PORT)),
            launcher=launcher,
            attempt=_int(environ, "TORCHELASTIC_RESTART_COUNT", default="0"),
        )
    elif "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ:
        env = LaunchEnv(
            rank=_int(environ, "SLURM_PROCID"),
            local_rank=_int(environ, "SLURM_LOCALID", default="0"),
            world_size=_int(environ, "SLURM_NTASKS"),
            master_addr=environ.get("MASTER_ADDR") or _slurm_head(environ),
            master_port=_int(environ, "MASTER_PORT", default=str(_slurm_port(environ))),
            launcher="srun",
        )
    else:
        raise LaunchError(NO_LAUNCHER)
    if not 0 <= env.rank < env.world_size:
        raise LaunchError(f"rank {env.rank} is outside a job of {env.world_size} ranks")
    return env


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: ``gpu[07-12,20],cpu01`` -> ``gpu07``."""
    depth, end = 0, len(nodelist)
    for position, char in enumerate(nodelist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            end = position
            break
    return re.sub(r"\[([^\]]*)\]", lambda m: re.split(r"[-,]", m.group(1))[0], nodelist[:end])


def _slurm_head(environ: Mapping[str, str]) -> str:
    for name in ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        if environ.get(name):
            return first_host(environ[name])
    if environ.get("SLURM_LAUNCH_NODE_IPADDR"):
        return environ["SLURM_LAUNCH_NODE_IPADDR"]
    raise LaunchError("under srun, set MASTER_ADDR: no SLURM_STEP_NODELIST or SLURM_JOB_NODELIST")


def _slurm_port(environ: Mapping[str, str]) -> int:
    job = environ.get("SLURM_JOB_ID", "")
    return SLURM_PORT_BASE + int(job) % SLURM_PORT_SPAN if job.isdigit() else DEFAULT_PORT


def _int(environ: Mapping[str, str], name: str, default: str | None = None) -> int:
    text = environ.get(name, default)
    if text is None or not text.strip().lstrip("-").isdigit():
        raise LaunchError(f"{name}={text!r}: expected an integer")
    return int(text)
