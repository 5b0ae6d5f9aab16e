"""`gpudoc smoke` refuses what it cannot judge with exit 2 and one line, before any training."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from conftest import RunGpudoc
from smoke_helpers import write_cifar

from gpudoc.cli import main


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--device", "tpu"], {}, "--device 'tpu': expected cpu, cuda or cuda:N"),
        (["--device", "cuda:3"], {}, "no device matched: cuda:3 not found"),
        (["--timeout", "0"], {}, "expected a positive number of seconds"),
        (["--steps", "x"], {}, "expected a positive integer"),
        (["--download"], {}, "--download needs --data-root"),
        (["--data-root", "nowhere"], {}, "no CIFAR-10 at nowhere"),
        ([], {"GPUDOC_SMOKE_INJECT": "melt:0"}, "GPUDOC_SMOKE_INJECT='melt:0': expected"),
        (["--all-devices", "--device", "cpu"], {}, "not allowed with argument"),
        (["--golden", "nowhere.json"], {}, "--golden nowhere.json: cannot read it"),
        (["--distributed", "--golden", "g.json"], {}, "--golden is not supported with --distrib"),
        ([], {"GPUDOC_SMOKE_INJECT": "flaky:x"}, "expected <fault>:<worker-index>"),
        (["--json", "no/dir/out.json"], {}, "cannot write no/dir/out.json: No such file or"),
        (["--device", "cpu", "--json", "."], {}, "cannot write .: Is a directory"),
        (
            ["--device", "cpu", "--device", "cpu"],
            {"GPUDOC_SMOKE_INJECT": "crash:5,nan:1"},
            "GPUDOC_SMOKE_INJECT: no worker 5: this run has 2 workers (0..1)",
        ),
        (
            ["--distributed", "--device", "cpu"],
            {"GPUDOC_SMOKE_INJECT": "crash:rank=5", "RANK": "0", "WORLD_SIZE": "2"},
            "GPUDOC_SMOKE_INJECT: no rank 5: this run has 2 ranks (0..1)",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    run_gpudoc: RunGpudoc, tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    done = run_gpudoc("smoke", *args, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 or "usage:" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_writable_json_path_is_checked_and_left_alone(tmp_path: Path) -> None:
    from gpudoc.smoke.command import _check_writable

    _check_writable(str(tmp_path / "new.json"))
    assert not (tmp_path / "new.json").exists()  # no empty file if the run then fails
    (tmp_path / "old.json").write_text("kept")
    _check_writable(str(tmp_path / "old.json"))
    assert (tmp_path / "old.json").read_text() == "kept"


def test_corrupt_data_root_is_exit_2(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    folder = write_cifar(tmp_path, per_batch=4, test=3)
    (folder / "test_batch").write_bytes(b"\x80\x02garbage")
    done = run_gpudoc("smoke", "--data-root", str(tmp_path))
    assert done.returncode == 2
    assert "test_batch: pickle data was truncated" in done.stderr


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (7, "label_names must be a list of 10 names (int)"),
        (None, "label_names must be a list of 10 names (NoneType)"),
        ([b"cat"] * 3, "label_names must be a list of 10 names (3 entries)"),
        ([1] * 10, "label_names must be strings"),
    ],
)
def test_a_malformed_batches_meta_is_one_line_exit_2(
    run_gpudoc: RunGpudoc, tmp_path: Path, names: object, message: str
) -> None:
    folder = write_cifar(tmp_path, per_batch=4, test=3)
    (folder / "batches.meta").write_bytes(pickle.dumps({b"label_names": names}, protocol=2))
    done = run_gpudoc("smoke", "--data-root", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"gpudoc smoke: error: {folder / 'batches.meta'}: {message}"
    ]


def test_without_torch_there_is_no_verdict(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    assert main(["smoke", "--device", "cpu"]) == 2
    assert "PyTorch is not installed" in capsys.readouterr().err
