"""How right is `gpudoc lint` on public code no one here wrote? Findings against our verdicts.

bench/real_code/repos.tsv lists the repositories of each held-out set and the commit we read
(a repository where nothing was reported belongs to its set too: a new finding there counts).
bench/real_code/verdicts.tsv holds one row per finding we have read in its source and judged:
its set, repository, file (``nb.ipynb#3`` for a notebook's cell 3, whose lines count within
the cell), line and rule, and the verdict:

- ``bug``: a GPU user hits it;
- ``cpu-host``: a script that offers a CPU path fails on a CPU-only host;
- ``wrong``: neither.

No code of those repositories is in this repository: only where a finding is and what we
judged. To measure, bring their sources here (``extract``), then lint them with this checkout
(``score``): it prints per set the findings, how many are judged real, wrong or not judged yet
(new findings: read and judge them, then add rows), and the verdicts no longer reported (a real
one gone is a lost find).

    python bench/lint_real_code.py extract GIT_DIR SOURCES     # a clone or bare mirror
    python bench/lint_real_code.py score SOURCES [--set N] [--list]

``extract`` writes the ``.py`` and ``.ipynb`` files of the pinned commit (the one in
repos.tsv, else HEAD) to ``SOURCES/owner+name/`` (the name is GIT_DIR's, or ``--name``).
``score`` lints every ``SOURCES/owner+name/`` named in repos.tsv, one ``gpudoc lint`` per
repository from its root, as a user would run it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERDICTS = REPO / "bench" / "real_code" / "verdicts.tsv"
REPOS = REPO / "bench" / "real_code" / "repos.tsv"
REAL = ("bug", "cpu-host")
# git reads the mirror only; none of its settings may start a program
SAFE_GIT = ("git", "-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null")


@dataclass(frozen=True)
class Verdict:
    set: str
    repo: str
    path: str
    line: int
    code: str
    verdict: str
    note: str

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.path, self.line, self.code)


def read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def read_verdicts() -> list[Verdict]:
    return [
        Verdict(r["set"], r["repo"], r["path"], int(r["line"]), r["code"], r["verdict"], r["note"])
        for r in read_tsv(VERDICTS)
    ]


def extract(git_dir: Path, sources: Path, name: str, commit: str) -> int:
    """The pinned commit's Python files and notebooks, one ``git show`` each: a mirror may
    lack some large blobs, which ``git archive`` would stop at."""
    git = [*SAFE_GIT, f"--git-dir={git_dir}"]
    # -z: names as they are (git quotes non-ASCII ones otherwise: `"3-3,\351\253\230.ipynb"`)
    listing = subprocess.run(
        [*git, "ls-tree", "-r", "-z", "--name-only", commit],
        capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    count = 0
    for relative in listing:
        if not relative.endswith((".py", ".ipynb")):
            continue
        shown = subprocess.run([*git, "show", f"{commit}:{relative}"], capture_output=True)
        if shown.returncode != 0:
            continue
        target = sources / name / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(shown.stdout)
        count += 1
    return count


def lint(root: Path, internal: list[str]) -> list[tuple[str, int, str, str]]:
    """``gpudoc lint --format json .`` in ``root`` with this checkout's gpudoc; its internal
    errors (a file whose findings were all lost to a crash) are added to ``internal``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "gpudoc", "lint", "--no-cache", "--format", "json", "."],
        cwd=root, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode not in (0, 1, 2) or not done.stdout.strip():
        raise SystemExit(f"gpudoc lint failed in {root}: {done.stderr.strip()[-400:]}")
    report = json.loads(done.stdout)
    internal += [f"{root.name}: {e}" for e in report["errors"] if "internal error" in e]
    findings = report["findings"]
    # a notebook's lines count within a cell: `nb.ipynb#3` names the cell
    return [
        (f["path"] + (f"#{f['cell']}" if f.get("cell") is not None else ""), f["line"],
         f["code"], f["message"])
        for f in findings
    ]  # fmt: skip


def score(sources: Path, only_set: str | None, listing: bool) -> int:
    verdicts = [v for v in read_verdicts() if only_set in (None, v.set)]
    by_set: dict[str, set[str]] = defaultdict(set)
    for row in read_tsv(REPOS):
        if only_set in (None, row["set"]):
            by_set[row["set"]].add(row["repo"])
    judged = {v.key: v for v in verdicts}
    missing = sorted({r for repos in by_set.values() for r in repos if not (sources / r).is_dir()})
    if missing:
        print(f"not in {sources} (skipped): {', '.join(missing)}")
    print(f"{'set':>4} {'repos':>5} {'findings':>8} {'real':>5} {'wrong':>5} {'new':>4} "
          f"{'real share':>10} {'real gone':>9}")  # fmt: skip
    unjudged: list[str] = []
    wrong: list[str] = []
    gone: list[str] = []
    internal: list[str] = []
    for name in sorted(by_set, key=lambda s: (len(s), s)):
        counts: Counter[str] = Counter()
        repos = sorted(r for r in by_set[name] if (sources / r).is_dir())
        seen: set[tuple[str, str, int, str]] = set()
        for repo in repos:
            for path, line, code, message in lint(sources / repo, internal):
                key = (repo, path, line, code)
                seen.add(key)
                verdict = judged.get(key)
                where = f"{repo} {path}:{line} {code}"
                if verdict is None:
                    counts["new"] += 1
                    unjudged.append(f"{where} {message[:150]}")
                elif verdict.verdict in REAL:
                    counts["real"] += 1
                else:
                    counts["wrong"] += 1
                    wrong.append(f"{where} ({verdict.note})")
        for v in verdicts:
            if v.set == name and v.repo in repos and v.verdict in REAL and v.key not in seen:
                gone.append(f"{v.repo} {v.path}:{v.line} {v.code} ({v.verdict}: {v.note})")
                counts["gone"] += 1
        total = counts["real"] + counts["wrong"] + counts["new"]
        judged_total = counts["real"] + counts["wrong"]
        share = f"{counts['real'] / judged_total:.2f}" if judged_total else "-"
        print(f"{name:>4} {len(repos):>5} {total:>8} {counts['real']:>5} {counts['wrong']:>5} "
              f"{counts['new']:>4} {share:>10} {counts['gone']:>9}")  # fmt: skip
    if internal:
        print(f"\ninternal errors ({len(internal)}): those files were not checked")
        print("\n".join(f"  {row}" for row in internal))
    if listing or unjudged:
        for title, rows in (("not judged yet", unjudged), ("wrong", wrong), ("real gone", gone)):
            if rows and (listing or title == "not judged yet"):
                print(f"\n{title} ({len(rows)}):")
                print("\n".join(f"  {row}" for row in rows))
    return 1 if internal else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("extract", help="write a repository's .py/.ipynb files to SOURCES")
    one.add_argument("git_dir", type=Path)
    one.add_argument("sources", type=Path)
    one.add_argument("--name", help="owner+name (default: from GIT_DIR's path)")
    two = sub.add_parser("score", help="lint SOURCES and compare with the verdicts")
    two.add_argument("sources", type=Path)
    two.add_argument("--set", dest="only_set")
    two.add_argument("--list", action="store_true", help="also list wrong and lost findings")
    args = parser.parse_args(argv)
    if args.command == "score":
        return score(args.sources, args.only_set, args.list)
    name = args.name or next(p for p in args.git_dir.resolve().parts[::-1] if "+" in p)
    pinned = {r["repo"]: r["commit"] for r in read_tsv(REPOS)}.get(name, "HEAD")
    print(f"{name}: {extract(args.git_dir, args.sources, name, pinned)} files at {pinned}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
