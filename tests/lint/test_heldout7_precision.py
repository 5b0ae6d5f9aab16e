"""Precision regressions from the seventh held-out set of public repositories (course notebooks
that show a tensor moved, read a tensor's type, save checkpoints through the course's helper
module, and a loss subclassing CrossEntropyLoss), reduced and rewritten here: correct code each
rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths


def notebook_findings(tmp_path: Path, cells: list[str], code: str) -> list[tuple[int, int]]:
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": c,
                "outputs": [],
                "execution_count": None,
            }
            for c in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(notebook))
    result = lint_paths([str(path)], LintConfig(select=(code,)), jobs=1, use_cache=False)
    return [(f.cell or 0, f.line) for f in result.findings]


LESSON = [
    "import torch\nm = torch.randn(3, 3)\n",
    'device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\nm.to(device)\n',
    "print(m.sum())\n",
]


def test_a_move_shown_as_a_cells_result_is_not_gpd103(tmp_path: Path) -> None:
    assert notebook_findings(tmp_path, LESSON, "GPD103") == []


def test_a_move_discarded_inside_a_cell_stays_gpd103(tmp_path: Path) -> None:
    cells = [LESSON[0], LESSON[1] + "print(m.device)\n", LESSON[2]]
    assert notebook_findings(tmp_path, cells, "GPD103") == [(2, 2)]


READ_TYPE = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.rand(4, 3).to(device)
{statement}
print(x.sum())
"""


def test_reading_a_tensors_type_is_not_gpd103() -> None:
    assert lines(READ_TYPE.format(statement="x.type()"), "GPD103") == []


def test_a_discarded_type_conversion_stays_gpd103() -> None:
    source = READ_TYPE.format(statement="x.type(torch.cuda.FloatTensor)")
    assert lines(source, "GPD103") == [4]


# a course: `utils.save_model` writes models/<name>, a later cell loads it back
HELPER_SAVE = """\
import torch
from going_modular import utils
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(4, 2).to(device)
{save}
model.load_state_dict(torch.load("models/{loaded}"))
"""


@pytest.mark.parametrize(
    "save",
    [
        'utils.save_model(model=model, target_dir="models", model_name="effnet_food101.pth")',
        'name = f"effnet_{dataset}.pth"\nutils.save_model(model=model, target_dir="models",'
        " model_name=name)",
    ],
)
def test_a_checkpoint_saved_by_the_projects_helper_is_this_runs(save: str) -> None:
    source = HELPER_SAVE.format(
        save=save.replace("{dataset}", "{data}"), loaded="effnet_food101.pth"
    )
    assert lines(source, "GPD201") == []


def test_a_checkpoint_of_another_name_stays_gpd201() -> None:
    save = 'utils.save_model(model=model, target_dir="models", model_name="vit.pth")'
    assert lines(HELPER_SAVE.format(save=save, loaded="effnet_food101.pth"), "GPD201") == [6]


def test_a_load_before_the_helper_save_stays_gpd201() -> None:
    source = HELPER_SAVE.format(save="", loaded="effnet_food101.pth") + (
        'utils.save_model(model=model, target_dir="models", model_name="effnet_food101.pth")\n'
    )
    assert lines(source, "GPD201") == [6]


CE_SUBCLASS = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class MaskedSoftmaxCELoss({base}):
    def forward(self, pred, label, valid_length):
        self.reduction = "none"
        return super().forward(pred.transpose(1, 2), label).mean(dim=1)
model = nn.Linear(4, 3).to(device)
loss = MaskedSoftmaxCELoss()
x, y = torch.randn(2, 5, 4).to(device), torch.randint(0, 3, (2, 5)).to(device)
print(loss(model(x), y, None))
"""


def test_a_subclass_of_a_loss_without_weights_is_not_gpd102() -> None:
    assert lines(CE_SUBCLASS.format(base="nn.CrossEntropyLoss"), "GPD102") == []


def test_a_subclass_of_a_layer_stays_gpd102() -> None:
    assert lines(CE_SUBCLASS.format(base="nn.PReLU"), "GPD102") == [9]
