"""A file's calls into the project's own modules are followed (lint/project.py): the helper's
values reach the caller, its findings stay in its own file, and the cache notices a change."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoc.lint.engine import lint_paths
from gpudoc.lint.project import dependencies, resolve

UTILS = """\
import torch
import torch.nn as nn


def build_model():
    return nn.Linear(4, 2)


def to_device(batch, device):
    return [t.to(device) for t in batch]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""

TRAIN = """\
import torch
from {utils} import build_model, to_device
from {utils} import Net as Model

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = torch.utils.data.DataLoader(dataset)
model = build_model()
model(torch.randn(2, 4).to(device))
net = Model().to(device)
for x, y in loader:
    net(x)
for batch in loader:
    x, y = to_device(batch, device)
    net(x)
"""


def project(tmp_path: Path, relative: bool) -> Path:
    package = tmp_path / "proj" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text(UTILS)
    train = package / "train.py"
    train.write_text(TRAIN.format(utils=".utils" if relative else "utils"))
    return train


@pytest.mark.parametrize("relative", [True, False])
def test_values_cross_into_the_project_modules_and_back(tmp_path: Path, relative: bool) -> None:
    train = project(tmp_path, relative)
    result = lint_paths([str(train.parent)], jobs=1, use_cache=False)
    found = {(Path(f.path).name, f.line, f.code) for f in result.findings}
    # the model built in utils is never moved; a host batch meets a Net imported from utils;
    # the batch moved by utils.to_device is placed
    assert found == {("train.py", 7, "GPD102"), ("train.py", 11, "GPD101")}


def test_a_change_to_a_helper_re_lints_the_files_that_call_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    train = project(tmp_path, relative=True)
    first = lint_paths([str(train)], jobs=1)
    assert (7, "GPD102") in {(f.line, f.code) for f in first.findings}
    assert lint_paths([str(train)], jobs=1).files[0].cached
    utils = train.parent / "utils.py"
    utils.write_text(UTILS.replace("return nn.Linear(4, 2)", 'return nn.Linear(4, 2).to("cuda")'))
    again = lint_paths([str(train)], jobs=1)
    assert not again.files[0].cached
    assert (7, "GPD102") not in {(f.line, f.code) for f in again.findings}


