"""A model file that chooses no device runs on the CPU when a script importing it does
(rules/_importers.py): gector's `Seq2Labels` and GMPTV's model files (recall set 27, 05 and 07)
hard-code CUDA while the scripts that build them pick the CPU without a GPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lint_lines import project_lines

from gpudoc.lint.engine import lint_paths
from gpudoc.lint.rules._gpu_savers import MAX_BYTES

LAYERS = """\
import torch
from torch import nn


def neighbours(x):
    device = torch.device("cuda")
    idx = torch.arange(0, 4, device=device)
    return x[:, idx]


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(neighbours(x))


def benchmark(x):
    return x.cuda()
"""

MODEL = """\
import torch
from torch import nn
from models.layers import Backbone


def offsets(n):
    return torch.cuda.IntTensor(n)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()

    def forward(self, x):
        o = offsets([x.shape[0]])
        return self.backbone(x), o


def load_pretrained(net, path):
    net.load_state_dict(torch.load(path))


def profile(x):
    return x.cuda()


if __name__ == "__main__":
    print(Net().cuda())
"""

MAIN = """\
import torch
from models.net import Net, load_pretrained

device = torch.device({device})
model = Net().to(device)
load_pretrained(model, "pretrained.pth")
"""

FALLBACK = '"cuda" if torch.cuda.is_available() else "cpu"'


def write_project(root: Path, device: str = FALLBACK) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (root / "models" / "__init__.py").write_text("")
    (root / "models" / "layers.py").write_text(LAYERS)
    (root / "models" / "net.py").write_text(MODEL)
    (root / "main.py").write_text(MAIN.format(device=device))
    return root


def found(root: Path) -> set[tuple[str, int, str]]:
    result = lint_paths([str(root)], jobs=1, use_cache=False)
    return {
        (os.path.relpath(f.path, root), f.line, f.code)
        for f in result.findings
        if f.code in ("GPD201", "GPD203")
    }


def test_cuda_in_a_model_file_that_a_cpu_capable_script_builds(tmp_path: Path) -> None:
    got = found(write_project(tmp_path))
    assert ("models/net.py", 7, "GPD203") in got  # torch.cuda.IntTensor in the forward's helper
    assert ("models/layers.py", 6, "GPD203") in got  # one file deeper: net.py's Backbone
    assert ("models/net.py", 21, "GPD201") in got  # the load main.py calls on its CPU path


def test_only_what_the_importer_reaches_is_judged(tmp_path: Path) -> None:
    got = found(write_project(tmp_path))
    # `profile`, `benchmark` and the `__main__` block are not reached from main.py
    assert got == {
        ("models/net.py", 7, "GPD203"),
        ("models/layers.py", 6, "GPD203"),
        ("models/net.py", 21, "GPD201"),
    }


@pytest.mark.parametrize("device", ['"cuda"', '"cuda:0"'])
def test_a_gpu_only_importer_offers_no_cpu_path(tmp_path: Path, device: str) -> None:
    assert found(write_project(tmp_path, device)) == set()


def test_the_message_names_the_importing_script(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    result = lint_paths([str(root / "models" / "net.py")], jobs=1, use_cache=False)
    messages = [f.message for f in result.findings if f.code == "GPD203"]
    assert messages and "`main.py`, which imports this file" in messages[0]
    assert "`torch.cuda.IntTensor(...)` hard-codes CUDA" in messages[0]


def test_the_cache_notices_a_changed_importer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    root = write_project(tmp_path / "proj", device='"cuda"')
    model = str(root / "models" / "net.py")
    assert lint_paths([model], jobs=1).findings == ()
    main = root / "main.py"
    main.write_text(MAIN.format(device=FALLBACK))
    stat = main.stat()
    os.utime(main, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
    after = lint_paths([model], jobs=1)
    assert not after.files[0].cached
    assert {f.code for f in after.findings} == {"GPD201", "GPD203"}


BASE = """\
import torch
class BaseModel:
    def load_network(self, network, path):
        network.load_state_dict(torch.load(path))
    def restore(self, path):
        self.net.load_state_dict(torch.load(path))
    def predict(self, x):
        return self.net(x.cuda())
