"""`nvidia-smi -q` and `-q -x`: every GPU's modes, memory, ECC errors, retired pages, remapped
rows, clock-event reasons, PCIe link and processes, across the names driver releases gave them."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import failing, read, result

from gpudoc.info.reports import smi_query, smi_xml
from gpudoc.info.reports.load import read_facts
from gpudoc.info.reports.text import ReportError

MIB = 1024**2

# An R535 A100 (remap pending, throttled by heat, narrow link, MIG change pending) and an R418-
# style V100 section (throttle reasons, page retirement, ECC as single/double bit).
QUERY = """\

==============NVSMI LOG==============

Timestamp                                 : Wed Jan 10 09:15:22 2024
Driver Version                            : 535.129.03
CUDA Version                              : 12.2

Attached GPUs                             : 2
GPU 00000000:07:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    Product Brand                         : NVIDIA
    Display Mode                          : Enabled
    Display Active                        : Disabled
    Persistence Mode                      : Disabled
    MIG Mode
        Current                           : Disabled
        Pending                           : Enabled
    Minor Number                          : 2
    GPU UUID                              : GPU-5c4b3a29-8f3e-7a1d-2b6c-0e9f8d7c6b5a
    PCI
        Bus                               : 0x07
        Device                            : 0x00
        Domain                            : 0x0000
        Device Id                         : 0x20B210DE
        Bus Id                            : 00000000:07:00.0
        GPU Link Info
            PCIe Generation
                Max                       : 4
                Current                   : 4
                Device Current            : 4
                Device Max                : 4
                Host Max                  : 4
            Link Width
                Max                       : 16x
                Current                   : 8x
        Replays Since Reset               : 3
        Replay Number Rollovers           : 0
    Performance State                     : P0
    Clocks Event Reasons
        Idle                              : Not Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Active
            HW Thermal Slowdown           : Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    FB Memory Usage
        Total                             : 81920 MiB
        Reserved                          : 634 MiB
        Used                              : 40960 MiB
        Free                              : 40326 MiB
    Compute Mode                          : Default
    Utilization
        Gpu                               : 88 %
        Memory                            : 41 %
    Ecc Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 12
            DRAM Uncorrectable            : 1
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 40
            DRAM Uncorrectable            : 3
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 1
        Pending                           : Yes
        Remapping Failure Occurred        : No
    Temperature
        GPU Current Temp                  : 86 C
        GPU Shutdown Temp                 : 92 C
    GPU Power Readings
        Power Draw                        : 312.40 W
        Current Power Limit               : 400.00 W
        Default Power Limit               : 400.00 W
    Clocks
        Graphics                          : 1095 MHz
        SM                                : 1095 MHz
    Max Clocks
        Graphics                          : 1410 MHz
        SM                                : 1410 MHz
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 88121
        Type                              : C
        Name                              : python
        Used GPU Memory                   : 40950 MiB
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 1907
        Type                              : G
        Name                              : /usr/lib/xorg/Xorg
        Used GPU Memory                   : 8 MiB

GPU 00000000:0F:00.0
    Product Name                          : Tesla V100-SXM2-16GB
    Persistence Mode                      : Enabled
    Minor Number                          : 3
    GPU UUID                              : GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9
    PCI
        Bus Id                            : 00000000:0F:00.0
    Clocks Throttle Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
    Compute Mode                          : Exclusive_Process
    Ecc Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 0
                Total                     : 0
            Double Bit
                Device Memory             : 0
                Register File             : 0
                Total                     : 0
    Retired Pages
        Single Bit ECC                    : 1
        Double Bit ECC                    : 2
        Pending Page Blacklist            : Yes
    Power Readings
        Power Draw                        : 41.20 W
        Power Limit                       : 300.00 W
        Enforced Power Limit              : 300.00 W
    Processes                             : None
