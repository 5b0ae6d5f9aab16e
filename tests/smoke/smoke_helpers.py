"""Helpers for the smoke tests: a tiny CIFAR-10 directory in the real on-disk format."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship"]
LABEL_NAMES.append("truck")


def images_for(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Learnable images: a fixed random colour pattern per class plus noise, as uint8 rows."""
    templates = np.random.default_rng(99).integers(40, 216, size=(10, 3072))
    noise = rng.normal(0, 30, size=(len(labels), 3072))
    return np.clip(templates[labels] + noise, 0, 255).astype(np.uint8)


def write_batch(path: Path, count: int, seed: int, protocol: int = 2) -> None:
    """One batch file as the official release has it: a pickled dict with bytes keys."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=count)
    entry = {
        b"batch_label": f"batch {seed}".encode(),
        b"labels": [int(y) for y in labels],
        b"data": images_for(labels, rng),
        b"filenames": [f"img_{seed}_{i}.png".encode() for i in range(count)],
    }
    path.write_bytes(pickle.dumps(entry, protocol=protocol))


def write_cifar(root: Path, per_batch: int = 64, test: int = 128, protocol: int = 2) -> Path:
    """``root/cifar-10-batches-py`` with data_batch_1..5, test_batch and batches.meta."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for i in range(1, 6):
        write_batch(folder / f"data_batch_{i}", per_batch, seed=i, protocol=protocol)
    write_batch(folder / "test_batch", test, seed=100, protocol=protocol)
    meta = {b"label_names": [n.encode() for n in LABEL_NAMES], b"num_cases_per_batch": per_batch}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=protocol))
    return folder
