"""`nvidia-smi`'s table as pasted into issues: the 418-era and the 550-era layouts, processes,
MIG devices, ERR! cells, GPUs it cannot open, and the one line it prints when NVML fails."""

from __future__ import annotations

from pathlib import Path

from report_helpers import failing, given, read, result

from gpudoc.info.model import FieldError
from gpudoc.info.reports.smi_table import looks_like

GIB = 1024**3
MIB = 1024**2

R550 = """\
Tue Mar  5 10:12:01 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.14              Driver Version: 550.54.14      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   35C    P0             118W /  700W |   70125MiB /  81559MiB |     97%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |
| N/A   31C    P0              71W /  700W |       4MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A    412233      C   /usr/bin/python3                            70112MiB |
+-----------------------------------------------------------------------------------------+
"""

R418 = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 418.87.00    Driver Version: 418.87.00    CUDA Version: 10.1     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla V100-SXM2...  Off  | 00000000:00:1E.0 Off |                    2 |
| N/A   44C    P0    56W / 300W |   1021MiB / 16130MiB |     31%   E. Process |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID   Type   Process name                             Usage      |
|=============================================================================|
|    0     27311      C   python                                      1009MiB |
+-----------------------------------------------------------------------------+
"""

ERR_ROWS = """\
Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA GeForce ...  On   | 00000000:1A:00.0 Off |                  N/A |
|ERR!  ERR!  ERR!    ERR! / ERR!|   9944MiB / 24268MiB |    ERR!      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""

LOST = """\
Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the\
 system to recover this GPU
"""

MIG = """\
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA A100-SXM4-40GB          On  | 00000000:07:00.0 Off |                   On |
| N/A   32C    P0              42W / 400W |      0MiB / 40960MiB |     N/A      Default |
|                                         |                      |              Enabled |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA A100-SXM4-40GB          On  | 00000000:0F:00.0 Off |                   On |
| N/A   30C    P0              43W / 400W |     25MiB / 40960MiB |     N/A      Default |
|                                         |                      |              Enabled |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| MIG devices:                                                                          |
+------------------+--------------------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |                   Memory-Usage |        Vol|      Shared           |
|      ID  ID  Dev |                     BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |
|                  |                                |        ECC|                       |
|==================+================================+===========+=======================|
|  1    1   0   0  |              13MiB / 19968MiB  | 42      0 |  3   0    2    0    0 |
|                  |               0MiB / 32767MiB  |           |                       |
+------------------+--------------------------------+-----------+-----------------------+
|  1    2   0   1  |              12MiB / 19968MiB  | 42      0 |  3   0    2    0    0 |
|                  |               0MiB / 32767MiB  |           |                       |
+------------------+--------------------------------+-----------+-----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|  No running processes found                                                           |
+---------------------------------------------------------------------------------------+
"""


def test_r550_table(tmp_path: Path) -> None:
    report = read(tmp_path, R550)
    assert (report.driver.driver_version, report.driver.cuda_driver_version) == (
        "550.54.14",
        "12.4",
    )
    first, second = report.gpus
    assert (first.nvml_index, first.name, first.pci_bus_id) == (
        0,
        "NVIDIA H100 80GB HBM3",
        "0000:18:00.0",
    )
    assert first.persistence_mode is True and first.display_active is False
    assert (first.temperature_c, first.power_draw_mw, first.power_limit_mw) == (35, 118000, 700000)
    assert (first.memory_used_bytes, first.memory_total_bytes) == (70125 * MIB, 81559 * MIB)
    assert (first.utilization_gpu_percent, first.compute_mode) == (97, "default")
    assert first.ecc_uncorrected_volatile == 0 and first.mig_mode_current is False
    assert [(p.pid, p.name) for p in first.processes or ()] == [(412233, "/usr/bin/python3")]
    assert second.processes == ()
    assert result(report, "memory-held").status == "warn"  # 68 of 80 GiB held on GPU 0
    assert failing(report) == {"memory-held"}


def test_r418_table_with_exclusive_owner(tmp_path: Path) -> None:
    report = read(tmp_path, R418)
    (gpu,) = report.gpus
    assert gpu.name == "Tesla V100-SXM2..."  # as printed: nvidia-smi cut it short
    assert gpu.compute_mode == "exclusive_process" and gpu.mig_mode_current is None
    assert gpu.ecc_uncorrected_volatile == 2
    assert {"exclusive-busy", "ecc-uncorrectable"} <= failing(report)


