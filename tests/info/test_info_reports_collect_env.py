"""collect_env reports, PyTorch 1.x to 2.x, CUDA, CPU-only, ROCm and Windows, read into the
InfoReport: what each line means (nvcc's version is not torch's CUDA, nvidia-smi -L is the GPU
list), and what stays unknown."""

from __future__ import annotations

from pathlib import Path

from report_helpers import failing, given, read, result

from gpudoc.info.reports.collect_env import looks_like, parse

MODERN = """\
Collecting environment information...
PyTorch version: 2.1.0+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.3 LTS (x86_64)
GCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Clang version: Could not collect
CMake version: version 3.27.7
Libc version: glibc-2.35

Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)
Python platform: Linux-5.15.0-91-generic-x86_64-with-glibc2.35
Is CUDA available: False
CUDA runtime version: 12.2.140
CUDA_MODULE_LOADING set to: N/A
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB

Nvidia driver version: 470.199.02
cuDNN version: Probably one of the following:
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.6
HIP runtime version: N/A
MIOpen runtime version: N/A
Is XNNPACK available: True

CPU:
Architecture:                       x86_64
Model name:                         AMD EPYC 7742 64-Core Processor

Versions of relevant libraries:
[pip3] numpy==1.26.2
[pip3] torch==2.1.0
[pip3] torchvision==0.16.0+cu118
[pip3] triton==2.1.0
[conda] Could not collect
"""

OLD = """\
PyTorch version: 1.4.0
Is debug build: No
CUDA used to build PyTorch: 10.1

OS: Ubuntu 18.04.3 LTS
GCC version: (Ubuntu 7.4.0-1ubuntu1~18.04.1) 7.4.0
CMake version: version 3.10.2

Python version: 3.7
Is CUDA available: Yes
CUDA runtime version: 10.1.243
GPU models and configuration: GPU 0: GeForce GTX 1080 Ti
Nvidia driver version: 418.87.00
cuDNN version: /usr/lib/x86_64-linux-gnu/libcudnn.so.7.6.5

Versions of relevant libraries:
[pip] numpy==1.18.1
[pip] torch==1.4.0
[pip] torchvision==0.5.0
[conda] blas                      1.0                         mkl
[conda] pytorch                   1.4.0           py3.7_cuda10.1.243_cudnn7.6.3_0    pytorch
[conda] torchvision               0.5.0                py37_cu101    pytorch
"""

CPU_WHEEL_ON_GPU = """\
PyTorch version: 2.2.0+cpu
Is debug build: False
CUDA used to build PyTorch: Could not collect
ROCM used to build PyTorch: N/A
OS: Debian GNU/Linux 12 (bookworm) (x86_64)
Python version: 3.11.7 (main, Dec 19 2023, 20:33:49) [GCC 12.2.0] (64-bit runtime)
Is CUDA available: False
CUDA runtime version: Could not collect
CUDA_MODULE_LOADING set to: N/A
GPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090
Nvidia driver version: 545.29.06
cuDNN version: Could not collect
"""

NO_CUDA = """\
PyTorch version: 2.0.1
Is debug build: False
CUDA used to build PyTorch: None
ROCM used to build PyTorch: N/A
OS: macOS 13.4 (arm64)
Python version: 3.9.6 (default, May  7 2023, 23:32:44)  [Clang 14.0.3 ] (64-bit runtime)
Python platform: macOS-13.4-arm64-arm-64bit
Is CUDA available: False
CUDA runtime version: No CUDA
CUDA_MODULE_LOADING set to: N/A
GPU models and configuration: No CUDA
Nvidia driver version: No CUDA
cuDNN version: No CUDA
HIP runtime version: N/A
MIOpen runtime version: N/A
"""

ROCM = """\
PyTorch version: 2.1.1+rocm5.6
Is debug build: False
CUDA used to build PyTorch: N/A
ROCM used to build PyTorch: 5.6.31061-8c743ae5d
OS: Ubuntu 22.04.3 LTS (x86_64)
Python version: 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] (64-bit runtime)
Is CUDA available: True
CUDA runtime version: Could not collect
GPU models and configuration: AMD Instinct MI250X (gfx90a:sramecc+:xnack-)
Nvidia driver version: Could not collect
cuDNN version: Could not collect
HIP runtime version: 5.6.31061
MIOpen runtime version: 2.20.0
"""

