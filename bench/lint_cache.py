"""Does a one-file `gpudoc lint` (the pre-commit case) cost what one file costs, whatever the
cache holds? Times it with an empty cache and with one holding 2,000 entries.

Prints, each the median of --runs fresh processes:

  * the cache's own work in a one-file run: open the cache, work out the lint code's
    fingerprint, look one file up, store its result, save (target: the same with 2,000
    entries as with none)
  * `gpudoc lint one_file.py` end to end, the file changed since the last run (a miss, written
    back) and unchanged (a hit): wall and CPU seconds

The cache is filled through `ResultCache`'s own interface, so this runs against any version.

    python bench/lint_cache.py [--entries 2000] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import REPO, timed

sys.path.insert(0, str(REPO))

SCRIPT = REPO / "fixtures" / "cifar_tutorial.py"
# One fresh process: import, then time only what the cache does for one file.
CACHE_WORK = """
import sys, time
from gpudoc.lint.cache import ResultCache, content_key
from gpudoc.lint.engine import lint_source
findings = lint_source(sys.argv[1]).findings
start = time.perf_counter()
cache = ResultCache()
key = content_key(sys.argv[1].encode())
assert cache.get(key, "one.py") is None
cache.put(key, list(findings), None)
cache.save()
print(time.perf_counter() - start)
"""


def fill(directory: Path, entries: int) -> None:
    """`entries` results of a real file (its findings, fixes included), under distinct keys."""
    code = (
        "import sys\nfrom gpudoc.lint.cache import ResultCache, content_key\n"
        "from gpudoc.lint.engine import lint_source\n"
        "source = open(sys.argv[1], encoding='utf-8').read()\n"
        "findings = list(lint_source(source).findings)\ncache = ResultCache()\n"
        "for n in range(int(sys.argv[2])):\n"
        "    cache.put(content_key(f'{n}'.encode()), findings, None)\ncache.save()\n"
    )
    done = timed([sys.executable, "-c", code, str(SCRIPT), str(entries)], _env(directory))
    assert done.returncode == 0, done.stderr


def _env(directory: Path) -> dict[str, str]:
    return {"GPUDOC_CACHE_DIR": str(directory)}


def cache_work_s(directory: Path, runs: int) -> float:
    times = []
    for run in range(runs):
        source = SCRIPT.read_text(encoding="utf-8") + f"\n# run {run}\n"
        done = timed([sys.executable, "-c", CACHE_WORK, source], _env(directory))
        assert done.returncode == 0, done.stderr
        times.append(float(done.stdout))
    return statistics.median(times)


def cli_s(directory: Path, runs: int, change: bool) -> tuple[float, float]:
    """Median wall and CPU seconds (CPU: what a loaded machine does not inflate)."""
    times, cpu = [], []
    with tempfile.TemporaryDirectory() as work:
        one = Path(work) / "one.py"
        one.write_text(SCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
        timed([sys.executable, "-m", "gpudoc", "lint", str(one)], _env(directory))
        for run in range(runs):
            if change:
                one.write_text(one.read_text(encoding="utf-8") + f"# {run}\n", encoding="utf-8")
            done = timed([sys.executable, "-m", "gpudoc", "lint", str(one)], _env(directory))
            assert done.returncode == 1, done.stderr
            times.append(done.wall_s)
            cpu.append(done.cpu_s)
    return statistics.median(times), statistics.median(cpu)


def size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    revision = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"gpudoc {revision}; median of {args.runs} fresh processes each")
    for entries in (0, args.entries):
        with tempfile.TemporaryDirectory() as cache:
            directory = Path(cache)
            if entries:
                fill(directory, entries)
            held = f"{entries:>5} entries ({size(directory) / 1e6:.1f} MB)"
            work = cache_work_s(directory, args.runs)
            miss = cli_s(directory, args.runs, change=True)
            hit = cli_s(directory, args.runs, change=False)
            print(
                f"{held}: cache work {work * 1000:6.1f} ms; `gpudoc lint one.py` changed "
                f"{miss[0]:.3f} s ({miss[1]:.3f} s CPU), unchanged {hit[0]:.3f} s "
                f"({hit[1]:.3f} s CPU)"
            )


if __name__ == "__main__":
    main()
