"""The kernel log reader: Xid lines in the formats drivers and log tools print them, /dev/kmsg
records, and the journalctl fallback (a real subprocess: a script named journalctl on PATH)."""

from __future__ import annotations

import shutil
import stat
import time
from pathlib import Path

import pytest

from gpudoc.info.kernel_log import (
    MAX_EVENTS,
    journal_problem,
    parse_kernel_log,
    parse_xid_line,
    read_kmsg,
    start_kernel_log,
)

SLEEP = shutil.which("sleep")
# (line, xid, bus, pid, process name, message start, seconds since boot)
LINES = [
    (
        "[ 2974.553613] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen "
        "off the bus.",
        79,
        "0000:3b:00",
        1234,
        "python",
        "GPU has fallen off the bus.",
        2974.553613,
    ),
    (
        "NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double "
        "bit error (DBE) has been detected on GPU in the framebuffer at partition 0, "
        "subpartition 0.",
        48,
        "0000:18:00",
        None,
        None,
        "An uncorrectable double bit error (DBE)",
        None,
    ),
    (  # a /dev/kmsg record: priority, sequence, microseconds since boot
        "4,18211,680111646286,-;NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row "
        "marked for remapping, reset gpu to activate.",
        63,
        "0000:10:1c",
        1896,
        None,
        "Row Remapper: New row marked",
        680111.646286,
    ),
    (  # MIG: the GPU and compute instance inside the parentheses
        "[  512.000100] NVRM: Xid (PCI:0000:3B:00 GPU-I:01 GPU-CI:00): 13, pid=12345, "
        "name=python, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
        13,
        "0000:3b:00",
        12345,
        "python",
        "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
        512.0001,
    ),
    (  # syslog / journalctl short: the kernel timestamp after "kernel:"
        "May 19 07:08:57 ip-26-0-146-100 kernel: [680111.646286] NVRM: Xid (PCI:0000:10:1c): 63, "
        "pid=1850, Row Remapper: New row marked for remapping, reset gpu to activate",
        63,
        "0000:10:1c",
        1850,
        None,
        "Row Remapper",
        680111.646286,
    ),
    (  # journalctl -o short-monotonic
        "[81234.567901] gpu-node-7 kernel: NVRM: Xid (PCI:0000:0f:00): 79, GPU has fallen off "
        "the bus.",
        79,
        "0000:0f:00",
        None,
        None,
        "GPU has fallen off the bus.",
        81234.567901,
    ),
    (  # no pid at all (driver-side events)
        "[   12.500000] NVRM: Xid (PCI:0000:55:00): 154, GPU recovery action changed from 0x0 "
        "(None) to 0x4 (Drain and Reset)",
        154,
        "0000:55:00",
        None,
        None,
        "GPU recovery action changed",
        12.5,
    ),
    (  # dmesg -T: a wall-clock time the parser does not turn into seconds since boot
        "[Tue Aug 11 03:14:22 2026] NVRM: Xid (PCI:0000:1b:00): 94, pid=12833, name=pt_main_thread"
        ", Contained: SM (0x1). RST: No, D-RST: No",
        94,
        "0000:1b:00",
        12833,
        "pt_main_thread",
        "Contained: SM (0x1). RST: No, D-RST: No",
        None,
    ),
]


@pytest.mark.parametrize(("line", "xid", "bus", "pid", "name", "message", "seconds"), LINES)
def test_real_xid_line_formats(
    line: str,
    xid: int,
    bus: str,
    pid: int | None,
    name: str | None,
    message: str,
    seconds: float | None,
) -> None:
    event = parse_xid_line(line)
    assert event is not None
    assert (event.xid, event.pci_bus_id, event.pid, event.process_name) == (xid, bus, pid, name)
    assert event.message.startswith(message)
    assert event.seconds_since_boot == pytest.approx(seconds) if seconds else seconds is None


@pytest.mark.parametrize(
    "line",
    [
        "[81234.567890] NVRM: GPU at PCI:0000:0f:00: GPU-1e2d3c4b-5a69-4788-9aab-bccddeeff001",
        "[81234.567950] NVRM: GPU 0000:0f:00.0: GPU has fallen off the bus.",
        "[    4.102331] nvidia: loading out-of-tree module taints kernel.",
        "NVRM: Xid (PCI:garbage): 79, GPU has fallen off the bus.",
    ],
)
def test_other_nvrm_lines_are_not_xid_events(line: str) -> None:
    assert parse_xid_line(line) is None


def test_a_flood_of_xids_keeps_the_latest() -> None:
    lines = [
        f"[{i}.000000] NVRM: Xid (PCI:0000:3b:00): 13, pid={i}, name=python, x"
        for i in range(1, MAX_EVENTS + 51)
    ]
    log = parse_kernel_log("/dev/kmsg", ["unrelated", *lines], 9999.0)
    assert len(log.xid_events) == MAX_EVENTS
    assert log.xid_events[-1].pid == MAX_EVENTS + 50 and log.xid_events[0].pid == 51


