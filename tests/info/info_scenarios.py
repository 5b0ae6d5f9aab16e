"""Named machine scenarios (fixtures/nvml/*.json) turned into reports: the fake NVML answers,
the recorded torch-probe JSON replaces the subprocess, and the host facts are real files in a
temporary root (/proc, /sys/bus/pci, /dev) read by the real host code. The kernel log and
`nvcc --version` come from the scenario too ("kernel_log", "nvcc" under "host"), through the real
parsers, never from this machine.

Where a real report posted in a public thread shows the same situation, a scenario takes its
values from it, and its "source" names the thread (the cases of tests/info/reports/cases/):
  driver_too_old          driver 470.182.03 + torch 2.1.0+cu121 and torch's warning, verbatim:
                          https://github.com/pytorch/pytorch/issues/112553
  gpu_fallen_off_bus      the kernel-log lines of a GPU lost with Xid 79:
                          https://github.com/NVIDIA/nvidia-docker/issues/1553
  a100_row_remap_pending  the remapped-row counts (0 correctable, 4 uncorrectable, pending):
                          https://github.com/leptonai/gpud/pull/80"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nvml_fake import FakeNvml

from gpudoc.info.collect import collect_info, parse_probe_output
from gpudoc.info.doctor import run_doctor
from gpudoc.info.kernel_log import parse_kernel_log
from gpudoc.info.model import InfoReport, KernelLog
from gpudoc.info.toolchain import parse_nvcc_version

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvml"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def build_root(host: dict[str, Any], root: Path) -> Path:
    for relative, text in host.get("files", {}).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "dev").mkdir(parents=True, exist_ok=True)
    for name in host.get("dev", []):
        (root / "dev" / name).write_text("")
    devices = root / "sys/bus/pci/devices"
    devices.mkdir(parents=True, exist_ok=True)
    (root / "sys/bus/pci/drivers").mkdir(parents=True, exist_ok=True)
    for gpu in host.get("pci", []):
        entry = devices / gpu["bus_id"]
        entry.mkdir()
        (entry / "vendor").write_text("0x10de\n")
        (entry / "class").write_text(gpu["class"] + "\n")
        (entry / "device").write_text(gpu["device"] + "\n")
        if gpu.get("driver"):
            driver_dir = root / "sys/bus/pci/drivers" / gpu["driver"]
            driver_dir.mkdir(exist_ok=True)
            os.symlink(driver_dir, entry / "driver")
    if host.get("container") == "docker":
        (root / ".dockerenv").write_text("")
    return root


def collect_scenario(
    name: str,
    tmp_path: Path,
    *,
    torch: bool = True,
    host: dict[str, Any] | None = None,
    nvml: dict[str, Any] | None = None,
) -> InfoReport:
    """The checked report of scenario `name`; `host` and `nvml` override keys of its sections."""
    scenario = load(name)
    scenario["host"].update(host or {})
    scenario["nvml"].update(nvml or {})
    root = build_root(scenario["host"], tmp_path / "root")
    probe_output = json.dumps(scenario["torch_probe"])

    def start() -> Any:
        return lambda: parse_probe_output(0, probe_output + "\n", "")

    log = scenario_kernel_log(scenario["host"].get("kernel_log", {}))
    nvcc = scenario["host"].get("nvcc") or {}
    found = (nvcc.get("path"), parse_nvcc_version(nvcc.get("output", "")))
    report = collect_info(
        torch_probe=start if torch else None,
        nvml_lib=FakeNvml(scenario["nvml"]),
        root=str(root),
        environ=scenario["host"].get("env", {}),
        kernel_log=lambda: lambda: log,
        nvcc=lambda: lambda: found,
    )
    return run_doctor(report)


def scenario_kernel_log(recorded: dict[str, Any]) -> KernelLog:
    """{"lines": [dmesg lines], "uptime_seconds": s} or {"unreadable": reason}."""
    if "unreadable" in recorded:
        return KernelLog(None, recorded["unreadable"], None)
    uptime = recorded.get("uptime_seconds", 86400.0)
    return parse_kernel_log("/dev/kmsg", recorded.get("lines", []), uptime)


def finding_ids(report: InfoReport, *severities: str) -> set[str]:
    return {f.check_id for r in report.checks for f in r.findings if f.severity in severities}
