"""The data of `gpudoc info`: frozen dataclasses, absent values are None, units in field names.

The JSON of a report is `dataclasses.asdict` of `InfoReport` plus `schema_version` and
`gpudoc_version`; its schema (`schema.json` beside this module) is generated from these classes,
their docstrings and comments included (`python -m gpudoc.schemagen`). Rename a field only
together with the schema version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SCHEMA_VERSION = 1

Severity = Literal["fail", "warn", "info"]
# pass: looked and found nothing; not_applicable: its precondition is absent (see `reason`).
CheckStatus = Literal["pass", "fail", "warn", "info", "not_applicable", "crashed"]


@dataclass(frozen=True)
class FieldError:
    """An NVML read that failed for one field: the field is None, this says why."""

    field: str
    error: str  # NVML error class name without the prefix, e.g. "NotSupported", "GpuIsLost"


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_memory_bytes: int | None
    name: str | None = None  # from /proc/<pid>/comm when readable (host PIDs in containers)


@dataclass(frozen=True)
class MigInstance:
    index: int
    uuid: str | None
    memory_total_bytes: int | None


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU as NVML sees it, joined with torch's view of it (by UUID)."""

    nvml_index: int
    """NVML / nvidia-smi index."""
    torch_index: int | None
    """cuda:N ordinal in the probe subprocess (joined by UUID, else PCI bus id); null when torch
    does not see it."""
    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    minor_number: int | None
    compute_capability: str | None  # "8.9"
    arch_supported_by_torch: bool | None
    """Whether torch.cuda.get_arch_list() has kernels for this compute capability; null when
    unknown."""
    memory_total_bytes: int | None
    memory_used_bytes: int | None
    memory_free_bytes: int | None
    memory_reserved_bytes: int | None
    utilization_gpu_percent: int | None
    utilization_memory_percent: int | None
    temperature_c: int | None
    power_draw_mw: int | None
    power_limit_mw: int | None
    power_default_limit_mw: int | None  # the board's default: a lower enforced limit was set
    clock_sm_mhz: int | None
    """Current SM clock."""
    clock_sm_max_mhz: int | None
    """Maximum SM clock."""
    # Set bits of the clocks event (throttle) reasons: "gpu_idle", "sw_power_cap", ...
    clocks_event_reasons: tuple[str, ...] | None
    compute_mode: str | None  # "default", "exclusive_process", "prohibited"
    persistence_mode: bool | None
    display_active: bool | None  # a display (X, Wayland) keeps the driver initialised
    mig_mode_current: bool | None
    mig_mode_pending: bool | None
    mig_instances: tuple[MigInstance, ...] | None
    ecc_uncorrected_volatile: int | None
    """Volatile uncorrectable ECC error count since the driver loaded."""
    retired_pages_pending: bool | None  # page retirement (before Ampere) waits for a reset
    remapped_rows_correctable: int | None  # row remapping (Ampere and later)
    remapped_rows_uncorrectable: int | None
    """Rows remapped for uncorrectable errors."""
    remapped_rows_pending: bool | None  # a remap waits for a GPU reset
    remapped_rows_failure: bool | None  # a row could not be remapped: replace the GPU
    # The PCIe link to the host: generation (1..6) and width (lanes) now and at most. The max is
    # what this GPU and its slot allow together; the GPU's own max may be higher.
    pcie_link_gen_current: int | None  # drops to Gen1 at idle to save power: normal
    pcie_link_gen_max: int | None
    """Highest PCIe generation this GPU and its slot allow together."""
    pcie_link_gen_gpu_max: int | None
    """Highest PCIe generation the GPU itself supports (the slot may allow less)."""
    pcie_link_width_current: int | None
    """PCIe lanes the link uses now (x16 = 16); null where not supported."""
    pcie_link_width_max: int | None
    """Most PCIe lanes this GPU and its slot allow together."""
    processes: tuple[GpuProcess, ...] | None
    """Compute processes on the GPU (host PIDs); null when NVML could not list them."""
    lost: bool = False
    """True when NVML reported GpuIsLost for this GPU."""
    field_errors: tuple[FieldError, ...] = ()
    """NVML reads that failed for this GPU: the field is null, this says why (NotSupported,
    NoPermission, GpuIsLost, FunctionNotFound: the driver lacks the function, NotInBinding: nvidia-
    ml-py does, ...)."""
    reset_required: bool = False
    """True when NVML answered ResetRequired for this GPU: it works again only after a reset."""
    recovery_action: str | None = None
    """What the driver asks for to recover this GPU (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, drivers
    >= 570): 'none', 'gpu_reset', 'node_reboot', 'drain_p2p', 'drain_and_reset', 'bus_reset', ..."""
    nvlink_links_active: tuple[bool, ...] | None = None
    """One entry per NVLink link of this GPU, true when the link is up; empty when the GPU has no
    NVLink; null when unknown."""
    fabric_state: str | None = None
    """NVSwitch fabric registration (Hopper and later): 'not_supported', 'not_started',
    'in_progress' or 'completed'; CUDA fails until 'completed'."""
    fabric_status: str | None = None
    """The result of the fabric registration: 'Success' or an NVML error name."""
    ecc_mode_current: bool | None = None  # ECC enabled now
    ecc_mode_pending: bool | None = None  # ECC enabled after the next reset or reboot
    pcie_replay_count: int | None = None
    """PCIe replays (link-level retransmissions) since the driver loaded."""
    # PCIe Advanced Error Reporting counts of the GPU since the driver loaded (NVML field values).
    pcie_aer_correctable_count: int | None = None
    pcie_aer_nonfatal_count: int | None = None  # uncorrectable, non-fatal
    pcie_aer_fatal_count: int | None = None
    inforom_valid: bool | None = None
    """False when NVML's InfoROM validation fails (corrupted InfoROM); null when not checked."""


