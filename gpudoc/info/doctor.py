"""The doctor: runs the checks (gpudoc/info/checks/) on an InfoReport and counts the problems.

A check that raises is reported as crashed (with its exception) and the others still run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gpudoc.info.checks import Check, all_checks
from gpudoc.info.model import CheckResult, CheckStatus, InfoReport, Summary

_ORDER: tuple[CheckStatus, ...] = ("crashed", "fail", "warn", "info", "pass")


def run_check(check: Check, report: InfoReport) -> CheckResult:
    try:
        reason = check.precondition(report)
        if reason is not None:
            return CheckResult(check.check_id, check.title, "not_applicable", reason=reason)
        findings = tuple(
            dataclasses.replace(found, check_id=check.check_id) for found in check.function(report)
        )
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
    checked = dataclasses.replace(report, checks=tuple(run_check(c, report) for c in chosen))
    return dataclasses.replace(checked, summary=summarize(checked))


def summarize(report: InfoReport) -> Summary:
    findings = [f for r in report.checks for f in r.findings]
    return Summary(
        problems=problems(report),
        failures=sum(1 for f in findings if f.severity == "fail"),
        warnings=sum(1 for f in findings if f.severity == "warn"),
        crashed_checks=sum(1 for r in report.checks if r.status == "crashed"),
        not_applicable_checks=sum(1 for r in report.checks if r.status == "not_applicable"),
        usable_gpus=usable_gpu_count(report),
    )


def problems(report: InfoReport) -> int:
    """Findings that need attention: failures, warnings and crashed checks (not info)."""
    count = sum(1 for r in report.checks if r.status == "crashed")
    for result in report.checks:
        count += sum(1 for f in result.findings if f.severity in ("fail", "warn"))
    return count


def usable_gpu_count(report: InfoReport) -> int:
    """GPUs a training script could use: torch's count when probed, otherwise NVML's view."""
    torch = report.torch
    if torch is not None and report.sources is not None and torch.device_count is None:
        torch = None  # a report that does not say torch's device count: count its GPUs
    if torch is not None:
        return (torch.device_count or 0) if torch.cuda_available else 0
    if report.driver.nvml_error is not None:
        return 0
    visible = report.visible.nvml_indices
    healthy = [g for g in report.gpus if not g.lost and g.compute_mode != "prohibited"]
    return len([g for g in healthy if visible is None or g.nvml_index in visible])
