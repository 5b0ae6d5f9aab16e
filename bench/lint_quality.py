"""How right is `gpudoc lint`? Precision and recall on annotated realistic scripts.

The corpus is fixtures/lint/realistic/: scripts modelled on real bug reports and on correct code
that naive rules flag. Each bug line carries `# expect: GPDxxx` (reported today) or
`# miss: GPDxxx` (a real bug not reported yet); correct code that draws a finding carries
`# fp: GPDxxx`. `via: helper|return|forward-call|branch|cross-file|loop|class` in the same
comment says how the bug is reached. A top-level file is linted alone; a subdirectory is one
project, linted as a directory (so cross-file analysis can see it).

Prints per-rule TP/FP/FN, precision and recall, the overall figures, recall per `via:` kind,
every false positive and false negative with file:line, and annotations that no longer match
what the linter reports (the test in tests/lint/test_realistic_corpus.py keeps those at zero).

    python bench/lint_quality.py [--fixtures] [--json] [--select CODES] [DIR ...]

`--fixtures` adds fixtures/lint/*.py (expect/miss only); each DIR is scored like the corpus.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

if TYPE_CHECKING:
    from gpudoc.lint.config import LintConfig

CORPUS = REPO / "fixtures" / "lint" / "realistic"
FIXTURES = REPO / "fixtures" / "lint"
VIA_KINDS = ("helper", "return", "forward-call", "branch", "cross-file", "loop", "class")
MARK = re.compile(
    r"#\s*(expect|miss|fp):\s*(GPD\d{3}(?:\s*,\s*GPD\d{3})*)(?:[^#]*?\bvia:\s*([a-z-]+))?"
)

Key = tuple[str, int, str]  # (path relative to the repository, line, code)


@dataclass(frozen=True)
class Mark:
    path: str
    line: int
    code: str
    kind: str  # expect | miss | fp
    via: str | None


@dataclass
class Unit:
    """What one lint run covers: one script, or one project directory."""

    target: Path
    files: list[Path]
    marks: list[Mark] = field(default_factory=list)
    reported: set[Key] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)


def relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return path.as_posix()


def parse_marks(path: Path) -> list[Mark]:
    """The annotations of one file; a `via:` tag belongs to the mark just before it."""
    marks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in MARK.finditer(line):
            kind, codes, via = match.group(1), match.group(2), match.group(3)
            if via is not None and via not in VIA_KINDS:
                raise ValueError(f"{relative(path)}:{number}: unknown via kind {via!r}")
            for code in codes.split(","):
                marks.append(Mark(relative(path), number, code.strip(), kind, via))
    return marks


def units_of(root: Path) -> list[Unit]:
    """Top-level scripts one by one, each subdirectory as one project."""
    units = [Unit(p, [p]) for p in sorted(root.glob("*.py"))]
    for sub in sorted(
        d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))
    ):
        files = sorted(sub.rglob("*.py"))
        if files:
            units.append(Unit(sub, files))
    return units


def lint_unit(unit: Unit, config: LintConfig) -> None:
    unit.marks = [m for path in unit.files for m in parse_marks(path)]
    from gpudoc.lint.engine import lint_paths  # here, so that reading marks needs no libcst

    result = lint_paths([str(unit.target)], config, jobs=1, use_cache=False)
    unit.errors = list(result.errors)
    unit.reported = {(relative(Path(f.path)), f.line, f.code) for f in result.findings}


def collect(roots: Iterable[Path], fixtures: bool, config: LintConfig) -> list[Unit]:
    units = [u for root in roots for u in units_of(root)]
    if fixtures:
        units += [Unit(p, [p]) for p in sorted(FIXTURES.glob("*.py"))]
    for unit in units:
        lint_unit(unit, config)
    return units


@dataclass
class Score:
    tp: set[Key] = field(default_factory=set)
    fp: set[Key] = field(default_factory=set)
    fn: set[Key] = field(default_factory=set)
    drift: list[str] = field(default_factory=list)
    via: dict[Key, str] = field(default_factory=dict)


def score(units: Sequence[Unit]) -> Score:
    """Truth is expect ∪ miss; anything else reported is a false positive."""
    result = Score()
    for unit in units:
        by_kind: dict[str, set[Key]] = {"expect": set(), "miss": set(), "fp": set()}
        for mark in unit.marks:
            key = (mark.path, mark.line, mark.code)
            by_kind[mark.kind].add(key)
            if mark.via is not None and mark.kind != "fp":
                result.via[key] = mark.via
        bugs = by_kind["expect"] | by_kind["miss"]
        result.tp |= unit.reported & bugs
        result.fp |= unit.reported - bugs
        result.fn |= bugs - unit.reported
        result.drift += drift(unit.reported, by_kind)
        result.drift += [f"{relative(unit.target)}: lint error: {e}" for e in unit.errors]
    return result


def drift(reported: set[Key], marks: dict[str, set[Key]]) -> list[str]:
    """Annotations that no longer say what the linter does today."""
    lines = []
    for key in sorted(reported - marks["expect"] - marks["fp"] - marks["miss"]):
        lines.append(f"{fmt(key)}: reported but not annotated (add `expect` or `fp`)")
    for key in sorted(marks["expect"] - reported):
        lines.append(f"{fmt(key)}: `expect` not reported (make it `miss`)")
    for key in sorted(marks["miss"] & reported):
        lines.append(f"{fmt(key)}: `miss` is reported now (make it `expect`)")
    for key in sorted(marks["fp"] - reported):
        lines.append(f"{fmt(key)}: `fp` not reported any more (remove the annotation)")
    return lines


def fmt(key: Key) -> str:
    return f"{key[0]}:{key[1]}: {key[2]}"


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def per_rule(result: Score) -> dict[str, dict[str, object]]:
    codes = sorted({k[2] for k in result.tp | result.fp | result.fn})
    table: dict[str, dict[str, object]] = {}
    for code in codes:
        tp, fp, fn = (
            sum(1 for k in keys if k[2] == code) for keys in (result.tp, result.fp, result.fn)
        )
        table[code] = {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": ratio(tp, tp + fp),
            "recall": ratio(tp, tp + fn),
        }
    return table


def per_via(result: Score) -> dict[str, dict[str, object]]:
    bugs = result.tp | result.fn
    table: dict[str, dict[str, object]] = {}
    for kind in (*VIA_KINDS, "direct"):
        keys = [k for k in bugs if result.via.get(k, "direct") == kind]
        found = sum(1 for k in keys if k in result.tp)
        table[kind] = {"bugs": len(keys), "found": found, "recall": ratio(found, len(keys))}
    return table


def report(units: Sequence[Unit], result: Score) -> dict[str, object]:
    tp, fp, fn = len(result.tp), len(result.fp), len(result.fn)
    files = [f for u in units for f in u.files]
    buggy = {m.path for u in units for m in u.marks if m.kind != "fp"}
    return {
        "files": len(files),
        "clean_files": len(files) - len(buggy),
        "bugs": tp + fn,
        "bugs_with_via": len(result.via),
        "overall": {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": ratio(tp, tp + fp),
            "recall": ratio(tp, tp + fn),
        },
        "rules": per_rule(result),
        "via": per_via(result),
        "false_positives": [fmt(k) for k in sorted(result.fp)],
        "false_negatives": [
            fmt(k) + (f" (via {result.via[k]})" if k in result.via else "")
            for k in sorted(result.fn)
        ],
        "drift": result.drift,
    }


def pct(value: object) -> str:
    return "   -" if value is None else f"{value:.2f}"


def row_line(name: str, row: dict[str, object]) -> str:
    counts = f"{row['tp']:4} {row['fp']:4} {row['fn']:4}"
    return f"{name:8} {counts} {pct(row['precision']):>5} {pct(row['recall']):>6}"


def print_text(data: dict[str, object]) -> None:
    overall = data["overall"]
    assert isinstance(overall, dict)
    print(
        f"{data['files']} files ({data['clean_files']} clean), {data['bugs']} annotated bugs "
        f"({data['bugs_with_via']} reached via a helper/return/branch/... tag)\n"
    )
    print(f"{'rule':8} {'TP':>4} {'FP':>4} {'FN':>4} {'prec':>5} {'recall':>6}")
    rules = data["rules"]
    assert isinstance(rules, dict)
    for code, row in rules.items():
        print(row_line(code, row))
    print(row_line("overall", overall) + "\n")
    print(f"{'via':13} {'bugs':>4} {'found':>5} {'recall':>6}")
    via = data["via"]
    assert isinstance(via, dict)
    for kind, row in via.items():
        if row["bugs"]:
            print(f"{kind:13} {row['bugs']:4} {row['found']:5} {pct(row['recall']):>6}")
    for title in ("false_positives", "false_negatives", "drift"):
        lines = data[title]
        assert isinstance(lines, list)
        if lines:
            print(f"\n{title.replace('_', ' ')} ({len(lines)}):")
            print("\n".join(f"  {line}" for line in lines))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "dirs", nargs="*", type=Path, help="more corpora, scored like the realistic one"
    )
    parser.add_argument("--fixtures", action="store_true", help="also score fixtures/lint/*.py")
    parser.add_argument("--no-corpus", action="store_true", help="skip fixtures/lint/realistic")
    parser.add_argument("--select", help="only these codes or prefixes (GPD1,GPD201)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    from gpudoc.lint.config import LintConfig

    config = LintConfig(select=tuple(args.select.split(","))) if args.select else LintConfig()
    roots = ([] if args.no_corpus else [CORPUS]) + list(args.dirs)
    for root in roots:
        if not root.is_dir():
            parser.error(f"{root}: not a directory")
    units = collect(roots, args.fixtures, config)
    data = report(units, score(units))
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_text(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