def test_err_cells_are_unknown_and_noted(tmp_path: Path) -> None:
    report = read(tmp_path, ERR_ROWS)
    working, broken = report.gpus
    assert working.temperature_c is None and working.utilization_gpu_percent is None
    assert FieldError("temperature_c", "Unknown") in working.field_errors
    assert working.memory_used_bytes == 9944 * MIB
    assert broken.pci_bus_id == "0000:3b:00.0" and broken.name is None
    assert broken.field_errors == (FieldError("handle", "Unknown"),)
    assert broken.nvml_index == 1  # the next index after those the table shows


def test_a_lost_gpu_fails(tmp_path: Path) -> None:
    report = read(tmp_path, LOST)
    (gpu,) = report.gpus
    assert gpu.lost and gpu.pci_bus_id == "0000:3b:00.0"
    assert result(report, "gpu-lost").status == "fail"


def test_mig_without_instances_fails(tmp_path: Path) -> None:
    report = read(tmp_path, MIG)
    empty, split = report.gpus
    assert empty.mig_mode_current is True and empty.mig_instances == ()
    assert [(m.index, m.memory_total_bytes) for m in split.mig_instances or ()] == [
        (0, 19968 * MIB),
        (1, 19968 * MIB),
    ]
    assert result(report, "mig-no-instance").status == "fail"
    assert [f.gpu for f in result(report, "mig-no-instance").findings] == [0]
    assert empty.processes == ()


def test_nvml_failures(tmp_path: Path) -> None:
    not_loaded = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
        "that the latest NVIDIA driver is installed and running.\n"
    )
    report = read(tmp_path, not_loaded)
    assert report.driver.nvml_error == "DriverNotLoaded"
    assert result(report, "driver-not-loaded").status == "fail"
    assert result(report, "gpu-lost").reason == "NVIDIA driver not loaded"
    report = read(tmp_path, "Failed to initialize NVML: Driver/library version mismatch\n")
    assert result(report, "driver-lib-mismatch").status == "fail"
    report = read(tmp_path, "No devices were found\n")
    assert report.gpus == () and "gpus" in given(report)
    assert result(report, "gpu-lost").reason == "no NVIDIA GPU"


def test_recognised_by_header_or_failure_line() -> None:
    assert looks_like(R550) and looks_like(R418) and looks_like(LOST)
    assert not looks_like("| GPU  Name | Bus-Id |\n")


LIST = """\
GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5c4b3a29-8f3e-7a1d-2b6c-0e9f8d7c6b5a)
  MIG 3g.20gb     Device  0: (UUID: MIG-4c0f1e2d-3b4a-5968-7a8b-9c0d1e2f3a4b)
  MIG 3g.20gb     Device  1: (UUID: MIG-0e1f2a3b-4c5d-6e7f-8091-a2b3c4d5e6f7)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9)
"""


def test_nvidia_smi_list_with_mig_devices(tmp_path: Path) -> None:
    report = read(tmp_path, LIST)
    split, whole = report.gpus
    assert split.uuid == "GPU-5c4b3a29-8f3e-7a1d-2b6c-0e9f8d7c6b5a"
    assert [m.uuid for m in split.mig_instances or ()] == [
        "MIG-4c0f1e2d-3b4a-5968-7a8b-9c0d1e2f3a4b",
        "MIG-0e1f2a3b-4c5d-6e7f-8091-a2b3c4d5e6f7",
    ]
    assert whole.mig_mode_current is None  # no MIG line: the list does not say
    assert result(report, "mig-single-visible").status == "not_applicable"  # CVD unknown
    joined = read(tmp_path, LIST, MIG)  # -L beside the table: one pair of GPUs, by index
    assert len(joined.gpus) == 2 and joined.gpus[0].uuid is not None


CSV = """\
$ nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,memory.used,\
utilization.gpu,compute_mode,clocks_throttle_reasons.hw_thermal_slowdown,pcie.link.width.current,\
pcie.link.width.max --format=csv
index, name, pci.bus_id, driver_version, memory.total [MiB], memory.used [MiB], utilization.gpu \
[%], compute_mode, clocks_throttle_reasons.hw_thermal_slowdown, pcie.link.width.current, \
pcie.link.width.max
0, NVIDIA A100-PCIE-40GB, 00000000:17:00.0, 525.85.12, 40960 MiB, 39012 MiB, 100 %, Default, \
Active, 8, 16
1, NVIDIA A100-PCIE-40GB, 00000000:65:00.0, 525.85.12, 40960 MiB, 3 MiB, 0 %, Exclusive_Process, \
Not Active, 16, 16
"""


