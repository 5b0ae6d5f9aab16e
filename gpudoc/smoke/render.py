"""The only code of gpudoc smoke that writes output: live progress, the table, the summary, JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpudoc.smoke.model import DeviceResult, DistributedReport, RankResult, SmokeReport

STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "HUNG": "bold red"}
PHASES = ("data", "train A", "train B", "train C", "evaluate", "throughput")
RERUN = "train C"  # only when A and B differ: the bar skips it otherwise


class LiveProgress:
    """One progress bar per worker on stderr, fed by worker events from reader threads."""

    def __init__(self, console: Console, enabled: bool) -> None:
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("{task.fields[label]:<12}"),
            BarColumn(bar_width=30),
            TextColumn("{task.fields[phase]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.tasks: dict[int, TaskID] = {}
        self.lock = threading.Lock()

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            self.progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.enabled:
            self.progress.stop()

    def on_event(self, index: int, event: dict[str, Any]) -> None:
        if not self.enabled:
            return
        with self.lock:
            if index not in self.tasks:
                label = f"{index} {event.get('device', '')}"
                phase = "starting (imports torch)"
                self.tasks[index] = self.progress.add_task("", total=100, label=label, phase=phase)
            task = self.tasks[index]
            kind = event.get("event")
            if kind == "progress":
                phase = str(event["phase"])
                done = PHASES.index(phase) if phase in PHASES else 0
                fraction = (done + event["done"] / max(1, event["total"])) / len(PHASES)
                label = f"{phase} {event['done']}/{event['total']}"
                if phase == RERUN:
                    label = f"A≠B: re-run C {event['done']}/{event['total']}"
                self.progress.update(task, completed=100 * fraction, phase=label)
            elif kind == "inject":
                self.progress.update(task, phase=f"injecting {event['fault']}")
            elif kind in ("result", "done"):
                status = event.get("status") or event.get("result", {}).get("status", "")
                self.progress.update(task, completed=100, phase=status)


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _loss(result: DeviceResult) -> str:
    if result.loss_first is None and result.loss_last is None:
        return "-"
    return f"{_fmt(result.loss_first, '.2f')}→{_fmt(result.loss_last, '.2f')}"


def _rate(value: float) -> str:
    if value >= 100_000:
        return f"{value / 1000:.0f}k"
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"


def _speed(result: DeviceResult) -> str:
    return " / ".join(_rate(t.images_per_s) for t in result.throughput) or "-"


def _speedup(result: DeviceResult) -> str:
    if result.device == "cpu":
        return "-"
    parts = [_fmt(t.speedup_vs_cpu, ".1f") + "×" for t in result.throughput if t.speedup_vs_cpu]
    return " / ".join(parts) or "-"


RESULT_COLUMNS = (
    ("loss", "left"),
    ("acc", "right"),
    ("Δfp64", "right"),
    ("fingerprint", "left"),
    ("agree", "left"),
)
"""The device smoke's own columns, shared by the device table and the per-rank table."""


def _result_cells(result: DeviceResult | None) -> tuple[str, ...]:
    if result is None:
        return ("-",) * len(RESULT_COLUMNS)
    return (
        _loss(result),
        _fmt(result.heldout_accuracy, ".2f"),
        _fmt(result.lockstep_max_rel_err, ".1e"),
        _fingerprint(result),
        result.agreement or "-",
    )


def _fingerprint(result: DeviceResult) -> str:
    """Its first 12 hex digits; after a re-run, how many of the runs gave it ("2/3")."""
    short = (result.fingerprint or "-")[:12]
    runs = result.run_fingerprints
    if len(runs) <= 2 or result.fingerprint is None:
        return short
    return f"{short} {runs.count(result.fingerprint)}/{len(runs)}"


Cell = Callable[[DeviceResult], str]


def _name(result: DeviceResult) -> str:  # also a rank's device smoke
    return (result.info.name if result.info else None) or "-"


def _status(result: DeviceResult) -> str:
    return f"[{STYLE[result.status]}]{result.status}[/]"


def _result_column(position: int) -> Cell:
    return lambda result: _result_cells(result)[position]


def _columns(report: SmokeReport) -> dict[str, tuple[str, Cell]]:
    """Every column of the device table: title -> (justify, cell)."""
    sizes = "/".join(str(b) for b in report.config.throughput_batch_sizes)
    columns: dict[str, tuple[str, Cell]] = {
        "#": ("right", lambda r: str(r.index)),
        "device": ("left", lambda r: r.device),
        "name": ("left", _name),
        "status": ("left", _status),
    }
    for position, (title, justify) in enumerate(RESULT_COLUMNS):
        columns[title] = (justify, _result_column(position))
    columns[f"img/s b{sizes}"] = ("right", _speed)
    columns["×cpu"] = ("right", _speedup)
    columns["s"] = ("right", lambda r: _fmt(r.seconds, ".1f"))
    return columns


