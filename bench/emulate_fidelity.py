"""Does the emulator raise what a real GPU raises, at the same line? Needs a CUDA machine.

Runs every top-level script of each DIR (default fixtures/emulate) twice on a machine with a GPU:
plainly with python (the real GPU's behaviour) and under `gpudoc run --emulate-cuda`, each in an
empty working directory of its own. For each it compares the outcome (clean or failed), the
exception's first line, and the line of the script where it surfaced. Scripts that need more
GPUs than the machine has are listed as skipped. Prints one row per script and the count that
agree; with --json FILE, writes the rows.

Scripts annotated for the lint corpus (`# expect:`/`# miss:`/`# fp:` GPDxxx, as in
fixtures/lint/realistic) are also checked against their labels on the real GPU: a script with a
marked bug should raise a device error at a marked line, unless every marked rule is one that
fails only on a CPU-only host or is wrong without an error; a script with no marked bug should
run clean. So the corpus's ground truth is tested on hardware, not only argued.

Usage: python bench/emulate_fidelity.py [--json FILE] [--timeout 300] [--jobs 8] [DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from lint_quality import parse_marks  # noqa: E402  (reads comments only: no libcst needed)

FIXTURES = REPO / "fixtures" / "emulate"
# Rules whose bug a GPU runs without an error: it fails on a CPU-only host (GPD20x but .numpy()
# and dataset workers), or it is silently wrong (a stale optimizer, a device test that is
# always false, a flag that cannot be turned off, ...).
QUIET_ON_A_GPU = {
    "GPD201", "GPD203", "GPD205", "GPD206", "GPD301", "GPD303", "GPD403", "GPD404", "GPD501",
    "GPD503", "GPD901",
}  # fmt: skip
DEVICE_ERROR = re.compile(
    r"device|cuda|Input type .* and weight type|should be the same|Expected all tensors", re.I
)
# Scripts that ask for a number of devices (gpudoc run --devices N) or arguments.
OPTIONS = {"two_devices.py": ("--devices", "2"), "spawn_workers.py": ("--devices", "2")}
NEEDS_GPUS = {"two_devices.py": 2, "spawn_workers.py": 2, "spawn_workers_wrong_device.py": 2}
FRAME = re.compile(r'File "([^"]+)", line (\d+)')
REPORT_LINE = re.compile(r"^\s+at (\S+):(\d+) in ")


def _exception_line(stderr: str) -> str:
    """The exception's first line from a Python traceback ('Type: message')."""
    lines = stderr.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        return lines[-1].strip() if lines else ""
    for line in lines[starts[-1] + 1 :]:
        if not line.startswith(" ") and line.strip():
            return line.strip()
    return ""