@dataclass(frozen=True)
class DriverInfo:
    nvml_error: str | None  # library-level failure: "LibraryNotFound", "DriverNotLoaded", ...
    nvml_error_message: str | None
    driver_version: str | None
    nvml_version: str | None
    cuda_driver_version: str | None  # "12.4": the newest CUDA this driver supports
    kernel_module_version: str | None  # from /proc/driver/nvidia/version
    nvml_library_path: str | None  # resolved libnvidia-ml.so.<version>, when found
    nvml_binding: str | None  # distribution that provides `pynvml`, e.g. "nvidia-ml-py 13.615.71"
    nvml_binding_deprecated: tuple[str, ...] = ()  # "pynvml 12.0.0", "nvidia-ml-py3 7.352.0"
    physical_gpu_count: int | None = None
    """nvmlDeviceGetCount(); null when NVML is unavailable."""


@dataclass(frozen=True)
class TorchDevice:
    """One device as torch enumerates it in the probe subprocess."""

    index: int
    name: str | None
    uuid: str | None  # with the "GPU-" prefix, as NVML spells it
    pci_bus_id: str | None  # "0000:01:00.0"
    compute_capability: str | None
    """'major.minor', e.g. '8.9'."""
    memory_total_bytes: int | None


@dataclass(frozen=True)
class TorchvisionInfo:
    installed: bool
    version: str | None  # "0.28.0+cu130", local tag included
    import_error: str | None
    """'ExceptionType: first line of message' when the import failed."""
    ops_load: bool | None  # torchvision::nms is registered
    ops_error: str | None


