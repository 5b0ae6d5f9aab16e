"""Recall regressions from the twenty-second recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# report 01: a 4-bit model loaded onto the GPU by bitsandbytes, fed host token ids
QUANTIZED = """\
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2", {loading})
input_ids = tokenizer("hello", return_tensors="pt").input_ids
out = model.generate(input_ids, max_length=20)
"""


def test_a_model_loaded_onto_the_gpu_by_its_loader_needs_its_inputs_there() -> None:
    for loading in ("load_in_4bit=True", "quantization_config=bnb_config", 'device_map="cuda:0"'):
        assert lines(QUANTIZED.format(loading=loading), "GPD101") == [6], loading
    # accelerate's dispatch over several devices moves each input itself
    assert lines(QUANTIZED.format(loading='device_map="auto"'), "GPD101") == []
    assert lines(QUANTIZED.format(loading="torch_dtype=dtype"), "GPD101") == []


# report 04: a fixed attention temperature wrapped in a Variable, kept as a plain attribute
FIXED_BETA = """\
import torch
import torch.nn as nn
from torch.autograd import Variable
class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta = {beta}
    def forward(self, x):
        return x * self.beta
model = Attention().cuda()
"""


def test_a_tensor_wrapped_in_a_variable_is_still_a_plain_attribute() -> None:
    assert lines(FIXED_BETA.format(beta="Variable(torch.zeros(1))"), "GPD105") == [7]
    beta = "nn.Parameter(torch.zeros(1), requires_grad=False)"
    assert lines(FIXED_BETA.format(beta=beta), "GPD105") == []


# report 06: a crowd counter sums squared errors of device tensors into a number, then NumPy
ACCUMULATED = """\
import numpy as np
import torch
model = torch.nn.Linear(4, 1).cuda()
mse = 0
for img, target in loader:
    img = img.cuda()
    err = model(img).sum() - target.sum().cuda()
    mse += {added}
mse = np.sqrt(mse / len(loader))
"""


def test_a_number_accumulating_device_tensors_becomes_a_device_tensor() -> None:
    assert lines(ACCUMULATED.format(added="err * err"), "GPD202") == [9]
    assert lines(ACCUMULATED.format(added="(err * err).item()"), "GPD202") == []


# report 13: a table dataset builds each sample on its device, read by forked workers
TABLE = """\
import torch
from torch.utils.data import DataLoader, Dataset
class Table(Dataset):
    def __init__(self, rows, device):
        self.rows, self.device = rows, device
    def __getitem__(self, i):
        return torch.tensor(self.rows[i], dtype=torch.float{device})
    def __len__(self):
        return len(self.rows)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(Table([[1.0]], device), batch_size=2, num_workers=2)
"""


def test_a_dataset_that_creates_its_samples_on_the_device_breaks_forked_workers() -> None:
    assert lines(TABLE.format(device=", device=self.device"), "GPD204") == [7]
    assert lines(TABLE.format(device=""), "GPD204") == []


# report 20: a low-light model stores each step's loss into a NumPy array of losses
STORED = """\
import numpy as np
import torch
model = torch.nn.Linear(4, 1).cuda()
g_loss = np.zeros((5000, 1))
for ind in range(10):
    loss = model(torch.randn(2, 4).cuda()).mean()
    g_loss[ind] = {stored}
"""


def test_a_device_tensor_stored_into_a_numpy_array_is_converted() -> None:
    assert lines(STORED.format(stored="loss.data"), "GPD202") == [7]
    assert lines(STORED.format(stored="loss.item()"), "GPD202") == []
    assert lines(STORED.format(stored="loss.data.cpu()"), "GPD202") == []


# report 05: scripts/visualize.py builds utils.Agent, whose __init__ reads the vocabulary through
# utils.get_vocab -> get_status, a load in the package's storage module (re-exported by
# `from .storage import *`); the script falls back to the CPU, the package never says so
STORAGE = """\
import torch
def get_status_path(model_dir):
    return model_dir + "/status.pt"
def get_status(model_dir):
    return torch.load(get_status_path(model_dir){mapped})
def save_status(status, model_dir):
    torch.save(status, get_status_path(model_dir))
def get_vocab(model_dir):
    return get_status(model_dir)["vocab"]
"""
AGENT = """\
import torch
import utils
class Agent:
    def __init__(self, model_dir, device=None):
        self.device = device
        self.vocab = utils.get_vocab(model_dir)
"""
VISUALIZE = """\
import torch
import utils
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
agent = utils.Agent("storage/run", device=device)
"""


def _rl_project(root: Path, mapped: str = "") -> list[tuple[str, int]]:
    (root / "utils").mkdir(exist_ok=True)
    (root / "scripts").mkdir(exist_ok=True)
    (root / "utils" / "__init__.py").write_text("from .agent import *\nfrom .storage import *\n")
    (root / "utils" / "agent.py").write_text(AGENT)
    (root / "utils" / "storage.py").write_text(STORAGE.format(mapped=mapped))
    (root / "scripts" / "visualize.py").write_text(VISUALIZE)
    result = lint_paths(["."], LintConfig(select=("GPD201",)), use_cache=False)
    return sorted((Path(f.path).as_posix(), f.line) for r in result.files for f in r.findings)


def test_a_load_two_package_calls_below_a_script_with_a_cpu_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "rl"
    project.mkdir()
    # no .git, no setup.py (an unpacked archive): `python -m scripts.visualize` runs from the
    # directory gpudoc is run in, which is where `import utils` is found
    monkeypatch.chdir(project)
    assert _rl_project(project) == [("utils/storage.py", 5)]
    assert _rl_project(project, mapped=", map_location=device") == []
    # the same helpers, each file alone: nothing there offers a CPU path
    assert lines(STORAGE.format(mapped=""), "GPD201") == []


def test_a_sibling_of_another_files_helper_is_walked_in_its_own_module(tmp_path: Path) -> None:
    (tmp_path / "storage.py").write_text(STORAGE.format(mapped=""))
    script = tmp_path / "eval.py"
    script.write_text(
        "import torch\nimport storage\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        'vocab = storage.get_vocab("run")\n'
    )
    result = lint_paths([str(script)], LintConfig(select=("GPD201",)), use_cache=False)
    assert [(Path(f.path).name, f.line) for f in result.findings] == [("storage.py", 5)]


# report 17 (deep-text-recognition-benchmark's validation()): the image is moved, the labels
# are not, and both meet in the loss the caller passed in as `criterion`
VALIDATION = """\
import torch
def validation(model, criterion, evaluation_loader, device):
    for image_tensors, labels in evaluation_loader:
        image = image_tensors.to(device)
        preds = model(image)
        cost = {loss}(preds, labels)
    return cost
"""


def test_a_loss_parameter_meets_moved_outputs_and_host_targets() -> None:
    assert lines(VALIDATION.format(loss="criterion"), "GPD101") == [6]
    source = VALIDATION.format(loss="criterion").replace(
        "(preds, labels)", "(preds, labels.to(device))"
    )
    assert lines(source, "GPD101") == []


def test_a_ctc_loss_parameter_takes_host_targets() -> None:
    source = VALIDATION.format(loss="ctc_criterion").replace("criterion,", "ctc_criterion,")
    assert lines(source, "GPD101") == []