def _run(
    command: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One run in an empty directory of its own, so that what a script saves stays there."""
    with tempfile.TemporaryDirectory(prefix="fidelity-") as cwd:
        try:
            return subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(command, 124, "", f"TimeoutExpired: {timeout} s")


def _real(script: Path, timeout: float) -> dict[str, object]:
    # without this checkout on the path, as the emulated side: a corpus script importing its own
    # `tests` package must not find gpudoc's there either
    path = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = os.pathsep.join(p for p in path if p and Path(p).resolve() != REPO.resolve())
    run = _run([sys.executable, str(script)], timeout, {**os.environ, "PYTHONPATH": kept})
    frames = [int(n) for f, n in FRAME.findall(run.stderr) if Path(f).name == script.name]
    return {
        "code": run.returncode,
        "error": _exception_line(run.stderr) if run.returncode else "",
        "line": frames[-1] if frames and run.returncode else None,
        "frames": frames if run.returncode else [],
    }


def _emulated(script: Path, timeout: float) -> dict[str, object]:
    options = OPTIONS.get(script.name, ())
    command = [sys.executable, "-m", "gpudoc", "run", "--emulate-cuda", *options, str(script)]
    # gpudoc from this checkout, as a package, not the checkout's other folders: a corpus script
    # importing its own `tests` package must not find gpudoc's
    env = {**os.environ, "PYTHONPATH": str(_package_path()), "NO_COLOR": "1", "COLUMNS": "200"}
    run = _run(command, timeout, env)
    error, line = "", None
    if run.returncode:
        report = run.stderr.splitlines()
        if any("gpudoc run --emulate-cuda: device error" in r for r in report):
            error = next(
                (r.strip() for r in report if re.match(r"^\s+\w+(Error|Exception)", r)), ""
            )
            line = next((int(m.group(2)) for r in report if (m := REPORT_LINE.match(r))), None)
        else:
            # the script's own stderr, without gpudoc's summary after it ("time 4.8 s")
            own = run.stderr.split("gpudoc run --emulate-cuda:", 1)[0]
            error = _exception_line(own)
            frames = [int(n) for f, n in FRAME.findall(own) if Path(f).name == script.name]
            line = frames[-1] if frames else None
    return {"code": run.returncode, "error": error, "line": line}


def _package_path() -> Path:
    """A folder holding only a link to this checkout's gpudoc package (made once per run)."""
    folder = Path(tempfile.gettempdir()) / f"fidelity-gpudoc-{os.getpid()}"
    link = folder / "gpudoc"
    if not link.exists():
        folder.mkdir(exist_ok=True)
        link.symlink_to(REPO / "gpudoc", target_is_directory=True)
    return folder


def label_check(script: Path, real: dict[str, object]) -> str:
    """What the real GPU says of the script's lint labels; "" when it carries none."""
    marks = parse_marks(script)
    if not marks:
        return ""
    bugs = {m.line: m.code for m in marks if m.kind in ("expect", "miss")}
    error = str(real["error"])
    # Out of memory is the machine's state (runs share the GPU), not the script's placement.
    raised = bool(real["code"]) and bool(DEVICE_ERROR.search(error)) and "OutOfMemory" not in error
    if not bugs:
        if not real["code"]:
            return "correct: clean"
        return "CORRECT-LABELLED RAISED" if raised else "not runnable here"
    if raised:
        # The mark is on the user's call; the error may surface deeper, in the script's forward.
        at_mark = set(bugs) & set(real["frames"])  # type: ignore[call-overload]
        return (
            "bug: raised at a marked line"
            if at_mark
            else "bug: raised later (the mark is its cause)"
        )
    if real["code"]:
        return "not runnable here"
    if set(bugs.values()) <= QUIET_ON_A_GPU:
        return "bug: quiet on a GPU (host-only or silent rule)"
    return "bug: RAN CLEAN"


def _same(real: dict[str, object], emulated: dict[str, object]) -> bool:
    same_outcome = bool(real["code"]) == bool(emulated["code"])
    return same_outcome and real["error"] == emulated["error"] and real["line"] == emulated["line"]


def _scripts(dirs: list[Path]) -> list[Path]:
    return [s for d in dirs for s in sorted(d.glob("*.py"))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=[FIXTURES], metavar="DIR")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument(
        "--real-only", action="store_true", help="only the real GPU's runs and the label check"
    )
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("emulate_fidelity: needs a machine with a CUDA GPU (torch sees none)")
        return 2
    gpus = torch.cuda.device_count()
    print(f"torch {torch.__version__}, {gpus} x {torch.cuda.get_device_name(0)}")
    scripts = _scripts([d.resolve() for d in args.dirs])
    runnable = [s for s in scripts if NEEDS_GPUS.get(s.name, 1) <= gpus]
    # Each script runs twice in processes of its own; eight at a time keep a GPU machine busy.
    with ThreadPoolExecutor(args.jobs) as pool:
        reals = pool.map(lambda s: _real(s, args.timeout), runnable)
        emulated_runs = (
            [] if args.real_only else pool.map(lambda s: _emulated(s, args.timeout), runnable)
        )
        emulateds: list[dict[str, object] | None] = list(emulated_runs) or [None] * len(runnable)
        results = dict(zip(runnable, zip(reals, emulateds, strict=True), strict=True))
    rows: list[dict[str, object]] = []
    agree, compared, labels = 0, 0, dict[str, int]()
    for script in scripts:
        if script not in results:
            rows.append({"script": script.name, "skipped": f"needs {NEEDS_GPUS[script.name]} GPUs"})
            print(f"{script.name:36} skipped (needs {NEEDS_GPUS[script.name]} GPUs)")
            continue
        real, emulated = results[script]
        label = label_check(script, real)
        same = emulated is not None and _same(real, emulated)
        labels[label] = labels.get(label, 0) + 1
        rows.append(
            {
                "script": script.name,
                "real": real,
                "emulated": emulated,
                "same": same,
                "label": label,
            }
        )
        compared += emulated is not None
        agree += same
        verdict = "-" if emulated is None else "same" if same else "DIFFERENT"
        print(
            f"{script.name:36} {verdict:9} real exit {real['code']} line {real['line']}"
            + (f"  emulated exit {emulated['code']} line {emulated['line']}" if emulated else "")
            + (f"  [{label}]" if label else "")
        )
        if not same or "RAN CLEAN" in label:
            print(f"    real:     {real['error']}")
            if emulated is not None:
                print(f"    emulated: {emulated['error']}")
    if compared:
        print(
            f"emulate_fidelity: {agree} of {compared} scripts behave the same "
            "(outcome, error, line)"
        )
    for label, count in sorted(labels.items()):
        if label:
            print(f"labels: {count:4}  {label}")
    if args.json:
        args.json.write_text(json.dumps({"torch": torch.__version__, "rows": rows}, indent=1))
    return 0 if agree == compared else 1


if __name__ == "__main__":
    sys.exit(main())
