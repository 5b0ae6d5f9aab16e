"""Precision regressions from the eighth held-out set of public repositories (a transformer
language model's sampling loop and its training script), reduced and rewritten here: correct
code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from lint_lines import lines

SAMPLING = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 8).to(device)
probs = model(torch.randn(2, 4).to(device)).softmax(-1)
values, indices = probs.topk(3)
next_idx = indices.gather(-1, {index})
"""


def test_a_sample_drawn_from_device_probabilities_is_on_the_device() -> None:
    assert lines(SAMPLING.format(index="torch.multinomial(values, 1)"), "GPD108") == []


def test_an_index_made_on_the_host_stays_gpd108() -> None:
    assert lines(SAMPLING.format(index="torch.zeros(2, 1, dtype=torch.long)"), "GPD108") == [6]


SAVE_THROUGH_HELPER = """\
import os
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
def make_path(f):
    os.makedirs(os.path.dirname(f), exist_ok=True)
    return f
def main(save_dir, desc):
    path = os.path.join(save_dir, desc, "best_params")
    {save}
    model.load_state_dict(torch.load(path))
"""


def test_a_checkpoint_saved_through_a_path_helper_is_this_runs() -> None:
    save = "torch.save(model.state_dict(), make_path(path))"
    assert lines(SAVE_THROUGH_HELPER.format(save=save), "GPD201") == []


def test_a_load_with_no_save_of_that_path_stays_gpd201() -> None:
    save = 'torch.save(model.state_dict(), make_path(path + ".old"))'
    assert lines(SAVE_THROUGH_HELPER.format(save=save), "GPD201") == [11]


# recall: a unittest case whose setUp moves a model from a file the linter cannot read
TEST_CASE = """\
import unittest
import torch
from models import BetaVAE
class TestVAE(unittest.TestCase):
    def setUp(self):
        self.model = BetaVAE(3, 10){move}
    def test_forward(self):
        x = torch.randn(16, 3, 64, 64)
        y = self.model(x)
"""


def test_a_model_moved_in_setup_and_fed_host_input_is_gpd101() -> None:
    assert lines(TEST_CASE.format(move=".cuda()"), "GPD101") == [9]


def test_a_model_left_on_the_host_in_setup_is_not_gpd101() -> None:
    assert lines(TEST_CASE.format(move=""), "GPD101") == []
