"""How does `gpudoc lint` scale to one very large file? CPU time and peak memory against a bare
libcst parse of the same file.

The file is the repository's fixtures (real training scripts with device bugs) concatenated until
it has --lines lines (default 50,000): dense in findings and fixes, so a worst case for the
per-finding work. Each measurement runs in a fresh process, which prints its own CPU seconds
(user + sys) and peak RSS. Prints, for each of bare parse, `gpudoc lint`, `gpudoc lint --fix
--unsafe-fixes`: CPU s, peak MB, the ratio to the bare parse (target: lint within 1.5x), and how
many times the file was analysed (lint passes). The parse is paid once (--fix re-parses only the
statements it edits), the analysis once per pass: on this file it costs about two thirds of a
parse, so --fix cannot come near 1.5x. --fix needs a pass after each round of fixes: on this
file 3 in all (the lint, and one after each of two rounds), because some findings appear only
once the first round's fixes are in (a model that GPD102's fix moves makes ``model(x).numpy()``
a GPD202 finding) and GPD202 reports, of a call that hands two device tensors to a helper that
converts them (``score.update(outputs, labels)``), one per round. It needed 5 while GPD102
reported a rebinding moved before its use whenever a later rebinding of the same name was not:
its fix came back and --fix started over.

    python bench/lint_bigfile.py [--lines N] [--keep DIR] [--baseline CHECKOUT] [--repeat N]

``--baseline``: also measure another checkout's gpudoc (``git worktree add /tmp/base main``) on
the same file, row by row, for a before/after in one run. ``--repeat``: measure every row N
times, in turns, and keep each row's least CPU time (on a shared machine, the run the others
disturbed least); peak memory does not vary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import REPO

MEASURE = """
import json, resource, sys, time
sys.path.insert(0, {repo!r})
kind, path = sys.argv[1], sys.argv[2]
if kind == "parse":
    import libcst
    libcst.parse_module(open(path, encoding="utf-8").read())
else:
    from gpudoc.cli import main
    from gpudoc.lint import checker
    check_source, passes = checker.check_source, []
    def counted(*args, **kwargs):
        passes.append(1)
        return check_source(*args, **kwargs)
    checker.check_source = counted
    args = ["lint", "--no-cache", path] + (["--fix", "--unsafe-fixes"] if kind == "fix" else [])
    sys.stdout = open("/dev/null", "w")
    main(args)
use = resource.getrusage(resource.RUSAGE_SELF)
found = {{"cpu": use.ru_utime + use.ru_stime, "mb": use.ru_maxrss / 1024}}
if kind != "parse":
    found["passes"] = len(passes)
sys.stderr.write(json.dumps(found))
"""


USERS_ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
"""As a user's machine runs it: bytecode cached. Some sandboxes set PYTHONDONTWRITEBYTECODE,
which makes every start compile libcst and gpudoc again (about 0.2 CPU-s a row). The first
round of --repeat writes the bytecode; --repeat 2 or more measures warm starts."""


def big_source(lines: int) -> str:
    """Fixture scripts, one after the other, until ``lines``; ``from __future__`` lines dropped
    (only valid at the top)."""
    pieces = []
    for path in sorted((REPO / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "torch" in text:
            kept = [line for line in text.splitlines() if not line.startswith("from __future__")]
            pieces.append("\n".join(kept) + "\n")
    out: list[str] = []
    count = 0
    while count < lines:
        piece = pieces[len(out) % len(pieces)]
        out.append(piece)
        count += piece.count("\n")
    return "".join(out)


def measure(kind: str, source: Path, directory: Path, repo: Path = REPO) -> dict[str, float]:
    """One run in a fresh process, on a fresh copy of ``source`` (--fix rewrites it)."""
    target = directory / f"{kind}.py"
    shutil.copy(source, target)
    code = MEASURE.format(repo=str(repo))
    done = subprocess.run(
        [sys.executable, "-c", code, kind, str(target)],
        capture_output=True,
        text=True,
        check=False,
        env=USERS_ENV,
    )
    try:
        return dict(json.loads(done.stderr.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        raise SystemExit(f"{kind} failed: {done.stderr[-2000:]}") from None


def least(runs: list[dict[str, float]]) -> dict[str, float]:
    return min(runs, key=lambda found: found["cpu"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--keep", type=Path, help="write the generated file here")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside this")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row (least CPU kept)")
    args = parser.parse_args()
    source = big_source(args.lines)
    checkouts = [("", REPO)] + ([("baseline ", args.baseline)] if args.baseline else [])
    rows = [("parse", "bare libcst parse", REPO)] + [
        (kind, name + label, repo)
        for kind, label in (("lint", "gpudoc lint"), ("fix", "gpudoc lint --fix --unsafe"))
        for name, repo in checkouts
    ]
    with tempfile.TemporaryDirectory() as directory:
        original = Path(directory) / "big.py"
        original.write_text(source, encoding="utf-8")
        if args.keep:
            shutil.copy(original, args.keep)
        print(f"{source.count(chr(10))} lines, {len(source) / 1e6:.1f} MB")
        runs: dict[str, list[dict[str, float]]] = {label: [] for _, label, _ in rows}
        for _ in range(max(args.repeat, 1)):
            for kind, label, repo in rows:
                runs[label].append(measure(kind, original, Path(directory), repo))
        base = least(runs["bare libcst parse"])
        print(f"{'bare libcst parse':<37} {base['cpu']:7.1f} CPU-s {base['mb']:7.0f} MB")
        for _, label, _ in rows[1:]:
            found = least(runs[label])
            ratio = found["cpu"] / base["cpu"]
            print(
                f"{label:<37} {found['cpu']:7.1f} CPU-s {found['mb']:7.0f} MB   "
                f"{ratio:.2f}x the parse's CPU, {found['mb'] / base['mb']:.2f}x its memory, "
                f"{found['passes']:.0f} lint passes"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
