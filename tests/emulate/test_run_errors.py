"""`gpudoc run --emulate-cuda` refuses what python could not run with one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RunGpudoc


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"import torch\ndef broken(:\n    pass\n", "syntax error at line 2: invalid syntax"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "a binary file, not a Python script"),
        ("name = 'caf\u00e9'\n".encode("latin-1"), "not valid UTF-8 and no encoding declared"),
    ],
    ids=["syntax", "binary", "latin1"],
)
def test_a_script_python_cannot_compile_is_one_line_exit_2(
    run_gpudoc: RunGpudoc, tmp_path: Path, data: bytes, message: str
) -> None:
    script = tmp_path / "train.py"
    script.write_bytes(data)
    done = run_gpudoc("run", "--emulate-cuda", str(script))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"gpudoc run: error: cannot run {str(script)!r}: {message}")


def test_a_directory_says_it_is_one(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    done = run_gpudoc("run", "--emulate-cuda", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"gpudoc run: error: cannot run {str(tmp_path)!r}: it is a directory (with no __main__.py)"
    )
    (tmp_path / "__main__.py").write_text("print('ran the directory')\n")
    ran = run_gpudoc("run", "--emulate-cuda", str(tmp_path))
    assert ran.returncode == 0 and ran.stdout == "ran the directory\n"  # as python DIR does


def test_a_package_without_main_gets_pythons_message(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    done = run_gpudoc("run", "--emulate-cuda", "-m", "pkg", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "gpudoc run: error: No module named pkg.__main__; 'pkg' is a package and cannot be "
        "directly executed"
    )