"""

XML = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<timestamp>Mon Jun  3 14:02:11 2024</timestamp>
	<driver_version>550.54.15</driver_version>
	<cuda_version>12.4</cuda_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="00000000:3B:00.0">
		<product_name>NVIDIA L40S</product_name>
		<display_active>Disabled</display_active>
		<persistence_mode>Enabled</persistence_mode>
		<mig_mode>
			<current_mig>N/A</current_mig>
			<pending_mig>N/A</pending_mig>
		</mig_mode>
		<mig_devices>
			None
		</mig_devices>
		<minor_number>0</minor_number>
		<uuid>GPU-77d1e8f0-3c2b-4a59-9e1d-6f0a2b3c4d5e</uuid>
		<pci>
			<pci_bus_id>00000000:3B:00.0</pci_bus_id>
			<pci_gpu_link_info>
				<pcie_gen>
					<max_link_gen>4</max_link_gen>
					<current_link_gen>1</current_link_gen>
					<device_current_link_gen>1</device_current_link_gen>
					<max_device_link_gen>4</max_device_link_gen>
					<max_host_link_gen>4</max_host_link_gen>
				</pcie_gen>
				<link_widths>
					<max_link_width>16x</max_link_width>
					<current_link_width>16x</current_link_width>
				</link_widths>
			</pci_gpu_link_info>
			<replay_counter>0</replay_counter>
		</pci>
		<clocks_event_reasons>
			<clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>
			<clocks_event_reason_sw_power_cap>Active</clocks_event_reason_sw_power_cap>
			<clocks_event_reason_hw_slowdown>Not Active</clocks_event_reason_hw_slowdown>
			<clocks_event_reason_display_clocks_setting>Not Active\
</clocks_event_reason_display_clocks_setting>
		</clocks_event_reasons>
		<fb_memory_usage>
			<total>46068 MiB</total>
			<reserved>573 MiB</reserved>
			<used>30012 MiB</used>
			<free>15483 MiB</free>
		</fb_memory_usage>
		<compute_mode>Prohibited</compute_mode>
		<utilization>
			<gpu_util>100 %</gpu_util>
			<memory_util>62 %</memory_util>
		</utilization>
		<ecc_mode>
			<current_ecc>Enabled</current_ecc>
			<pending_ecc>Enabled</pending_ecc>
		</ecc_mode>
		<ecc_errors>
			<volatile>
				<sram_correctable>0</sram_correctable>
				<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
				<dram_correctable>0</dram_correctable>
				<dram_uncorrectable>0</dram_uncorrectable>
			</volatile>
		</ecc_errors>
		<retired_pages>
			<pending_blacklist>N/A</pending_blacklist>
			<pending_retirement>N/A</pending_retirement>
		</retired_pages>
		<remapped_rows>
			<remapped_row_corr>0</remapped_row_corr>
			<remapped_row_unc>0</remapped_row_unc>
			<remapped_row_pending>No</remapped_row_pending>
			<remapped_row_failure>Yes</remapped_row_failure>
		</remapped_rows>
		<temperature>
			<gpu_temp>71 C</gpu_temp>
		</temperature>
		<gpu_power_readings>
			<average_power_draw>249.52 W</average_power_draw>
			<instant_power_draw>251.02 W</instant_power_draw>
			<current_power_limit>250.00 W</current_power_limit>
			<default_power_limit>350.00 W</default_power_limit>
		</gpu_power_readings>
		<clocks>
			<sm_clock>1740 MHz</sm_clock>
		</clocks>
		<max_clocks>
			<sm_clock>2520 MHz</sm_clock>
		</max_clocks>
		<processes>
			<process_info>
				<gpu_instance_id>N/A</gpu_instance_id>
				<compute_instance_id>N/A</compute_instance_id>
				<pid>5120</pid>
				<type>C</type>
				<process_name>python3</process_name>
				<used_memory>29990 MiB</used_memory>
			</process_info>
		</processes>
	</gpu>

</nvidia_smi_log>
"""


