"""The torch probe: its real output here, and every way the subprocess can fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import stretch

from gpudoc.info import collect
from gpudoc.info.collect import parse_probe_output, start_torch_probe


@pytest.mark.slow
def test_the_real_probe_prints_one_json_line_about_this_torch() -> None:
    import torch

    result = subprocess.run(
        [sys.executable, str(collect.PROBE_SCRIPT)],
        capture_output=True,
        text=True,
        timeout=stretch(120),
    )
    assert result.returncode == 0
    [line] = result.stdout.splitlines()  # torch's chatter goes to stderr, never into the JSON
    info = parse_probe_output(result.returncode, result.stdout, result.stderr)
    assert json.loads(line)["version"] == info.version == str(torch.__version__)
    assert info.probe_error is None and info.installed
    assert info.build == ("cuda" if torch.version.cuda else "cpu")
    assert info.cuda_available == torch.cuda.is_available()
    if not torch.cuda.is_available():
        assert info.unavailable_reason  # torch.cuda.init()'s own words
    vision = info.torchvision
    assert vision is not None and vision.installed
    assert vision.version and "+" in vision.version  # the build tag, read without importing
    try:
        import torchvision  # noqa: F401
    except RuntimeError as error:
        assert vision.ops_load is False and str(error) in (vision.ops_error or "")


def test_a_hanging_probe_times_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(collect, "PROBE_SCRIPT", script)
    info = start_torch_probe(timeout_s=0.5)()
    assert info.probe_error == "the torch probe did not finish within 0.5 s (hang?)"


def test_a_crashing_probe_is_reported_with_its_signal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = tmp_path / "crash.py"
    script.write_text(
        "import os, signal, sys\nprint('dying', file=sys.stderr)\n"
        "os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    monkeypatch.setattr(collect, "PROBE_SCRIPT", script)
    info = start_torch_probe(timeout_s=30)()
    assert info.probe_error == "the torch probe was killed by SIGSEGV: dying"


@pytest.mark.parametrize(
    ("returncode", "out", "err", "expected"),
    [
        (1, "", "ImportError: boom\n", "the torch probe exited with status 1: ImportError: boom"),
        (0, "not json\n", "", "the torch probe printed unreadable output"),
        (0, "", "", "the torch probe printed nothing"),
    ],
)
def test_unusable_probe_output(returncode: int, out: str, err: str, expected: str) -> None:
    info = parse_probe_output(returncode, out, err)
    assert (info.probe_error or "").startswith(expected)


def test_probe_json_with_unknown_and_missing_keys_still_parses() -> None:
    out = json.dumps(
        {
            "installed": True,
            "version": "2.13.0+cu128",
            "future_key": 1,
            "devices": [{"index": 0, "uuid": "GPU-1"}],
            "torchvision": {"installed": False},
        }
    )
    info = parse_probe_output(0, out, "")
    assert info.version == "2.13.0+cu128" and info.devices[0].uuid == "GPU-1"
    assert info.devices[0].name is None and info.torchvision is not None


def _shared_library() -> Path | None:
    """A shared object that loads in any Python process: one of the standard library's own
    extension modules (a build may have compiled them all in; then there is none)."""
    import importlib.machinery
    import importlib.util

    for name in ("_json", "_csv", "_bisect", "_struct", "_random", "math"):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin and origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            return Path(origin)
    return None


def _fake_torchvision(root: Path, library: bytes, init: str) -> None:
    """A torchvision package in ``root``: its version file, its C++ ops library (``_C.so``) and an
    ``__init__`` that raises when imported."""
    import importlib.machinery

    package = root / "torchvision"
    package.mkdir()
    (package / "version.py").write_text("__version__ = '0.99.0+cpu'\n")
    (package / "__init__.py").write_text(init)
    (package / f"_C{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(library)


def _probe_torchvision(root: Path) -> dict:
    result = subprocess.run(
        [sys.executable, str(collect.PROBE_SCRIPT)],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
        timeout=stretch(120),
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])["torchvision"]


@pytest.mark.slow
def test_torchvision_ops_that_load_are_checked_without_importing_the_package(
    tmp_path: Path,
) -> None:
    """`import torchvision` takes seconds on a GPU machine (4.3 s measured on an H100 box); the
    probe loads the C++ ops library itself, and imports the package only when that fails."""
    library = _shared_library()
    if library is None:
        pytest.skip("this Python has no standard extension module in a shared library")
    _fake_torchvision(tmp_path, library.read_bytes(), "raise RuntimeError('imported')\n")
    vision = _probe_torchvision(tmp_path)
    assert vision["version"] == "0.99.0+cpu"
    assert vision["ops_load"] is True and vision.get("import_error") is None


@pytest.mark.slow
def test_torchvision_ops_that_do_not_load_report_the_users_error_and_the_cause(
    tmp_path: Path,
) -> None:
    init = "raise RuntimeError('operator torchvision::nms does not exist')\n"
    _fake_torchvision(tmp_path, b"not a shared library", init)
    vision = _probe_torchvision(tmp_path)
    assert vision["ops_load"] is False
    assert vision["import_error"] == "RuntimeError: operator torchvision::nms does not exist"
    # what the user's import says, then why: the library itself does not load
    assert vision["ops_error"].startswith(
        vision["import_error"] + ", because its C++ library does not load:"
    )
