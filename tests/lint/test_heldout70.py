"""Regressions of held-out set 70, reduced and rewritten here: the bug each rule must report,
next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# InfoGraph (set 70): a PyTorch Geometric `Batch` moves its tensors in place (`Data.to()`
# returns the graph itself); the loop reads the graph's attributes after the move
GRAPHS = """\
import torch
{imported}


def embed(encoder, loader):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    out = []
    for data in loader:
        data.to(device)
        out.append(encoder({used}).cpu())
    return out
"""


def test_a_graph_batch_moves_in_place() -> None:
    pyg = "from torch_geometric.data import DataLoader"
    graph = "data.x, data.edge_index, data.batch"
    assert lines(GRAPHS.format(imported=pyg, used=graph), "GPD103") == []
    # the same loop on a plain tensor batch: the move is lost
    assert lines(GRAPHS.format(imported=pyg, used="data"), "GPD103") == [9]
    # without PyTorch Geometric, `data.x` says nothing of what `data` is
    plain = "from torch.utils.data import DataLoader"
    assert lines(GRAPHS.format(imported=plain, used=graph), "GPD103") == [9]


# STGCN (set 70): an early-stopping object of another file, built with the checkpoint's path in
# one function, saves through its `__call__` in another; `test()` then loads that path
STOPPER = """\
import torch


class EarlyStopping:
    def __init__(self, path="checkpoint.pt"):
        self.path = path
        self.best = None

    def __call__(self, val_loss, model):
        if self.best is None or val_loss < self.best:
            self.best = val_loss
            torch.save(model.state_dict(), self.path)
"""
STOPPED = """\
import torch
from earlystopping import EarlyStopping


def prepare(name, device):
    es = EarlyStopping(path="STGCN_" + name + ".pt")
    return es, torch.nn.Linear(4, 1).to(device)


def train(model, es):
    {trained}


def test(model, name):
    model.load_state_dict(torch.load("STGCN_" + name + ".pt"))


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    es, model = prepare("metr-la", device)
    train(model, es)
    test(model, "metr-la")
"""


def test_a_saver_built_with_the_path_in_another_function(tmp_path: Path) -> None:
    saved = STOPPED.format(trained="es(0.5, model)")
    files = {"earlystopping.py": STOPPER, "main.py": saved}
    assert project_lines(tmp_path, files, "GPD201") == []
    # the saver is never called: the file is an earlier run's
    files["main.py"] = STOPPED.format(trained="pass")
    assert project_lines(tmp_path, files, "GPD201") == [15]
    # a saver built for another path
    files["main.py"] = saved.replace('path="STGCN_"', 'path="best_"')
    assert project_lines(tmp_path, files, "GPD201") == [15]


# pyg-team/pytorch_geometric#5207 (recall 70/03) and the Cora tutorial: a PyTorch Geometric data
# set's graph is on the host; a node type's store (`data["author"]`) and its tensors with it
CORA = """\
import torch
from torch_geometric.datasets import {dataset}

dataset = {dataset}(root="data")
data = dataset[0]
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(16, 4).to(device)
{moved}
out = model({fed})
"""


def test_a_graph_of_a_geometric_data_set_is_on_the_host() -> None:
    cora = {"dataset": "Planetoid", "fed": "data.x"}
    assert lines(CORA.format(moved="", **cora), "GPD101") == [9]
    assert lines(CORA.format(moved="data = data.to(device)", **cora), "GPD101") == []
    assert lines(CORA.format(moved="data.to(device)", **cora), "GPD101") == []  # in place
    assert lines(CORA.format(moved="data.to(device)", **cora), "GPD103") == []
    aminer = {"dataset": "AMiner", "fed": 'data["author"].y_index'}
    assert lines(CORA.format(moved="", **aminer), "GPD101") == [9]
    assert lines(CORA.format(moved="data.to(device)", **aminer), "GPD101") == []
    # what the graph holds besides tensors is not typed
    counted = CORA.format(moved="", dataset="Planetoid", fed='data["author"].num_nodes')
    assert lines(counted, "GPD101") == []


# clovaai/deep-text-recognition-benchmark (recall 70/07): a grid kept as a plain attribute,
# made on the GPU in `__init__`; the training script wraps the model in nn.DataParallel, whose
# replicas on the other GPUs get parameters and buffers of their own, and this tensor on cuda:0
GRID = """\
import torch
import torch.nn as nn


class GridGenerator(nn.Module):
    def __init__(self, points, batch_size):
        super().__init__()
        self.P_hat = torch.tensor(points).float().cuda()
        self.batch_P_hat = self.P_hat.repeat(batch_size, 1, 1)

    def forward(self, batch_T):
        return torch.bmm(self.batch_P_hat[: batch_T.size(0)], batch_T)
"""
TRAIN = """\
import torch
from main import GridGenerator

model = GridGenerator([[0.0, 1.0]], 8)
model = {wrapped}.cuda()
"""


def test_a_tensor_made_on_one_gpu_read_by_data_parallel_replicas(tmp_path: Path) -> None:
    wrapped = TRAIN.format(wrapped="torch.nn.DataParallel(model)")
    (tmp_path / "train.py").write_text(wrapped)
    assert project_lines(tmp_path, {"main.py": GRID}, "GPD105") == [9]
    (tmp_path / "train.py").write_text(TRAIN.format(wrapped="model"))
    assert project_lines(tmp_path, {"main.py": GRID}, "GPD105") == []
    ddp = "torch.nn.parallel.DistributedDataParallel(model)"
    (tmp_path / "train.py").write_text(TRAIN.format(wrapped=ddp))
    assert project_lines(tmp_path, {"main.py": GRID}, "GPD105") == []


# Tiiiger/SGC#31 (recall 70/06): a data loader of another file moves what it loads under its
# `cuda=True` switch; the script computes its own switch from CUDA's availability but leaves
# the loader's at its default
LOADER = """\
import torch


def load_data(path="data/", cuda=True):
    features = torch.load(path + "features.pt", map_location="cpu")
    if cuda:
        features = features.cuda()
    return features
"""
SCRIPT = """\
import argparse

import torch
from utils import load_data

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()
features = load_data({passed})
"""


def test_a_gpu_switch_on_by_default_left_out_by_a_script_with_its_own(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text(LOADER)
    config = LintConfig(select=("GPD206",))
    main = tmp_path / "main.py"
    main.write_text(SCRIPT.format(passed=""))
    found = lint_paths([str(main)], config, jobs=1, use_cache=False).findings
    assert [(Path(f.path).name, f.line) for f in found] == [("utils.py", 4)]
    main.write_text(SCRIPT.format(passed="cuda=args.cuda"))
    assert not lint_paths([str(main)], config, jobs=1, use_cache=False).findings
    # a script with no switch of its own runs where the loader says
    main.write_text(SCRIPT.format(passed="").replace("args.cuda = ", "other = "))
    main.write_text(main.read_text().replace(" and torch.cuda.is_available()", ""))
    assert not lint_paths([str(main)], config, jobs=1, use_cache=False).findings
