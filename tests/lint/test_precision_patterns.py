"""Precision regressions built from the patterns of real public code (pytorch/examples,
yunjey/pytorch-tutorial), reduced and rewritten here: what each rule must say, or not say."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source
from gpudoc.lint.fix import apply_edits


def findings(source: str, code: str) -> list[tuple[int, str | None]]:
    """(line, fixed line) for each finding of ``code``; None when it has no fix."""
    result = lint_source(source, "x.py", LintConfig(select=(code,)))
    out = []
    for finding in result.findings:
        fixed = None
        if finding.fix is not None:
            fixed = apply_edits(source, finding.fix.edits).split("\n")[finding.line - 1].strip()
        out.append((finding.line, fixed))
    return out


# dcgan/main.py: --netG names a checkpoint from elsewhere; the device comes from the accelerator
DCGAN = """\
import torch
if opt.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")
netG = Generator(ngpu).to(device)
if opt.netG != '':
    netG.load_state_dict(torch.load(opt.netG))
torch.save(netG.state_dict(), '%s/netG_epoch_%d.pth' % (opt.outf, epoch))
"""

# imagenet/main.py: `gpu` is a parameter that may be None; `device` is the script's device
IMAGENET = """\
import torch
def main_worker(gpu, ngpus_per_node, args):
    if torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    if args.resume:
        if args.gpu is None:
            checkpoint = torch.load(args.resume)
        else:
            checkpoint = torch.load(args.resume, map_location=f"cuda:{args.gpu}")
"""

# distributed/FSDP/model_checkpointing: the full state dict is gathered on the CPU
FSDP = """\
import torch
from torch.distributed.fsdp import FullStateDictConfig
fullstate_save_policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
def save_model_checkpoint(model, rank, path):
    torch.save(model.state_dict(), path)
def load_model_checkpoint(model, rank, path):
    model.load_state_dict(torch.load(path))
device = "cuda" if torch.cuda.is_available() else "cpu"
"""

# legacy/snli/train.py: the word-vector cache this script writes on an earlier run
SNLI = """\
import os
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if os.path.isfile(args.vector_cache):
    inputs.vocab.vectors = torch.load(args.vector_cache)
else:
    inputs.vocab.load_vectors(args.word_vectors)
    torch.save(inputs.vocab.vectors, args.vector_cache)
"""

# super_resolution/super_resolve.py: the device is chosen after the load
SUPER_RESOLVE = """\
import torch
with open(opt.model, 'rb') as f:
    model = torch.load(f)
if opt.accel:
    device = torch.accelerator.current_accelerator()
    model = model.to(device)
"""

# a benchmark that hard-codes CUDA: no CPU path, nothing to fall back to
GPU_ONLY = """\
import torch
model = Net().cuda()
model.load_state_dict(torch.load(args.weights))
"""


def test_outside_checkpoint_is_reported_with_the_scripts_device() -> None:
    assert findings(DCGAN, "GPD201") == [
        (8, "netG.load_state_dict(torch.load(opt.netG, map_location=device))")
    ]


def test_fix_never_passes_an_index_that_may_be_none() -> None:
    assert findings(IMAGENET, "GPD201") == [
        (9, "checkpoint = torch.load(args.resume, map_location=device)")
    ]


def test_own_checkpoints_and_gpu_only_scripts_are_quiet() -> None:
    for source in (FSDP, SNLI, GPU_ONLY):
        assert findings(source, "GPD201") == []


def test_no_device_variable_before_the_load_means_no_fix() -> None:
    assert findings(SUPER_RESOLVE, "GPD201") == [(3, None)]


def test_map_location_that_is_none_on_this_path_is_reported() -> None:
    source = (
        "import argparse\nimport torch\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--gpu', type=int, help='GPU id to use')\n"
        "args = parser.parse_args()\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "state = torch.load(args.resume, map_location=args.gpu)\n"
    )
    assert findings(source, "GPD201") == [(7, None)]
    guarded = source.replace("state =", "if args.gpu is not None:\n    state =")
    assert findings(guarded, "GPD201") == []


def test_a_notebook_that_saved_the_path_in_an_earlier_cell_is_quiet(tmp_path: Path) -> None:
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = new_notebook(metadata={"kernelspec": kernel})
    notebook.cells = [
        new_code_cell('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"'),
        new_code_cell("model = Net().to(device)\ntorch.save(model.state_dict(), 'net.pt')"),
        new_markdown_cell("## Evaluate"),
        new_code_cell("model.load_state_dict(torch.load('net.pt'))"),
        new_code_cell("teacher.load_state_dict(torch.load('teacher.pt'))"),
    ]
    path = tmp_path / "train.ipynb"
    path.write_text(nbformat.writes(notebook))
    found = lint_paths([str(path)], LintConfig(select=("GPD201",)), use_cache=False).findings
    assert [(f.cell, f.line) for f in found] == [(5, 1)]  # only the checkpoint from elsewhere


def test_a_gpu_index_parameter_is_never_the_map_location() -> None:
    source = (
        "import torch\n"
        "def evaluate(path, gpu):\n"
        "    model = Net().to('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    model.load_state_dict(torch.load(path))\n"
    )
    assert findings(source, "GPD201") == [(4, None)]
    with_device = source.replace("path, gpu", "path, gpu, device")
    assert findings(with_device, "GPD201") == [
        (4, "model.load_state_dict(torch.load(path, map_location=device))")
    ]


def test_a_checkpoint_saved_through_a_named_path_and_reloaded_by_its_text_is_quiet() -> None:
    """udacity's char-rnn: `model_name = 'rnn.net'` saved through `open(model_name)`, later
    reloaded with `open('rnn.net')`: the same run wrote it."""
    source = (
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "model_name = 'rnn_20_epoch.net'\n"
        "with open(model_name, 'wb') as f:\n"
        "    torch.save({'state_dict': {}}, f)\n"
        "with open('rnn_20_epoch.net', 'rb') as f:\n"
        "    checkpoint = torch.load(f)\n"
    )
    codes = [f.code for f in lint_source(source, "x.py").findings]
    assert "GPD201" not in codes


def test_a_one_gpu_script_choosing_its_gpu_is_not_one_process_per_gpu() -> None:
    """pytorch/examples snli: `torch.cuda.set_device(args.gpu)` picks one GPU; a load there is
    judged as in any script that also runs on the CPU, not as every rank's."""
    source = (
        "import torch\n"
        "if torch.cuda.is_available():\n"
        "    torch.cuda.set_device(args.gpu)\n"
        "    device = torch.device('cuda:{}'.format(args.gpu))\n"
        "else:\n"
        "    device = torch.device('cpu')\n"
        "model = torch.load(args.resume_snapshot)\n"
    )
    (finding,) = [f for f in lint_source(source, "x.py").findings if f.code == "GPD201"]
    assert "one process per GPU" not in finding.message
    assert "also runs on the CPU" in finding.message
