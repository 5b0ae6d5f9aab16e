"""GPD201 reads where a checkpoint that lies in the project saved its storages (from the zip
archive's bytes, never unpickled): one saved on the CPU loads on any host."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
import torch

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths
from gpudoc.lint.rules._saved_device import saved_locations

SCRIPT = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(2, 2)
net.load_state_dict(torch.load("models/net.pt"))
net.to(device)
"""


def _as_if_saved_on_gpu(path: Path) -> None:
    """Rewrite the archive's pickle as torch.save writes it for CUDA storages (no GPU here):
    the location string of each storage is "cuda:0"."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    for name, data in members.items():
        if name.endswith("data.pkl"):
            members[name] = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def lines(tmp_path: Path) -> list[int]:
    script = tmp_path / "load.py"
    script.write_text(SCRIPT)
    result = lint_paths([str(script)], LintConfig(select=("GPD201",)), 1, use_cache=False)
    return [finding.line for finding in result.findings]


def test_a_checkpoint_saved_on_the_cpu_in_the_project_loads_anywhere(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    saved = tmp_path / "models" / "net.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), saved)
    assert saved_locations(saved) == {"cpu"}
    assert lines(tmp_path) == []
    _as_if_saved_on_gpu(saved)
    assert saved_locations(saved) == {"cuda:0"}
    assert lines(tmp_path) == [5]


def test_a_legacy_checkpoint_is_read_too(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    saved = tmp_path / "models" / "net.pt"
    state = torch.nn.Linear(2, 2).state_dict()
    torch.save(state, saved, _use_new_zipfile_serialization=False)
    assert saved_locations(saved) == {"cpu"}
    assert lines(tmp_path) == []
    saved.write_bytes(
        saved.read_bytes().replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    )
    assert saved_locations(saved) == {"cuda:0"}
    assert lines(tmp_path) == [5]


def test_a_missing_or_unreadable_checkpoint_is_still_reported(tmp_path: Path) -> None:
    assert lines(tmp_path) == [5]
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "net.pt").write_bytes(b"not a zip archive")
    assert lines(tmp_path) == [5]


def test_a_replaced_checkpoint_is_read_again_despite_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "models").mkdir()
    saved = tmp_path / "models" / "net.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), saved)
    script = tmp_path / "load.py"
    script.write_text(SCRIPT)
    config = LintConfig(select=("GPD201",))
    assert lint_paths([str(script)], config, 1).findings == ()
    _as_if_saved_on_gpu(saved)
    os.utime(saved, ns=(1, 1))  # another stamp, whatever the file system's clock resolution
    again = lint_paths([str(script)], config, 1)
    assert not again.files[0].cached
    assert [finding.line for finding in again.findings] == [5]
