"""The health checks (throttling, retired-remap, xid-recent, persistence-off, bad-cuda-env,
nvcc-mismatch): each fires in its machine scenario, stays quiet on the healthy ones, and reads
the facts the way NVML, the kernel log and nvcc give them."""

from __future__ import annotations

import dataclasses
import json
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from info_scenarios import collect_scenario
from test_info_checks import findings, with_gpu, with_host
from test_info_kernel_log import wait_for

from gpudoc.info.checks import all_checks
from gpudoc.info.model import Finding, InfoReport, KernelLog
from gpudoc.info.nvml_health import reason_names
from gpudoc.info.toolchain import find_nvcc, parse_nvcc_version, start_nvcc

NEW_CHECKS = (
    "throttling",
    "retired-remap",
    "xid-recent",
    "persistence-off",
    "bad-cuda-env",
    "nvcc-mismatch",
)


def _findings(report: InfoReport, check_id: str) -> list[Finding]:
    return [f for r in report.checks for f in r.findings if f.check_id == check_id]


def _status(report: InfoReport) -> dict[str, tuple[str, str | None]]:
    return {r.check_id: (r.status, r.reason) for r in report.checks}


@pytest.fixture(scope="module")
def workstation(tmp_path_factory: pytest.TempPathFactory) -> InfoReport:
    return collect_scenario("workstation_rtx4090", tmp_path_factory.mktemp("ws"))


def test_every_new_check_is_registered() -> None:
    assert set(NEW_CHECKS) <= {c.check_id for c in all_checks()}


def test_the_healthy_machines_stay_quiet(tmp_path: Path, workstation: InfoReport) -> None:
    node = collect_scenario("h100_8x_node", tmp_path)
    for report in (workstation, node):
        assert not [f for r in report.checks for f in r.findings if f.check_id in NEW_CHECKS]
    status = _status(node)
    for check_id in ("throttling", "retired-remap", "xid-recent", "persistence-off"):
        assert status[check_id] == ("pass", None), check_id  # they looked
    # The GeForce has neither page retirement nor row remapping: nothing to look at.
    assert _status(workstation)["retired-remap"] == (
        "not_applicable",
        "no GPU reports page retirement or row remapping",
    )
    # Idle with "SW power cap" set, and persistence off with a display attached: both normal.
    [gpu] = workstation.gpus
    assert gpu.clocks_event_reasons == ("gpu_idle", "sw_power_cap")
    assert gpu.persistence_mode is False and gpu.display_active is True


def test_thermal_slowdown_and_a_lowered_power_limit(tmp_path: Path) -> None:
    report = collect_scenario("h100_thermal_throttle", tmp_path)
    found = {f.gpu: f for f in _findings(report, "throttling")}
    assert set(found) == {5, 6}  # GPU 2 runs at its own 700 W limit: SW power cap, not trouble
    assert report.gpus[2].clocks_event_reasons == ("sw_power_cap",)
    hot = found[5]
    assert "HW slowdown, HW thermal slowdown, SW thermal slowdown" in hot.message
    assert "90°C" in hot.message and "SM clock 1275 of 1980 MHz" in hot.message
    assert "cooling" in (hot.fix or "") and "power limit" not in (hot.fix or "")
    capped = found[6]
    assert "power limit lowered to 400 W of the board's 700 W" in capped.message
    assert capped.fix == "restore the power limit: sudo nvidia-smi -i 6 -pl 700"


@pytest.mark.parametrize(
    ("reasons", "limit_w", "flagged", "fix"),
    [
        (("gpu_idle", "sw_power_cap"), 300, False, None),  # idle: SW power cap means nothing
        (("sw_power_cap",), 450, False, None),  # busy at the board's own limit: by design
        (("sw_power_cap",), 300, True, "-pl 450"),  # busy against a lowered limit
        (("applications_clocks_setting", "sync_boost"), 450, False, None),
        (("hw_slowdown", "hw_power_brake_slowdown"), 450, True, "power supplies"),
        (("hw_slowdown",), 450, True, "cooling and the power supply"),
    ],
)
def test_which_clock_event_reasons_are_trouble(
    workstation: InfoReport, reasons: tuple[str, ...], limit_w: int, flagged: bool, fix: str | None
) -> None:
    report = with_gpu(workstation, clocks_event_reasons=reasons, power_limit_mw=limit_w * 1000)
    found = findings(report).get("throttling")
    assert (found is not None) == flagged
    if found is not None:
        assert found.severity == "warn" and fix in (found.fix or "")