def test_query_gpu_csv(tmp_path: Path) -> None:
    report = read(tmp_path, CSV)
    assert report.driver.driver_version == "525.85.12"
    busy, idle = report.gpus
    assert (busy.pci_bus_id, busy.memory_used_bytes, busy.utilization_gpu_percent) == (
        "0000:17:00.0",
        39012 * MIB,
        100,
    )
    assert busy.clocks_event_reasons == ("hw_thermal_slowdown",) and idle.clocks_event_reasons == ()
    assert idle.compute_mode == "exclusive_process"
    assert {"throttling", "pcie-degraded"} <= failing(report)
    nounits = CSV.replace(" MiB", "").replace(" %", "")
    assert read(tmp_path, nounits).gpus[0].memory_used_bytes == 39012 * MIB


def test_a_gpu_nvml_cannot_open_fails_gpu_lost(tmp_path: Path) -> None:
    report = read(
        tmp_path, "Unable to determine the device handle for GPU 000:BA:80.0: Unknown Error\n"
    )
    (gpu,) = report.gpus
    assert gpu.pci_bus_id == "0000:ba:80.0" and not gpu.lost
    lost = result(report, "gpu-lost")
    assert lost.status == "fail" and "NVML cannot open it (Unknown)" in lost.findings[0].message
    reset = read(
        tmp_path, "Unable to determine the device handle for GPU0000:3B:00.0: GPU requires reset\n"
    )
    assert result(reset, "gpu-lost").status == "pass"
    assert result(reset, "gpu-needs-reset").status == "fail"


def test_exclusive_gpu_with_memory_in_use_and_no_process_list_warns(tmp_path: Path) -> None:
    table = R418.split("\n\n")[0]  # the GPU table without its Processes block
    report = read(tmp_path, table)
    (finding,) = result(report, "exclusive-busy").findings
    assert finding.severity == "warn" and "1021 MiB in use" in finding.message
    idle = table.replace("1021MiB / 16130MiB", "   0MiB / 16130MiB")
    assert result(read(tmp_path, idle), "exclusive-busy").status == "pass"


LSPCI = """\
$ lspci | grep -i nvidia
18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
2a:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
3b:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
"""

LSPCI_K = """\
3b:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:16c1]
\tKernel driver in use: nvidia
\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia
3c:00.0 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
\tKernel driver in use: mlx5_core
c1:00.0 Bridge [0680]: NVIDIA Corporation Device [10de:22a3] (rev a1)
"""


def test_lspci_beside_nvidia_smi_finds_the_unlisted_gpu(tmp_path: Path) -> None:
    report = read(tmp_path, R550, LSPCI)
    assert [p.bus_id for p in report.host.pci_gpus or ()] == [
        "0000:18:00.0",
        "0000:2a:00.0",
        "0000:3b:00.0",
    ]
    (finding,) = result(report, "pci-gpu-unlisted").findings
    assert finding.severity == "warn" and "0000:3b:00.0" in finding.message
    assert "does not say which driver" in finding.message
    report = read(tmp_path, R550, LSPCI_K)
    (pci,) = report.host.pci_gpus or ()
    assert (pci.device_id, pci.driver) == ("0x2330", "nvidia")
    assert report.host.nvswitches == ("0000:c1:00.0",)
    assert result(report, "pci-gpu-unlisted").findings[0].severity == "fail"
    nouveau = LSPCI_K.replace("Kernel driver in use: nvidia", "Kernel driver in use: nouveau")
    assert result(read(tmp_path, nouveau), "nouveau-bound").status == "fail"


def test_a_corrupted_inforom_warning_alone_fails_that_gpu(tmp_path: Path) -> None:
    """nvidia-smi's warning, pasted with the error it led to (pytorch/pytorch#87464)."""
    report = read(
        tmp_path,
        "WARNING: infoROM is corrupted at gpu 0000:00:1E.0\n"
        "RuntimeError: No CUDA GPUs are available\n",
    )
    assert report.gpus[0].pci_bus_id is not None and report.gpus[0].inforom_valid is False
    assert "inforom-corrupt" in failing(report)
