"""Does the emulator raise what a real GPU raises, at the same line? Needs a CUDA machine.

Runs every script in fixtures/emulate twice on a machine with a GPU: plainly with python (the
real GPU's behaviour) and under `gpudoc run --emulate-cuda`. For each it compares the outcome
(clean or failed), the exception's first line, and the line of the script where it surfaced.
Scripts that need more GPUs than the machine has are listed as skipped. Prints one row per
script and the count that agree; with --json FILE, writes the rows.

Usage: python bench/emulate_fidelity.py [--json FILE] [--timeout 300]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "emulate"
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


def _real(script: Path, timeout: float) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )
    frames = [int(n) for f, n in FRAME.findall(run.stderr) if Path(f).name == script.name]
    return {
        "code": run.returncode,
        "error": _exception_line(run.stderr) if run.returncode else "",
        "line": frames[-1] if frames and run.returncode else None,
    }


def _emulated(script: Path, timeout: float) -> dict[str, object]:
    options = OPTIONS.get(script.name, ())
    command = [sys.executable, "-m", "gpudoc", "run", "--emulate-cuda", *options, str(script)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "COLUMNS": "200"}
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO
    )
    error, line = "", None
    if run.returncode:
        report = run.stderr.splitlines()
        if any("gpudoc run --emulate-cuda: device error" in r for r in report):
            error = next(
                (r.strip() for r in report if re.match(r"^\s+\w+(Error|Exception)", r)), ""
            )
            line = next((int(m.group(2)) for r in report if (m := REPORT_LINE.match(r))), None)
        else:
            error = _exception_line(run.stderr)
            frames = [int(n) for f, n in FRAME.findall(run.stderr) if Path(f).name == script.name]
            line = frames[-1] if frames else None
    return {"code": run.returncode, "error": error, "line": line}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("emulate_fidelity: needs a machine with a CUDA GPU (torch sees none)")
        return 2
    gpus = torch.cuda.device_count()
    print(f"torch {torch.__version__}, {gpus} x {torch.cuda.get_device_name(0)}")
    scripts = sorted(FIXTURES.glob("*.py"))
    runnable = [s for s in scripts if NEEDS_GPUS.get(s.name, 1) <= gpus]
    # Each script runs twice in processes of its own; eight at a time keep a GPU machine busy.
    with ThreadPoolExecutor(8) as pool:
        reals = pool.map(lambda s: _real(s, args.timeout), runnable)
        emulateds = pool.map(lambda s: _emulated(s, args.timeout), runnable)
        results = dict(zip(runnable, zip(reals, emulateds, strict=True), strict=True))
    rows, agree, compared = [], 0, 0
    for script in scripts:
        if script not in results:
            rows.append({"script": script.name, "skipped": f"needs {NEEDS_GPUS[script.name]} GPUs"})
            print(f"{script.name:36} skipped (needs {NEEDS_GPUS[script.name]} GPUs)")
            continue
        real, emulated = results[script]
        same_outcome = bool(real["code"]) == bool(emulated["code"])
        same = (
            same_outcome and real["error"] == emulated["error"] and real["line"] == emulated["line"]
        )
        compared += 1
        agree += same
        rows.append({"script": script.name, "real": real, "emulated": emulated, "same": same})
        verdict = "same" if same else "DIFFERENT"
        print(
            f"{script.name:36} {verdict:9} real exit {real['code']} line {real['line']}  "
            f"emulated exit {emulated['code']} line {emulated['line']}"
        )
        if not same:
            print(f"    real:     {real['error']}\n    emulated: {emulated['error']}")
    print(f"emulate_fidelity: {agree} of {compared} scripts behave the same (outcome, error, line)")
    if args.json:
        args.json.write_text(json.dumps({"torch": torch.__version__, "rows": rows}, indent=1))
    return 0 if agree == compared else 1


if __name__ == "__main__":
    sys.exit(main())
