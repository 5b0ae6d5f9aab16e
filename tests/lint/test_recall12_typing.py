"""Typing gaps found by recall set 12 (device bugs from real reports): a store into part of a
tensor, the generator ``torch.manual_seed`` returns, and the values a generator function
yields. Each case is a reduced shape of a reported bug, written here."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gpudoc.lint.engine import lint_paths, lint_source


def findings(source: str) -> set[tuple[int, str]]:
    result = lint_source(textwrap.dedent(source), "case.py")
    assert result.error is None, result.error
    return {(f.line, f.code) for f in result.findings}


# -- a store into part of a tensor keeps the tensor where it is ------------------------------


def test_a_slice_store_keeps_a_device_tensor_on_the_device() -> None:
    source = """\
        import torch
        from sklearn.metrics import roc_auc_score
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        scores = torch.zeros(10, device=device)
        scores[0:4] = 1.0
        auc = roc_auc_score([0, 1] * 5, scores)
        """
    assert findings(source) == {(6, "GPD202")}


def test_scores_filled_slice_by_slice_in_a_method_stay_on_the_device() -> None:
    # a test loop fills preallocated device scores batch by batch, then hands them to sklearn
    source = """\
        import torch
        from sklearn.metrics import roc_curve

        class Model:
            def __init__(self, device):
                self.device = device
                self.net = torch.nn.Linear(4, 1).to(device)

            def test(self, loader, n):
                self.scores = torch.zeros(n, device=self.device)
                self.labels = torch.zeros(n, device=self.device)
                for i, (x, y) in enumerate(loader):
                    error = self.net(x.to(self.device))
                    self.scores[i * 8 : (i + 1) * 8] = error.reshape(-1)
                    self.labels[i * 8 : (i + 1) * 8] = y.reshape(-1)
                return roc_curve(self.labels, self.scores)

        model = Model(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
        model.test(loader, 64)
        """
    assert (16, "GPD202") in findings(source)


def test_a_masked_store_of_a_number_keeps_the_device() -> None:
    source = """\
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x = torch.randn(8, device=device)
        x[x < 0] = 0
        print(x.numpy())
        """
    assert findings(source) == {(5, "GPD202")}


def test_a_host_buffer_filled_with_device_values_stays_on_the_host() -> None:
    # PyTorch copies the device values into the host buffer: the buffer is no device tensor
    source = """\
        import torch
        import torch.nn as nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)
        features = torch.zeros(8, 4)
        features[:4] = torch.randn(4, 4, device=device)
        out = model(features)
        """
    assert findings(source) == {(7, "GPD101")}


def test_an_element_stored_into_a_batch_still_makes_it_unknown() -> None:
    # a dict batch whose element is replaced by a moved one: the rest of it stays where it was
    source = """\
        import torch
        import torch.nn as nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)
        batch = {"x": torch.randn(8, 4), "y": torch.zeros(8)}
        batch["x"] = batch["x"].to(device)
        out = model(batch["x"])
        """
    assert findings(source) == set()


# -- torch.manual_seed returns the default CPU generator --------------------------------------


def test_the_generator_manual_seed_returns_is_on_the_cpu() -> None:
    source = """\
        import torch
        generator = torch.manual_seed(0)
        latents = torch.randn(1, 4, 64, 64, generator=generator, device="cuda")
        """
    assert findings(source) == {(3, "GPD110")}


def test_manual_seed_inline_as_the_generator() -> None:
    source = """\
        import torch
        noise = torch.randn(4, device="cuda", generator=torch.manual_seed(0))
        """
    assert findings(source) == {(2, "GPD110")}


def test_the_manual_seed_generator_for_host_draws_is_fine() -> None:
    source = """\
        import torch
        from torch.utils.data import DataLoader
        g = torch.manual_seed(0)
        loader = DataLoader(dataset, shuffle=True, generator=g)
        noise = torch.randn(4, generator=g)
        torch.cuda.manual_seed(0)
        """
    assert findings(source) == set()


# -- what a generator function yields ---------------------------------------------------------

ENET = """\
    import torch
    import torch.nn as nn

    class ENet(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.init = nn.Conv2d(3, c, 3)

        def forward(self, x):
            return self.init(x)

    def loader(n):
        while True:
            yield torch.rand(n, 3, 8, 8), torch.zeros(n)

    def train():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        enet = ENet(12)
        pipe = loader(4)
"""


def test_batches_taken_from_a_generator_with_next_are_tensors() -> None:
    source = ENET + textwrap.indent(
        textwrap.dedent("""\
            for _ in range(10):
                X_batch, mask_batch = next(pipe)
                X_batch, mask_batch = X_batch.to(device), mask_batch.to(device)
                out = enet(X_batch)
        """),
        " " * 8,
    )
    assert findings(source) == {(18, "GPD102")}


def test_batches_iterated_from_a_generator_are_tensors() -> None:
    source = ENET + textwrap.indent(
        textwrap.dedent("""\
            for i, (X_batch, mask_batch) in enumerate(pipe):
                out = enet(X_batch.to(device))
        """),
        " " * 8,
    )
    assert findings(source) == {(18, "GPD102")}


def test_a_yielded_tuple_keeps_its_shape() -> None:
    # the index next to the batch is no tensor; the batch is one, on the host
    source = """\
        import torch
        import torch.nn as nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)

        def batches(data):
            for i in range(0, len(data), 8):
                yield i, torch.tensor(data[i : i + 8])

        for start, x in batches(rows):
            out = model(x)
        """
    assert findings(source) == {(11, "GPD101")}


def test_device_batches_from_a_generator_need_no_move() -> None:
    source = """\
        import torch
        import torch.nn as nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)

        def batches(n):
            for _ in range(n):
                yield torch.randn(8, 4, device=device)

        for x in batches(3):
            out = model(x)
        gen = batches(2)
        out = model(next(gen))
        """
    assert findings(source) == set()


# -- names a star import of a project module binds ---------------------------------------------

UTILS = """\
import torch
import torch.nn as nn


def loader(n):
    while True:
        yield torch.rand(n, 3, 8, 8), torch.zeros(n)


def make(n):
    return torch.randn(n, 4)


class ENet(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.init = nn.Conv2d(3, c, 3)

    def forward(self, x):
        return self.init(x)
"""


def lint_project(tmp_path: Path, train: str) -> set[tuple[int, str]]:
    (tmp_path / "utils.py").write_text(UTILS)
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(train))
    result = lint_paths([str(script)], jobs=1, use_cache=False)
    return {(f.line, f.code) for f in result.findings}


def test_a_generator_and_a_model_star_imported_from_the_project(tmp_path: Path) -> None:
    train = """\
        import torch
        from utils import *

        def train(flags):
            device = flags.cuda
            enet = ENet(12)
            pipe = loader(4)
            for _ in range(10):
                X_batch, mask_batch = next(pipe)
                X_batch, mask_batch = X_batch.to(device), mask_batch.to(device)
                out = enet(X_batch)
        """
    assert lint_project(tmp_path, train) == {(6, "GPD102")}


def test_a_function_defined_here_hides_the_star_imported_one(tmp_path: Path) -> None:
    # `make` of this file puts its tensor on the device; the one in utils.py does not
    train = """\
        import torch
        from utils import *
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def make(n):
            return torch.randn(n, 4, device=device)

        x = make(3)
        print(x.numpy())
        """
    assert lint_project(tmp_path, train) == {(9, "GPD202")}