"""

USER = """\
import torch
from base_model import BaseModel
class Model(BaseModel):
    def __init__(self, device):
        self.net = torch.nn.Linear(4, 2).to(device)
{main}
"""

SCRIPT_MAIN = """\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Model(device)
model.restore("best.pth")
"""


def write(root: Path, **files: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\\nname = 'x'\\n")
    for name, text in files.items():
        (root / f"{name}.py").write_text(text)
    return root


def test_only_the_methods_something_calls_are_reached(tmp_path: Path) -> None:
    # `restore` is called by the script; `load_network` and `predict` by nothing
    root = write(tmp_path, base_model=BASE, model=USER.format(main=SCRIPT_MAIN))
    assert found(root) == {("base_model.py", 6, "GPD201")}


def test_a_library_module_importing_the_file_chooses_for_no_one(tmp_path: Path) -> None:
    # the same `"cpu"`, in a module that runs nothing when started: its callers choose
    library = USER.format(main='    def on_cpu(self):\n        self.device = torch.device("cpu")\n')
    assert found(write(tmp_path, base_model=BASE, model=library)) == set()


def test_a_data_set_file_holds_no_device_tensors(tmp_path: Path) -> None:
    loader = (
        "import torch\ndef load_split(path):\n    dataset = torch.load(path)\n    return dataset\n"
    )
    script = (
        "import torch\nfrom data import load_split\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        'train = load_split("train.pt")\n'
    )
    assert found(write(tmp_path, data=loader, train=script)) == set()
    checkpoint = loader.replace("dataset = torch.load", "state = torch.load").replace(
        "return dataset", "return state"
    )
    assert found(write(tmp_path, data=checkpoint, train=script)) == {("data.py", 3, "GPD201")}


def test_a_file_written_for_gpus_throughout_borrows_no_cpu_path(tmp_path: Path) -> None:
    def layer(count: int) -> str:
        moves = "".join(f"        x{i} = x.cuda() * {i}\n" for i in range(count))
        head = "import torch\nclass Grid(torch.nn.Module):\n    def forward(self, x):\n"
        return head + moves + "        return x0\n"

    script = (
        "import torch\nfrom layer import Grid\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "grid = Grid().to(device)\n"
    )
    few = write(tmp_path / "few", layer=layer(4), main=script)
    assert len(found(few)) == 4
    many = write(tmp_path / "many", layer=layer(5), main=script)
    assert found(many) == set()


def test_importers_are_looked_for_inside_the_project_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not in ``/tmp`` above a loose file: its files import nothing of ours, and their changes
    would change the file's cache key (and make `--fix` analyse it once more)."""
    from gpudoc.lint.rules._project_scripts import candidate_importers

    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    inner = tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    model = inner / "model.py"
    model.write_text("import torch\n")
    (inner / "train.py").write_text("import model\n")
    (tmp_path / "outer" / "main.py").write_text("from inner import model\n")
    (tmp_path / "stray.py").write_text("")
    names = {p.name for p in candidate_importers(str(model))}
    assert names == {"train.py"}  # no root marker, and gpudoc runs elsewhere
    (tmp_path / "outer" / ".git").mkdir()
    _clear_caches()
    names = {p.name for p in candidate_importers(str(model))}
    assert names == {"train.py", "main.py"}  # up to the project's root, not above it


def _clear_caches() -> None:
    from gpudoc.lint.rules import _project_scripts

    _project_scripts.project_directories.cache_clear()


def test_a_library_module_with_a_logger_is_no_script(tmp_path: Path) -> None:
    """``logger = logging.getLogger(__name__)`` runs at import: no script's work."""
    library = (
        "import logging\nimport torch\nfrom layer import Grid\n"
        "logger = logging.getLogger(__name__)\n"
        "def build(cpu=False):\n"
        '    return Grid().to(torch.device("cpu") if cpu else "cuda")\n'
    )
    layer = "import torch\nclass Grid(torch.nn.Module):\n    def forward(self, x):\n"
    layer += "        return x.cuda()\n"
    assert found(write(tmp_path / "lib", layer=layer, trainer=library)) == set()
    script = library.replace("logger = logging.getLogger(__name__)", "grid = build(cpu=True)")
    assert found(write(tmp_path / "script", layer=layer, trainer=script)) == {
        ("layer.py", 4, "GPD203")
    }


def test_a_module_imported_whole_is_reached_through_its_attributes(tmp_path: Path) -> None:
    # pytorch-retinanet (recall set 44): `import losses`, then `losses.FocalLoss()`
    root = write_project(tmp_path)
    whole = "import torch\nfrom models import net\n\ndevice = torch.device({device})\n"
    whole += "model = net.Net().to(device)\n"
    (root / "main.py").write_text(whole.format(device=FALLBACK))
    got = found(root)
    assert ("models/net.py", 7, "GPD203") in got
    assert ("models/layers.py", 6, "GPD203") in got
    # `load_pretrained` is no attribute main.py reads: not reached
    assert ("models/net.py", 21, "GPD201") not in got


PROGRAM = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def warm_up():
    return torch.ones(1).cuda()


if __name__ == "__main__":
    print(torch.ones(1).to(device))
"""


def test_a_script_larger_than_the_scan_limit_is_not_read_as_an_importer(tmp_path: Path) -> None:
    """A helper no line of its program calls runs when a project script names it; a script
    above MAX_BYTES (a generated file) is not read, as no other scan of scripts reads it."""
    caller = "from main import warm_up\nwarm_up()\n"
    (tmp_path / "bench.py").write_text(caller)
    assert project_lines(tmp_path, {"main.py": PROGRAM}, "GPD203") == [7]
    padding = "# generated\n" * (MAX_BYTES // 10)
    (tmp_path / "bench.py").write_text(caller + padding)
    assert project_lines(tmp_path, {"main.py": PROGRAM}, "GPD203") == []