# Too narrow for one table (80 columns, or a long GPU name): the verdicts, then the hardware.
VERDICT_COLUMNS = ("#", "device", "status", "loss", "acc", "Δfp64", "fingerprint", "agree", "s")
HARDWARE_COLUMNS = ("#", "device", "name", "img/s", "×cpu")


def table(report: SmokeReport, only: tuple[str, ...] | None = None) -> Table:
    """The device table; ``only`` keeps these columns ("img/s" names "img/s b4/256")."""
    grid = Table(box=None, pad_edge=False, header_style="bold")
    columns = _columns(report)
    kept = [t for t in columns if only is None or t.split(" ")[0] in only]
    for title in kept:
        # Narrow: "agree" may fold ("run A ≠ golden") rather than cut a column off.
        wrap = only is not None and title == "agree"
        grid.add_column(title, justify=columns[title][0], no_wrap=not wrap)  # type: ignore[arg-type]
    for r in report.results:
        grid.add_row(*(columns[title][1](r) for title in kept))
    return grid


def _width(grid: Table, console: Console) -> int:
    """The width the table needs (measure() clamps to the console's: measure unbounded)."""
    return console.measure(grid, options=console.options.update_width(10_000)).maximum


def device_tables(report: SmokeReport, console: Console) -> list[Table]:
    """One table when it fits the console's width, else two narrower ones."""
    wide = table(report)
    if _width(wide, console) <= console.width:
        return [wide]
    return [table(report, VERDICT_COLUMNS), table(report, HARDWARE_COLUMNS)]


LEGEND = (
    "loss: first → last tenth of the steps · Δfp64: worst error against float64 on the CPU · "
    "agree: identical devices with the same bits (alone: none here to compare with) · ×cpu: "
    "speed-up over the CPU"
)

RANK_LEGEND = (
    "wrong ar/ag/bc: wrong elements received by all_reduce/all_gather/broadcast · ddp weights: "
    "their fingerprint after the DDP steps, whether every rank has the same, and the error "
    "against one process"
)

CHECK_NAMES = {
    "finite": "finite",
    "loss_falls": "loss falls",
    "heldout_accuracy": "held-out accuracy",
    "lockstep_logits": "fp64 lockstep",
    "lockstep_grads": "fp64 lockstep",
    "self_consistency": "bitwise self-consistency",
    "cross_device": "cross-device vote",
    "save_load": "save/load",
    "eval_on_device": "eval on the device",
    "throughput_peers": "speed vs peers",
}
"""What each check proved, in a few words, for the line under a PASS."""


def passed_checks(report: SmokeReport) -> str:
    """The checks every device passed, in order; those skipped everywhere are named apart."""
    names: dict[str, set[str]] = {}
    for result in report.results:
        for check in result.checks:
            names.setdefault(CHECK_NAMES.get(check.id, check.id), set()).add(check.verdict)
    passed = [name for name, verdicts in names.items() if verdicts == {"pass"}]
    skipped = [name for name, verdicts in names.items() if verdicts == {"skip"}]
    line = f"passed: {', '.join(passed) or 'none'}"
    return line + (f" (skipped: {', '.join(skipped)})" if skipped else "")


def summary(report: SmokeReport) -> str:
    results = report.results
    bad = [r for r in results if r.status in ("FAIL", "HUNG")]
    warned = [r for r in results if r.status == "WARN"]
    counts = f"{len(results) - len(bad)} of {len(results)} devices passed"
    if warned:
        counts += (
            f" ({len(warned)} with warnings{'; --strict fails them' if report.strict else ''})"
        )
    runs = "1 run, --quick" if report.config.quick else "2 runs"
    reran = sum(1 for r in results if len(r.run_fingerprints) > 2)
    if reran:
        runs += f" + a re-run C on {reran} device{'s' if reran > 1 else ''}"
    steps = f"{report.config.recipe.name} recipe, {report.config.recipe.steps} steps × {runs}"
    return f"{report.overall}: {counts} in {report.seconds:.1f} s ({steps})"


def print_report(report: SmokeReport, console: Console) -> None:
    for number, grid in enumerate(device_tables(report, console)):
        console.print(*([""] if number else []), grid)
    for r in report.results:
        if r.status != "PASS" and r.reason:
            status = f"[{STYLE[r.status]}]{r.status}[/]"
            # soft_wrap: one line per device in a log, whatever its width (grep finds it whole)
            console.print(f"  {r.index} {r.device} {status}: {escape(r.reason)}", soft_wrap=True)
    for note in report.notes:
        console.print(f"  note: {escape(note)}", soft_wrap=True)
    console.print(f"[dim]{escape(LEGEND)}[/]")
    console.print(f"[{STYLE[report.overall]}]{summary(report)}[/]")
    if report.overall in ("PASS", "WARN"):
        console.print(f"  {passed_checks(report)}", soft_wrap=True)


def to_json(report: SmokeReport) -> str:
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def _wrong(rank: RankResult) -> str:
    counts = [rank.check(name) for name in ("all_reduce", "all_gather", "broadcast")]
    if not any(counts):
        return "-"
    return "/".join(str(c.value) if c and c.value is not None else "?" for c in counts)


