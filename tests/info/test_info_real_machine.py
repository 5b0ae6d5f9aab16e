"""The real path on this machine, no fakes: real pynvml (no NVIDIA library), the real torch
probe subprocess (CPU-only torch, torchvision whose ops do not load), real /proc, /sys, /dev.

The assertions follow what the machine really offers, so they also hold on a GPU machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import RunGpudoc, gpudoc_env, stretch

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/info/schema.json").read_text())
REQUIRED_CHECKS = (
    "torch-missing",
    "torch-import-error",
    "torch-cpu-build",
    "torchvision-mismatch",
    "driver-missing",
    "driver-not-loaded",
    "driver-lib-mismatch",
    "driver-too-old",
    "nouveau-bound",
    "container-no-gpu",
    "dev-permission",
    "cvd-empty",
    "cvd-invalid",
    "device-order",
    "mig-no-instance",
    "mig-pending",
    "exclusive-busy",
    "compute-prohibited",
    "arch-unsupported",
    "memory-held",
    "gpu-lost",
    "nvml-binding",
    "ecc-uncorrectable",
)


@pytest.fixture(scope="module")
def real_json() -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-m", "gpudoc", "info", "--json"],
        capture_output=True,
        text=True,
        env=gpudoc_env(),
        timeout=stretch(120),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def _machine_has_no_nvidia_library() -> bool:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        return True
    pynvml.nvmlShutdown()
    return False


@pytest.mark.slow
def test_json_validates_against_the_schema(real_json: dict[str, object]) -> None:
    jsonschema.validate(real_json, SCHEMA)


@pytest.mark.slow
def test_json_facts_match_the_real_torch(real_json: dict[str, object]) -> None:
    import torch

    probed = real_json["torch"]
    assert isinstance(probed, dict)
    assert probed["version"] == str(torch.__version__)
    assert probed["cuda_version"] == torch.version.cuda
    assert probed["cuda_available"] == torch.cuda.is_available()


@pytest.mark.slow
@pytest.mark.skipif(not _machine_has_no_nvidia_library(), reason="this machine has NVML")
def test_this_machine_names_its_real_problems_with_fixes(run_gpudoc: RunGpudoc) -> None:
    import torch

    result = run_gpudoc("info", env={"COLUMNS": "100"})
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "NVML Shared Library Not Found (LibraryNotFound)" in text
    assert "driver-missing No NVIDIA driver" in text or "container-no-gpu" in text
    if torch.version.cuda is None:
        assert f"torch-cpu-build PyTorch {torch.__version__} is a CPU-only build" in text
        assert "pip install --force-reinstall torch torchvision --index-url" in text
    vision = _torchvision_import_error()
    if vision is not None:
        assert "✗ torchvision-mismatch torchvision" in text
        assert vision in text
        assert "fix: install both from one index in one command: pip install" in text
    assert "problems found" in result.stdout.splitlines()[-1]


def _torchvision_import_error() -> str | None:
    probe = "import torchvision"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if result.returncode == 0:
        return None
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_require_gpu_exits_1_without_a_usable_gpu(run_gpudoc: RunGpudoc) -> None:
    import torch

    result = run_gpudoc("info", "--require-gpu", "--json")
    expected = 0 if torch.cuda.is_available() else 1
    assert result.returncode == expected
    assert json.loads(result.stdout)["summary"]["usable_gpus"] == torch.cuda.device_count()


def test_strict_exits_1_when_there_are_problems(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("info", "--strict", "--no-torch", "--json")
    problems = json.loads(result.stdout)["summary"]["problems"]
    assert result.returncode == (1 if problems else 0)


def test_no_torch_path_never_imports_torch_and_never_spawns_it() -> None:
    code = (
        "import io, sys\nfrom gpudoc.cli import main\nsys.stdout = io.StringIO()\n"
        "code = main(['info', '--no-torch', '--json'])\n"
        "sys.stdout = sys.__stdout__\n"
        "print(code, 'torch' in sys.modules, 'pynvml' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=gpudoc_env(), check=False
    )
    assert result.stdout.split() == ["0", "False", "True"], result.stderr


@pytest.mark.slow
def test_the_cli_process_never_imports_torch_even_when_probing_it() -> None:
    """torch (and so any CUDA context) lives only in the probe subprocess."""
    code = (
        "import io, json, sys\nfrom gpudoc.cli import main\nsys.stdout = io.StringIO()\n"
        "main(['info', '--json'])\nreport = json.loads(sys.stdout.getvalue())\n"
        "sys.stdout = sys.__stdout__\n"
        "print('torch' in sys.modules, report['torch']['version'] is not None)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=gpudoc_env(), check=False
    )
    assert result.stdout.split() == ["False", "True"], result.stderr


def test_list_checks_lists_every_required_check(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("info", "--list-checks", env={"COLUMNS": "200"})
    assert result.returncode == 0
    listed = {line.split()[0] for line in result.stdout.splitlines()[1:] if line.strip()}
    assert set(REQUIRED_CHECKS) <= listed


def test_usage_errors_are_one_line_and_exit_2(run_gpudoc: RunGpudoc) -> None:
    for args in (
        ("--torch-timeout", "0"),
        ("--torch-timeout", "nan"),
        ("--torch-timeout", "soon"),
        ("--bogus",),
    ):
        result = run_gpudoc("info", *args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines()[-1].startswith("gpudoc"), result.stderr


def test_json_path_never_imports_rich() -> None:
    code = (
        "import io, sys\nfrom gpudoc.cli import main\nsys.stdout = io.StringIO()\n"
        "main(['info', '--no-torch', '--json'])\nsys.stdout = sys.__stdout__\n"
        "print('rich' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=gpudoc_env(), check=False
    )
    assert result.stdout.split() == ["False"], result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not _machine_has_no_nvidia_library(), reason="this machine has NVML")
def test_checks_that_cannot_look_here_are_not_applicable_not_passed(
    real_json: dict[str, object],
) -> None:
    checks = real_json["checks"]
    assert isinstance(checks, list)
    status = {c["check_id"]: (c["status"], c["reason"]) for c in checks}
    for check_id in ("driver-not-loaded", "driver-lib-mismatch", "gpu-lost", "mig-no-instance"):
        assert status[check_id] == ("not_applicable", "no NVIDIA driver"), check_id
    for check_id in ("exclusive-busy", "memory-held", "arch-unsupported", "device-order"):
        assert status[check_id] == ("not_applicable", "no NVIDIA driver"), check_id
    assert status["driver-missing"][0] in ("fail", "warn")  # the real problems stay
    assert status["torchvision-mismatch"][0] == "fail" or _torchvision_import_error() is None
    passed = {c for c, (s, _) in status.items() if s == "pass"}
    assert passed.isdisjoint({"gpu-lost", "memory-held", "driver-too-old", "cuda-unavailable"})
    summary = real_json["summary"]
    assert isinstance(summary, dict)
    assert summary["not_applicable_checks"] == sum(
        s == "not_applicable" for s, _ in status.values()
    )


@pytest.mark.skipif(not _machine_has_no_nvidia_library(), reason="this machine has NVML")
def test_human_view_summarises_what_did_not_apply_and_verbose_lists_it(
    run_gpudoc: RunGpudoc,
) -> None:
    plain = run_gpudoc("info", "--no-torch", env={"COLUMNS": "100"}).stdout
    verbose = run_gpudoc("info", "--no-torch", "-v", env={"COLUMNS": "100"}).stdout
    assert "✓ every GPU answers" not in plain and "every GPU answers" not in plain
    assert "checks did not apply here (no NVIDIA driver;" in " ".join(plain.split())
    assert "– every GPU answers: did not apply (no NVIDIA driver)" in verbose
    assert "did not apply here" not in verbose
