"""Run several `gpudoc run --emulate-cuda` command lines in ONE interpreter (one torch import).

Reads a JSON list of argument lists on stdin; prints a JSON list of {code, out, err}. Each run
goes through ``gpudoc.cli.main`` as the CLI does; the emulator undoes its patches after each one,
so runs do not see each other: their reports are the same as in separate processes (a test in
tests/emulate/test_scripts.py compares one). The scripts' own output is not seeded either way.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys

from gpudoc.cli import main


def run(args: list[str]) -> dict[str, object]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["run", "--emulate-cuda", *args])
        except SystemExit as exit_request:  # argparse
            code = exit_request.code if isinstance(exit_request.code, int) else 1
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


if __name__ == "__main__":
    batch = json.loads(sys.stdin.read())
    results = [run(args) for args in batch]
    sys.stdout.write(json.dumps(results))
    sys.stdout.flush()
    os._exit(0)  # the results are out: no teardown of torch (0.5-1 CPU-s), as gpudoc's workers
