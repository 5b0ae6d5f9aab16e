"""Helpers of the `gpudoc info --from` tests: write report texts to files, read them back as
the doctor sees them."""

from __future__ import annotations

from pathlib import Path

from gpudoc.info.doctor import run_doctor
from gpudoc.info.model import CheckResult, InfoReport
from gpudoc.info.reports.load import load_reports


def read(tmp_path: Path, *texts: str) -> InfoReport:
    """The doctored report of `texts`, each written to its own file."""
    paths = []
    for number, text in enumerate(texts):
        path = tmp_path / f"report{number}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    return run_doctor(load_reports(paths))


def result(report: InfoReport, check_id: str) -> CheckResult:
    return next(r for r in report.checks if r.check_id == check_id)


def failing(report: InfoReport) -> set[str]:
    return {r.check_id for r in report.checks if r.status in ("fail", "warn")}


def given(report: InfoReport) -> set[str]:
    return {fact for source in report.sources or () for fact in source.facts}
