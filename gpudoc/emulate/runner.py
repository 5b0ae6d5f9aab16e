"""Run the user's script (or module) under emulated CUDA devices, as ``python`` would run it.

The script's output and exit status are its own. What comes back is an :class:`EmulationReport`:
the first device error (diagnosed), or the summary of what ran on the emulated devices.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from gpudoc.emulate import children, errors, tracking
from gpudoc.emulate.diagnose import diagnose, source_location, user_frames
from gpudoc.emulate.model import DeviceError, EmulationReport, PhaseCount, Target
from gpudoc.emulate.patches import emulated_cuda
from gpudoc.emulate.state import STATE
from gpudoc.emulate.warning_origin import warnings_from_user_code
from gpudoc.exit_codes import UsageError

_GPUDOC_DIR = str(Path(__file__).resolve().parent.parent)  # gpudoc/, whose frames are ours
PHASE_ORDER = (
    "forward (training)",
    "backward",
    "optimizer step",
    "checkpoint saved",
    "checkpoint loaded",
    "forward (evaluation)",
)


@dataclass
class _Outcome:
    exit_code: int = 0
    error: DeviceError | None = None
    not_emulated: str | None = None
    gpudoc_failure: str | None = None


def run_emulated(target: Target, device_count: int, batch_limit: int | None) -> EmulationReport:
    started = time.perf_counter()
    outcome = _Outcome()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    try:
        with (
            children.inherited(device_count, batch_limit),
            emulated_cuda(device_count, batch_limit),
            warnings_from_user_code(),
        ):
            outcome = _execute(target)
    finally:
        sys.argv[:], sys.path[:] = saved_argv, saved_path
    return _report(target, outcome, time.perf_counter() - started)


def _execute(target: Target) -> _Outcome:
    sys.argv[:] = [target.name, *target.args]
    try:
        if target.as_module:
            sys.path.insert(0, os.getcwd())
            _check_module(target.name)
            runpy.run_module(target.name, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(target.name).resolve().parent))
            runpy.run_path(target.name, run_name="__main__")
    except SystemExit as exit_request:
        return _Outcome(exit_code=_exit_status(exit_request.code))
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or the script's own raise: python's output
        _print_user_traceback(interrupt)
        return _Outcome(exit_code=130)
    except (
        errors.EmulatedDeviceError,
        errors.NumpyOnDeviceError,
        errors.CudaInForkedWorkerError,
    ) as device_error:
        return _Outcome(exit_code=1, error=_diagnosed(device_error))
    except UsageError:
        raise
    except errors.GpudocFailure as failure:
        return _Outcome(exit_code=2, gpudoc_failure=str(failure))
    except errors.NotEmulatedError as stop:
        return _Outcome(exit_code=1, not_emulated=f"{stop}{_called_at(stop)}")
    except Exception as failure:
        if errors.is_device_message(failure):
            return _Outcome(exit_code=1, error=_diagnosed(failure))
        reason = errors.needs_real_gpu(failure)
        if reason is not None:
            needs = f"{errors.not_emulated(reason)}{_called_at(failure)}"
            return _Outcome(exit_code=1, not_emulated=needs)
        _print_user_traceback(failure)
        return _Outcome(exit_code=1)
    finally:
        sys.stdout.flush()
    return _Outcome()


def _called_at(failure: BaseException) -> str:
    """Where the user's code made the call that cannot be emulated: its line, as in a traceback."""
    frames = user_frames(failure.__traceback__)
    if not frames:
        return ""
    tb = failure.__traceback__
    line = frames[-1].f_lineno
    while tb is not None:  # the traceback's line, not the frame's current one (a try: block)
        if tb.tb_frame is frames[-1]:
            line = tb.tb_lineno
        tb = tb.tb_next
    where = source_location(frames[-1], line)
    source = f": {where.source}" if where.source else ""
    return f"\n  called at {where.file}:{where.line}{source}"


def _check_module(name: str) -> None:
    """``-m name`` that does not exist is a usage error (exit 2), not the script's failure."""
    try:
        found = importlib.util.find_spec(name) is not None
    except ImportError:
        found = False
    if not found:
        raise UsageError(f"cannot find module {name!r} (from {os.getcwd()})")
    if _is_package(name) and not _exists(f"{name}.__main__"):  # python -m's own message
        raise UsageError(
            f"No module named {name}.__main__; {name!r} is a package and cannot be directly "
            "executed"
        )


def _is_package(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.submodule_search_locations is not None


def _exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def _diagnosed(error: BaseException) -> DeviceError:
    """The full diagnosis, or at least the GPU's error text if the diagnosis itself fails."""
    try:
        return diagnose(error)
    except Exception as failure:
        return DeviceError(
            error_type=type(error).__name__,
            message=str(error),
            location=None,
            called_from=(),
            operands=(),
            pattern=f"(gpudoc could not analyse this error: {failure!r})",
            rule_code=None,
            rule_name=None,
        )


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_user_traceback(failure: BaseException) -> None:
    """What ``python script.py`` prints: the traceback from the script's first frame on,
    without gpudoc's own frames (the patched torch.load, the emulated tensor's dispatch)."""
    tb = failure.__traceback__
    while tb is not None and not tracking.is_user_file(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    shown = traceback.TracebackException(type(failure), failure, tb or failure.__traceback__)
    kept = [frame for frame in shown.stack if _GPUDOC_DIR not in frame.filename]
    shown.stack = traceback.StackSummary.from_list(kept)
    print("".join(shown.format()), end="", file=sys.stderr)


def _report(target: Target, outcome: _Outcome, wall_s: float) -> EmulationReport:
    return EmulationReport(
        target=("-m " if target.as_module else "") + target.name,
        device_count=STATE.device_count,
        batch_limit=STATE.batch_limit,
        script_exit_code=outcome.exit_code,
        wall_s=wall_s,
        tensors_moved=STATE.tensors_moved,
        modules_moved=STATE.modules_moved,
        ops_on_device=STATE.ops_on_device,
        batches_seen=STATE.batches_seen,
        loops_capped=STATE.loops_capped,
        phases=_phases(),
        error=outcome.error,
        not_emulated=outcome.not_emulated,
        gpudoc_failure=outcome.gpudoc_failure,
        notes=_notes(),
    )


def _notes() -> tuple[str, ...]:
    """What ran, but would surprise on a GPU: model passes on the host next to device ones."""
    devices = STATE.phase_devices
    on_device = sorted({d for found in devices.values() for d in found if d.startswith("cuda")})
    if not on_device:
        return ()
    return tuple(
        f"{phase} ran on cpu while other passes ran on {', '.join(on_device)}: on a GPU this "
        "part runs on the CPU, slowly (a model created or reloaded and never moved? GPD102)"
        for phase, found in devices.items()
        if "cpu" in found
    )


def _phases() -> tuple[PhaseCount, ...]:
    names = [name for name in PHASE_ORDER if name in STATE.phases]
    names += [name for name in STATE.phases if name not in PHASE_ORDER]
    return tuple(
        PhaseCount(
            name=name,
            count=STATE.phases[name],
            first_at=STATE.phase_lines.get(name),
            devices=tuple(sorted(STATE.phase_devices.get(name, ()))),
        )
        for name in names
    )
