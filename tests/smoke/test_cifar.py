"""The CIFAR-10 reader: the real on-disk format, and no code from a pickle ever runs."""

from __future__ import annotations

import hashlib
import os
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
from smoke_helpers import write_batch, write_cifar

from gpudoc.smoke import cifar


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_reads_the_real_layout_at_any_pickle_protocol(tmp_path: Path, protocol: int) -> None:
    write_cifar(tmp_path, per_batch=8, test=6, protocol=protocol)
    data = cifar.load_cifar(tmp_path)
    assert data.train.count == 40 and data.test.count == 6
    assert len(data.train.images) == 40 * 3072
    assert data.label_names[0] == "airplane" and len(data.label_names) == 10
    assert not data.official


def test_bytes_and_labels_are_exactly_those_written(tmp_path: Path) -> None:
    folder = write_cifar(tmp_path, per_batch=4, test=3)
    entry = pickle.loads((folder / "test_batch").read_bytes())
    data = cifar.load_cifar(folder)  # the folder itself is accepted too
    assert data.test.images == entry[b"data"].tobytes()
    assert list(data.test.labels) == entry[b"labels"]


class _Exploit:
    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, ("touch pwned",))


def test_a_pickle_that_runs_code_is_refused_and_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_cifar(tmp_path, per_batch=4, test=3)
    payload = {b"data": _Exploit(), b"labels": [0]}
    (folder / "data_batch_3").write_bytes(pickle.dumps(payload, protocol=2))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        cifar.CifarError, match=r"data_batch_3: refusing to load global posix\.system"
    ):
        cifar.load_cifar(tmp_path)
    assert not (tmp_path / "pwned").exists()


def test_missing_file_names_the_path_and_the_download_option(tmp_path: Path) -> None:
    folder = write_cifar(tmp_path, per_batch=4, test=3)
    (folder / "data_batch_5").unlink()
    with pytest.raises(cifar.CifarError, match=r"data_batch_5 is missing .*--download"):
        cifar.find_folder(tmp_path)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, "labels must be"),
        ({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, "shape"),
        ({b"data": np.zeros((2, 3072), np.float32), b"labels": [0, 1]}, "type u1"),
        ({b"labels": [0, 1]}, "no 'data' entry"),
    ],
)
def test_malformed_batches_give_one_line(tmp_path: Path, entry: dict, message: str) -> None:
    folder = write_cifar(tmp_path, per_batch=4, test=3)
    (folder / "test_batch").write_bytes(pickle.dumps(entry, protocol=2))
    with pytest.raises(cifar.CifarError, match=message):
        cifar.load_cifar(tmp_path)


def test_truncated_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    folder = write_cifar(tmp_path, per_batch=4, test=3)
    batch = folder / "data_batch_1"
    batch.write_bytes(batch.read_bytes()[:500])
    with pytest.raises(cifar.CifarError, match="data_batch_1"):
        cifar.load_cifar(tmp_path)


def test_python2_style_str_pickle_loads(tmp_path: Path) -> None:
    # The official files come from Python 2: byte strings are STRING opcodes, read back as bytes.
    write_batch(tmp_path / "b", 3, seed=1, protocol=0)
    entry = cifar.safe_load((tmp_path / "b").read_bytes())
    assert entry[b"labels"] and isinstance(entry[b"data"], object)


def _archive(tmp_path: Path) -> Path:
    write_cifar(tmp_path / "src", per_batch=4, test=3)
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "src" / cifar.FOLDER, arcname=cifar.FOLDER)
    return archive


def test_download_checks_the_archive_md5_then_unpacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive(tmp_path)
    with pytest.raises(cifar.CifarError, match="corrupt \\(MD5 mismatch\\)"):
        cifar.download(tmp_path / "data", url=archive.as_uri())
    assert not (tmp_path / "data" / cifar.FOLDER).exists()
    digest = hashlib.md5(archive.read_bytes(), usedforsecurity=False).hexdigest()
    monkeypatch.setattr(cifar, "ARCHIVE_MD5", digest)
    folder = cifar.download(tmp_path / "data", url=archive.as_uri())
    assert cifar.load_cifar(folder).test.count == 3
    assert cifar.download(tmp_path / "data", url="http://127.0.0.1:9/unused") == folder  # present


def test_download_failure_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(cifar.CifarError, match=r"download of .* failed"):
        cifar.download(tmp_path, url=(tmp_path / "absent.tar.gz").as_uri())
