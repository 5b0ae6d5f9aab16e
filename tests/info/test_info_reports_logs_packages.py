"""Kernel logs (dmesg, journalctl, syslog) and package lists (pip list, pip freeze, conda list)
read as reports: Xid lines through the live path's parser, torch's build from its tag."""

from __future__ import annotations

from pathlib import Path

from report_helpers import given, read, result

from gpudoc.info.reports import kernel, packages

DMESG = """\
[    3.512207] nvidia: loading out-of-tree module taints kernel.
[    3.620113] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19\
 01:15:15 UTC 2023
[ 8123.441502] NVRM: GPU at PCI:0000:3b:00: GPU-5c4b3a29-8f3e-7a1d-2b6c-0e9f8d7c6b5a
[ 8123.441510] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has\
 fallen off the bus.
[ 8123.441519] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.
"""

JOURNAL = """\
Feb 02 11:40:03 node17 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=40211, name=python,\
 Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address
Feb 02 11:40:03 node17 kernel: NVRM: Xid (PCI:0000:18:00): 43, pid=40211, name=python, Ch 00000008
"""

PIP_LIST = """\
Package                  Version
------------------------ ------------
filelock                 3.13.1
nvidia-cuda-runtime-cu12 12.1.105
torch                    2.1.0
torchvision              0.16.0
triton                   2.1.0
"""

PIP_FREEZE = """\
numpy==1.26.4
torch==2.2.1+cpu
torchvision==0.17.1+cu121
"""

CONDA = """\
# packages in environment at /opt/conda:
#
# Name                    Version                   Build  Channel
_libgcc_mutex             0.1                        main
pytorch                   2.1.0           py3.10_cuda11.8_cudnn8.7.0_0    pytorch
pytorch-cuda              11.8                 h7e8668a_5    pytorch
torchvision               0.16.0              py310_cu118    pytorch
"""


def test_dmesg_xid_79(tmp_path: Path) -> None:
    report = read(tmp_path, DMESG)
    log = report.host.kernel_log
    assert log is not None and [(e.xid, e.pci_bus_id) for e in log.xid_events] == [
        (79, "0000:3b:00")
    ]
    assert report.driver.kernel_module_version == "535.104.05"
    xid = result(report, "xid-recent")
    assert xid.status == "warn" and "fallen off the bus" in xid.findings[0].message
    assert log.uptime_seconds is None  # a report does not say how long ago


def test_journal_program_xids_are_info(tmp_path: Path) -> None:
    report = read(tmp_path, JOURNAL)
    assert result(report, "xid-recent").status == "info"


def test_a_kernel_log_without_xid_passes(tmp_path: Path) -> None:
    report = read(tmp_path, DMESG.splitlines()[1] + "\n")
    assert result(report, "xid-recent").status == "pass"
    assert "host.kernel_log" in given(report)


def test_xid_joins_the_gpu_of_another_report(tmp_path: Path) -> None:
    smi = "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.\n"
    report = read(tmp_path, smi, DMESG)
    assert result(report, "xid-recent").findings[0].gpu == 0


def test_pip_list_with_pypi_runtime_is_a_cuda_build(tmp_path: Path) -> None:
    report = read(tmp_path, PIP_LIST)
    torch = report.torch
    assert torch is not None
    assert (torch.version, torch.build, torch.cuda_version) == ("2.1.0", "cuda", "12.1")
    assert torch.torchvision is not None and torch.torchvision.version == "0.16.0"
    assert result(report, "torchvision-mismatch").status == "pass"
    assert result(report, "torch-import-error").reason == (
        "the report does not say whether PyTorch imports"
    )


def test_pip_freeze_mixing_cpu_torch_and_cuda_torchvision(tmp_path: Path) -> None:
    report = read(tmp_path, PIP_FREEZE)
    assert report.torch is not None and report.torch.build == "cpu"
    assert result(report, "torchvision-mismatch").status == "fail"
    assert result(report, "torch-cpu-build").reason is None


def test_conda_list_builds(tmp_path: Path) -> None:
    report = read(tmp_path, CONDA)
    torch = report.torch
    assert torch is not None and (torch.build, torch.cuda_version) == ("cuda", "11.8")
    assert torch.torchvision is not None and torch.torchvision.version == "0.16.0+cu118"


def test_an_untagged_torch_alone_has_an_unknown_build(tmp_path: Path) -> None:
    report = read(tmp_path, "Package Version\n------- -------\ntorch   2.3.0\n")
    assert report.torch is not None and report.torch.build is None
    assert result(report, "torch-cpu-build").reason == (
        "the report does not say how PyTorch was built"
    )


def test_recognition() -> None:
    assert kernel.looks_like(DMESG) and kernel.looks_like(JOURNAL)
    assert not kernel.looks_like(PIP_LIST)
    assert packages.looks_like_pip_list(PIP_LIST) and not packages.looks_like_pip_list(CONDA)
    assert packages.looks_like_pip_freeze(PIP_FREEZE)
    assert not packages.looks_like_pip_freeze("torch==2.1.0\n")
    assert packages.looks_like_conda_list(CONDA)