def test_reason_bits_are_named() -> None:
    assert reason_names(0) == ()
    assert reason_names(0x1 | 0x4) == ("gpu_idle", "sw_power_cap")
    assert reason_names(0x8 | 0x20 | 0x40) == (
        "hw_slowdown",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
    )
    assert reason_names(0x80 | 0x400) == ("hw_power_brake_slowdown", "0x400")


def test_row_remap_failure_fails_and_names_the_gpu(tmp_path: Path) -> None:
    report = collect_scenario("a100_row_remap_failure", tmp_path)
    [failure] = _findings(report, "retired-remap")
    assert (failure.severity, failure.gpu) == ("fail", 1)
    assert "8 uncorrectable" in failure.message and "replace" in (failure.fix or "")
    [xid] = _findings(report, "xid-recent")
    assert (xid.severity, xid.gpu) == ("warn", 1)
    assert "Xid 48, 64" in xid.message and "All reserved rows for bank are remapped" in xid.message
    assert "docs.nvidia.com/deploy/xid-errors" in (xid.fix or "")
    assert "nvidia-smi -r -i 1" in (xid.fix or "")


def test_row_remap_pending_warns_to_reset(tmp_path: Path) -> None:
    report = collect_scenario("a100_row_remap_pending", tmp_path)
    [pending] = _findings(report, "retired-remap")
    assert (pending.severity, pending.gpu) == ("warn", 0)
    assert "pending" in pending.message and "nvidia-smi -r -i 0" in (pending.fix or "")
    [gpu] = report.gpus
    # the counts of a real A100 in leptonai/gpud#80
    assert (gpu.remapped_rows_uncorrectable, gpu.remapped_rows_pending) == (4, True)
    assert "4 uncorrectable, 0 correctable rows remapped" in pending.message
    assert [e.xid for e in report.host.kernel_log.xid_events] == [48, 63]  # type: ignore[union-attr]


def test_page_retirement_pending_before_ampere(workstation: InfoReport) -> None:
    found = findings(with_gpu(workstation, retired_pages_pending=True))["retired-remap"]
    assert found.severity == "warn" and "retire" in (found.fix or "")


def test_persistence_off_on_a_headless_gpu(tmp_path: Path, workstation: InfoReport) -> None:
    [info] = _findings(collect_scenario("persistence_off", tmp_path), "persistence-off")
    assert (info.severity, info.gpu) == ("info", 0)
    assert "nvidia-persistenced" in (info.fix or "")
    # The same facts on the workstation, once its display is gone:
    assert "persistence-off" in findings(with_gpu(workstation, display_active=False))


def test_xid_from_a_gpu_nvml_lost(tmp_path: Path) -> None:
    report = collect_scenario("gpu_fallen_off_bus", tmp_path)
    [xid] = _findings(report, "xid-recent")
    assert xid.gpu is None  # NVML cannot say which GPU had that bus id any more
    # the kernel-log lines of a real GPU lost in NVIDIA/nvidia-docker#1553
    assert xid.message.startswith("GPU at PCI 0000:09:00: the driver logged Xid 79 since boot")
    assert "1.9 h ago: GPU has fallen off the bus." in xid.message


def _log(*lines: str, uptime: float = 3600.0) -> KernelLog:
    from gpudoc.info.kernel_log import parse_kernel_log

    return parse_kernel_log("/dev/kmsg", lines, uptime)