def test_installed_packages_and_missing_modules_are_not_followed(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("from torch import nn\nfrom nowhere import x\n")
    assert resolve(str(script), "torch", 0) is None
    assert resolve(str(script), "nowhere", 0) is None
    assert dependencies(script.read_text(), str(script)) == []
    assert resolve("<stdin>", "utils", 0) is None


def test_installed_packages_are_never_the_project(tmp_path: Path) -> None:
    """A file inside site-packages (a library's own sources, linted as in the speed bench):
    absolute imports of other installed packages are not read."""
    site = tmp_path / "lib" / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("def load(path):\n    return path\n")
    package = site / "vision"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text("def helper():\n    return 1\n")
    script = package / "models.py"
    script.write_text("from torch import load\nfrom .utils import helper\n")
    assert resolve(str(script), "torch", 0) is None
    assert resolve(str(script), "utils", 1) == package / "utils.py"


HELPERS = """\
import torch


def normalize(batch):
    mean = batch.new_tensor([0.5, 0.5, 0.5]).view(-1, 1, 1)
    return (batch - mean) / 0.25
"""

STYLE = """\
import torch
{import_line}

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vgg = torch.nn.Conv2d(3, 8, 3).to(device)
loader = torch.utils.data.DataLoader(dataset, batch_size=4)
for x, _ in loader:
    y = vgg(x.to(device))
    x = {name}.normalize(x)
    vgg(x)
"""


@pytest.mark.parametrize(
    ("import_line", "name"),
    [
        ("import helpers", "helpers"),
        ("import helpers as H", "H"),
        ("from . import helpers", "helpers"),
    ],
)
def test_a_module_of_the_project_imported_whole_is_followed(
    tmp_path: Path, import_line: str, name: str
) -> None:
    """``import utils`` then ``utils.normalize(x)``: the helper keeps x on the host (the
    fast_neural_style bug of pytorch/examples)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(HELPERS)
    script = package / "train.py"
    script.write_text(STYLE.format(import_line=import_line, name=name))
    result = lint_paths([str(script)], jobs=1, use_cache=False)
    assert {(f.line, f.code) for f in result.findings} == {(10, "GPD101")}
    assert package / "helpers.py" in dependencies(script.read_text(), str(script))


def test_a_module_name_rebound_locally_is_not_the_module(tmp_path: Path) -> None:
    """``helpers = Normalizer()`` hides the module: its ``normalize`` is not the project's."""
    (tmp_path / "helpers.py").write_text(HELPERS)
    script = tmp_path / "train.py"
    source = STYLE.format(import_line="import helpers", name="helpers")
    source = source.replace("for x, _", "helpers = Normalizer()\nfor x, _")
    script.write_text(source)
    result = lint_paths([str(script)], jobs=1, use_cache=False)
    assert (11, "GPD101") not in {(f.line, f.code) for f in result.findings}


SCHEDULE = """\
import torch


class NoiseSchedule:
    def __init__(self, steps):
        self.alpha_bar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, steps), dim=0)

    def add_noise(self, x, noise, t):
        a = self.alpha_bar[t].view(-1, 1, 1, 1)
        return a.sqrt().to(x.device) * x + (1 - a).sqrt().to(x.device) * noise
"""

DIFFUSION = """\
import torch
from schedules.linear import NoiseSchedule

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
schedule = NoiseSchedule(1000)
for x, _ in torch.utils.data.DataLoader(dataset, batch_size=8):
    x = x.to(device)
    t = torch.randint(0, 1000, (x.shape[0],), device=device)
    noisy = schedule.add_noise(x, torch.randn_like(x), t)
"""


def schedule_project(tmp_path: Path, schedule: str = SCHEDULE) -> Path:
    (tmp_path / "schedules").mkdir()
    (tmp_path / "schedules" / "__init__.py").write_text("")
    (tmp_path / "schedules" / "linear.py").write_text(schedule)
    (tmp_path / "tools").mkdir()
    for name in ("train.py", "sample.py"):
        (tmp_path / "tools" / name).write_text(DIFFUSION)
    return tmp_path


def test_a_bug_in_a_project_class_is_reported_in_its_file(tmp_path: Path) -> None:
    """A plain class of another file (a noise schedule) is walked with the caller's values:
    its host table indexed by the caller's device timesteps is reported at the table's line,
    once, though two scripts (run from the directory above ``tools/``) reach it."""
    root = schedule_project(tmp_path)
    result = lint_paths([str(root)], jobs=1, use_cache=False)
    found = [(Path(f.path).relative_to(root).as_posix(), f.line, f.code) for f in result.findings]
    assert found == [("schedules/linear.py", 9, "GPD108")]
    finding = result.findings[0]
    assert finding.fix is None  # this run does not edit the schedule's file
    assert "through a call in `" in finding.message


def test_a_project_finding_follows_the_noqa_of_its_own_file(tmp_path: Path) -> None:
    quiet = SCHEDULE.replace("view(-1, 1, 1, 1)", "view(-1, 1, 1, 1)  # noqa: GPD108")
    root = schedule_project(tmp_path, quiet)
    assert lint_paths([str(root / "tools")], jobs=1, use_cache=False).findings == ()


def test_a_project_trainer_that_moves_the_model_it_is_given_places_it(tmp_path: Path) -> None:
    """minGPT's Trainer does ``self.model = self.model.to(self.device)``: the caller's model is
    the same object, moved in place; reading the Trainer must not leave it on the host."""
    (tmp_path / "trainer.py").write_text(
        "import torch\n\n\nclass Trainer:\n"
        "    def __init__(self, config, model, data):\n"
        "        self.model = model\n"
        "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "        self.model = self.model.to(self.device)\n"
    )
    script = tmp_path / "run.py"
    script.write_text(
        "import torch\nfrom trainer import Trainer\n\n"
        "model = torch.nn.Linear(4, 2)\n"
        "trainer = Trainer(None, model, None)\n"
        "x = torch.ones(2, 4).to(trainer.device)\n"
        "model(x)\n"
    )
    assert lint_paths([str(script)], jobs=1, use_cache=False).findings == ()


def test_a_cached_project_finding_keeps_its_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache stores findings without their path (a file's content may move): one found
    in a project module is stored relative to the file whose run found it."""
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "proj").mkdir()
    root = schedule_project(tmp_path / "proj")
    script = str(root / "tools" / "train.py")
    first = lint_paths([script], jobs=1)
    again = lint_paths([script], jobs=1)
    assert again.files[0].cached
    assert [(f.path, f.line) for f in again.findings] == [(f.path, f.line) for f in first.findings]
    assert Path(again.findings[0].path).resolve() == root / "schedules" / "linear.py"


def test_each_import_is_looked_up_once_per_file_and_again_in_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts pasted one after the other import the same modules again and again: each is
    looked up on disk once per lint of the file (the engine's text scan and the walk share the
    answers); a helper created before the next run is found by it."""
    import gpudoc.lint.project as project_module

    looked_up: list[tuple[str, str, int]] = []
    real = project_module._resolve

    def counted(importer: str, module: str, level: int) -> Path | None:
        looked_up.append((importer, module, level))
        return real(importer, module, level)

    monkeypatch.setattr(project_module, "_resolve", counted)
    script = tmp_path / "train.py"
    pasted = (
        "import torch\nimport utils\nfrom utils import build_model\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "model = build_model()\nmodel(torch.randn(2, 4).to(device))\n"
    )
    script.write_text(pasted * 20)
    assert lint_paths([str(script)], jobs=1, use_cache=False).findings == ()
    assert len(looked_up) == len(set(looked_up)) * 2  # the engine's scan, then the walk
    assert {module for _, module, _ in looked_up} == {"torch", "utils"}
    (tmp_path / "utils.py").write_text(UTILS)
    found = lint_paths([str(script)], jobs=1, use_cache=False).findings
    assert (5, "GPD102") in {(f.line, f.code) for f in found}
