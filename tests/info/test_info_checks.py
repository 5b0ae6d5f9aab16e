"""Checks that no named scenario triggers: each starts from a healthy recorded machine and changes
the one fact that the check is about, then asserts the finding, its severity and its fix."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from info_scenarios import collect_scenario

from gpudoc.info.doctor import run_doctor
from gpudoc.info.model import DevNode, Finding, InfoReport, TorchvisionInfo


@pytest.fixture
def healthy(tmp_path: Path) -> InfoReport:
    report = collect_scenario("workstation_rtx4090", tmp_path)
    assert not [f for r in report.checks for f in r.findings]
    return report


def findings(report: InfoReport) -> dict[str, Finding]:
    checked = run_doctor(dataclasses.replace(report, checks=()))
    return {f.check_id: f for r in checked.checks for f in r.findings}


def with_gpu(report: InfoReport, **changes: Any) -> InfoReport:
    return dataclasses.replace(report, gpus=(dataclasses.replace(report.gpus[0], **changes),))


def with_torch(report: InfoReport, **changes: Any) -> InfoReport:
    assert report.torch is not None
    return dataclasses.replace(report, torch=dataclasses.replace(report.torch, **changes))


def with_driver(report: InfoReport, **changes: Any) -> InfoReport:
    return dataclasses.replace(report, driver=dataclasses.replace(report.driver, **changes))


def with_host(report: InfoReport, **changes: Any) -> InfoReport:
    return dataclasses.replace(report, host=dataclasses.replace(report.host, **changes))


def test_torch_missing(healthy: InfoReport) -> None:
    found = findings(with_torch(healthy, installed=False, version=None, build=None))
    assert found["torch-missing"].severity == "fail"
    assert "whl/cu124" in (found["torch-missing"].fix or "")  # the driver supports CUDA 12.4


def test_torch_import_error(healthy: InfoReport) -> None:
    error = "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    found = findings(with_torch(healthy, import_error=error, version=None, build=None))
    assert error in found["torch-import-error"].message
    assert "--no-deps" in (found["torch-import-error"].fix or "")


def test_cpu_build_on_a_gpu_machine_is_a_failure_with_the_drivers_wheel(
    healthy: InfoReport,
) -> None:
    found = findings(with_torch(healthy, build="cpu", cuda_version=None, version="2.13.0+cpu"))
    assert found["torch-cpu-build"].severity == "fail"
    assert found["torch-cpu-build"].fix == (
        "pip install --force-reinstall torch torchvision --index-url "
        "https://download.pytorch.org/whl/cu124"
    )


def test_rocm_build_on_nvidia(healthy: InfoReport) -> None:
    found = findings(with_torch(healthy, build="rocm", cuda_version=None, hip_version="6.4"))
    assert found["torch-rocm-on-nvidia"].severity == "fail"


def test_torchvision_release_pairing(healthy: InfoReport) -> None:
    vision = TorchvisionInfo(True, "0.27.1+cu124", None, True, None)
    found = findings(with_torch(healthy, torchvision=vision))
    assert (
        "torch 2.13.0+cu124 pairs with torchvision 0.28.x" in found["torchvision-mismatch"].message
    )
    assert found["torchvision-mismatch"].fix == (
        "install both from one index in one command: pip install --force-reinstall "
        "torch==2.13.0 'torchvision==0.28.*' --index-url https://download.pytorch.org/whl/cu124"
    )


def test_driver_missing_with_a_loaded_kernel_module(healthy: InfoReport) -> None:
    report = with_driver(healthy, nvml_error="LibraryNotFound", kernel_module_version="550.90.07")
    found = findings(dataclasses.replace(report, gpus=()))
    assert "kernel module 550.90.07 is loaded" in found["driver-missing"].message
    assert "libnvidia-compute-550" in (found["driver-missing"].fix or "")


def test_driver_lib_mismatch_from_file_names(healthy: InfoReport) -> None:
    library = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.107.02"
    found = findings(with_driver(healthy, nvml_library_path=library))
    assert found["driver-lib-mismatch"].message.startswith(
        "Driver/library version mismatch: user-space libnvidia-ml 550.107.02, kernel module "
        "550.90.07."
    )


def test_driver_too_old_same_major_is_a_warning(healthy: InfoReport) -> None:
    found = findings(with_torch(healthy, cuda_version="12.8", version="2.13.0+cu128"))
    assert found["driver-too-old"].severity == "warn"
    assert "≥ 570.26 (CUDA 12.8)" in (found["driver-too-old"].fix or "")


def test_container_capabilities(healthy: InfoReport) -> None:
    env = {**healthy.host.env, "NVIDIA_DRIVER_CAPABILITIES": "utility"}
    found = findings(with_host(healthy, container="docker", env=env))
    assert "lacks compute" in found["container-capabilities"].message


def test_dev_permission_from_nvml_and_from_nodes(healthy: InfoReport) -> None:
    found = findings(with_driver(healthy, nvml_error="NoPermission"))
    assert found["dev-permission"].severity == "fail"
    nodes = (DevNode("/dev/nvidiactl", True, True), DevNode("/dev/nvidia0", False, False))
    found = findings(with_host(healthy, dev_nodes=(*nodes, DevNode("/dev/nvidia-uvm", True, True))))
    assert found["dev-permission"].message == "This user cannot open /dev/nvidia0."


def test_uvm_missing(healthy: InfoReport) -> None:
    nodes = tuple(n for n in healthy.host.dev_nodes if n.path != "/dev/nvidia-uvm")
    found = findings(with_host(healthy, dev_nodes=nodes))
    assert "modprobe nvidia_uvm" in (found["uvm-missing"].fix or "")


def test_deprecated_pynvml_distribution(healthy: InfoReport) -> None:
    found = findings(with_driver(healthy, nvml_binding_deprecated=("pynvml 12.0.0",)))
    assert found["nvml-binding"].message == "Deprecated NVML bindings installed: pynvml 12.0.0."


def test_mig_pending_compute_prohibited_and_ecc(healthy: InfoReport) -> None:
    report = with_gpu(
        healthy,
        mig_mode_current=False,
        mig_mode_pending=True,
        compute_mode="prohibited",
        ecc_uncorrected_volatile=3,
    )
    found = findings(report)
    assert "enable MIG is pending" in found["mig-pending"].message
    assert found["compute-prohibited"].fix == "(admin) sudo nvidia-smi -i 0 -c DEFAULT"
    assert "3 uncorrectable ECC error(s)" in found["ecc-uncorrectable"].message


def test_device_order_with_distinct_models_and_no_torch(tmp_path: Path) -> None:
    report = collect_scenario("mixed_models_fastest_first", tmp_path, torch=False)
    found = findings(report)
    assert "2 different GPU models and CUDA_DEVICE_ORDER is unset" in found["device-order"].message
    ordered = with_host(report, env={**report.host.env, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert "device-order" not in findings(ordered)


def test_missing_binding(healthy: InfoReport) -> None:
    report = with_driver(healthy, nvml_error="ModuleNotFound", nvml_binding=None)
    found = findings(dataclasses.replace(report, gpus=()))
    assert (
        found["nvml-binding"].message
        == "No distribution provides the `pynvml` module (nvidia-ml-py)."
    )
    assert "driver-missing" not in found


def test_cpu_build_with_a_gpu_but_no_driver_says_driver_first(healthy: InfoReport) -> None:
    report = with_driver(healthy, nvml_error="LibraryNotFound", cuda_driver_version=None)
    report = with_torch(dataclasses.replace(report, gpus=()), build="cpu", cuda_version=None)
    found = findings(report)
    assert found["torch-cpu-build"].severity == "fail"  # the PCI bus shows the RTX 4090
    assert (found["torch-cpu-build"].fix or "").startswith("install the NVIDIA driver, then pip")
    assert found["driver-missing"].severity == "fail"


def test_cuda_unavailable_is_a_warning_on_a_machine_without_gpus(healthy: InfoReport) -> None:
    report = dataclasses.replace(with_host(healthy, pci_gpus=()), gpus=())
    found = findings(with_torch(report, cuda_available=False, device_count=0, devices=()))
    assert found["cuda-unavailable"].severity == "warn"
