"""The only code of `gpudoc info` that writes output: the human view (rich) and JSON.

rich is imported inside the human-view functions: `--json` (a cluster prologue's call) never
pays for it.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import IO, TYPE_CHECKING, Any

from gpudoc import __version__
from gpudoc.info.checks import Check
from gpudoc.info.model import (
    SCHEMA_VERSION,
    CheckResult,
    DevNode,
    DriverInfo,
    InfoReport,
    KernelLog,
    Summary,
    TorchInfo,
)
from gpudoc.info.render_devices import MISSING, devices_view
from gpudoc.info.render_sources import source_rows

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

SYMBOLS = {
    "pass": "✓",
    "warn": "!",
    "fail": "✗",
    "info": "i",
    "crashed": "☠",
    "not_applicable": "–",
}
STYLES = {
    "pass": "green",
    "warn": "yellow",
    "fail": "red",
    "info": "cyan",
    "crashed": "magenta",
    "not_applicable": "dim",
}


def report_to_json(report: InfoReport) -> dict[str, Any]:
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "gpudoc_version": __version__}
    data.update(dataclasses.asdict(report))
    plain: dict[str, Any] = json.loads(json.dumps(data))  # tuples become lists, as consumers see
    return plain


def render_json(report: InfoReport, file: IO[str]) -> None:
    file.write(json.dumps(report_to_json(report), indent=2) + "\n")


def render_human(report: InfoReport, console: Console, verbose: bool = False) -> None:
    from rich.text import Text

    if report.sources is not None:
        _section(console, "Reports", source_rows(report.sources))
    torch = report.torch
    missing = "not probed (--no-torch)" if report.sources is None else "the reports do not say"
    rows = _torch_rows(torch) if torch else [("torch", missing)]
    _section(console, "PyTorch", rows)
    _section(console, "Driver & NVML", _driver_rows(report))
    console.print(Text("Devices", style="bold"))
    console.print(devices_view(report))
    _section(console, "Environment", _env_rows(report))
    console.print(Text("Doctor", style="bold"))
    from_reports = report.sources is not None
    console.print(_doctor(report.checks, verbose, from_reports), Text(""))
    if report.summary is not None:
        console.print(_closing(report.summary))


def render_check_list(checks: tuple[Check, ...], console: Console) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=True, pad_edge=False)
    for column in ("id", "severity", "passes when"):
        table.add_column(column, no_wrap=column == "id")
    for check in checks:
        table.add_row(*(Text(cell) for cell in (check.check_id, check.severities, check.title)))
    console.print(table)


def render_check_list_json(checks: tuple[Check, ...], file: IO[str]) -> None:
    rows = [
        {"id": check.check_id, "severity": check.severities, "passes_when": check.title}
        for check in checks
    ]
    file.write(json.dumps({"checks": rows}, indent=2) + "\n")


def _section(console: Console, title: str, rows: list[tuple[str, str]]) -> None:
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    for key, value in rows:
        grid.add_row(Text(key), Text(value))  # Text: no markup or :emoji: in machine strings
    console.print(Text(title, style="bold"))
    console.print(grid, Text(""))


def _v(value: object) -> str:
    return MISSING if value is None else str(value)


def _torch_rows(torch: TorchInfo) -> list[tuple[str, str]]:
    if not torch.installed:
        return [("torch", "not installed")]
    if torch.probe_error or torch.import_error:
        return [("torch", f"installed, but: {torch.probe_error or torch.import_error}")]
    build = {
        "cuda": f"CUDA {torch.cuda_version}",
        "rocm": f"ROCm {torch.hip_version}",
        "cpu": "CPU-only build",
    }
    available = {True: "yes", False: "no", None: MISSING}[torch.cuda_available]
    if not torch.cuda_available and torch.unavailable_reason:
        available += f" — {torch.unavailable_reason}"
    rows = [
        ("version", f"{torch.version} ({build.get(torch.build or '', 'build unknown')})"),
        ("cuDNN / NCCL", f"{_cudnn(torch.cudnn_version)} / {_v(torch.nccl_version)}"),
        ("arch list", " ".join(torch.arch_list or ()) or MISSING),
        ("CUDA available", available),
        ("devices (torch)", _v(torch.device_count)),
    ]
    rows += [("warning", w) for w in torch.init_warnings]
    vision = torch.torchvision
    if vision is not None:
        rows.append(("torchvision", _vision(vision.installed, vision.version, vision.ops_load)))
        if vision.ops_error or vision.import_error:
            rows.append(("", vision.ops_error or vision.import_error or ""))
    return rows


def _cudnn(version: int | None) -> str:
    """91002 -> 9.10.2 (cuDNN 9 encodes major*10000); 8907 -> 8.9.7 (cuDNN 8: major*1000)."""
    if version is None:
        return MISSING
    major, rest = divmod(version, 10000 if version >= 10000 else 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _vision(installed: bool, version: str | None, ops: bool | None) -> str:
    if not installed:
        return "not installed"
    state = {True: "load", False: "do NOT load", None: "unknown"}[ops]
    return f"{_v(version)}, C++ ops {state}"


def _driver_rows(report: InfoReport) -> list[tuple[str, str]]:
    driver = report.driver
    nvml = (
        "ok" if driver.nvml_error is None else f"{driver.nvml_error_message} ({driver.nvml_error})"
    )
    return [
        ("NVML", nvml),
        ("driver", _v(driver.driver_version)),
        ("CUDA (driver)", _v(driver.cuda_driver_version)),
        ("kernel module", _v(driver.kernel_module_version)),
        ("NVML library", _v(driver.nvml_library_path)),
        ("NVML binding", ", ".join(dict.fromkeys(_bindings(driver))) or MISSING),
    ]


def _bindings(driver: DriverInfo) -> list[str]:
    return [b for b in (driver.nvml_binding, *driver.nvml_binding_deprecated) if b]


def _env_rows(report: InfoReport) -> list[tuple[str, str]]:
    host = report.host
    rows = [(name, repr(value)) for name, value in host.env.items() if value is not None]
    rows += [(name, repr(value)) for name, value in host.debug_env.items()]
    unset = [name for name, value in host.env.items() if value is None]
    if unset:
        rows.append(("unset", " ".join(unset)))
    rows += [
        ("OS", f"{_v(host.os)}, kernel {_v(host.kernel)}"),
        ("Python", _v(host.python)),
        (
            "container",
            f"{host.container} ({host.container_evidence})"
            if host.container
            else "none detected"
            if report.sources is None or "host.container" in _given(report)
            else MISSING,
        ),
        ("device nodes", _nodes(host.dev_nodes)),
    ]
    if host.nvcc_path is not None:
        rows.append(("nvcc", f"{_v(host.nvcc_cuda_version)} ({host.nvcc_path})"))
    if host.kernel_log is not None:
        rows.append(("kernel log", _kernel_log(host.kernel_log)))
    return rows


def _kernel_log(log: KernelLog) -> str:
    if log.source is None:
        return f"unreadable: {log.unreadable_reason}"
    count = len(log.xid_events)
    return f"{log.source}: {count or 'no'} Xid line{'' if count == 1 else 's'} since boot"


def _doctor(results: tuple[CheckResult, ...], verbose: bool, from_reports: bool = False) -> Table:
    """One row per passing check, a row per finding and a row for its fix; text wraps indented.

    Checks that did not apply get a row each only when `verbose`.
    """
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for result in results:
        symbol = Text(SYMBOLS[result.status], style=STYLES[result.status])
        if result.status == "pass":
            grid.add_row(symbol, Text(result.title))
        elif result.status == "not_applicable" and verbose:
            grid.add_row(symbol, Text(f"{result.title}: did not apply ({result.reason})", "dim"))
        elif result.status == "crashed":
            grid.add_row(
                symbol, Text.assemble((result.check_id, "bold"), f" crashed: {result.crash}")
            )
        for finding in result.findings:
            severity = Text(SYMBOLS[finding.severity], style=STYLES[finding.severity])
            grid.add_row(
                severity, Text.assemble((finding.check_id, "bold"), f"  {finding.message}")
            )
            if finding.fix:
                grid.add_row(Text(""), Text(f"fix: {finding.fix}", style="dim"))
    skipped = [r for r in results if r.status == "not_applicable"]
    if skipped and not verbose:
        summary = _lacking_facts(skipped) if from_reports else _not_applicable_summary(skipped)
        grid.add_row(Text(SYMBOLS["not_applicable"], "dim"), summary)
    return grid


def _not_applicable_summary(skipped: list[CheckResult]) -> Text:
    """One dim line: how many checks could not look, and why, the commonest reason first."""
    from rich.text import Text

    reasons = Counter(r.reason for r in skipped).most_common()
    why = "; ".join(str(reason) for reason, _ in reasons)
    did = "check did" if len(skipped) == 1 else "checks did"
    return Text(f"{len(skipped)} {did} not apply here ({why}): `gpudoc info -v` lists each", "dim")


def _lacking_facts(skipped: list[CheckResult]) -> Text:
    """On reports, most checks lack a fact: name them in one paragraph, the reasons under -v."""
    from rich.text import Text

    ids = ", ".join(r.check_id for r in skipped)
    did = "check" if len(skipped) == 1 else "checks"
    return Text(
        f"{len(skipped)} {did} could not apply, for lack of a fact in the reports or on this "
        f"kind of machine: {ids}. `-v` says which fact each one needs.",
        "dim",
    )


def _closing(summary: Summary) -> Text:
    from rich.text import Text

    if summary.problems == 0:
        return Text("No issues found.", style="green bold")
    parts = [_count(summary.failures, "failure"), _count(summary.warnings, "warning")]
    if summary.crashed_checks:
        parts.append(_count(summary.crashed_checks, "crashed check"))
    return Text(
        f"{_count(summary.problems, 'problem')} found ({', '.join(parts)}).", style="red bold"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _given(report: InfoReport) -> set[str]:
    return {fact for source in report.sources or () for fact in source.facts}


def _nodes(nodes: tuple[DevNode, ...] | None) -> str:
    return MISSING if nodes is None else " ".join(n.path for n in nodes) or "none"
