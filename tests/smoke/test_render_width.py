"""The smoke table reads at 80 and 120 columns, and a PASS says what it proved."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from test_report import H100, gpu, report

from gpudoc.console import make_console
from gpudoc.smoke import render
from gpudoc.smoke.model import CheckResult, SmokeConfig, SmokeReport
from gpudoc.smoke.run import overall, vote, with_speedups

EVERY_CHECK = (
    CheckResult("finite", "pass", 0, 0),
    CheckResult("loss_falls", "pass", 0.1, 0.6),
    CheckResult("heldout_accuracy", "pass", 0.9, 0.5),
    CheckResult("lockstep_logits", "pass", 1e-7, 1e-5),
    CheckResult("lockstep_grads", "pass", 1e-7, 1e-4),
    CheckResult("self_consistency", "pass", True, True),
    CheckResult("eval_on_device", "pass", 0.0, 1e-5),
    CheckResult("save_load", "pass", True, True),
    CheckResult("cross_device", "skip", None, None),
)


def text(smoke: SmokeReport, width: int) -> list[str]:
    out = io.StringIO()
    render.print_report(smoke, make_console(file=out, width=width, color=False))
    return out.getvalue().splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_every_value_fits_the_width_uncut(width: int) -> None:
    lines = text(report(), width)
    # A device's reason stays one line whatever its length, so that grep finds it whole.
    table = [line for line in lines if not line.startswith("  2 cuda:2 FAIL: ")]
    assert all(len(line) <= width for line in table), "\n".join(lines)
    assert not any("…" in line for line in lines), "\n".join(lines)
    body = "\n".join(lines)
    for value in ("NVIDIA H100 80GB HBM3", "aaaaaaaaaaaa", "differs (2/3)", "1.8k / 412k"):
        assert value in body
    rows = [line for line in lines if line.startswith(("0 ", "1 ", "2 "))]
    assert all(row.split()[1].startswith("cuda:") for row in rows)


def test_a_wide_console_shows_one_table_a_narrow_one_two() -> None:
    headers = [line for line in text(report(), 80) if line.startswith("#  device")]
    assert len(headers) == 2
    assert "status" in headers[0] and "name" not in headers[0]
    assert "name" in headers[1] and "img/s" in headers[1]
    wide = [line for line in text(report(), 120) if line.startswith("#  device")]
    assert len(wide) == 1 and "name" in wide[0] and "status" in wide[0]


def test_the_legend_explains_the_terse_column_names() -> None:
    legend = " ".join(text(report(), 80))
    for term in ("alone:", "Δfp64:", "×cpu:", "agree:"):
        assert term in legend


def test_a_pass_lists_the_checks_it_passed_in_one_line() -> None:
    devices = [replace(gpu(i, "a"), checks=EVERY_CHECK) for i in (0, 1)]
    results = tuple(with_speedups(vote(devices)))
    smoke = SmokeReport(SmokeConfig(), results, overall(results), "0.1.0", 6.0)
    lines = text(smoke, 80)
    assert lines[-2].startswith("PASS: 2 of 2 devices passed")
    assert lines[-1] == (
        "  passed: finite, loss falls, held-out accuracy, fp64 lockstep, bitwise "
        "self-consistency, eval on the device, save/load, cross-device vote"
    )


def test_checks_skipped_everywhere_are_named_apart() -> None:
    alone = replace(gpu(0, "a"), checks=EVERY_CHECK, info=replace(H100, name="Other GPU"))
    results = tuple(vote([alone]))
    smoke = SmokeReport(SmokeConfig(), results, overall(results), "0.1.0", 6.0)
    assert render.passed_checks(smoke).endswith("save/load (skipped: cross-device vote)")


def test_a_failed_run_has_no_passed_line() -> None:
    assert not any(line.startswith("  passed:") for line in text(report(), 120))


@pytest.mark.parametrize("width", [80, 120])
def test_the_per_rank_table_fits_too(width: int) -> None:
    from test_distributed_report import _judge, _posted

    out = io.StringIO()
    render.print_distributed(_judge(_posted()), make_console(file=out, width=width, color=False))
    lines = out.getvalue().splitlines()
    assert all(len(line) <= width for line in lines), out.getvalue()
    assert not any("…" in line for line in lines), out.getvalue()
    headers = [line for line in lines if line.startswith("rank")]
    assert len(headers) == 4  # two nodes, each in two parts
    assert "ddp weights" in headers[1] and "status" in headers[0]
    wide = io.StringIO()
    render.print_distributed(_judge(_posted()), make_console(file=wide, width=200, color=False))
    assert len([line for line in wide.getvalue().splitlines() if line.startswith("rank")]) == 2
