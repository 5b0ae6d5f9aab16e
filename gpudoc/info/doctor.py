"""The doctor: checks are pure functions from an InfoReport to findings, each with a fix.

A check that raises is reported as crashed (with its exception) and the others still run.
Checks live in checks_software.py, checks_host.py, checks_env.py, checks_gpu.py,
checks_health.py and checks_pcie.py; `all_checks()` lists them in the order the report shows them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpudoc.info.model import CheckResult, CheckStatus, Finding, InfoReport, Severity
from gpudoc.info.preconditions import Precondition, always

CheckFunction = Callable[[InfoReport], Iterable[Finding]]
_ORDER: tuple[CheckStatus, ...] = ("crashed", "fail", "warn", "info", "pass")


@dataclass(frozen=True)
class Check:
    check_id: str
    title: str  # what a passing check vouches for, e.g. "torchvision matches torch"
    severities: str  # documentation for --list-checks: "fail", "fail/warn", ...
    function: CheckFunction
    precondition: Precondition = always  # why the check cannot apply here, or None


def all_checks() -> tuple[Check, ...]:
    from gpudoc.info import (
        checks_env,
        checks_gpu,
        checks_health,
        checks_host,
        checks_pcie,
        checks_software,
    )

    return (
        checks_software.CHECKS
        + checks_host.CHECKS
        + checks_env.CHECKS
        + checks_gpu.CHECKS
        + checks_health.CHECKS
        + checks_pcie.CHECKS
        + checks_software.SUMMARY_CHECKS
    )


def run_check(check: Check, report: InfoReport) -> CheckResult:
    try:
        reason = check.precondition(report)
        if reason is not None:
            return CheckResult(check.check_id, check.title, "not_applicable", reason=reason)
        findings = tuple(check.function(report))
    except Exception as error:  # a bug in one check must not hide the rest of the report
        crash = f"{type(error).__name__}: {error}"
        return CheckResult(check.check_id, check.title, "crashed", crash=crash)
    status: CheckStatus = "pass"
    for finding in findings:
        if _ORDER.index(finding.severity) < _ORDER.index(status):
            status = finding.severity
    return CheckResult(check.check_id, check.title, status, findings)


def run_doctor(report: InfoReport, selected: Iterable[Check] | None = None) -> InfoReport:
    """The report with `checks` filled: every check, passed, failed or not applicable."""
    chosen = all_checks() if selected is None else tuple(selected)
    results = tuple(run_check(check, report) for check in chosen)
    return dataclasses.replace(report, checks=results)


def problems(report: InfoReport) -> int:
    """Findings that need attention: failures, warnings and crashed checks (not info)."""
    count = sum(1 for r in report.checks if r.status == "crashed")
    for result in report.checks:
        count += sum(1 for f in result.findings if f.severity in ("fail", "warn"))
    return count


def finding(
    check_id: str, severity: Severity, message: str, fix: str | None, gpu: int | None = None
) -> Finding:
    return Finding(check_id=check_id, severity=severity, message=message, fix=fix, gpu=gpu)


def usable_gpu_count(report: InfoReport) -> int:
    """GPUs a training script could use: torch's count when probed, otherwise NVML's view."""
    if report.torch is not None:
        return (report.torch.device_count or 0) if report.torch.cuda_available else 0
    if report.driver.nvml_error is not None:
        return 0
    visible = report.visible.nvml_indices
    healthy = [g for g in report.gpus if not g.lost and g.compute_mode != "prohibited"]
    return len([g for g in healthy if visible is None or g.nvml_index in visible])
