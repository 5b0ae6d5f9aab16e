"""How fast is `gpudoc lint`? Ratios against bare libcst parsing and TorchFix, on real code.

The corpus is the Python source that the installed torch and torchvision packages ship (over a
million lines no one here wrote). Prints:

  * one-file start-up: `gpudoc lint one_file.py` wall time (the pre-commit case; target < 0.5 s)
  * throughput: gpudoc's checker vs bare `libcst.parse_module`, same files, one process, CPU time
    (target: within 2x, the floor for any libcst tool)
  * CLI end to end, cold cache vs warm cache (target: the warm run a fraction of the cold one)
  * TorchFix (its own venv: it pins an old libcst) vs `gpudoc lint --jobs 1` on the same files,
    in the same run (target: gpudoc >= 10x faster)
  * internal errors over the whole corpus (target: none)

    python bench/lint_speed.py [--every N] [--torchfix-files N] [--torchfix PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, timed

sys.path.insert(0, str(REPO))


def corpus_files() -> list[Path]:
    """Found without importing them: torchvision's C++ ops may not load against this torch."""
    roots = []
    for name in ("torch", "torchvision"):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise SystemExit(f"{name} is not installed in this Python")
        roots.append(Path(spec.origin).parent)
    return sorted(p for root in roots for p in root.rglob("*.py"))


def cpu_seconds(work: list[str], function: object) -> float:
    start = time.process_time()
    for source in work:
        function(source)  # type: ignore[operator]
    return time.process_time() - start


def bare_parse(source: str) -> None:
    import libcst

    with contextlib.suppress(Exception):  # the baseline skips what it cannot parse
        libcst.parse_module(source)


def gpudoc_check(source: str) -> None:
    from gpudoc.lint.engine import lint_source

    lint_source(source, "x.py")


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and its children, stdout), run in the repo."""
    done = timed(command, env, cwd=REPO)
    return done.wall_s, done.cpu_s, done.stdout


def run_cli(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    return run([sys.executable, "-m", "gpudoc", "lint", *args], env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--every", type=int, default=1, help="use every Nth file of the corpus")
    parser.add_argument("--torchfix-files", type=int, default=120, help="files for TorchFix")
    parser.add_argument("--torchfix", default="/work/venv-torchfix/bin/torchfix")
    options = parser.parse_args()

    files = corpus_files()[:: options.every]
    sources = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    lines = sum(source.count("\n") for source in sources)
    print(f"corpus: {len(files)} files, {lines:,} lines (torch + torchvision sources)")
    env = {"GPUDOC_CACHE_DIR": tempfile.mkdtemp()}  # timed() adds this checkout's PYTHONPATH

    one = str(REPO / "fixtures" / "cifar_tutorial.py")
    # as a user's machine runs it: bytecode cached (some sandboxes set PYTHONDONTWRITEBYTECODE,
    # which makes every start compile gpudoc again)
    env["PYTHONDONTWRITEBYTECODE"] = ""
    parse_one = [sys.executable, "-c", f"import libcst; libcst.parse_module(open({one!r}).read())"]
    run_cli(["--no-cache", one], env)  # writes the bytecode
    runs, parses = [], []
    for _ in range(5):  # side by side, alternating
        runs.append(run_cli(["--no-cache", one], env))
        parses.append(run(parse_one, env))
    wall = statistics.median(run[0] for run in runs)
    cpu = statistics.median(run[1] for run in runs)
    parse_cpu = statistics.median(run[1] for run in parses)
    print(
        f"one file, start to finish: median {wall:.2f} s wall, {cpu:.2f} CPU-s; a fresh "
        f"interpreter's bare parse {parse_cpu:.2f} CPU-s: {cpu / parse_cpu:.2f}x (target 1.2x)"
    )

    parse = cpu_seconds(sources, bare_parse)
    ours = cpu_seconds(sources, gpudoc_check)
    print(f"bare libcst.parse_module: {parse:.1f} CPU-s ({parse / lines * 1e6:.0f} µs/line)")
    print(f"gpudoc checker:           {ours:.1f} CPU-s; ratio {ours / parse:.2f}x (target <= 2x)")

    paths = [str(p) for p in files]
    cold, cold_cpu, output = run_cli(["--format", "json", *paths], env)
    warm, warm_cpu, _ = run_cli(["--format", "json", *paths], env)
    internal = output.count("internal error")
    print(f"CLI, all cores: cold cache {cold:.1f} s wall / {cold_cpu:.1f} CPU-s, warm cache "
          f"{warm:.1f} s / {warm_cpu:.1f} CPU-s ({warm_cpu / cold_cpu:.0%} of cold CPU); "
          f"internal errors: {internal}")  # fmt: skip

    if options.torchfix_files <= 0:
        return 0
    sample = paths[:: max(1, len(paths) // options.torchfix_files)][: options.torchfix_files]
    torchfix = shutil.which(options.torchfix) or shutil.which("torchfix")
    if torchfix is None:
        print("TorchFix not found: pass --torchfix PATH")
        return 0
    ours_wall, ours_cpu, _ = run_cli(["--no-cache", "--jobs", "1", *sample], env)
    theirs_wall, theirs_cpu, _ = run([torchfix, "--jobs", "1", "--select", "ALL", *sample], env)
    print(f"TorchFix vs gpudoc on {len(sample)} files, one process each: TorchFix "
          f"{theirs_wall:.1f} s wall / {theirs_cpu:.1f} CPU-s, gpudoc {ours_wall:.1f} s / "
          f"{ours_cpu:.1f} CPU-s -> gpudoc {theirs_cpu / ours_cpu:.1f}x faster by CPU, "
          f"{theirs_wall / ours_wall:.1f}x by wall (target >= 10x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
