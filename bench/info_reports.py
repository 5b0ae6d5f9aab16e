"""Does `gpudoc info --from` reach the verdict of a real bug thread? A match rate on real reports.

The cases are tests/info/reports/cases/*.toml: the fact lines of a report posted in a public
issue thread (collect_env, nvidia-smi, nvidia-smi -q, a kernel log, a pip list), the thread's
address, what the thread found wrong, and `expect`: the doctor checks that must fail or warn on it
([] for a healthy machine). A case with `gap` names what the doctor still lacks to get there.

A case matches when `gpudoc info --from <report> --json` exits 0 or 1, no check crashes, every
`expect` id fails or warns, and no check outside `expect` fails (a false alarm). Warnings outside
`expect` are allowed: a report may show more than the thread was about.

Prints, per case, what was expected and what the doctor said, then the match rate and every miss
with the gap it belongs to (or "unexplained" when the case claims none).

    python bench/info_reports.py [--json] [DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpudoc.cli import main as gpudoc_main  # noqa: E402

CASES = REPO / "tests" / "info" / "reports" / "cases"
FIELDS = {"source", "covers", "found", "expect", "gap", "note", "report"}
PROBLEMS = ("fail", "warn")


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    covers: str
    found: str
    expect: tuple[str, ...]
    report: str
    gap: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What `gpudoc info --from` said about one case."""

    exit_code: int
    flagged: tuple[str, ...]  # check ids with a fail or warn finding
    failed: tuple[str, ...]  # check ids with a fail finding
    crashed: tuple[str, ...]
    stderr: str

    def matches(self, case: Case) -> bool:
        return (
            self.exit_code in (0, 1)
            and not self.crashed
            and set(case.expect) <= set(self.flagged)
            and set(self.failed) <= set(case.expect)
        )


def _toml(text: str) -> dict[str, Any]:
    # tomllib is stdlib from 3.11; on 3.10 the same parser is the `tomli` dependency.
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    data: dict[str, Any] = tomllib.loads(text)
    return data


def load_case(path: Path) -> Case:
    data = _toml(path.read_text(encoding="utf-8"))
    unknown = set(data) - FIELDS
    if unknown:
        raise ValueError(f"{path.name}: unknown keys {sorted(unknown)}")
    return Case(
        name=path.stem,
        source=data["source"],
        covers=data.get("covers", ""),
        found=data["found"],
        expect=tuple(data["expect"]),
        report=data["report"],
        gap=data.get("gap"),
        note=data.get("note"),
    )


def load_cases(directory: Path = CASES) -> list[Case]:
    return [load_case(p) for p in sorted(directory.glob("*.toml"))]


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = gpudoc_main(argv)
        except SystemExit as stop:  # argparse: an unknown option, or --help
            code = stop.code if isinstance(stop.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def from_supported() -> bool:
    """Whether this checkout's `gpudoc info` has `--from` (branch info-reports adds it)."""
    _, out, _ = _run_cli(["info", "--help"])
    return "--from" in out


def run_case(case: Case, workdir: Path) -> Outcome:
    """`gpudoc info --from <the case's report> --json`, in this process."""
    report = workdir / f"{case.name}.txt"
    report.write_text(case.report, encoding="utf-8")
    code, out, err = _run_cli(["info", "--from", str(report), "--json"])
    try:
        checks = json.loads(out)["checks"] if out.strip() else []
    except (ValueError, KeyError, TypeError):
        checks = []
        err += "\n(unreadable JSON on stdout)"
    findings = [f for c in checks for f in c.get("findings", ())]
    flagged = sorted({f["check_id"] for f in findings if f["severity"] in PROBLEMS})
    failed = sorted({f["check_id"] for f in findings if f["severity"] == "fail"})
    crashed = sorted(c["check_id"] for c in checks if c.get("status") == "crashed")
    return Outcome(code, tuple(flagged), tuple(failed), tuple(crashed), err.strip())


def score(cases: Sequence[Case]) -> list[tuple[Case, Outcome]]:
    with tempfile.TemporaryDirectory(prefix="gpudoc-info-reports-") as tmp:
        return [(case, run_case(case, Path(tmp))) for case in cases]


def _line(case: Case, outcome: Outcome) -> str:
    mark = "ok  " if outcome.matches(case) else "MISS"
    expect = ", ".join(case.expect) or "(healthy)"
    got = ", ".join(outcome.flagged) or "(nothing)"
    extra = f"  exit {outcome.exit_code}" if outcome.exit_code not in (0, 1) else ""
    if outcome.crashed:
        extra += f"  crashed: {', '.join(outcome.crashed)}"
    return f"{mark} {case.name:<48} expect {expect:<40} got {got}{extra}"


def _why(case: Case, outcome: Outcome) -> str:
    missing = sorted(set(case.expect) - set(outcome.flagged))
    alarms = sorted(set(outcome.failed) - set(case.expect))
    parts = [f"missing {', '.join(missing)}"] if missing else []
    parts += [f"false alarm {', '.join(alarms)}"] if alarms else []
    if outcome.exit_code not in (0, 1):
        last = outcome.stderr.splitlines()[-1] if outcome.stderr else "no message"
        parts.append(f"exit {outcome.exit_code}: {last}")
    if outcome.crashed:
        parts.append(f"crashed {', '.join(outcome.crashed)}")
    return "; ".join(parts) + f" | gap: {case.gap or 'unexplained'}"


def report_text(results: Sequence[tuple[Case, Outcome]]) -> str:
    lines = [_line(case, outcome) for case, outcome in results]
    matched = sum(outcome.matches(case) for case, outcome in results)
    total = len(results)
    rate = matched / total if total else 0.0
    lines.append(f"\nmatch rate: {matched}/{total} = {rate:.1%}")
    misses = [(c, o) for c, o in results if not o.matches(c)]
    if misses:
        lines.append("misses:")
        lines += [f"  {c.name}: {_why(c, o)}" for c, o in misses]
    gaps_met = [c.name for c, o in results if c.gap and o.matches(c)]
    if gaps_met:
        lines.append("cases with a gap that now match (drop their gap): " + ", ".join(gaps_met))
    return "\n".join(lines)


def report_json(results: Sequence[tuple[Case, Outcome]]) -> dict[str, Any]:
    rows = [
        {"case": c.name, "expect": list(c.expect), "match": o.matches(c), "gap": c.gap}
        | {k: v for k, v in asdict(o).items() if k != "stderr"}
        for c, o in results
    ]
    matched = sum(o.matches(c) for c, o in results)
    return {"cases": rows, "matched": matched, "total": len(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("directory", nargs="?", type=Path, default=CASES)
    args = parser.parse_args(argv)
    if not from_supported():
        print("gpudoc info has no --from on this checkout: nothing to score", file=sys.stderr)
        return 2
    results = score(load_cases(args.directory))
    if args.json:
        print(json.dumps(report_json(results), indent=1))
    else:
        print(report_text(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