SXID = """\
[ 1571.220012] nvidia-nvswitch2: SXid (PCI:0000:c3:00.0): 12028, Non-fatal, Link 33 egress \
non-posted PRIV error (First)
[ 1571.220019] nvidia-nvswitch2: SXid (PCI:0000:c3:00.0): 12028, Severity 0 Engine instance 33 \
Sub-engine instance 00
[ 1571.220023] nvidia-nvswitch2: SXid (PCI:0000:c3:00.0): 12028, Data {0x00000000, 0x00000000}
[ 1603.911784] nvidia-nvswitch0: SXid (PCI:0000:c1:00.0): 24007, Fatal, Link 12 sourcetrack \
timeout error (First)
"""


def test_sxid_lines(tmp_path: Path) -> None:
    report = read(tmp_path, SXID)
    log = report.host.kernel_log
    assert log is not None
    assert [(s.sxid, s.fatal, s.link) for s in log.sxid_events] == [
        (12028, False, 33),
        (24007, True, 12),
    ]
    assert result(report, "sxid-recent").status == "fail"


def test_pip_excerpts_without_a_header_and_pip_show(tmp_path: Path) -> None:
    excerpt = "torch       2.4.0+cu121\ntorchvision 0.19.0+cu118\n"
    assert result(read(tmp_path, excerpt), "torchvision-mismatch").status == "fail"
    assert not packages.looks_like_pip_list("numpy 1.26.4\nscipy 1.11.0\n")  # no torch named
    show = (
        "(venv) C:\\work> pip show torch\nName: torch\nVersion: 2.4.0+cu121\n"
        "Summary: Tensors and Dynamic neural networks\n\n"
        "(venv) C:\\work> pip show torchvision\nName: torchvision\nVersion: 0.20.1+cu124\n"
    )
    report = read(tmp_path, show)
    assert [s.format for s in report.sources or ()] == ["pip show"]
    assert result(report, "torchvision-mismatch").status == "fail"


def test_shell_variables_set_cuda_visible_devices(tmp_path: Path) -> None:
    session = "~/mnist$ CUDA_VISIBLE_DEVICES=2 python main.py\nno CUDA-capable device\n"
    table = (
        "| NVIDIA-SMI 375.39                 Driver Version: 375.39                    |\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "|===============================+======================+======================|\n"
        "|   0  TITAN X (Pascal)    Off  | 0000:01:00.0      On |                  N/A |\n"
        "+-------------------------------+----------------------+----------------------+\n"
    )
    report = read(tmp_path, session + table)
    assert report.visible.raw == "2" and report.visible.nvml_indices == ()
    assert result(report, "cvd-invalid").status == "fail"
    assert "visible.raw" in given(report)


def test_an_xid_judged_by_the_xid_that_caused_it(tmp_path: Path) -> None:
    log = (
        "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused "
        "by previous Xid 149\n"
    )
    xid = result(read(tmp_path, log), "xid-recent")
    assert xid.status == "warn" and "NVLink" in (xid.findings[0].fix or "")


def test_program_faults_from_many_processes_on_one_gpu_warn(tmp_path: Path) -> None:
    line = "[ {t}.0] NVRM: Xid (PCI:0000:db:00): 31, pid={pid}, Ch 00000008, MMU Fault\n"
    three = "".join(line.format(t=100 + n, pid=13641 + n) for n in range(3))
    xid = result(read(tmp_path, three), "xid-recent")
    assert xid.status == "warn" and "3 different processes" in xid.findings[0].message
    assert "dcgmi diag" in (xid.findings[0].fix or "")
    two = "".join(line.format(t=100 + n, pid=13641 + n) for n in range(2))
    assert result(read(tmp_path, two), "xid-recent").status == "info"


def test_a_gpu_gone_when_the_driver_loaded_is_xid_79(tmp_path: Path) -> None:
    log = (
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
        "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
    )
    report = read(tmp_path, log)
    log_read = report.host.kernel_log
    assert log_read is not None
    assert [(e.xid, e.pci_bus_id) for e in log_read.xid_events] == [(79, "0000:b3:00")]
    assert result(report, "xid-recent").status == "warn"


IBSTAT = """\
CA 'mlx5_0'
\tCA type: MT4123
\tNumber of ports: 1
\tFirmware version: 20.31.1014
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 200
\t\tLink layer: InfiniBand
CA 'mlx5_1'
\tCA type: MT4123
\tPort 1:
\t\tState: Down
\t\tPhysical state: Polling
\t\tRate: 10
\t\tLink layer: InfiniBand
"""

LSMOD = """\
$ lsmod | grep nvidia
nvidia_uvm           1527808  4
nvidia_drm             77824  0
nvidia_modeset       1306624  1 nvidia_drm
nvidia              56717312  188 nvidia_uvm,nvidia_modeset
"""


def test_ibstat_and_lsmod_feed_the_rdma_checks(tmp_path: Path) -> None:
    smi = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5c4b3a29-8f3e-7a1d-2b6c-0e9f8d7c6b5a)\n"
    report = read(tmp_path, smi, IBSTAT, LSMOD)
    ports = report.host.infiniband_ports or ()
    assert [(p.device, p.state, p.physical_state, p.rate_gbps) for p in ports] == [
        ("mlx5_0", "ACTIVE", "LinkUp", 200.0),
        ("mlx5_1", "DOWN", "Polling", 10.0),
    ]
    assert report.host.kernel_modules == ("nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_uvm")
    assert result(report, "infiniband-down").status == "warn"
    assert result(report, "peermem-missing").status == "warn"