def test_kmsg_records_without_their_continuation_lines(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(
        "6,1,0,-;Linux version 6.8.0\n"
        "3,402,90210338761,-;NVRM: Xid (PCI:0000:3b:00): 48, pid=48213, name=python3, An "
        "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
        "partition 2, subpartition 0.\n"
        " SUBSYSTEM=pci\n"
        " DEVICE=+pci:0000:3b:00.0\n"
    )
    lines = read_kmsg(str(kmsg))
    assert len(lines) == 2
    [event] = parse_kernel_log("/dev/kmsg", lines, 95411.2).xid_events
    assert (event.xid, event.pid, event.seconds_since_boot) == (48, 48213, 90210.338761)


def test_this_machines_kernel_log_is_read_or_says_why_not() -> None:
    log = start_kernel_log()()
    assert (log.source is None) == (log.unreadable_reason is not None)
    assert log.source in (None, "/dev/kmsg", "journalctl -k")


def wait_for(path: Path, limit_s: float = 60.0) -> None:
    """Until ``path`` exists: a child's last act, so the test never races a loaded machine."""
    give_up = time.monotonic() + limit_s
    while not path.exists():
        assert time.monotonic() < give_up, f"{path} never appeared"
        time.sleep(0.01)


def _journalctl(bin_dir: Path, script: str) -> None:
    path = bin_dir / "journalctl"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def no_kmsg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root without /dev/kmsg (so journalctl is asked) and PATH holding only our journalctl."""
    (tmp_path / "root/proc").mkdir(parents=True)
    (tmp_path / "root/proc/uptime").write_text("95411.20 190000.00\n")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return tmp_path


def test_closed_kmsg_falls_back_to_journalctl(no_kmsg: Path) -> None:
    _journalctl(
        no_kmsg / "bin",
        f'echo "$@" > {no_kmsg}/args\n'
        "echo '[94210.338902] gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 63, pid=48213, "
        "name=python3, Row Remapper: New row (0x0000000a6f11c2e0) marked for remapping, reset "
        "gpu to activate.'\n",
    )
    log = start_kernel_log(str(no_kmsg / "root"), timeout_s=10)()
    assert log.source == "journalctl -k" and log.uptime_seconds == 95411.2
    [event] = log.xid_events
    assert (event.xid, event.seconds_since_boot) == (63, 94210.338902)
    args = (no_kmsg / "args").read_text().split()
    assert args[:2] == ["-k", "-b"] and "--grep" in args


def test_an_answer_that_came_before_the_deadline_is_read_after_it(no_kmsg: Path) -> None:
    """collect_info waits for the log after the torch probe, often past the deadline."""
    answered = no_kmsg / "answered"
    _journalctl(
        no_kmsg / "bin",
        "echo '[5.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.'\n"
        f": > '{answered}'\n",  # a shell builtin: PATH holds only this journalctl
    )
    wait = start_kernel_log(str(no_kmsg / "root"), timeout_s=0.1)
    wait_for(answered)  # however loaded the machine, the answer is in before we ask
    time.sleep(0.2)  # and the deadline is past
    assert [e.xid for e in wait().xid_events] == [79]


def test_journalctl_without_access_to_the_kernel_log(no_kmsg: Path) -> None:
    _journalctl(
        no_kmsg / "bin",
        "echo 'Hint: You are currently not seeing messages from other users and the system.' >&2"
        "\nexit 1\n",
    )
    log = start_kernel_log(str(no_kmsg / "root"), timeout_s=10)()
    assert log.source is None and log.xid_events == ()
    assert log.unreadable_reason is not None
    assert log.unreadable_reason.startswith("/dev/kmsg: No such file or directory; journalctl -k")
    assert "not seeing messages" in log.unreadable_reason


def test_a_hanging_journalctl_is_given_up_on(no_kmsg: Path) -> None:
    _journalctl(no_kmsg / "bin", f"exec {SLEEP} 30\n")
    log = start_kernel_log(str(no_kmsg / "root"), timeout_s=0.3)()
    assert log.source is None
    assert "did not answer within 0.3 s" in (log.unreadable_reason or "")


def test_no_journalctl_at_all(no_kmsg: Path) -> None:
    log = start_kernel_log(str(no_kmsg / "root"))()
    assert log.source is None and "journalctl: No such file" in (log.unreadable_reason or "")


def test_a_kmsg_that_fails_to_read_is_an_answer(no_kmsg: Path) -> None:
    (no_kmsg / "root/dev/kmsg").mkdir(parents=True)  # opens, then read() fails (even as root)
    log = start_kernel_log(str(no_kmsg / "root"))()
    assert (log.unreadable_reason or "").startswith("/dev/kmsg: Is a directory; journalctl: ")


@pytest.mark.parametrize(
    ("returncode", "stderr", "problem"),
    [
        (0, "", None),
        (1, "", None),  # --grep matched nothing
        (1, "No journal files were found.\n", "No journal files were found."),
        (1, "Compiled without pattern matching support", "Compiled without pattern matching"),
        (4, "Failed to open journal\n", "Failed to open journal"),
        (4, "", "exit status 4"),
    ],
)
def test_journal_problem(returncode: int, stderr: str, problem: str | None) -> None:
    found = journal_problem(returncode, stderr)
    assert found == problem if problem is None else (found or "").startswith(problem)
