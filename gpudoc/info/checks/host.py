"""Doctor checks about the driver, the NVML binding, device nodes and containers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import INDEX, nvidia_gpu_present, wheel_tag_for
from gpudoc.info.model import Finding, InfoReport, Severity
from gpudoc.info.nvml_reader import NOT_IN_BINDING, NOT_IN_DRIVER

# The oldest driver branch for each CUDA major (NVIDIA minor-version compatibility floors).
DRIVER_FLOORS = {13: 580, 12: 525, 11: 450}
# Before CUDA 11 there was no minor-version compatibility: each release needs its own driver.
MINOR_FLOORS = {(10, 2): 440, (10, 1): 418, (10, 0): 410, (9, 2): 396, (9, 1): 390, (9, 0): 384}
# The Linux driver each CUDA toolkit release ships with (CUDA release notes, table 3).
FULL_SUPPORT = {
    (9, 0): "384.81",
    (9, 2): "396.26",
    (10, 0): "410.48",
    (10, 1): "418.39",
    (10, 2): "440.33",
    (11, 8): "520.61.05",
    (12, 0): "525.60.13",
    (12, 1): "530.30.02",
    (12, 2): "535.54.03",
    (12, 4): "550.54.14",
    (12, 6): "560.28.03",
    (12, 8): "570.26",
    (12, 9): "575.51.03",
    (13, 0): "580.65.06",
}
_LIB_VERSION = re.compile(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$")


def _bus_summary(report: InfoReport) -> str:
    if report.host.pci_gpus is None:
        return "the PCI bus could not be read"
    count = len(report.host.pci_gpus)
    return f"the PCI bus shows {count} NVIDIA GPU(s)" if count else "no NVIDIA GPU on the PCI bus"


def _no_gpu_access_in_container(report: InfoReport) -> bool:
    """In a container whose host has GPUs (the PCI bus shows them, or cannot be read)."""
    host = report.host
    return host.container is not None and host.dev_nodes == () and host.pci_gpus != ()


@check("NVIDIA driver installed", "fail/warn", pre.driver_answered)
def driver_missing(report: InfoReport) -> Iterator[Finding]:
    driver = report.driver
    if driver.nvml_error != "LibraryNotFound" or _no_gpu_access_in_container(report):
        return  # in a container the driver lives on the host: container-no-gpu says so
    if driver.kernel_module_version:
        yield finding(
            "fail",
            f"The NVIDIA kernel module {driver.kernel_module_version} is loaded, but its "
            "user-space library libnvidia-ml.so.1 cannot be loaded "
            "(NVML Shared Library Not Found).",
            f"install the user-space driver libraries of the same version "
            f"(e.g. libnvidia-compute-{driver.kernel_module_version.split('.')[0]}), "
            "or check LD_LIBRARY_PATH / ldconfig",
        )
        return
    gpu = nvidia_gpu_present(report)
    yield finding(
        "fail" if gpu else "warn",
        "No NVIDIA driver: libnvidia-ml.so.1 cannot be loaded (NVML Shared Library Not Found) "
        f"and /proc/driver/nvidia/version does not exist; {_bus_summary(report)}.",
        "install the NVIDIA driver for the running kernel (e.g. `sudo ubuntu-drivers install`, "
        "or NVIDIA's package with DKMS), then reboot"
        if gpu
        else "run on a machine with an NVIDIA GPU; if this one has one, install the NVIDIA "
        "driver and reboot",
    )


@check("NVIDIA kernel module loaded", "fail", pre.all_of(pre.driver_libraries, pre.driver_answered))
def driver_not_loaded(report: InfoReport) -> Iterator[Finding]:
    if report.driver.nvml_error == "DriverNotLoaded":
        yield finding(
            "fail",
            "The NVIDIA driver libraries are installed but the kernel module is not loaded "
            f"(NVML: Driver Not Loaded); {_bus_summary(report)}.",
            "sudo modprobe nvidia; if that fails, rebuild the module for kernel "
            f"{report.host.kernel or '$(uname -r)'} (sudo dkms autoinstall) and reboot",
        )


@check("driver library matches kernel module", "fail", pre.driver_versions)
def driver_lib_mismatch(report: InfoReport) -> Iterator[Finding]:
    driver = report.driver
    library = _LIB_VERSION.search(driver.nvml_library_path or "")
    module = driver.kernel_module_version
    if driver.nvml_error == "LibRmVersionMismatch":
        user = f"user-space libnvidia-ml {library.group(1)}" if library else "NVML's library"
        detail = f"kernel module {module}" if module else "the loaded kernel module"
        message = f"Driver/library version mismatch: {user} does not match {detail}."
    elif library and module and library.group(1) != module:
        message = (
            f"Driver/library version mismatch: user-space libnvidia-ml {library.group(1)}, "
            f"kernel module {module}."
        )
    else:
        return
    yield finding(
        "fail",
        message + " The driver packages were upgraded without a reboot.",
        "reboot (or unload and reload the nvidia modules when no process uses the GPU); pin the "
        "driver packages to stop unattended upgrades",
    )


@check(
    "driver supports torch's CUDA",
    "fail/warn",
    pre.all_of(
        pre.driver_libraries,
        pre.torch_cuda_build,
        pre.reported("the driver version", "driver.driver_version", "driver.cuda_driver_version"),
    ),
)
def driver_too_old(report: InfoReport) -> Iterator[Finding]:
    torch, driver = report.torch, report.driver
    if torch is None or torch.build != "cuda" or not torch.cuda_version:
        return
    warned = [w for w in torch.init_warnings if "too old" in w]
    needed = _major_minor(torch.cuda_version)
    have = _major_minor(driver.cuda_driver_version) if driver.cuda_driver_version else None
    floor = MINOR_FLOORS.get(needed) or DRIVER_FLOORS.get(needed[0])
    branch = int(driver.driver_version.split(".")[0]) if driver.driver_version else None
    severity: Severity
    if (have is not None and have[0] < needed[0]) or (floor and branch and branch < floor):
        severity = "fail"
    elif have is not None and have < needed:
        severity = "warn"  # minor-version compatibility: runs, without newer features
    elif warned:
        severity = "fail"
    else:
        return
    target = FULL_SUPPORT.get(needed) or (f"{floor}" if floor else "the latest")
    fix = f"upgrade the NVIDIA driver to ≥ {target} (CUDA {torch.cuda_version})"
    tag = wheel_tag_for(driver.cuda_driver_version)
    if tag:
        fix += f", or install torch for your driver: pip install torch --index-url {INDEX}/{tag}"
    yield finding(
        severity,
        f"torch is built for CUDA {torch.cuda_version}; driver {driver.driver_version or '?'} "
        + (
            f"supports CUDA {driver.cuda_driver_version}."
            if driver.cuda_driver_version or not (floor and branch and branch < floor)
            else f"is older than the {floor} branch CUDA {torch.cuda_version} needs."
        )
        + (f" torch says: {warned[0]}" if warned else ""),
        fix,
    )


def _major_minor(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return int(major), int((minor or "0").split(".")[0])


@check("nouveau does not own the GPU", "fail", pre.nvidia_on_pci)
def nouveau_bound(report: InfoReport) -> Iterator[Finding]:
    bound = [g.bus_id for g in report.host.pci_gpus or () if g.driver == "nouveau"]
    if bound:
        yield finding(
            "fail",
            f"The open-source nouveau driver owns the GPU(s) at {', '.join(bound)}; "
            "CUDA needs the NVIDIA driver.",
            "blacklist nouveau (echo 'blacklist nouveau' | sudo tee "
            "/etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs, install the "
            "NVIDIA driver, reboot",
        )


@check("container has GPU access", "fail/warn", pre.all_of(pre.container, pre.host_may_have_gpu))
def container_no_gpu(report: InfoReport) -> Iterator[Finding]:
    host = report.host
    if not _no_gpu_access_in_container(report) or report.driver.nvml_error is None:
        return
    visible = host.env.get("NVIDIA_VISIBLE_DEVICES")
    state = "unset" if visible is None else repr(visible)
    yield finding(
        "fail" if nvidia_gpu_present(report) else "warn",
        f"Running in a {host.container} container ({host.container_evidence}) without GPU "
        f"access: no /dev/nvidia* device nodes, NVML says {report.driver.nvml_error_message!r}, "
        f"NVIDIA_VISIBLE_DEVICES {state}.",
        "start the container with GPUs: `docker run --gpus all ...` (nvidia-container-toolkit on "
        "the host); compose: deploy.resources.reservations.devices; Kubernetes: "
        "resources.limits nvidia.com/gpu",
    )


@check("container has compute and utility", "warn", pre.all_of(pre.container, pre.capabilities_set))
def container_capabilities(report: InfoReport) -> Iterator[Finding]:
    raw = report.host.env.get("NVIDIA_DRIVER_CAPABILITIES")
    if raw is None or report.host.container is None:
        return
    capabilities = {c.strip() for c in raw.split(",")}
    missing = (
        []
        if "all" in capabilities
        else [c for c in ("compute", "utility") if c not in capabilities]
    )
    if missing:
        yield finding(
            "warn",
            f"NVIDIA_DRIVER_CAPABILITIES={raw!r} lacks {' and '.join(missing)} "
            "(compute: CUDA; utility: NVML and nvidia-smi).",
            "set NVIDIA_DRIVER_CAPABILITIES=compute,utility (or all) when starting the container",
        )


@check("device nodes are accessible", "fail", pre.device_nodes)
def dev_permission(report: InfoReport) -> Iterator[Finding]:
    denied = [n.path for n in report.host.dev_nodes or () if not (n.readable and n.writable)]
    nvml_denied = report.driver.nvml_error == "NoPermission" or any(
        e.error == "NoPermission" and e.field == "handle"
        for g in report.gpus
        for e in g.field_errors
    )
    if not denied and not nvml_denied:
        return
    where = ", ".join(denied) if denied else "the GPU device nodes (NVML: Insufficient Permissions)"
    yield finding(
        "fail",
        f"This user cannot open {where}.",
        "add the user to the group that owns the nodes (`ls -l /dev/nvidia*`, then "
        "`sudo usermod -aG <group> $USER` and log in again); in a container, check its device "
        "cgroup rules",
    )


@check("nvidia_uvm works", "fail", pre.uvm)
def uvm_missing(report: InfoReport) -> Iterator[Finding]:
    nodes = {n.path for n in report.host.dev_nodes or ()}
    warnings = report.torch.init_warnings if report.torch else ()
    unknown = [w for w in warnings if "CUDA unknown error" in w]
    if ("/dev/nvidiactl" in nodes and "/dev/nvidia-uvm" not in nodes) or unknown:
        yield finding(
            "fail",
            "The nvidia_uvm module is not working: "
            + (unknown[0] if unknown else "/dev/nvidia-uvm does not exist."),
            "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm (or sudo nvidia-modprobe -c 0 "
            "-u); common after suspend/resume",
        )


@check(
    "NVML binding is nvidia-ml-py", "warn", pre.reported("the NVML binding", "driver.nvml_binding")
)
def nvml_binding(report: InfoReport) -> Iterator[Finding]:
    driver = report.driver
    upgrade = "pip uninstall -y pynvml nvidia-ml-py3 && pip install -U nvidia-ml-py"
    if driver.nvml_binding is None:
        yield finding(
            "warn", "No distribution provides the `pynvml` module (nvidia-ml-py).", upgrade
        )
    elif driver.nvml_binding_deprecated:
        deprecated = ", ".join(driver.nvml_binding_deprecated)
        yield finding("warn", f"Deprecated NVML bindings installed: {deprecated}.", upgrade)
    older = _fields_failing(report, (NOT_IN_BINDING,))
    if older:
        yield finding(
            "warn",
            f"NVML binding {driver.nvml_binding} is older than gpudoc needs: it has no function "
            f"for {', '.join(older)}, so those fields are empty.",
            "pip install -U nvidia-ml-py",
        )
    newer = _fields_failing(report, NOT_IN_DRIVER)
    if newer:
        yield finding(
            "warn",
            f"NVML binding {driver.nvml_binding} is newer than the driver"
            f"{f' ({driver.driver_version})' if driver.driver_version else ''}: the driver's "
            f"NVML library lacks the function for {', '.join(newer)}, so those fields are empty.",
            "upgrade the NVIDIA driver, or install the nvidia-ml-py release of the driver's "
            "branch (its version's middle number is the driver branch, e.g. 12.535.x for 535)",
        )


def _fields_failing(report: InfoReport, errors: tuple[str, ...]) -> list[str]:
    return sorted({e.field for g in report.gpus for e in g.field_errors if e.error in errors})
