"""Real CIFAR-10 from disk, in the ``cifar-10-batches-py`` layout torchvision writes. Stdlib only.

The batches are Python pickles, and ``pickle.load`` on a file from an untrusted directory runs
whatever code the file names. Checking torchvision's MD5 sums would make the official files safe
but refuse every legitimate subset or re-export, so instead every file goes through a restricted
unpickler: the only globals it resolves are numpy's array-reconstruction names, and those resolve
to inert stand-ins defined here that just collect shape, dtype and raw bytes. No numpy, no
torchvision and no code named by the file ever runs. The MD5 sums are still checked, to say
whether the files are the official release.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import pickle
import shutil
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FOLDER = "cifar-10-batches-py"
TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILE = "test_batch"
META_FILE = "batches.meta"
# torchvision.datasets.CIFAR10's list: the official release.
OFFICIAL_MD5 = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
    "batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
}
URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
ARCHIVE_MD5 = "c58f30108f718f92721af3b95e74349a"
IMAGE_BYTES = 3 * 32 * 32


class CifarError(Exception):
    """The directory is missing, incomplete, corrupt or refuses to load safely (one line)."""


@dataclass(frozen=True)
class RawSplit:
    """Images as raw bytes (N x 3072 uint8: 1024 R, 1024 G, 1024 B per image) and labels 0-9."""

    images: bytes
    labels: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class RawCifar:
    train: RawSplit
    test: RawSplit
    label_names: tuple[str, ...]
    folder: str
    official: bool


class _DType:
    """Stand-in for numpy.dtype: remembers the type code ('u1', 'i8', ...) and byte order."""

    def __init__(self, code: object, *_: object) -> None:
        self.code = _text(code)
        self.order = "|"

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.order = _text(state[1])


def _text(value: object) -> str:
    # Python 2 pickles read with encoding="bytes" give their str values as bytes.
    return value.decode("latin1") if isinstance(value, bytes) else str(value)


class _Array:
    """Stand-in for numpy.ndarray: shape, dtype and the raw bytes; nothing else is accepted."""

    def __init__(self, shape: object = (), dtype: object = None, data: object = b"") -> None:
        self.shape = tuple(int(n) for n in shape) if isinstance(shape, tuple | list) else ()
        self.dtype = dtype
        self.data = data

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        # numpy's state: (version, shape, dtype, is_fortran, rawdata); very old ones lack version.
        *_, shape, dtype, fortran, raw = state
        if fortran:
            raise CifarError("Fortran-ordered arrays are not in the CIFAR-10 format")
        self.shape = tuple(int(n) for n in shape) if isinstance(shape, tuple | list) else ()
        self.dtype, self.data = dtype, raw

    def as_bytes(self, code: str) -> bytes:
        if not isinstance(self.dtype, _DType) or self.dtype.code != code:
            raise CifarError(f"expected an array of type {code}")
        if self.dtype.order == ">":
            raise CifarError("big-endian arrays are not supported")
        if not isinstance(self.data, bytes | bytearray):
            raise CifarError("array data is not raw bytes")
        return bytes(self.data)


def _reconstruct(_subtype: object, shape: object, _code: object) -> _Array:
    return _Array()


def _frombuffer(buffer: object, dtype: object, shape: object, _order: object) -> _Array:
    return _Array(shape, dtype, bytes(buffer) if isinstance(buffer, bytes | bytearray) else buffer)


def _latin1_encode(text: object, encoding: object = "latin1") -> bytes:
    # Python 3 writes bytes in protocol 2 as _codecs.encode(str, 'latin1'); allow only that.
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("refusing _codecs.encode with these arguments")
    return codecs.encode(text, "latin1")


_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy", "ndarray"): _Array,
    ("numpy", "dtype"): _DType,
    ("_codecs", "encode"): _latin1_encode,
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}") from None


def safe_load(payload: bytes) -> Any:
    """Unpickle ``payload`` (Python 2 or 3) resolving only the inert stand-ins above."""
    return _SafeUnpickler(io.BytesIO(payload), encoding="bytes").load()


def _key(entry: dict[Any, Any], name: str) -> Any:
    for key in (name.encode(), name):
        if key in entry:
            return entry[key]
    raise CifarError(f"no '{name}' entry")


def _read_split(path: Path) -> RawSplit:
    entry = safe_load(path.read_bytes())
    if not isinstance(entry, dict):
        raise CifarError("not a dict")
    data, labels = _key(entry, "data"), _key(entry, "labels")
    if isinstance(labels, _Array):
        raise CifarError("labels must be a list of ints, as in the official files")
    if not isinstance(labels, list) or not all(isinstance(y, int) and 0 <= y < 10 for y in labels):
        raise CifarError("labels must be a list of ints in 0-9")
    if not isinstance(data, _Array) or data.shape != (len(labels), IMAGE_BYTES):
        raise CifarError(f"data must be a uint8 array of shape ({len(labels)}, {IMAGE_BYTES})")
    images = data.as_bytes("u1")
    if len(images) != len(labels) * IMAGE_BYTES:
        raise CifarError("data size does not match its shape")
    return RawSplit(images, tuple(labels))


def find_folder(root: str | Path) -> Path:
    """``root/cifar-10-batches-py`` (torchvision's ``root``), or ``root`` if it is that folder."""
    root = Path(root)
    folder = root if (root / TEST_FILE).is_file() else root / FOLDER
    missing = [n for n in (*TRAIN_FILES, TEST_FILE, META_FILE) if not (folder / n).is_file()]
    if missing:
        raise CifarError(
            f"no CIFAR-10 at {root}: {folder / missing[0]} is missing "
            "(expected the cifar-10-batches-py layout; --download fetches it)"
        )
    return folder


def load_cifar(root: str | Path) -> RawCifar:
    """Read and validate every batch; raises ``CifarError`` with a one-line reason."""
    folder = find_folder(root)
    splits = []
    for names in (TRAIN_FILES, (TEST_FILE,)):
        parts = []
        for name in names:
            try:
                parts.append(_read_split(folder / name))
            except (CifarError, pickle.UnpicklingError) as error:
                raise CifarError(f"{folder / name}: {error}") from None
            except Exception as error:  # a corrupt pickle can raise almost anything
                raise CifarError(f"{folder / name}: unreadable ({type(error).__name__})") from None
        images = b"".join(p.images for p in parts)
        splits.append(RawSplit(images, tuple(y for p in parts for y in p.labels)))
    return RawCifar(splits[0], splits[1], _label_names(folder), str(folder), _is_official(folder))


def _label_names(folder: Path) -> tuple[str, ...]:
    try:
        names = _key(safe_load((folder / META_FILE).read_bytes()), "label_names")
    except Exception as error:
        raise CifarError(f"{folder / META_FILE}: unreadable ({error})") from None
    if not isinstance(names, list) or len(names) != 10:
        found = f"{len(names)} entries" if isinstance(names, list) else type(names).__name__
        raise CifarError(f"{folder / META_FILE}: label_names must be a list of 10 names ({found})")
    if not all(isinstance(n, (bytes, str)) for n in names):
        raise CifarError(f"{folder / META_FILE}: label_names must be strings")
    try:
        return tuple(n.decode() if isinstance(n, bytes) else n for n in names)
    except UnicodeDecodeError:
        raise CifarError(f"{folder / META_FILE}: label_names are not UTF-8") from None


def _is_official(folder: Path) -> bool:
    return all(_md5(folder / name) == digest for name, digest in OFFICIAL_MD5.items())


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def download(root: str | Path, url: str = URL) -> Path:
    """Fetch and unpack the official archive into ``root`` unless it is there (``--download``)."""
    root = Path(root)
    try:
        return find_folder(root)
    except CifarError:
        pass
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=root, suffix=".tar.gz") as archive:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                shutil.copyfileobj(response, archive)
        except OSError as error:
            raise CifarError(f"download of {url} failed: {error}") from None
        archive.flush()
        if _md5(Path(archive.name)) != ARCHIVE_MD5:
            raise CifarError(f"download of {url} is corrupt (MD5 mismatch)")
        with tarfile.open(archive.name) as tar:
            tar.extractall(root, filter="data")
    return find_folder(root)
