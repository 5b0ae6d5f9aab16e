"""Precision regressions from the twelfth held-out set of public repositories (a training
library's checkpoint tests, a text-to-image trainer that loads its VAE onto the CPU), reduced
and rewritten here: correct code each rule must leave alone, next to the bug it must still
report."""

from __future__ import annotations

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def lines(source: str, code: str) -> list[int]:
    result = lint_source(source, "x.py", LintConfig(select=(code,)))
    return [finding.line for finding in result.findings]


# a test writes a checkpoint with the library's handler, then reads it back
HANDLER_TEST = """\
import pytest
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
def {name}(dirname):
    model = torch.nn.Linear(2, 2)
    handler = ModelCheckpoint(dirname, "mymodel")
    handler(engine, {{"model": model}})
    loaded = torch.load(handler.last_checkpoint)
    assert loaded["weight"].shape == (2, 2)
"""


def test_a_test_reads_back_what_it_wrote() -> None:
    assert lines(HANDLER_TEST.format(name="test_save_and_load"), "GPD201") == []
    assert lines(HANDLER_TEST.format(name="_test_tpu_saves_to_cpu"), "GPD201") == []


def test_a_function_of_the_suite_that_is_no_test_stays_gpd201() -> None:
    assert lines(HANDLER_TEST.format(name="load_pretrained"), "GPD201") == [8]


def test_a_script_function_named_test_is_no_pytest_test() -> None:
    source = HANDLER_TEST.format(name="test").replace("import pytest\n", "")
    assert lines(source, "GPD201") == [7]  # one line up: no `import pytest`


# the trainer loads a saved VAE onto the CPU first, and trains on CUDA only
GPU_TRAINER = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--dalle_path", default=None)
parser.add_argument("--vae_path", default=None)
args = parser.parse_args()
if args.dalle_path:
    loaded = torch.load(args.dalle_path, {mapping})
vae = torch.nn.Linear(4, 4)
vae.load_state_dict(torch.load(args.vae_path))
dalle = torch.nn.Linear(4, 2).cuda()
print(dalle(torch.randn(2, 4).cuda()))
"""


def test_a_map_location_of_cpu_is_no_cpu_path_of_the_script() -> None:
    for mapping in ("map_location='cpu'", "map_location=torch.device('cpu')", "'cpu'"):
        source = GPU_TRAINER.format(mapping=mapping)
        assert lines(source, "GPD201") == [], mapping
        assert lines(source, "GPD203") == [], mapping


def test_a_cpu_device_of_the_script_is_still_one() -> None:
    source = GPU_TRAINER.format(mapping="map_location='cpu'").replace(
        "dalle = torch.nn.Linear(4, 2).cuda()",
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "dalle = torch.nn.Linear(4, 2).cuda()",
    )
    assert lines(source, "GPD201") == [10]


# a metric's integration test takes the suite's device fixture and runs on the CPU anyway
FIXTURE = """\
{framework}import numpy as np
import torch
def test_integration(available_device):
    y = torch.from_numpy(np.random.rand(8))
    assert y.sum() > 0
"""


def test_an_unused_device_fixture_of_a_test_is_no_gpd113() -> None:
    assert lines(FIXTURE.format(framework="import pytest\n"), "GPD113") == []


def test_an_unused_device_parameter_of_a_script_function_stays_gpd113() -> None:
    assert lines(FIXTURE.format(framework=""), "GPD113") == [3]


# a notebook saves with the library's handler and reloads the newest file of that directory
HANDLER_NOTEBOOK = """\
import os
import torch
from ignite.handlers import ModelCheckpoint
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(2, 2).to(device)
checkpointer = ModelCheckpoint("./saved_models", "fashion", n_saved=2, create_dir=True)
def last_checkpoint(path):
    return os.path.join(path, sorted(os.listdir(path))[-1])
model.load_state_dict(torch.load(last_checkpoint({directory})))
"""


def test_a_directory_the_checkpoint_handler_writes_is_this_runs() -> None:
    assert lines(HANDLER_NOTEBOOK.format(directory='"./saved_models"'), "GPD201") == []


def test_another_directory_stays_gpd201() -> None:
    assert lines(HANDLER_NOTEBOOK.format(directory='"./pretrained"'), "GPD201") == [9]