@dataclass(frozen=True)
class TorchInfo:
    """What the probe subprocess learnt; `probe_error` is set when it could not answer."""

    installed: bool
    probe_error: str | None = None  # timeout, crash, unreadable output
    import_error: str | None = None
    """'ExceptionType: first line of message' when the import failed."""
    version: str | None = None
    build: str | None = None  # "cuda", "rocm", "cpu"
    cuda_version: str | None = None  # torch.version.cuda
    hip_version: str | None = None
    cudnn_version: int | None = None
    """torch.backends.cudnn.version(), e.g. 91002."""
    nccl_version: str | None = None
    arch_list: tuple[str, ...] | None = None
    cuda_available: bool | None = None
    unavailable_reason: str | None = None  # torch.cuda.init()'s message when not available
    init_warnings: tuple[str, ...] = ()  # "CUDA initialization: ..." warnings
    device_count: int | None = None
    devices: tuple[TorchDevice, ...] = ()
    torchvision: TorchvisionInfo | None = None
    probe_seconds: float | None = None
    """Time the probe subprocess spent after start-up, in seconds."""


@dataclass(frozen=True)
class DevNode:
    path: str
    readable: bool
    writable: bool


@dataclass(frozen=True)
class PciGpu:
    """An NVIDIA display/3D controller found in /sys/bus/pci, with the kernel driver bound to it."""

    bus_id: str
    device_id: str | None
    driver: str | None  # "nvidia", "nouveau", "vfio-pci" or None


@dataclass(frozen=True)
class XidEvent:
    """One `NVRM: Xid` line of the kernel log."""

    xid: int
    """The Xid code (docs.nvidia.com/deploy/xid-errors)."""
    pci_bus_id: str  # as the kernel names the GPU: "0000:3b:00" (no function)
    pid: int | None
    """The process the driver blames; null when '<unknown>' or absent."""
    process_name: str | None
    message: str  # the driver's text after the code, pid and name
    seconds_since_boot: float | None
    """The line's kernel timestamp."""


@dataclass(frozen=True)
class SxidEvent:
    """One NVSwitch `SXid` line of the kernel log."""

    sxid: int
    """The SXid code (NVIDIA's Fabric Manager guide)."""
    switch_pci_bus_id: str | None  # the NVSwitch, "0000:c1:00.0"
    fatal: bool | None  # the driver's "Fatal" / "Non-fatal"
    link: int | None  # the NVSwitch port ("Link 33") when the line names one
    message: str
    seconds_since_boot: float | None


@dataclass(frozen=True)
class KernelLog:
    """The kernel log since boot, as far as this user may read it; only Xid lines are kept."""

    source: str | None  # "/dev/kmsg", "journalctl -k"; None when nothing could be read
    unreadable_reason: str | None
    """Why the kernel log could not be read (e.g. '/dev/kmsg: Operation not permitted; journalctl
    -k: ...')."""
    uptime_seconds: float | None
    """Seconds since boot when it was read, to date the lines."""
    xid_events: tuple[XidEvent, ...] = ()
    sxid_events: tuple[SxidEvent, ...] = ()
    """NVSwitch `SXid` lines, the latest last."""


@dataclass(frozen=True)
class InfinibandPort:
    """One port of an RDMA adapter in /sys/class/infiniband (InfiniBand or RoCE)."""

    device: str  # "mlx5_0"
    port: int
    state: str | None  # "ACTIVE", "DOWN", "INIT", "ARMED"
    physical_state: str | None  # "LinkUp", "Disabled", "Polling"
    rate_gbps: float | None
    """Link rate in Gb/s, e.g. 400.0 for '400 Gb/sec (4X NDR)'."""
    link_layer: str | None  # "InfiniBand" or "Ethernet" (RoCE)


