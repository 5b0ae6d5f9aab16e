"""The data of gpudoc smoke: frozen dataclasses that cross process boundaries as JSON.

Every class round-trips: ``from_json(Cls, json.loads(json.dumps(obj.to_dict()))) == obj``
(gpudoc/jsondata.py). A child process (one per device, or one per rank under torchrun) sends its
``DeviceResult`` to the parent this way. Missing values are ``None``; units are in field names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

SCHEMA_VERSION = 1

Verdict = Literal["pass", "warn", "fail", "skip"]
Status = Literal["PASS", "WARN", "FAIL", "HUNG"]
Value = float | int | str | bool | None


@dataclass(frozen=True)
class Recipe:
    """How one training run is done. ``lockstep_steps`` are sampled against a float64 recompute."""

    name: str
    batch_size: int
    lr: float
    momentum: float
    steps: int
    lockstep_steps: tuple[int, ...] = (0, 10, 50)


RECIPES = {
    # The gate: loss ratio <= 0.13 and held-out accuracy >= 0.90 on four seeds (measured).
    "default": Recipe("default", batch_size=32, lr=0.01, momentum=0.9, steps=300),
    # The tutorial's batch 4 and lr 0.001: it needs ~1000 steps before it leaves ln(10).
    "tutorial": Recipe("tutorial", batch_size=4, lr=0.001, momentum=0.9, steps=1500),
}


@dataclass(frozen=True)
class SmokeConfig:
    """Everything a worker needs to do one device's run; identical for every device of a run."""

    recipe: Recipe = RECIPES["default"]
    quick: bool = False
    seed: int = 0
    data_root: str | None = None
    throughput_batch_sizes: tuple[int, ...] = (4, 256)
    throughput_seconds: float = 0.3
    cpu_threads: int = 1
    timeout_s: float = 120.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CheckResult:
    """One check on one device: what was measured, against what, and the verdict."""

    id: str
    verdict: Verdict
    value: Value = None
    threshold: Value = None
    detail: str | None = None


@dataclass(frozen=True)
class Throughput:
    """Training images per second at one batch size, after warm-up (fp32, TF32 off)."""

    batch_size: int
    images_per_s: float
    speedup_vs_cpu: float | None = None


@dataclass(frozen=True)
class DeviceInfo:
    """What the device and its software stack are; the identity used to group identical devices."""

    device: str
    name: str | None = None
    kind: str | None = None
    uuid: str | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    memory_total_bytes: int | None = None
    driver_version: str | None = None
    torch_version: str | None = None
    cuda_version: str | None = None
    cudnn_version: int | None = None
    cpu_capability: str | None = None
    threads: int | None = None
    deterministic: bool | None = None
    fp32_precision_matmul: str | None = None
    fp32_precision_conv: str | None = None

    def identity(self) -> tuple[Value, ...]:
        """Devices with equal identity must compute the same bits. Which device and its serial
        do not matter; for a GPU neither do the host's threads and ISA (the data's hash covers
        what the host computes), so GPUs on different hosts of a job can vote together."""
        ignored = {"device", "uuid"}
        if self.kind == "cuda":
            ignored |= {"threads", "cpu_capability"}
        return tuple(getattr(self, f.name) for f in fields(self) if f.name not in ignored)


@dataclass(frozen=True)
class DeviceResult:
    """One device's run. ``index`` is the worker's index (0-based, in command-line order).

    ``loss_first`` and ``loss_last`` are the mean losses of the first and last tenth of the steps.
    """

    index: int
    device: str
    status: Status
    reason: str | None = None
    info: DeviceInfo | None = None
    checks: tuple[CheckResult, ...] = ()
    loss_first: float | None = None
    loss_last: float | None = None
    heldout_accuracy: float | None = None
    lockstep_max_rel_err: float | None = None
    fingerprint: str | None = None
    data_sha256: str | None = None
    throughput: tuple[Throughput, ...] = ()
    seconds: float | None = None
    agreement: str | None = None
    injected_fault: str | None = None
    # Fingerprints of runs A, B and the re-run C (only when A and B differ), in that order;
    # ``fingerprint`` is the one the device reproduced (checks.reproducible).
    run_fingerprints: tuple[str, ...] = ()

    def check(self, check_id: str) -> CheckResult | None:
        return next((c for c in self.checks if c.id == check_id), None)

    def with_check(self, new: CheckResult) -> DeviceResult:
        """This result with ``new`` added (or replacing the check of the same id), status redone."""
        checks = (*(c for c in self.checks if c.id != new.id), new)
        return replace(self, checks=checks, status=status_of(checks, self.status))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_of(checks: tuple[CheckResult, ...], current: Status = "PASS") -> Status:
    """HUNG stays HUNG; otherwise the worst verdict of the checks decides."""
    if current == "HUNG":
        return current
    verdicts = {c.verdict for c in checks}
    if "fail" in verdicts:
        return "FAIL"
    return "WARN" if "warn" in verdicts else "PASS"


@dataclass(frozen=True)
class GoldenRef:
    """The known-good report that ``--golden FILE`` compared lone devices with."""

    path: str
    sha256: str
    host: str | None = None
    started_utc: str | None = None
    gpudoc_version: str | None = None
    devices: int = 0


@dataclass(frozen=True)
class SmokeReport:
    """The whole run: settings, every device's result, and the overall verdict."""

    config: SmokeConfig
    results: tuple[DeviceResult, ...]
    overall: Status
    gpudoc_version: str
    seconds: float
    strict: bool = False
    schema_version: int = SCHEMA_VERSION
    notes: tuple[str, ...] = field(default=())
    host: str | None = None
    started_utc: str | None = None  # ISO 8601, e.g. 2026-11-21T20:31:05Z
    golden: GoldenRef | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema_version": data.pop("schema_version"), **data}


@dataclass(frozen=True)
class RankInfo:
    """Where one rank of a ``--distributed`` job runs; None where a rank never said."""

    rank: int
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: str | None = None
    launcher: str | None = None
    gpudoc_version: str | None = None
    torch_version: str | None = None
    python_version: str | None = None


@dataclass(frozen=True)
class RankResult:
    """One rank: its single-device smoke, its share of the collective and DDP checks."""

    info: RankInfo
    status: Status
    reason: str | None = None
    smoke: DeviceResult | None = None
    checks: tuple[CheckResult, ...] = ()
    ddp_fingerprint: str | None = None
    seconds: float | None = None

    def check(self, check_id: str) -> CheckResult | None:
        return next((c for c in self.checks if c.id == check_id), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DistributedReport:
    """A whole ``--distributed`` job as rank 0 saw it: one row per rank, one verdict."""

    config: SmokeConfig
    world_size: int
    backend: str
    ranks: tuple[RankResult, ...]
    overall: Status
    gpudoc_version: str
    seconds: float
    all_reduce_busbw_gb_per_s: float | None = None
    bandwidth_bytes: int | None = None
    strict: bool = False
    schema_version: int = SCHEMA_VERSION
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema_version": data.pop("schema_version"), **data}
