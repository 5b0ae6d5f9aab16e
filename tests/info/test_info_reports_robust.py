"""Reports cut off at any line, or with lines dropped, still parse into a report the doctor runs
on: no parser raises and no check crashes on what they leave."""

from __future__ import annotations

import pytest
from test_info_reports_collect_env import MODERN, NO_CUDA, OLD, ROCM, WINDOWS
from test_info_reports_logs_packages import CONDA, DMESG, IBSTAT, LSMOD, PIP_FREEZE, PIP_LIST
from test_info_reports_smi_query import QUERY, XML
from test_info_reports_smi_table import CSV, ERR_ROWS, LIST, LSPCI, LSPCI_K, MIG, R418, R550
from test_info_reports_torch_messages import CPU_ONLY, FABRIC, SM_120, TOO_OLD

from gpudoc.info.doctor import run_doctor
from gpudoc.info.reports.build import build_report
from gpudoc.info.reports.detect import recognise
from gpudoc.info.reports.smi_xml import XmlError

SNIPPETS = {
    "collect_env": MODERN,
    "collect_env 1.x": OLD,
    "collect_env no CUDA": NO_CUDA,
    "collect_env ROCm": ROCM,
    "collect_env Windows": WINDOWS,
    "nvidia-smi 550": R550,
    "nvidia-smi 418": R418,
    "nvidia-smi ERR!": ERR_ROWS,
    "nvidia-smi MIG": MIG,
    "nvidia-smi -L": LIST,
    "nvidia-smi --query-gpu": CSV,
    "lspci": LSPCI,
    "lspci -k": LSPCI_K,
    "nvidia-smi -q": QUERY,
    "nvidia-smi -q -x": XML,
    "dmesg": DMESG,
    "pip list": PIP_LIST,
    "pip freeze": PIP_FREEZE,
    "conda list": CONDA,
    "ibstat": IBSTAT,
    "lsmod": LSMOD,
    "torch too old": TOO_OLD,
    "torch 802": FABRIC,
    "torch sm_120": SM_120,
    "torch CPU-only": CPU_ONLY,
}


def _variants(text: str) -> list[str]:
    lines = text.splitlines()
    cut = ["\n".join(lines[:end]) for end in range(len(lines))]
    dropped = ["\n".join(lines[:i] + lines[i + 1 :]) for i in range(len(lines))]
    return cut + dropped


@pytest.mark.parametrize("name", SNIPPETS)
def test_every_cut_and_every_dropped_line_parses(name: str) -> None:
    for text in _variants(SNIPPETS[name]):
        facts = []
        for found in recognise(text):
            try:
                facts.append(found.parse(text))
            except XmlError:
                continue  # a cut-off XML document: one line for the user, by design
        report = run_doctor(build_report([("report", f) for f in facts]))
        crashed = [(r.check_id, r.crash) for r in report.checks if r.status == "crashed"]
        assert crashed == [], (name, text)


def test_all_snippets_together() -> None:
    facts = [f.parse(text) for text in SNIPPETS.values() for f in recognise(text)]
    report = run_doctor(build_report([("report", f) for f in facts]))
    assert [r.check_id for r in report.checks if r.status == "crashed"] == []
    assert {f.format for f in facts} >= {
        "collect_env",
        "nvidia-smi",
        "nvidia-smi -q",
        "nvidia-smi -q -x",
        "nvidia-smi -L",
        "nvidia-smi --query-gpu",
        "lspci",
        "ibstat",
        "lsmod",
        "kernel log",
        "pip list",
        "pip freeze",
        "conda list",
        "torch messages",
    }


@pytest.mark.parametrize("name", SNIPPETS)
def test_the_text_and_json_views_render_every_report(name: str) -> None:
    import io
    import json

    from rich.console import Console

    from gpudoc.info.render import render_human, render_json

    text = SNIPPETS[name]
    facts = [f.parse(text) for f in recognise(text)]
    report = run_doctor(build_report([("report.txt", f) for f in facts]))
    out = io.StringIO()
    render_human(report, Console(file=out, width=100), verbose=True)
    assert out.getvalue().startswith("Reports\nreport.txt")
    data = io.StringIO()
    render_json(report, data)
    assert json.loads(data.getvalue())["sources"][0]["path"] == "report.txt"