WINDOWS = """\
PyTorch version: 2.1.2+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
ROCM used to build PyTorch: N/A

OS: Microsoft Windows 11 Pro
GCC version: Could not collect
Python version: 3.11.5 | packaged by Anaconda, Inc. | (main, Sep 11 2023, 13:26:23) [MSC\
 v.1916 64 bit (AMD64)] (64-bit runtime)
Python platform: Windows-10-10.0.22631-SP0
Is CUDA available: True
CUDA runtime version: 12.1.66
CUDA_MODULE_LOADING set to: LAZY
GPU models and configuration: GPU 0: NVIDIA GeForce RTX 4090
Nvidia driver version: 546.17
cuDNN version: Could not collect

Versions of relevant libraries:
[pip3] torch==2.1.2+cu121
[pip3] torchvision==0.16.2+cu121
[conda] Could not collect
"""

NOT_IMPORTABLE = """\
PyTorch version: N/A
Is debug build: N/A
CUDA used to build PyTorch: N/A
ROCM used to build PyTorch: N/A
OS: Ubuntu 20.04.6 LTS (x86_64)
Python version: 3.8.10 (default, Nov 22 2023, 10:22:35)  [GCC 9.4.0] (64-bit runtime)
Is CUDA available: N/A
GPU models and configuration: GPU 0: Tesla T4
Nvidia driver version: 535.129.03
"""


def test_modern_report_gives_torch_driver_gpus_and_nvcc(tmp_path: Path) -> None:
    report = read(tmp_path, MODERN)
    torch = report.torch
    assert torch is not None and torch.installed
    assert (torch.version, torch.build, torch.cuda_version) == ("2.1.0+cu121", "cuda", "12.1")
    assert torch.cuda_available is False
    assert torch.cudnn_version is None  # "cuDNN version" is the system's library, not torch's
    assert torch.torchvision is not None and torch.torchvision.version == "0.16.0+cu118"
    assert report.driver.driver_version == "470.199.02"
    assert [g.name for g in report.gpus] == ["NVIDIA A100-SXM4-80GB"] * 2
    assert report.host.nvcc_cuda_version == "12.2"  # "CUDA runtime version" is nvcc's
    assert (report.host.python, report.host.kernel) == ("3.10.12", "5.15.0-91-generic")
    assert report.host.dev_nodes is None and report.host.container is None


def test_modern_report_diagnoses_old_driver_and_mismatched_torchvision(tmp_path: Path) -> None:
    report = read(tmp_path, MODERN)
    assert {"driver-too-old", "torchvision-mismatch", "cuda-unavailable"} <= failing(report)
    assert result(report, "driver-too-old").status == "fail"  # 470 < 525, CUDA 12's floor


def test_facts_a_report_lacks_make_checks_not_applicable_with_the_reason(tmp_path: Path) -> None:
    report = read(tmp_path, MODERN)
    assert result(report, "dev-permission").reason == (
        "the report does not say which device nodes exist"
    )
    assert result(report, "xid-recent").reason == "the report has no kernel log"
    assert result(report, "cvd-empty").reason == "the report does not say CUDA_VISIBLE_DEVICES"
    assert result(report, "exclusive-busy").reason == (
        "the report does not say the GPUs' compute mode"
    )
    assert result(report, "nvml-binding").status == "not_applicable"
    assert result(report, "bad-cuda-env").status == "not_applicable"


def test_pytorch_1x_report(tmp_path: Path) -> None:
    report = read(tmp_path, OLD)
    torch = report.torch
    assert torch is not None
    assert (torch.version, torch.build, torch.cuda_version) == ("1.4.0", "cuda", "10.1")
    assert torch.cuda_available is True
    assert torch.torchvision is not None and torch.torchvision.version == "0.5.0"
    assert [g.name for g in report.gpus] == ["GeForce GTX 1080 Ti"]
    assert report.host.python == "3.7"
    assert not failing(report)


def test_cpu_wheel_on_a_gpu_machine_fails(tmp_path: Path) -> None:
    report = read(tmp_path, CPU_WHEEL_ON_GPU)
    assert report.torch is not None and report.torch.build == "cpu"
    assert report.host.nvcc_cuda_version is None and "host.nvcc_cuda_version" in given(report)
    assert result(report, "torch-cpu-build").status == "fail"  # a GPU is listed
    assert "cu123" not in (result(report, "torch-cpu-build").findings[0].fix or "")