def test_program_xids_are_information_not_a_sick_gpu(workstation: InfoReport) -> None:
    log = _log(
        "[3000.0] NVRM: Xid (PCI:0000:01:00): 31, pid=9120, name=python, Ch 00000008, intr "
        "10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is "
        "of type FAULT_PDE ACCESS_TYPE_READ",
        "[3001.0] NVRM: Xid (PCI:0000:01:00): 43, pid=9120, name=python, Ch 00000008",
    )
    found = findings(with_host(workstation, kernel_log=log))["xid-recent"]
    assert (found.severity, found.gpu) == ("info", 0)
    assert "Xid 31, 43 since boot" in found.message
    assert "the latest, Xid 43 (GPU stopped processing) 10 min ago: Ch 00000008." in found.message
    assert "compute-sanitizer" in (found.fix or "")


def test_repeated_xids_are_counted(workstation: InfoReport) -> None:
    line = "[{}.0] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus."
    log = _log(*(line.format(t) for t in (100, 200, 300)), uptime=400.0)
    found = findings(with_host(workstation, kernel_log=log))["xid-recent"]
    assert "Xid 79 ×3" in found.message and "100 s ago" in found.message


def test_an_unreadable_kernel_log_skips_the_check(workstation: InfoReport) -> None:
    reason = "/dev/kmsg: Operation not permitted; journalctl -k: No journal files were found."
    report = with_host(workstation, kernel_log=KernelLog(None, reason, None))
    checked = {r.check_id: r for r in _rerun(report).checks}
    assert checked["xid-recent"].status == "not_applicable"
    assert checked["xid-recent"].reason == f"kernel log unreadable ({reason})"


def _rerun(report: InfoReport) -> InfoReport:
    from gpudoc.info.doctor import run_doctor

    return run_doctor(dataclasses.replace(report, checks=()))


@pytest.mark.parametrize(
    ("env", "debug", "flagged"),
    [
        ({"CUDA_LAUNCH_BLOCKING": "1"}, {}, ["CUDA_LAUNCH_BLOCKING"]),
        ({"CUDA_LAUNCH_BLOCKING": "0"}, {}, []),
        ({}, {"CUDA_INJECTION64_PATH": "/opt/nvidia/nsight/libToolsInjection64.so"}, None),
        ({}, {"PYTORCH_NO_CUDA_MEMORY_CACHING": "0"}, []),
        ({}, {"CUDA_AUTO_BOOST": "0"}, ["CUDA_AUTO_BOOST"]),  # DCGM: set at all is a warning
    ],
)
def test_bad_cuda_env(
    workstation: InfoReport,
    env: dict[str, str],
    debug: dict[str, str],
    flagged: list[str] | None,
) -> None:
    flagged = list(debug) if flagged is None else flagged
    report = with_host(workstation, env={**workstation.host.env, **env}, debug_env=debug)
    found = findings(report).get("bad-cuda-env")
    if not flagged:
        assert found is None
        return
    assert found is not None and found.severity == "warn"
    assert found.fix is not None and found.fix.startswith(f"unset {' '.join(flagged)} ")
    if "CUDA_LAUNCH_BLOCKING" in flagged:
        assert "training runs much slower" in found.message


@pytest.mark.parametrize(
    ("nvcc", "expected"),
    [
        ("13.0", "fails"),  # another major: cpp_extension refuses to build
        ("12.6", "only warns"),  # another minor: it warns
        ("12.4", None),
    ],
)
def test_nvcc_mismatch(workstation: InfoReport, nvcc: str, expected: str | None) -> None:
    assert workstation.torch is not None and workstation.torch.cuda_version == "12.4"
    path = f"/usr/local/cuda-{nvcc}/bin/nvcc"
    found = findings(with_host(workstation, nvcc_path=path, nvcc_cuda_version=nvcc))
    if expected is None:
        assert "nvcc-mismatch" not in found
        return
    info = found["nvcc-mismatch"]
    assert info.severity == "info" and expected in info.message and path in info.message
    assert "ships its own CUDA runtime" in info.message
    assert "CUDA 12.4 toolkit" in (info.fix or "")


def test_nvcc_is_never_asked_without_torch(tmp_path: Path) -> None:
    report = collect_scenario("workstation_rtx4090", tmp_path, torch=False)
    assert report.host.nvcc_path is None
    assert _status(report)["nvcc-mismatch"] == ("not_applicable", "PyTorch not probed (--no-torch)")


