"""Whether a file's new tensors are made on the GPU: the file makes CUDA the default device
itself, or a script that imports it does before it builds anything from it.

pytorch-llama's ``inference.py`` calls ``torch.set_default_tensor_type(torch.cuda.HalfTensor)``
and then builds ``model.py``'s Transformer, whose key/value caches are plain ``torch.zeros``
attributes: they are born on the GPU, beside the model. Read from the scripts (found as the CPU
importers are, parsed, never run): a script that imports the file and calls a CUDA default
setter anywhere counts, whichever of its paths builds the model.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.rule import Context
from gpudoc.lint.rules._gpu_savers import small_file_stamp
from gpudoc.lint.rules._importers import imported_names
from gpudoc.lint.rules._project_scripts import candidate_importers
from gpudoc.lint.visit import walk

SETTERS = frozenset({"set_default_tensor_type", "set_default_device"})

CUDA_DEFAULT = re.compile(
    r"set_default_tensor_type\(\s*(?:torch\.)?cuda\.\w+|"
    r"set_default_tensor_type\(\s*[\"']torch\.cuda\.|"
    r"set_default_device\(\s*([\"']cuda|torch\.device\(\s*[\"']cuda)"
)
"""``torch.set_default_tensor_type(torch.cuda.HalfTensor)``, ``set_default_device("cuda")``."""


def cuda_by_default(context: Context) -> bool:
    """The file's own ``torch.set_default_device(...)`` (or a CUDA default tensor type), or one
    in a project script that imports it."""
    return context.flags.default_device or importer_sets_cuda_default(context.path)


def importer_sets_cuda_default(path: str) -> bool:
    here = Path(path).resolve() if path.endswith(".py") else None
    if here is None:
        return False
    for script in candidate_importers(path):
        if _sets_cuda_default(script) and imported_names(script, here):
            return True
    return False


def _sets_cuda_default(script: Path) -> bool:
    stamp = small_file_stamp(script)
    return stamp is not None and _sets_cuda_default_at(script, stamp)


@lru_cache(maxsize=512)
def _sets_cuda_default_at(script: Path, stamp: tuple[int, int]) -> bool:
    """The text names a CUDA default (a cheap test), and a call in the parsed script makes it
    (not a comment or a string: ``# torch.set_default_tensor_type(torch.cuda.HalfTensor)``)."""
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if CUDA_DEFAULT.search(text) is None:
        return False
    parsed = project.load(script)
    if parsed is None:
        return False
    setters = _Setters()
    walk(parsed.module, setters)
    return setters.cuda


class _Setters(cst.CSTVisitor):
    def __init__(self) -> None:
        self.cuda = False

    def visit_Call(self, node: cst.Call) -> None:
        name = (dotted(node.func) or "").rpartition(".")[2]
        if name in SETTERS and node.args:
            argument = cst.Module([]).code_for_node(node.args[0].value)
            self.cuda = self.cuda or "cuda" in argument