def _ddp(rank: RankResult) -> str:
    identical, near = rank.check("ddp_identical"), rank.check("ddp_vs_single")
    if identical is None:
        return "-"
    mark = "same" if identical.verdict == "pass" else "DIFFERS"
    err = f" {near.value:.0e}" if near is not None and isinstance(near.value, float) else ""
    return f"{(rank.ddp_fingerprint or '-')[:8]} {mark}{err}"


RankCell = Callable[[RankResult], str]


def _rank_columns() -> dict[str, tuple[str, RankCell]]:
    """Every column of the per-rank table: title -> (justify, cell)."""

    def smoke_cell(position: int) -> RankCell:
        return lambda rank: _result_cells(rank.smoke)[position]

    columns: dict[str, tuple[str, RankCell]] = {
        "rank": ("right", lambda r: str(r.info.rank)),
        "local": ("right", lambda r: _fmt(r.info.local_rank, "d")),
        "device": ("left", lambda r: r.info.device or "-"),
        "name": ("left", lambda r: _name(r.smoke) if r.smoke else "-"),
        "status": ("left", lambda r: f"[{STYLE[r.status]}]{r.status}[/]"),
    }
    for position, (title, justify) in enumerate(RESULT_COLUMNS):
        columns[title] = (justify, smoke_cell(position))
    columns["wrong ar/ag/bc"] = ("right", _wrong)
    columns["ddp weights"] = ("left", _ddp)
    columns["s"] = ("right", lambda r: _fmt(r.seconds, ".1f"))
    return columns


RANK_VERDICT_COLUMNS = (
    "rank",
    "device",
    "status",
    "loss",
    "acc",
    "Δfp64",
    "fingerprint",
    "agree",
    "s",
)
RANK_JOB_COLUMNS = ("rank", "local", "name", "wrong ar/ag/bc", "ddp weights")


def rank_table(ranks: list[RankResult], only: tuple[str, ...] | None = None) -> Table:
    """One row per rank of one node; ``only`` keeps these columns."""
    grid = Table(box=None, pad_edge=False, header_style="bold")
    columns = _rank_columns()
    kept = [title for title in columns if only is None or title in only]
    for title in kept:
        grid.add_column(title, justify=columns[title][0], no_wrap=True)  # type: ignore[arg-type]
    for rank in ranks:
        grid.add_row(*(columns[title][1](rank) for title in kept))
    return grid


def rank_tables(ranks: list[RankResult], console: Console) -> list[Table]:
    """One table when it fits the console's width, else two narrower ones."""
    wide = rank_table(ranks)
    if _width(wide, console) <= console.width:
        return [wide]
    return [rank_table(ranks, RANK_VERDICT_COLUMNS), rank_table(ranks, RANK_JOB_COLUMNS)]


def distributed_summary(report: DistributedReport) -> str:
    bad = [r for r in report.ranks if r.status in ("FAIL", "HUNG")]
    hosts = len({r.info.host for r in report.ranks})
    counts = f"{report.world_size - len(bad)} of {report.world_size} ranks on {hosts} nodes passed"
    return f"{report.overall}: {counts} in {report.seconds:.1f} s ({report.backend})"


def print_distributed(report: DistributedReport, console: Console) -> None:
    """One table per node, each rank's reason when it did not pass, bandwidth, the verdict."""
    nodes: dict[str, list[RankResult]] = {}
    for rank in report.ranks:
        nodes.setdefault(rank.info.host or "unknown host", []).append(rank)
    for host, ranks in nodes.items():
        console.print(f"[bold]node {escape(host)}[/] (ranks {_span(ranks)})")
        for number, grid in enumerate(rank_tables(ranks, console)):
            console.print(*([""] if number else []), grid)
    for rank in report.ranks:
        if rank.status != "PASS" and rank.reason:
            where = f"rank {rank.info.rank} on {rank.info.host or 'unknown host'}"
            console.print(
                f"  {where} [{STYLE[rank.status]}]{rank.status}[/]: {escape(rank.reason)}"
            )
    if report.all_reduce_busbw_gb_per_s is not None and report.bandwidth_bytes:
        size = report.bandwidth_bytes / 2**20
        bw = report.all_reduce_busbw_gb_per_s
        console.print(f"  all_reduce bus bandwidth: {bw:.2f} GB/s at {size:.0f} MiB")
    for note in report.notes:
        console.print(f"  note: {escape(note)}")
    console.print(f"[dim]{escape(LEGEND)} · {escape(RANK_LEGEND)}[/]")
    console.print(f"[{STYLE[report.overall]}]{distributed_summary(report)}[/]")


def _span(ranks: list[RankResult]) -> str:
    numbers = [r.info.rank for r in ranks]
    if numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 1:
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(map(str, numbers))


def distributed_json(report: DistributedReport) -> str:
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"