def test_query_reads_every_gpu(tmp_path: Path) -> None:
    report = read(tmp_path, QUERY)
    assert (report.driver.driver_version, report.driver.cuda_driver_version) == (
        "535.129.03",
        "12.2",
    )
    a100, v100 = report.gpus
    assert (a100.nvml_index, a100.uuid, a100.pci_bus_id, a100.minor_number) == (
        0,
        "GPU-5c4b3a29-8f3e-7a1d-2b6c-0e9f8d7c6b5a",
        "0000:07:00.0",
        2,
    )
    assert (a100.mig_mode_current, a100.mig_mode_pending) == (False, True)
    assert (a100.pcie_link_gen_current, a100.pcie_link_width_current) == (4, 8)
    assert (a100.pcie_link_gen_max, a100.pcie_link_gen_gpu_max, a100.pcie_link_width_max) == (
        4,
        4,
        16,
    )
    assert a100.clocks_event_reasons == ("hw_slowdown", "hw_thermal_slowdown")
    assert (a100.memory_total_bytes, a100.memory_reserved_bytes) == (81920 * MIB, 634 * MIB)
    assert a100.ecc_uncorrected_volatile == 1  # DRAM 1 + SRAM 0, volatile only
    assert (a100.remapped_rows_uncorrectable, a100.remapped_rows_pending) == (1, True)
    assert (a100.power_draw_mw, a100.power_limit_mw, a100.power_default_limit_mw) == (
        312400,
        400000,
        400000,
    )
    assert (a100.clock_sm_mhz, a100.clock_sm_max_mhz, a100.temperature_c) == (1095, 1410, 86)
    assert [p.pid for p in a100.processes or ()] == [88121]  # Xorg (type G) left out
    assert v100.clocks_event_reasons == ("gpu_idle",)
    assert v100.retired_pages_pending is True and v100.ecc_uncorrected_volatile == 0
    assert v100.compute_mode == "exclusive_process" and v100.processes == ()
    assert v100.power_limit_mw == 300000


def test_query_diagnoses(tmp_path: Path) -> None:
    report = read(tmp_path, QUERY)
    assert {
        "mig-pending",
        "pcie-degraded",
        "throttling",
        "retired-remap",
        "ecc-uncorrectable",
    } <= failing(report)
    assert result(report, "exclusive-busy").status == "pass"  # nobody holds the V100
    assert result(report, "persistence-off").status == "info"


def test_xml(tmp_path: Path) -> None:
    report = read(tmp_path, XML)
    assert report.driver.driver_version == "550.54.15"
    (gpu,) = report.gpus
    assert (gpu.name, gpu.pci_bus_id, gpu.compute_mode) == (
        "NVIDIA L40S",
        "0000:3b:00.0",
        "prohibited",
    )
    assert gpu.mig_mode_current is None and gpu.mig_instances is None
    assert gpu.clocks_event_reasons == ("sw_power_cap",)
    assert (gpu.power_draw_mw, gpu.power_limit_mw, gpu.power_default_limit_mw) == (
        249520,
        250000,
        350000,
    )
    assert gpu.ecc_uncorrected_volatile == 0 and gpu.remapped_rows_failure is True
    assert [(p.pid, p.used_memory_bytes) for p in gpu.processes or ()] == [(5120, 29990 * MIB)]
    assert {"compute-prohibited", "retired-remap", "throttling"} <= failing(report)
    assert "power limit lowered to 250 W" in result(report, "throttling").findings[0].message


def test_query_and_xml_of_the_same_machine_join_on_the_bus_id(tmp_path: Path) -> None:
    table = (
        "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "|===============================+======================+======================|\n"
        "|   0  NVIDIA L40S         On   | 00000000:3B:00.0 Off |                    0 |\n"
        "| N/A   71C    P0   249W / 250W |  30012MiB / 46068MiB |    100%   Prohibited |\n"
        "+-------------------------------+----------------------+----------------------+\n"
    )
    report = read(tmp_path, XML, table)
    assert len(report.gpus) == 1
    assert [s.format for s in report.sources or ()] == ["nvidia-smi -q -x", "nvidia-smi"]


def test_query_of_one_gpu_keeps_no_index(tmp_path: Path) -> None:
    one = QUERY.split("GPU 00000000:0F:00.0")[0].replace(": 2\nGPU", ": 8\nGPU")
    (facts,) = read_facts(_write(tmp_path, one))
    assert facts.gpus is not None and [g.index for g in facts.gpus] == [None]


