"""`gpudoc smoke --distributed`: one rank of a torchrun or srun job.

Every rank runs the same phases; rank 0 assembles the report:

1. ``info``: where the rank runs (host, device, versions), posted to the job's key-value store.
2. ``smoke``: the single-device smoke on the rank's device, in a child process with a watchdog
   (``spawn.run_workers``): a crash or hang there is a failed row, not a dead rank.
3. ``collectives``: exact all_reduce, all_gather and broadcast; all_reduce bus bandwidth.
4. ``ddp``: DDP steps; every rank must end bitwise identical, and near one process that trains
   on the whole global batch.

Results travel through the store (a TCPStore: torchrun's agent store, or rank 0's under srun), so
rank 0 can report on whatever arrived even when a rank is lost. Before each collective phase a
gate in the store (``gate.py``) waits for every rank, at most the timeout, and less for a rank
whose heartbeat has stopped (``stall_s``); no rank enters a collective with a missing peer. The
process group has the same timeout, so a collective that stalls fails instead of hanging the
job. A rank whose heartbeat stopped is named HUNG if its process is still there (``liveness``:
/proc on its node, its lifeline port from anywhere), else dead.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import signal
import socket
import sys
import time
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from gpudoc import __version__
from gpudoc.exit_codes import FINDINGS, OK, UsageError
from gpudoc.smoke import checks, collectives, gate, inject, job_report, launch
from gpudoc.smoke.data import load
from gpudoc.smoke.device import configure
from gpudoc.smoke.jobstore import JobStore
from gpudoc.smoke.liveness import Lifeline, alive_though_silent, kill_children
from gpudoc.smoke.model import DeviceResult, DistributedReport, RankInfo, SmokeConfig
from gpudoc.smoke.spawn import WorkerSpec, run_workers

GRACE_S = 10.0  # slack for start-up skew between ranks
STALL_S = 30.0  # a heartbeat (once a second) that stands still this long: the rank is lost
LAST_OUT_S = 1.0  # torchrun looks at its workers every 0.1 s
STOPPED = "the launcher stopped the job (SIGTERM) after a rank failed; its summary names it too"


class Job:
    """This process's rank: runs the phases, and at rank 0 gathers and judges the job."""

    def __init__(
        self,
        config: SmokeConfig,
        env: launch.LaunchEnv,
        device_kind: str,
        strict: bool = False,
        stall_s: float = STALL_S,
    ) -> None:
        self.env, self.stall_s = env, stall_s
        self.config, self.device_kind, self.strict = config, device_kind, strict
        self.rank, self.world = self.env.rank, self.env.world_size
        self.faults = {f.phase: f for f in inject.faults_for_rank(self.rank)}
        self.timeout = timedelta(seconds=config.timeout_s)
        self.started = time.monotonic()
        self.store: JobStore
        # The node as the launcher numbers them (torchrun's agent, Slurm's node id): /proc tells
        # about the ranks of this node only.
        self.node = os.environ.get("GROUP_RANK", os.environ.get("SLURM_NODEID"))
        self.device = torch.device("cpu")
        self.ready = True  # False once this rank cannot take part in collectives
        self.gate_errors: dict[str, str] = {}
        self.ran: list[str] = []
        self.stopping = False  # the launcher sent SIGTERM: another rank failed
        self.own: DeviceResult | None = None  # this rank's device smoke, once it has ended

    # -- the phases -------------------------------------------------------------------------

    def run(self) -> DistributedReport | None:
        """All phases on this rank; the report at rank 0, None elsewhere."""
        os.environ.update(self.env.variables())
        agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        try:
            timeout = self.timeout + timedelta(seconds=GRACE_S)
            self.store = JobStore(self.env, agent, timeout, on_lost=self._store_lost)
        except Exception as error:  # no verdict possible: exit 2 with one line
            where = f"{self.env.master_addr}:{self.env.master_port}"
            message = f"rank {self.rank}: no job store at {where}: {_one_line(error)}"
            raise UsageError(message) from None
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self.store.post("info", asdict(self._info()))
        with contextlib.suppress(OSError):  # without it, a frozen rank elsewhere reads as dead
            lifeline = Lifeline(self.env.master_addr, self.env.master_port)
            self.store.post("lifeline", {**lifeline.address(), "node": self.node})
        joined = self._init_groups()
        self._strike("start")
        self.own = self._smoke()
        self.store.post("smoke", self.own.to_dict())
        corrupt = self._strike("collectives")
        if joined and self._gate("collectives"):
            self._collectives(corrupt)
            corrupt = self._strike("ddp")
            if self._gate("ddp"):
                self._ddp(corrupt)
                self._gate("report")
        return self._report() if self.rank == 0 else None

    def _info(self) -> RankInfo:
        return RankInfo(
            rank=self.rank,
            local_rank=self.env.local_rank,
            host=socket.gethostname(),
            pid=os.getpid(),
            device=self._device_label(),
            launcher=self.env.launcher,
            gpudoc_version=__version__,
            torch_version=torch.__version__,
            python_version=platform.python_version(),
        )

    def _device_label(self) -> str:
        """cpu, or this rank's GPU: one visible GPU per task (srun --gpus-per-task=1) means
        cuda:0, else the local rank's. A rank without it fails its smoke and stops the job
        before the collectives (NCCL with a rank missing would only hang)."""
        if self.device_kind == "cpu":
            return "cpu"
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = 0 if count == 1 else self.env.local_rank
        self.ready = self.ready and index < count
        return f"cuda:{index}"

    def _init_groups(self) -> bool:
        backend = "gloo" if self.device_kind == "cpu" else "cpu:gloo,cuda:nccl"
        try:
            dist.init_process_group(
                backend,
                store=dist.PrefixStore("pg", self.store.store),
                rank=self.rank,
                world_size=self.world,
                timeout=self.timeout,
            )
        except Exception as error:  # a rank that never starts: init times out
            self.gate_errors["init"] = _one_line(error)
            return False
        return True

    def _smoke(self) -> DeviceResult:
        label = self._device_label()
        if not self.ready:
            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            what = f"no {label} for local rank {self.env.local_rank}: {count} CUDA devices visible"
            hint = f"{what} (for a CPU-only job: --device cpu)"
            return DeviceResult(
                self.rank, label, "FAIL", hint, checks=(checks.error("start", what),)
            )
        env = {"OMP_NUM_THREADS": str(self.config.cpu_threads)}
        fault = self.faults.get("smoke")
        env[inject.ENV] = f"{fault.kind}:0" if fault else ""
        torch_device = label
        if label.startswith("cuda"):
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            index = int(label.split(":")[1])
            env["CUDA_VISIBLE_DEVICES"] = visible.split(",")[index] if visible else str(index)
            torch_device = "cuda:0"
        # Its own session: when another rank dies, torchrun's SIGTERM to this rank's process
        # group must not kill the smoke rank 0 is about to report (other ranks end it at once).
        spec = WorkerSpec(0, label, torch_device, env, own_session=True)
        if self.device_kind == "cuda":
            _import_ddp_meanwhile()
        result = run_workers(self.config, [spec], self.config.timeout_s, lambda i, e: None)[0]
        return replace(result, index=self.rank)

    def _collectives(self, corrupt: collectives.Corrupt | None) -> None:
        try:
            self._bind_device()
            found = collectives.check_collectives(self.rank, self.world, self.device, corrupt)
            self.store.post("collectives", asdict(found))
        except Exception as error:
            self.ready = False
            self.store.post("collectives", {"error": _one_line(error)})

    def _ddp(self, corrupt: collectives.Corrupt | None) -> None:
        try:
            configure(self.config.cpu_threads)
            data = load(self.config.data_root)
            recipe, seed = self.config.recipe, self.config.seed
            net, losses = collectives.ddp_steps(
                data.to(self.device), recipe, seed, self.rank, self.world, self.device
            )
            if corrupt is not None:
                corrupt(next(net.parameters()).data)
            reference = collectives.reference(data, recipe, seed, self.world)
            self.store.post("ddp", asdict(collectives.outcome(net, losses, reference)))
        except Exception as error:
            self.ready = False
            self.store.post("ddp", {"error": _one_line(error)})

    def _bind_device(self) -> None:
        label = self._device_label()
        if label.startswith("cuda"):
            self.device = torch.device(label)
            torch.cuda.set_device(self.device)

    def _strike(self, phase: str) -> collectives.Corrupt | None:
        """An injected fault in this rank's own process, before the gate of ``phase``: ``crash``
        and ``hang`` never arrive there; ``nan`` and ``bitflip`` spoil the phase's results."""
        fault = self.faults.get(phase)
        if fault is None:
            return None
        self.store.post("fault", {"kind": fault.kind, "phase": phase})
        inject.stop(fault.kind)
        return lambda tensor: inject.spoil(fault.kind, tensor)

    # -- coordination -----------------------------------------------------------------------

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        """torchrun stops every rank when one dies. Rank 0 stays (torchrun waits 30 s before
        SIGKILL) to report who is missing; the others say they were stopped, then go."""
        if self.rank == 0:
            self.stopping = True
            self.gate_errors["launcher"] = STOPPED
            return
        if self.store.stopped_beating(0):  # rank 0 is gone: no one else will say anything
            self._say(f"{self.store.rank_0_state(self._hung(0))}: no job report")
            kill_children()
            os._exit(FINDINGS)
        with contextlib.suppress(Exception):
            self.store.post("stopped", {"signal": "SIGTERM"})
        kill_children()  # a device smoke still running would outlive this rank
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def _hung(self, rank: int) -> str | None:
        """How ``rank``, whose heartbeat stopped, is known to be alive (frozen), else None."""
        posted = self.store.posted
        return alive_though_silent(posted("info", rank), posted("lifeline", rank), self.node)

    def _store_lost(self, error: BaseException) -> None:
        """The job store is gone (torchrun killed, or rank 0 that hosted it): the job is over.
        Called from the heartbeat thread: say so in one line, end the smoke, exit at once."""
        where = f"{self.env.master_addr}:{self.env.master_port}"
        host = "the launcher" if self.store.agent else "rank 0"
        self._say(f"lost the job store at {where} ({_one_line(error)}): {host} is gone")
        kill_children()
        os._exit(FINDINGS)

    def _say(self, what: str) -> None:
        """One line on stderr for a rank that ends without rank 0's report: with its own smoke."""
        own = self.own
        smoke: str = "had not finished" if own is None else own.status
        if own is not None and own.reason:
            smoke += f" ({own.reason})"
        sys.stderr.write(f"gpudoc: rank {self.rank}: {what}; this rank's device smoke {smoke}\n")
        sys.stderr.flush()

    def _gate(self, phase: str) -> bool:
        """Wait for every rank (naming those that never come); go on only if all are ready."""
        timeout = self.timeout.total_seconds()
        if phase == "collectives":  # the slowest rank's smoke may take the whole timeout
            timeout += min(timeout, GRACE_S * 3)
        ready = self.ready and not self.stopping
        try:
            error = gate.wait(
                self.store, phase, ready, timeout, self.stall_s, stopping=lambda: self.stopping
            )
        except Exception as lost:  # the store is gone: _store_lost ends this rank
            error = _one_line(lost)
        if error is not None:
            self.gate_errors[phase] = error
            return False
        self.ran.append(phase)
        return True

    def _expected(self) -> set[str]:
        """The phases every rank has posted by now, if all went well."""
        return (
            {"info", "smoke"}
            | ({"collectives"} if "ddp" in self.ran else set())
            | ({"ddp"} if "report" in self.ran else set())
        )

    def _report(self) -> DistributedReport:
        wait = 2.0 if self.gate_errors and not self.stopping else 1.0
        deadline = time.monotonic() + wait
        posted = {
            phase: self.store.collect(phase, deadline if phase in self._expected() else 0.0)
            for phase in ("info", "smoke", "collectives", "ddp", "fault", "stopped")
        }
        dead = self.store.dead() if self.gate_errors else set()
        lifelines = self.store.collect("lifeline", 0.0)
        frozen = {
            r: how
            for r in dead
            if (how := alive_though_silent(posted["info"].get(r), lifelines.get(r), self.node))
        }
        beats = {r: age for r in dead if (age := self.store.since_beat(r)) is not None}
        return job_report.assemble(
            self.config,
            self.world,
            "gloo" if self.device_kind == "cpu" else "nccl",
            posted,
            ran=tuple(self.ran),
            gate_errors=self.gate_errors,
            dead=dead - set(frozen),
            frozen=frozen,
            beats=beats,
            seconds=time.monotonic() - self.started,
            strict=self.strict,
        )

    def finish(self, report: DistributedReport | None) -> int:
        """Every rank exits with the job's verdict: rank 0 publishes it, the others read it."""
        if report is not None:
            self.store.stop_beating()
            failed = [r.info.rank for r in report.ranks if r.status in ("FAIL", "HUNG")]
            readers = sum(1 for r in report.ranks[1:] if r.check("arrived") is None)
            self.store.publish({"overall": report.overall, "failed": failed}, readers)
            verdict: dict[str, Any] = {"overall": report.overall, "failed": failed}
        else:
            verdict = self.store.verdict(self.timeout * 3, self._hung)
            self.store.stop_beating()
        if dist.is_initialized() and not self.gate_errors:  # with a peer lost it could block
            dist.destroy_process_group()
        if verdict["overall"] in ("PASS", "WARN"):
            return OK
        if self.rank not in verdict["failed"]:
            # The failed ranks exit first, so that torchrun's "Root Cause" names one of them.
            time.sleep(LAST_OUT_S)
        return FINDINGS


def _import_ddp_meanwhile() -> None:
    """DistributedDataParallel's constructor imports ``torch._dynamo`` (2.4 CPU-s measured here):
    a GPU rank imports it while it waits for its device smoke, on the CPU cores a GPU's smoke
    leaves idle, instead of after it. A CPU rank does not: its smoke runs on the CPU, so the
    import is not free there, and a job that stops before DDP (a rank failed, hung or lost)
    would pay it for nothing. Not a daemon thread: an exit through the interpreter's teardown waits
    for the import, never cuts it short (``exit_now`` has no teardown to race with); a failed
    import is left for DDP's own to raise."""
    import concurrent.futures
    import importlib

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gpudoc-import")
    pool.submit(importlib.import_module, "torch._dynamo")
    pool.shutdown(wait=False)


def _one_line(error: BaseException) -> str:
    """The first line of an error, without the C++ source location gloo and c10d put first."""
    text = _SOURCE_LOCATION.sub("", str(error)).strip().splitlines()
    first = text[0].split(". ")[0] if text else ""  # gloo goes on with advice and an emoji
    return f"{type(error).__name__}: {first}"[:200]


_SOURCE_LOCATION = re.compile(r"\[[^\]\s]*\.(?:cc|cpp|h):\d+\] ")