NVCC_OUTPUT = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Jan_15_19:20:09_PST_2025
Cuda compilation tools, release 12.8, V12.8.61
Build cuda_12.8.r12.8/compiler.35404655_0
"""


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_nvcc_version_from_a_real_subprocess(tmp_path: Path) -> None:
    nvcc = _script(tmp_path / "cuda/bin/nvcc", f"cat <<'EOF'\n{NVCC_OUTPUT}EOF\n")
    env = {"CUDA_HOME": str(tmp_path / "cuda"), "PATH": "/nonexistent"}
    assert start_nvcc(env)() == (str(nvcc), "12.8")


def test_nvcc_that_answered_before_the_deadline_is_read_after_it(tmp_path: Path) -> None:
    answered = tmp_path / "answered"
    _script(tmp_path / "cuda/bin/nvcc", f"cat <<'EOF'\n{NVCC_OUTPUT}EOF\n: > '{answered}'\n")
    wait = start_nvcc({"CUDA_HOME": str(tmp_path / "cuda")}, timeout_s=0.1)
    wait_for(answered)  # however loaded the machine, nvcc has answered
    time.sleep(0.2)  # the torch probe took longer than nvcc's deadline
    assert wait()[1] == "12.8"


def test_nvcc_lookup_follows_torch_cpp_extension(tmp_path: Path) -> None:
    on_path = _script(tmp_path / "bin/nvcc", "exit 0\n")
    home = _script(tmp_path / "home/bin/nvcc", "exit 0\n")
    default = _script(tmp_path / "default/bin/nvcc", "exit 0\n")
    none = str(tmp_path / "missing")
    assert find_nvcc({"CUDA_HOME": str(tmp_path / "home"), "PATH": str(on_path.parent)}) == str(
        home
    )
    assert find_nvcc({"CUDA_PATH": none, "PATH": str(on_path.parent)}, none) is None
    assert find_nvcc({"PATH": str(on_path.parent)}, none) == str(on_path)
    assert find_nvcc({"PATH": none}, str(default.parent.parent)) == str(default)
    assert find_nvcc({"PATH": none}, none) is None
    assert start_nvcc({"PATH": none}, default_home=none)() == (None, None)


def test_a_hanging_nvcc_is_given_up_on(tmp_path: Path) -> None:
    nvcc = _script(tmp_path / "cuda/bin/nvcc", "exec sleep 30\n")
    env = {"CUDA_HOME": str(tmp_path / "cuda"), "PATH": "/usr/bin:/bin"}
    assert start_nvcc(env, timeout_s=0.3)() == (str(nvcc), None)


@pytest.mark.parametrize(
    ("output", "version"),
    [(NVCC_OUTPUT, "12.8"), ("Cuda compilation tools, release 13.0, V13.0.88", "13.0"), ("", None)],
)
def test_parse_nvcc_version(output: str, version: str | None) -> None:
    assert parse_nvcc_version(output) == version


def test_cli_flags_debug_variables_and_reports_the_kernel_log(run_gpudoc: Any) -> None:
    env = {"CUDA_LAUNCH_BLOCKING": "1", "CUDA_INJECTION64_PATH": "/opt/tool/libinject.so"}
    result = run_gpudoc("info", "--no-torch", "--json", env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["host"]["debug_env"] == {"CUDA_INJECTION64_PATH": "/opt/tool/libinject.so"}
    assert data["host"]["nvcc_path"] is None  # --no-torch never runs nvcc
    log = data["host"]["kernel_log"]
    assert (log["source"] is None) == (log["unreadable_reason"] is not None)
    [check] = [c for c in data["checks"] if c["check_id"] == "bad-cuda-env"]
    assert check["status"] == "warn"
    assert "CUDA_LAUNCH_BLOCKING='1'" in check["findings"][0]["message"]


def test_list_checks_lists_the_new_checks(run_gpudoc: Any) -> None:
    result = run_gpudoc("info", "--list-checks", env={"COLUMNS": "200"})
    listed = {line.split()[0] for line in result.stdout.splitlines()[1:] if line.strip()}
    assert set(NEW_CHECKS) <= listed