def test_cut_off_xml_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="cut off"):
        read_facts(_write(tmp_path, XML[:2000]))
    broken = XML.replace("</product_name>", "</product>")
    with pytest.raises(ReportError, match="does not parse"):
        read_facts(_write(tmp_path, broken))


def test_recognition() -> None:
    assert smi_query.looks_like(QUERY) and not smi_query.looks_like(XML)
    assert smi_xml.looks_like(XML) and not smi_xml.looks_like(QUERY)


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "one.txt"
    path.write_text(text)
    return str(path)


def test_slow_link_of_unknown_width_compares_generations(tmp_path: Path) -> None:
    report = read(tmp_path, XML.replace("<max_link_width>16x</max_link_width>", ""))
    (finding,) = result(report, "pcie-degraded").findings
    assert "runs at Gen1 of Gen4 while 100% busy: 13% of the" in finding.message


# An R570 H100 section with the newer blocks: fabric registration, reset status, recovery action.
H100_NOT_READY = """\
WARNING: infoROM is corrupted at gpu 0000:19:00.0
==============NVSMI LOG==============

Driver Version                            : 570.124.06
CUDA Version                              : 12.8

Attached GPUs                             : 1
GPU 00000000:19:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Persistence Mode                      : Enabled
    PCI
        Bus Id                            : 00000000:19:00.0
        Replays Since Reset               : 412
    GPU Reset Status
        Reset Required                    : Yes
        Drain and Reset Recommended       : No
    GPU Recovery Action                   : GPU Reset
    Ecc Mode
        Current                           : Enabled
        Pending                           : Disabled
    Fabric
        State                             : In Progress
        Status                            : N/A
"""


def test_newer_blocks_fill_the_interconnect_and_state_fields(tmp_path: Path) -> None:
    report = read(tmp_path, H100_NOT_READY)
    (gpu,) = report.gpus
    assert (gpu.fabric_state, gpu.fabric_status) == ("in_progress", None)
    assert (gpu.reset_required, gpu.recovery_action) == (True, "gpu_reset")
    assert (gpu.ecc_mode_current, gpu.ecc_mode_pending) == (True, False)
    assert (gpu.pcie_replay_count, gpu.inforom_valid) == (412, False)
    assert {
        "fabric-not-ready",
        "gpu-needs-reset",
        "ecc-disabled",
        "pcie-errors",
        "inforom-corrupt",
    } <= failing(report)


def test_xml_fabric_and_recovery(tmp_path: Path) -> None:
    newer = XML.replace(
        "<compute_mode>",
        "<gpu_recovery_action>None</gpu_recovery_action>\n"
        "<fabric><state>N/A</state><status>N/A</status></fabric>\n<compute_mode>",
    )
    report = read(tmp_path, newer)
    (gpu,) = report.gpus
    assert (gpu.recovery_action, gpu.fabric_state, gpu.pcie_replay_count) == (
        "none",
        "not_supported",
        0,
    )
    assert result(report, "gpu-needs-reset").status == "pass"
    assert result(report, "fabric-not-ready").reason == (
        "the report does not say whether there are NVSwitches"
    )


def test_checks_of_unsaid_new_facts_do_not_apply(tmp_path: Path) -> None:
    report = read(tmp_path, QUERY)  # R535: no reset status, recovery action or fabric block
    assert result(report, "gpu-needs-reset").reason == (
        "the report does not say whether a GPU waits for a reset"
    )
    assert result(report, "infiniband-down").reason == "the report does not say the RDMA ports"
    assert result(report, "pci-gpu-unlisted").reason == (
        "the report does not say which GPUs are on the PCI bus"
    )


def test_an_excerpt_of_one_section_is_one_gpu(tmp_path: Path) -> None:
    excerpt = (
        "    Remapped Rows\n"
        "        Correctable Error                 : 0\n"
        "        Uncorrectable Error               : 4\n"
        "        Pending                           : Yes\n"
    )
    report = read(tmp_path, excerpt)
    (gpu,) = report.gpus
    assert (gpu.remapped_rows_uncorrectable, gpu.remapped_rows_pending) == (4, True)
    assert result(report, "retired-remap").status == "warn"
    assert not smi_query.looks_like("Remapped Rows\nnothing here\n")