def test_no_cuda_report_leaves_the_gpus_unknown(tmp_path: Path) -> None:
    report = read(tmp_path, NO_CUDA)
    assert report.torch is not None and report.torch.build == "cpu"
    assert report.gpus == () and "gpus" not in given(report)
    assert "host.nvcc_cuda_version" not in given(report)  # "No CUDA": nvcc was not asked
    assert result(report, "gpu-lost").reason == "the report does not say which GPUs there are"
    cpu = result(report, "torch-cpu-build")
    assert cpu.status == "warn"  # no NVIDIA GPU is known to be there
    assert result(report, "driver-missing").status == "not_applicable"


def test_rocm_report(tmp_path: Path) -> None:
    report = read(tmp_path, ROCM)
    torch = report.torch
    assert torch is not None
    assert (torch.build, torch.hip_version, torch.cuda_version) == (
        "rocm",
        "5.6.31061-8c743ae5d",
        None,
    )
    assert report.gpus == ()  # an AMD name is not an NVIDIA GPU list
    assert report.driver.driver_version is None
    assert result(report, "cuda-unavailable").reason == "PyTorch is a rocm build"


def test_windows_report(tmp_path: Path) -> None:
    report = read(tmp_path, WINDOWS)
    assert report.host.os == "Microsoft Windows 11 Pro"
    assert report.host.python == "3.11.5"
    assert report.host.kernel is None
    assert [g.name for g in report.gpus] == ["NVIDIA GeForce RTX 4090"]
    assert report.driver.driver_version == "546.17"
    assert not failing(report)


def test_torch_that_does_not_import(tmp_path: Path) -> None:
    report = read(tmp_path, NOT_IMPORTABLE)
    assert report.torch is not None and not report.torch.installed
    assert result(report, "torch-missing").status == "fail"
    listed = NOT_IMPORTABLE + "\nVersions of relevant libraries:\n[pip3] torch==2.3.0\n"
    report = read(tmp_path, listed)
    assert report.torch is not None and report.torch.installed
    assert result(report, "torch-import-error").status == "fail"


def test_conda_lines_give_the_build() -> None:
    facts = parse(OLD.replace("[pip] torchvision==0.5.0\n", ""))
    assert facts.torchvision["version"] == "0.5.0+cu101"


def test_recognised_by_its_keys_only() -> None:
    assert looks_like(MODERN) and looks_like(OLD) and looks_like(NO_CUDA)
    assert not looks_like("PyTorch version: 2.1.0\n")
    assert not looks_like("torch 2.1.0\nIs CUDA available: yes\n")


def test_partial_and_mangled_pastes(tmp_path: Path) -> None:
    two_lines = "Collecting environment information...\nPyTorch version: 2.0.0+cpu\n"
    report = read(tmp_path, two_lines + "Is debug build: False\n")
    assert report.torch is not None and report.torch.build == "cpu"  # from the +cpu tag
    mangled = (
        OLD.replace("PyTorch version:", "PyTorch version")
        .replace("GPU 0: GeForce", "GPU 0： GeForce")
        .replace("CUDA used to build PyTorch: 10.1", "CUDA used to build PyTorch: 10.2")
        .replace("418.87.00", "410.104")
    )
    report = read(tmp_path, mangled)
    assert report.torch is not None and report.torch.version == "1.4.0"
    assert [g.name for g in report.gpus] == ["GeForce GTX 1080 Ti"]
    too_old = result(report, "driver-too-old")  # CUDA 10.2 needs 440.33: no minor compat
    assert too_old.status == "fail" and "440.33" in (too_old.findings[0].fix or "")


def test_torch_1x_pairs_torchvision_by_its_table(tmp_path: Path) -> None:
    report = read(tmp_path, OLD.replace("[pip] torchvision==0.5.0", "[pip] torchvision==0.7.0"))
    finding = result(report, "torchvision-mismatch").findings[0]
    assert "torch 1.4.0 pairs with torchvision 0.5.x" in finding.message


def test_a_cpu_wheel_in_a_report_without_gpus_does_not_claim_the_machine_has_none(
    tmp_path: Path,
) -> None:
    report = read(tmp_path, "PyTorch version: 2.0.1+cpu\nIs CUDA available: False\n")
    message = result(report, "torch-cpu-build").findings[0].message
    assert "does not show whether the machine has an NVIDIA GPU" in message
    assert "this machine has no NVIDIA GPU" not in message
