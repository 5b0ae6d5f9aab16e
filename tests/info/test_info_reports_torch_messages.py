"""PyTorch's messages about CUDA pasted from a script's output, alone or beside other reports:
the checks that read the live probe's warnings read them."""

from __future__ import annotations

from pathlib import Path

from report_helpers import failing, read, result
from test_info_reports_collect_env import MODERN

from gpudoc.info.reports.torch_messages import looks_like

TOO_OLD = """\
/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA \
initialization: The NVIDIA driver on your system is too old (found version 11040). Please update \
your GPU driver by downloading and installing a new version from the URL: \
http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a \
PyTorch version that has been compiled with your version of the CUDA driver. (Triggered \
internally at ../c10/cuda/CUDAFunctions.cpp:108.)
  return torch._C._cuda_getDeviceCount() > 0
False
"""

FABRIC = """\
>>> import torch; torch.cuda.is_available()
/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:128: UserWarning: CUDA \
initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions \
before calling NumCudaDevices() that might have already set the error? Error 802: system not yet \
initialized (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)
False
"""

SM_120 = """\
UserWarning:
NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch \
installation.
The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.
If you want to use the NVIDIA GeForce RTX 5090 GPU with PyTorch, please check the instructions at \
https://pytorch.org/get-started/locally/
"""

CPU_ONLY = """\
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    model = model.cuda()
  File "/usr/lib/python3/dist-packages/torch/cuda/__init__.py", line 284, in _lazy_init
    raise AssertionError("Torch not compiled with CUDA enabled")
AssertionError: Torch not compiled with CUDA enabled
"""


def test_driver_too_old_from_the_warning(tmp_path: Path) -> None:
    report = read(tmp_path, MODERN.replace("470.199.02", "Could not collect"), TOO_OLD)
    torch = report.torch
    assert torch is not None and len(torch.init_warnings) == 1
    assert torch.init_warnings[0].startswith("The NVIDIA driver on your system is too old")
    assert result(report, "driver-too-old").status == "fail"
    assert "found version 11040" in result(report, "cuda-unavailable").findings[0].message


def test_error_802_is_the_fabric_manager(tmp_path: Path) -> None:
    report = read(tmp_path, MODERN, FABRIC)
    assert result(report, "fabric-manager").status == "fail"


def test_a_gpu_newer_than_the_wheel(tmp_path: Path) -> None:
    smi = (
        "| NVIDIA-SMI 570.124.04    Driver Version: 570.124.04    CUDA Version: 12.8     |\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "|===============================+======================+======================|\n"
        "|   0  NVIDIA GeForce RTX 5090  Off | 00000000:01:00.0  On |                  N/A |\n"
        "|  0%   38C    P8    21W / 575W |    512MiB / 32607MiB |      1%      Default |\n"
        "+-------------------------------+----------------------+----------------------+\n"
    )
    report = read(tmp_path, smi, SM_120)
    (gpu,) = report.gpus
    assert (gpu.compute_capability, gpu.arch_supported_by_torch) == ("12.0", False)
    assert result(report, "arch-unsupported").status == "fail"
    sources = report.sources or ()
    assert "gpus[0].compute_capability" in sources[1].facts


def test_torch_not_compiled_with_cuda(tmp_path: Path) -> None:
    report = read(tmp_path, CPU_ONLY)
    assert report.torch is not None and report.torch.build == "cpu"
    assert "torch-cpu-build" in failing(report)


def test_recognition() -> None:
    assert looks_like(TOO_OLD) and looks_like(SM_120) and looks_like(CPU_ONLY)
    assert not looks_like(MODERN)


def test_a_shortened_runtime_error_beside_an_elided_gpu_list(tmp_path: Path) -> None:
    """A paste that cut torch's message and nvidia-smi -L's UUID still says: a CUDA build whose
    runtime fails with 802 on a listed GPU (huggingface_hub#4134)."""
    report = read(
        tmp_path,
        "GPU 0: NVIDIA H200 (...)\n\n"
        "RuntimeError: Unexpected error from cudaGetDeviceCount() ... Error 802: system not yet "
        "initialized\n",
    )
    assert report.torch is not None and report.torch.build == "cuda"
    assert report.gpus[0].name == "NVIDIA H200" and report.gpus[0].uuid is None
    assert {"fabric-manager", "cuda-unavailable"} <= failing(report)


def test_the_full_warning_is_one_message_not_two(tmp_path: Path) -> None:
    report = read(tmp_path, FABRIC)
    assert report.torch is not None and len(report.torch.init_warnings) == 1
