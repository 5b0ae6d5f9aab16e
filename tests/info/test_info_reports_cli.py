"""`gpudoc info --from` end to end, in a subprocess: exit codes, JSON with its sources, the text
view's provenance and not-applicable lines, standard input, pasted wrappers, and one line (exit 2)
for anything that is not a report."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import RunGpudoc
from test_info_reports_collect_env import MODERN, WINDOWS
from test_info_reports_logs_packages import DMESG
from test_info_reports_smi_table import R550

from gpudoc.info.reports.text import unwrap


def _ids(data: dict[str, object], *statuses: str) -> set[str]:
    checks = data["checks"]
    assert isinstance(checks, list)
    return {c["check_id"] for c in checks if c["status"] in statuses}


def test_json_has_findings_and_sources(tmp_path: Path, run_gpudoc: RunGpudoc) -> None:
    env, log = tmp_path / "env.txt", tmp_path / "dmesg.txt"
    env.write_text(MODERN)
    log.write_text(DMESG)
    done = run_gpudoc("info", "--from", str(env), str(log), "--json")
    assert done.returncode == 1, done.stderr  # a check fails
    data = json.loads(done.stdout)
    findings = [f["check_id"] for c in data["checks"] for f in c["findings"]]
    assert {"driver-too-old", "torchvision-mismatch", "xid-recent"} <= set(findings)
    sources = data["sources"]
    assert [(s["path"], s["format"]) for s in sources] == [
        (str(env), "collect_env"),
        (str(log), "kernel log"),
    ]
    assert "torch.version" in sources[0]["facts"] and "host.kernel_log" in sources[1]["facts"]
    skipped = [c for c in data["checks"] if c["status"] == "not_applicable"]
    assert all(c["reason"] for c in skipped)
    assert "the report does not say which device nodes exist" in {c["reason"] for c in skipped}
    assert data["host"]["dev_nodes"] is None


def test_healthy_report_exits_0_and_says_where_facts_came_from(
    tmp_path: Path, run_gpudoc: RunGpudoc
) -> None:
    path = tmp_path / "win.txt"
    path.write_text(WINDOWS)
    done = run_gpudoc("info", "--from", str(path), env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Reports" in done.stdout
    assert f"{path}  collect_env: torch (" in done.stdout
    assert "GPU 0 (name)" in done.stdout
    # checks that lack a fact are named in one paragraph; -v gives each one's missing fact
    assert "could not apply, for lack of a fact" in done.stdout and "dev-permission" in done.stdout
    assert "did not apply (the report does not say which device nodes exist)" not in done.stdout
    verbose = run_gpudoc("info", "--from", str(path), "-v", env={"COLUMNS": "200"})
    assert "did not apply (the report does not say which device nodes exist)" in verbose.stdout


def test_standard_input(run_gpudoc: RunGpudoc) -> None:
    done = run_gpudoc("info", "--from", "-", "--json", input=R550)
    assert done.returncode == 0, done.stderr  # memory held is a warning, not a failure
    data = json.loads(done.stdout)
    assert data["sources"][0]["path"] == "-"
    assert "memory-held" in _ids(data, "warn")
    strict = run_gpudoc("info", "--from", "-", "--strict", input=R550)
    assert strict.returncode == 1


def test_pasted_in_an_issue(tmp_path: Path, run_gpudoc: RunGpudoc) -> None:
    quoted = "\n".join("> " + line for line in ["```", *R550.splitlines(), "```"])
    indented = "Here is my env:\n\n" + "\n".join("    " + line for line in MODERN.splitlines())
    path = tmp_path / "issue.md"
    path.write_text(f"<details><summary>nvidia-smi</summary>\n\n{quoted}\n</details>\n{indented}")
    done = run_gpudoc("info", "--from", str(path), "--json")
    data = json.loads(done.stdout)
    assert sorted(s["format"] for s in data["sources"]) == ["collect_env", "nvidia-smi"]
    assert len(data["gpus"]) == 2 and data["gpus"][0]["processes"][0]["pid"] == 412233


def test_unwrap_strips_fences_quotes_and_common_indentation() -> None:
    text = "  > ```text\n  > | NVIDIA-SMI 1 |\n  >   x\n  > ```\n"
    assert unwrap(text).splitlines() == ["", "| NVIDIA-SMI 1 |", "  x", ""]
    assert unwrap("    a\n      b\n").splitlines() == ["a", "  b"]


def test_not_a_report_is_one_line_exit_2(tmp_path: Path, run_gpudoc: RunGpudoc) -> None:
    prose = tmp_path / "notes.txt"
    prose.write_text("my training is slow, please help\n")
    binary = tmp_path / "core"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(64))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    cases = {
        str(prose): "not a report gpudoc can read",
        str(binary): "a binary file",
        str(tmp_path): "is a directory",
        str(tmp_path / "missing.txt"): "cannot read it",
        str(empty): "not a report gpudoc can read",
    }
    for path, words in cases.items():
        done = run_gpudoc("info", "--from", path)
        assert done.returncode == 2, (path, done.stderr)
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and path in lines[0] and words in lines[0], done.stderr


def test_utf16_from_powershell(tmp_path: Path, run_gpudoc: RunGpudoc) -> None:
    path = tmp_path / "env.txt"
    path.write_bytes(WINDOWS.replace("\n", "\r\n").encode("utf-16"))
    done = run_gpudoc("info", "--from", str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["driver"]["driver_version"] == "546.17"


def test_no_torch_is_refused_with_from(tmp_path: Path, run_gpudoc: RunGpudoc) -> None:
    path = tmp_path / "win.txt"
    path.write_text(WINDOWS)
    done = run_gpudoc("info", "--from", str(path), "--no-torch")
    assert done.returncode == 2 and "--no-torch" in done.stderr