@dataclass(frozen=True)
class HostInfo:
    """Facts about the host read without NVML or torch: environment, OS, container, device nodes,
    PCI bus, kernel log, nvcc."""

    os: str | None
    kernel: str | None
    python: str | None  # "3.11.7"; null when a report read with --from does not say
    container: str | None  # "docker", "podman", "kubernetes", "containerd" or None
    container_evidence: str | None
    dev_nodes: tuple[DevNode, ...] | None
    """The /dev/nvidia* nodes; null when not known (a report read with --from)."""
    pci_gpus: tuple[PciGpu, ...] | None  # None when /sys/bus/pci is unreadable
    env: dict[str, str | None] = field(default_factory=dict)
    """The CUDA and NVIDIA environment variables gpudoc reads; null when unset."""
    # Profiling, injection and debugging variables that are set (DCGM's list and more).
    debug_env: dict[str, str] = field(default_factory=dict)
    nvcc_path: str | None = None  # the nvcc that would build torch extensions
    nvcc_cuda_version: str | None = None  # "13.0" from `nvcc --version`
    kernel_log: KernelLog | None = None  # None when not read
    infiniband_ports: tuple[InfinibandPort, ...] | None = None
    """RDMA ports; empty when there is no adapter; null when unknown."""
    kernel_modules: tuple[str, ...] | None = None
    """Loaded GPU and RDMA kernel modules (nvidia*, nv_peer_mem, nouveau, mlx*, ib_*, rdma*);
    null when /proc/modules is unreadable."""
    nvswitches: tuple[str, ...] | None = None
    """PCI bus ids of the NVSwitches on the PCI bus (empty when none, null when unreadable)."""
    fabric_manager_running: bool | None = None
    """An nv-fabricmanager process is running; null when the host's processes are not visible
    (a container) or unknown."""


@dataclass(frozen=True)
class VisibleDevices:
    """CUDA_VISIBLE_DEVICES parsed with CUDA's rules against NVML's devices."""

    raw: str | None
    nvml_indices: tuple[int, ...] | None  # NVML indices selected, in CUDA order; None = all
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    check_id: str
    severity: Severity
    """'fail', 'warn' or 'info'."""
    message: str
    fix: str | None
    gpu: int | None = None  # NVML index the finding is about


@dataclass(frozen=True)
class CheckResult:
    check_id: str
    title: str
    status: CheckStatus
    """'pass' (the check looked and found nothing), 'fail', 'warn', 'info' (its worst finding),
    'not_applicable' (its precondition is absent: no driver, no GPU, torch not a CUDA build or not
    probed, ...; see reason) or 'crashed' (the check itself raised)."""
    findings: tuple[Finding, ...] = ()
    crash: str | None = None  # "ZeroDivisionError: ..." when the check itself failed
    reason: str | None = None  # why it did not apply, e.g. "no NVIDIA driver"


@dataclass(frozen=True)
class Summary:
    """Counts derived from the checks, by the doctor."""

    problems: int  # failures, warnings and crashed checks (not info)
    failures: int
    warnings: int
    crashed_checks: int
    not_applicable_checks: int  # checks whose precondition was absent here
    usable_gpus: int  # torch's device count when probed, else NVML's healthy visible GPUs


@dataclass(frozen=True)
class ReportSource:
    """One report `gpudoc info --from` read, and the facts the report took from it."""

    path: str  # as given on the command line; "-" is standard input
    format: str
    """'collect_env', 'nvidia-smi', 'nvidia-smi -q', 'nvidia-smi -q -x', 'kernel log', 'pip
    list', 'pip freeze' or 'conda list'."""
    facts: tuple[str, ...]
    """Paths of the report's values this file gave, e.g. 'torch.version', 'gpus[0].uuid',
    'host.kernel_log'; a value no file gave is null or empty (unknown, never guessed)."""


@dataclass(frozen=True)
class InfoReport:
    torch: TorchInfo | None  # None with --no-torch
    driver: DriverInfo
    """The NVIDIA driver as NVML and /proc see it."""
    gpus: tuple[GpuInfo, ...]
    """One entry per physical GPU, in NVML order."""
    host: HostInfo
    """Facts read without NVML or torch."""
    visible: VisibleDevices
    """CUDA_VISIBLE_DEVICES parsed with CUDA's rules."""
    checks: tuple[CheckResult, ...] = ()
    """Every doctor check that ran, in order."""
    collect_seconds: float | None = None
    """Wall time of collection in seconds."""
    summary: Summary | None = None  # None until the doctor ran
    sources: tuple[ReportSource, ...] | None = None
    """null when collected on this machine; with `--from`, the reports it was read from (a fact
    no report gave is unknown, and checks that need it do not apply)."""
