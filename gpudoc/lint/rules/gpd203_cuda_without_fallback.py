"""GPD203: CUDA hard-coded with no fallback for machines without it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, CompareEvent, CudaEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.flow import guard_polarity, terminates
from gpudoc.lint.analysis.names import bound_names_of, dotted
from gpudoc.lint.analysis.values import Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._checkpoints import (
    CheckpointScan,
    base_cpu_path,
    imported_device_cpu_path,
    scan,
)
from gpudoc.lint.rules._distributed_paths import after_nccl_setup, distributed_only_ids
from gpudoc.lint.rules._importers import cpu_importers, importer_cpu_path, uncalled_functions
from gpudoc.lint.rules._project_options import option_reader_cpu_path
from gpudoc.lint.visit import code_ids, walk


class CudaWithoutFallback(Rule):
    """`.cuda()` or a `"cuda"` device with no `torch.cuda.is_available()` fallback.

    ## What it does
    Finds `.cuda()`, `torch.device("cuda")`, `.to("cuda")`, `device="cuda"` and `device = "cuda"`
    outside any `if` about CUDA, GPUs or devices (also in a helper only called under one, and
    under a call of the file's function that answers whether CUDA can be used, such as
    `if check_requirements():` returning `False` when `torch.cuda.is_available()` is), in a
    script that otherwise runs on the CPU too: it checks `torch.cuda.is_available()`, picks a
    `"cpu"` device, has a `--cpu` / `--device` option, or calls its own model only on the CPU
    (a stray `labels.cuda()` in a CPU tutorial).

    ## Why is this bad?
    On a machine without a usable GPU the script dies with `AssertionError: Torch not compiled
    with CUDA enabled` or `RuntimeError: No CUDA GPUs are available` instead of running on the
    CPU (karpathy/nanoGPT#281, pytorch/pytorch#28111).

    ## Example
    ```python
    parser.add_argument("--cpu", action="store_true")
    model = Net().cuda()
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    ```

    ## Known problems
    CUDA inside a `try:` whose handler catches what a failed CUDA call raises (`Exception`,
    `RuntimeError`, a bare `except:`) and does not raise again is not reported: a CPU-only host
    takes the handler. An option about the device that the file declares but never reads (and
    whose parsed namespace it hands to nothing) is no CPU path; neither is a test for several
    GPUs (`torch.cuda.device_count() > 1`) or of a GPU's index (`args.gpu is not None`).
    A CUDA literal bound to a name (`GPU = "cuda:0"`) that the file reads only on the GPU path
    of a device test (`torch.device(GPU if torch.cuda.is_available() else "cpu")`) is not
    reported, nor is CUDA in a class or function that names two GPUs by index (`"cuda:0"` and
    `"cuda:1"`: a model split over GPUs, written for several), nor a second GPU's index
    elsewhere in that file. A CPU path in the file of a project base class counts for its
    subclasses (`class GanModel(BaseModel)`, whose `__init__` picks `torch.device("cpu")`
    without GPUs), so does an option of another project file that can choose the CPU
    (`--gpu_ids`, "use -1 for CPU", in pix2pixHD's `options/`) for a file that reads it
    (`self.gpu_ids`, a `gpu_ids` parameter), and so does a `"cpu"` device picked by a script of
    the project that imports a model file choosing none (`main.py` building `models/net.py`'s
    `Net`, one more file deep), for the code that script reaches (what it imports, the methods
    something names), unless the file names CUDA more than four times (written for GPUs); and
    `f"cuda:{gpu_ids[0]}"`, the first of the GPUs given, is one device for the run, not one per
    process.
    Scripts written for GPUs only are not reported: nothing in them offers a CPU path, or they
    use NCCL, a per-rank `set_device` or `torch.set_default_device("cuda")`; nor is CUDA in
    code that only runs in a process group (after `if world_size == 1: return`, under
    `if args.distributed:`), where NCCL needs a GPU per process. A flag of one object or one
    function (`if self.cuda:`, a `cuda=False` parameter) is a CPU path for that class or
    function only; `--gpus 0-3` / `--ngpu 2` choose GPUs, and are a CPU path only when a value
    means the CPU (`help="0 = CPU"`, `-1`). Nor is a script reported that declares
    that it needs a GPU (`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`,
    `@unittest.skipIf`, a gating decorator about GPUs such as Lightning's
    `@RunIf(min_cuda_gpus=1)` or `@requires_cuda`, an `assert` or `raise` on unavailability, a
    required `--device` option or one whose only choice is CUDA, a notebook whose metadata asks
    for a GPU accelerator:
    Colab's `"accelerator": "GPU"`, Kaggle's). `torch.device("cuda:N")` objects that never
    allocate (dict keys, comparison operands) are not reported; a move under a test that a
    tensor is not on CUDA (`if t.device != torch.device("cuda"): t = t.to("cuda")`, latent
    diffusion's samplers) is: that arm runs on every machine without a GPU. A guard in a
    caller counts only where the walk reaches the helper through that call. A `"cpu"` keyword
    of another
    library's call (`summary(model, shape, device="cpu")`) is no CPU path of a file that builds
    its model on CUDA (`Net(...).cuda()`). A script whose first word about devices is a CUDA
    call that fails without a GPU (`print(torch.cuda.current_device())`, `get_device_name`,
    `synchronize`, outside any test or `try:`) is written for GPUs; so is one whose only
    availability query is shown (also through a function of the file that only prints) or
    bound to a name nothing else reads or only shows (`USE_CUDA = torch.cuda.is_available()`,
    then `print(USE_CUDA)`). A CUDA string bound to a name read only as an option's default
    (`DEVICE = "cuda:0"`, `add_argument("--device", default=DEVICE)`) is that option's
    default, which the command line or the script's fallback replaces. `y = y.to("cpu")`
    returned by its function brings a result back; it is no CPU path. Nor is a unit test also
    run on CUDA (`if torch.cuda.is_available(): assert f(x.cuda()).is_cuda`) in a notebook
    that binds `device = "cuda"`. CUDA in a function
    named for the GPU (`def to_cuda(self)`, `move_to_gpu`) that no caller in the file reaches is
    its callers' choice. CUDA in a function of a program (a file with a `__main__` block) that
    nothing calls is not reported either: no name in the file but its `def`, no decorator, no
    `fire.Fire()` or `globals()` in the file, and no script of the project naming it (a helper
    left from an earlier training loop never runs).
    """

    CODE = "GPD203"
    NAME = "cuda-without-fallback"
    SUMMARY = "CUDA hard-coded with no torch.cuda.is_available() fallback"
    PLACEMENT = False
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
""",
        """\
import torch
model = torch.nn.Linear(4, 2)
if args.cuda:
    model.cuda()
""",
        # a test that is skipped without a GPU
        """\
import pytest
import torch
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_gpu():
    assert torch.ones(3).cuda().sum().item() == 3
""",
        # a test that Lightning's RunIf skips without a GPU
        """\
import torch
from tests.helpers import RunIf
device = torch.device("cpu")
@RunIf(min_cuda_gpus=1)
def test_on_gpu():
    assert torch.ones(3, device="cuda").sum().item() == 3
""",
        # the script says it needs a GPU
        """\
import torch
assert torch.cuda.is_available(), "this benchmark needs a GPU"
model = torch.nn.Linear(4, 2).cuda()
""",
        # a script for GPUs only: nothing in it runs on the CPU
        """\
import torch
model = torch.nn.Linear(4, 2).cuda()
""",
        # device objects as keys and in comparisons allocate nothing
        """\
import torch
PEAK_TFLOPS = {torch.device("cuda:0"): 989.0}
def on_first_gpu(x):
    return x.device == torch.device("cuda:0")
""",
        """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--device", choices=["cuda"], required=True)
model = torch.nn.Linear(4, 2).to("cuda")
""",
    )
    INVALID = (
        # the script offers a CPU path (a --cpu option), then hard-codes CUDA
        Invalid(
            """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--cpu", action="store_true")
model = torch.nn.Linear(4, 2).cuda()
""",
            line=5,
            col=9,
        ),
        # the device has a fallback, a helper does not (SamLynnEvans/Transformer#27)
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def nopeak_mask(size):
    return torch.triu(torch.ones(1, size, size), diagonal=1).cuda()
""",
            line=4,
            col=12,
        ),
    )

    EVENTS = ("cuda", "call", "compare")

    def __init__(self) -> None:
        super().__init__()
        self.unguarded: list[CudaEvent] = []
        """CUDA named outside any device-availability test."""
        self.host_model: str | None = None
        """A model the script builds and calls on the CPU (never moved)."""
        self.placed_model = False
        """Some model call may run on a GPU (placed, or its place is not known)."""
        self.distributed: dict[cst.FunctionDef, set[int]] = {}
        """Per function walked: the ids of its nodes that only run in a process group."""
        self.caught: dict[cst.FunctionDef, set[int]] = {}
        """Per function walked: its nodes in a ``try:`` whose handler falls back to the CPU."""
        self.compared: set[int] = set()
        """ids of devices compared, in any file the walk went through: they allocate nothing
        (``device.type == th.device("cuda").type``, ``device == torch.device("cuda")``)."""

    def on_compare(self, event: CompareEvent, semantic: Semantic) -> None:
        node = event.node
        # a device compared allocates nothing (`device == torch.device("cuda")`, MiDaS; only its
        # type's name); what a test of a tensor's device guards is reported where it moves
        # (`if t.device != torch.device("cuda"): t = t.to(...)`, the walk's own arms)
        for operand in [node.left, *(target.comparator for target in node.comparisons)]:
            while isinstance(operand, cst.Attribute) and operand.attr.value in ("type", "index"):
                operand = operand.value
            self.compared.add(id(operand))

    def on_cuda(self, event: CudaEvent, semantic: Semantic) -> None:
        if semantic.under_guard:
            return
        function = semantic.function_node
        if function is not None and function.name.value in MOVE_METHODS:
            return  # a class's own `def cuda(self)`: moving is its job, its callers choose
        named = function is not None and CUDA_NAMED.search(function.name.value) is not None
        if named and not semantic.walked_for_call:
            return  # `def to_cuda(self)` no caller here reached: a GPU step by its name
        if function is not None:  # also a function of another file, walked for a call here
            if function not in self.distributed:
                found = distributed_only_ids(function)
                found |= after_nccl_setup(function, semantic.local_function)
                self.distributed[function] = found
            if id(event.node) in self.distributed[function]:
                return  # after `if world_size == 1: return`, or an NCCL group's set-up
            if function not in self.caught:
                self.caught[function] = caught_ids(function)
            if id(event.node) in self.caught[function]:
                return  # in a `try:` whose handler redoes the work on the CPU
        self.unguarded.append(event)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        """Where the script's own models run: a submodule (``self.fc``) runs where its parent
        does, a wrapper or a framework's module wherever they put it."""
        module, name = event.module, event.module_name or ""
        if module is None or not module.weighted or name.startswith("self."):
            return
        if module.place is Place.HOST and not (module.wrapper or module.managed or module.stale):
            self.host_model = self.host_model or name
        else:
            self.placed_model = True

    def finish(self, context: Context) -> Iterator[Report]:
        flags = context.flags
        if flags.default_device:  # torch.set_default_device("cuda"): the device is chosen once
            return
        unguarded = self.unguarded
        if not unguarded:
            return
        declared = _Declared()
        walk(context.module, declared)
        if declared.needs_gpu:
            return  # checked in a decorator or an assert, or a required --device cuda
        found = scan(context.module, path=context.path)
        declared.inert |= declared.unread(found) | caught_ids(context.module)
        gpu_job = flags.cuda_only or flags.per_rank_device or flags.constant_set_device
        if gpu_job and not _falls_back_to_cpu(found.all_evidence()):
            return  # one process per GPU, each on its own: CUDA is what the script runs on
        evidence = found.cpu_path
        if evidence is None and context.path:
            # `class GanModel(BaseModel)`, whose `__init__` in another file picks the CPU, or a
            # device imported from such a file (a helper's own fallback is no script's choice:
            # demucs' GPU benchmark calls `get_solver`, which moves only where CUDA is)
            evidence = (
                base_cpu_path(context.module, context.path)
                or imported_device_cpu_path(context.module, context.path, helpers=False)
                or option_reader_cpu_path(context.module, context.path)
            )
        if (
            evidence is None
            and self.host_model
            and not self.placed_model
            and not found.requires_gpu
        ):
            # a tutorial whose model runs on the CPU, with one stray `.cuda()`
            evidence = f"`{self.host_model}` is never moved to a GPU"
        # a model file choosing no device, built by a script beside it that runs on the CPU too
        imported = evidence is None and bool(context.path) and bool(cpu_importers(context.path))
        if evidence is None and not found.flag_classes and not imported:
            return  # a script for GPUs only: it offers no CPU path to break
        chosen = any(_born_on_cuda(m.node) or api.CUDA_LITERAL.match(m.text) for m in unguarded)
        if found.cpu_path_is_weak and chosen:
            # `Net(...).cuda()` or `torch.device("cuda:0")`: the script chose the GPU; the "cpu"
            # was a library's option (`summary(..., device="cpu")`, MONAI's `Invertd`)
            return
        configured = _configured_defaults(context.module)
        named = _guarded_names(context.module, unguarded)
        named |= _model_parallel(context.module)
        named |= uncalled_functions(context.module, context.path)  # never runs
        mentions = [
            (mention, evidence or found.cpu_path_at(mention.node))
            for mention in unguarded
            if id(mention.node) not in declared.inert
            and id(mention.node) not in self.compared
            and id(mention.node) not in configured
            and id(mention.node) not in named
        ]
        if imported and sum(here is None for _, here in mentions) > MAX_BORROWED:
            imported = False  # CUDA all through the file: a GPU-only module, by its design
        for mention, here in mentions:
            if here is None and imported:
                here = importer_cpu_path(context.module, context.path, mention.node)
            if here is None:
                continue
            message = (
                f"`{mention.text}` hard-codes CUDA, but this script also runs on the CPU "
                f"({here}), where this fails; use the script's device "
                '(`torch.device("cuda" if torch.cuda.is_available() else "cpu")`)'
            )
            yield Report(mention.node, message)


def _model_parallel(module: cst.Module) -> set[int]:
    """ids of the nodes of each top-level class or function that names two GPUs by index
    (``"cuda:0"`` and ``"cuda:1"``): model parallelism, written for several GPUs, whose CUDA
    is the point, whatever CPU path the rest of the file (another notebook section) offers."""
    found: set[int] = set()
    for statement in module.body:
        if not isinstance(statement, cst.ClassDef | cst.FunctionDef):
            continue
        indices = {
            match.group(1)
            for _, text in _strings_in(statement)
            if (match := GPU_INDEX.match(text)) is not None
        }
        if len(indices) >= 2:
            found.update(code_ids(statement))
    if found:
        # and the second GPU anywhere else (`label.to("cuda:1")` where the split model's
        # output lands): only a run with several GPUs names it
        found.update(
            id(node)
            for node, text in _strings_in(module)
            if (match := GPU_INDEX.match(text)) is not None and match.group(1) != "0"
        )
    return found


GPU_INDEX = re.compile(r"^cuda:(\d+)$")


def _strings_in(node: cst.CSTNode) -> list[tuple[cst.SimpleString, str]]:
    strings = _Strings()
    walk(node, strings)
    return strings.found


class _Strings(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[cst.SimpleString, str]] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        if isinstance(value, str):
            self.found.append((node, value.strip()))


def _guarded_names(module: cst.Module, mentions: list[CudaEvent]) -> set[int]:
    """ids of CUDA literals bound to a plain name (``GPU = "cuda:0"``) that the file reads only
    on the GPU path of a device test (``torch.device(GPU if torch.cuda.is_available() else
    "cpu")``): a name for the GPU, used where there is one."""
    literals = [m.node for m in mentions if isinstance(m.node, cst.SimpleString)]
    if not literals:
        return set()
    bindings = _LiteralBindings({id(node) for node in literals})
    walk(module, bindings)
    if not bindings.names:
        return set()
    reads = _GuardedReads(set(bindings.names))
    walk(module, reads)
    return {
        literal
        for name, literal in bindings.names.items()
        if reads.guarded.get(name) and name not in reads.unguarded
    }


class _LiteralBindings(cst.CSTVisitor):
    """``NAME = "cuda:0"`` for the literals asked about: name -> the literal's id."""

    def __init__(self, literals: set[int]) -> None:
        self.literals = literals
        self.names: dict[str, int] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if id(node.value) not in self.literals or len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Name):
            self.names[target.value] = id(node.value)


class _GuardedReads(cst.CSTVisitor):
    """Where the names are read: on the GPU path of a device test (the body of ``if
    torch.cuda.is_available():`` or of ``X if use_cuda else "cpu"``), or anywhere else."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.guarded: dict[str, int] = {}
        self.unguarded: set[str] = set()
        self.depth = 0

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        return self._arms(node.test, node.body, node.orelse)

    def visit_If(self, node: cst.If) -> bool:
        return self._arms(node.test, node.body, node.orelse)

    def _arms(
        self, test: cst.BaseExpression, body: cst.CSTNode, orelse: cst.CSTNode | None
    ) -> bool:
        """Walk a device test's arms, its GPU arm as guarded; False: its children are done."""
        if guard_polarity(test) != "gpu":
            return True
        for part in (test, orelse):
            if part is not None:
                walk(part, self)
        self.depth += 1
        walk(body, self)
        self.depth -= 1
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return not isinstance(node.target, cst.Name)  # a binding, not a read

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in self.names:
            return
        if self.depth:
            self.guarded[node.value] = self.guarded.get(node.value, 0) + 1
        else:
            self.unguarded.add(node.value)


def _configured_defaults(module: cst.Module) -> set[int]:
    """ids of the values of top-level settings that a later top-level ``exec(...)`` may
    override (nanoGPT's ``device = 'cuda'``, then ``exec(open('configurator.py').read())``,
    which ``--device=cpu`` rebinds): defaults of options, as argparse's are."""
    settings: list[cst.BaseExpression] = []
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and all(
                isinstance(target.target, cst.Name) for target in small.targets
            ):
                settings.append(small.value)
            value = small.value if isinstance(small, cst.Expr) else None
            if isinstance(value, cst.Call) and dotted(value.func) == "exec":
                return set().union(*(code_ids(setting) for setting in settings))
    return set()


class _Declared(cst.CSTVisitor):
    """What the walk of the analysis does not see: availability checks in decorators and
    asserts, a required ``--device cuda`` option, and device objects that never allocate."""

    def __init__(self) -> None:
        super().__init__()
        self.needs_gpu = False
        self.declaring = 0
        """Inside a decorator, an assert, or the test of an `if` that raises or exits."""
        self.inert: set[int] = set()
        """ids of nodes used only as a value (dict keys, comparison operands), or only in a
        multi-process job (_distributed_paths.py)."""
        self.device_names: list[tuple[str, int]] = []
        """Each plain name bound to a string, and the string's id."""
        self.option_defaults: dict[str, int] = {}
        """How often each name is read as an option's ``default=``: an option's default,
        which the command line (or the script's own fallback) replaces, allocates nothing."""

    def visit_Decorator(self, node: cst.Decorator) -> None:
        self.declaring += 1
        if _gates_on_gpu(node):
            self.needs_gpu = True

    def leave_Decorator(self, original_node: cst.Decorator) -> None:
        self.declaring -= 1

    def visit_Assert(self, node: cst.Assert) -> None:
        self.declaring += 1

    def leave_Assert(self, original_node: cst.Assert) -> None:
        self.declaring -= 1

    def visit_If(self, node: cst.If) -> None:
        """``if not torch.cuda.is_available(): raise SystemExit(...)``: a GPU is required.
        ``if args.distributed:``: its body runs in a process group (_distributed_paths.py)."""
        self.inert.update(distributed_only_ids(node))
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        first = body[0] if body else None
        if isinstance(first, cst.SimpleStatementLine) and terminates(first):
            self.declaring += 1
            walk(node.test, self)
            self.declaring -= 1

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func) or ""
        if self.declaring and name.endswith(AVAILABILITY):
            self.needs_gpu = True
        if name.endswith("add_argument") and _requires_cuda(node):
            self.needs_gpu = True
        if name.endswith("add_argument"):
            for arg in node.args:  # `default=DEVICE`: what `--device cpu` replaces
                default = arg.keyword is not None and arg.keyword.value == "default"
                if default and isinstance(arg.value, cst.Name):
                    read = arg.value.value
                    self.option_defaults[read] = self.option_defaults.get(read, 0) + 1

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.inert.add(id(node.key))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """``class Device(str, Enum): CUDA = "cuda"``: the name of a choice, made elsewhere."""
        if not any((dotted(base.value) or "").endswith("Enum") for base in node.bases):
            return
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for statement in body:
            small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
            for assign in small:
                if isinstance(assign, cst.Assign):
                    self.inert.add(id(assign.value))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.inert.add(id(node.left))
        self.inert.update(id(target.comparator) for target in node.comparisons)

    def visit_Assign(self, node: cst.Assign) -> None:
        """``dev = 'cuda'``: inert when nothing reads ``dev`` (see ``unread``)."""
        target = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(target, cst.Name) and isinstance(node.value, cst.SimpleString):
            self.device_names.append((target.value, id(node.value)))

    def unread(self, found: CheckpointScan) -> set[int]:
        """ids of the strings bound to names the file never reads (a leftover ``dev =
        'cuda'`` in a script that runs on the CPU), or reads only as an option's default
        (AGCRN's ``DEVICE = 'cuda:0'``, ``add_argument('--device', default=DEVICE)``): they
        allocate nothing."""
        return {
            string
            for name, string in self.device_names
            if found.uses(name) == 1 + self.option_defaults.get(name, 0)
        }


def _falls_back_to_cpu(evidence: dict[int, str]) -> bool:
    """An availability test and a ``"cpu"`` device: the script picks the CPU itself where CUDA
    is missing (``"cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu"`` beside
    a ``--local_rank`` arm that picks each rank's GPU)."""
    return "is_available" in evidence.get(0, "") and 1 in evidence


def _born_on_cuda(node: cst.CSTNode) -> bool:
    """``BetaVAE(3, 10).cuda()``: an object moved to CUDA as it is constructed."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    built = node.func.value
    if node.func.attr.value not in ("cuda", "to") or not isinstance(built, cst.Call):
        return False
    name = (dotted(built.func) or "").rsplit(".", 1)[-1]
    return name[:1].isupper()


MOVE_METHODS = frozenset({"cuda", "to", "_apply"})
CUDA_NAMED = re.compile(r"(^|_)(cuda|gpu|gpus)(_|$)", re.I)
"""``to_cuda``, ``move_to_gpu``, ``cuda_setup``: a function named for the GPU it uses."""
MAX_BORROWED = 4
"""A file that names CUDA more often than this, with no CPU path of its own, is written for
GPUs: a script importing it that offers the CPU runs other parts of the project there."""
AVAILABILITY = ("cuda.is_available", "cuda.device_count", "accelerator.is_available")
DEVICE_OPTION = re.compile(r"^--?(device|cuda|gpu|accelerator)s?$", re.I)


GATE = re.compile(r"skip|require|run_?if|only|mark", re.I)
GPU_WORD = re.compile(r"cuda|gpu", re.I)


BROAD_ERRORS = frozenset({"Exception", "BaseException", "RuntimeError", "AssertionError"})
"""What a failed CUDA call raises (no GPU, or torch built without CUDA)."""


def caught_ids(node: cst.CSTNode) -> set[int]:
    """The ids of the nodes in the ``try:`` blocks under ``node`` (a function, a module) whose
    handler falls back (``try: idx = torch.sort(s.cuda())`` / ``except: idx =
    torch.sort(s)``): a CPU-only host takes the handler; one that raises again is none."""
    tries = _Tries()
    walk(node, tries)
    return tries.caught


class _Tries(cst.CSTVisitor):
    def __init__(self) -> None:
        self.caught: set[int] = set()

    def visit_Try(self, node: cst.Try) -> None:
        if any(_falls_back(handler, node) for handler in node.handlers):
            self.caught.update(code_ids(node.body))


def _falls_back(handler: cst.ExceptHandler, attempt: cst.Try) -> bool:
    """The handler catches what a failed CUDA call raises and redoes the attempt's work: it
    binds a name the ``try:`` binds, and neither raises nor exits."""
    caught = handler.type
    names = (
        [caught]
        if caught is None or not isinstance(caught, cst.Tuple)
        else [element.value for element in caught.elements]
    )
    if not any(name is None or dotted(name) in BROAD_ERRORS for name in names):
        return False
    raises = _Raises()
    walk(handler.body, raises)
    if raises.found:
        return False
    return bool(_bound_in(handler.body) & _bound_in(attempt.body))


def _bound_in(block: cst.BaseSuite) -> set[str]:
    bound: set[str] = set()
    for statement in block.body if isinstance(block, cst.IndentedBlock) else ():
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    bound |= bound_names_of(target.target)
    return bound


class _Raises(cst.CSTVisitor):
    """A ``raise``, or a call that ends the program (``sys.exit(1)``, ``exit()``)."""

    def __init__(self) -> None:
        self.found = False

    def visit_Raise(self, node: cst.Raise) -> None:
        self.found = True

    def visit_Call(self, node: cst.Call) -> None:
        if (dotted(node.func) or "").rsplit(".", 1)[-1] in ("exit", "_exit", "quit", "abort"):
            self.found = True


def _gates_on_gpu(node: cst.Decorator) -> bool:
    """A test-gating decorator about GPUs: ``@RunIf(min_cuda_gpus=1)``, ``@requires_cuda``,
    ``@pytest.mark.gpu``, ``@skip_if_no_gpu``. A decorator that merely uses CUDA
    (``@torch.cuda.amp.custom_fwd``) gates nothing."""
    target = node.decorator
    callee = target.func if isinstance(target, cst.Call) else target
    name = dotted(callee) or ""
    if not GATE.search(name):
        return False
    if GPU_WORD.search(name):
        return True
    if isinstance(target, cst.Call):
        keywords = [arg.keyword.value for arg in target.args if arg.keyword is not None]
        return any(GPU_WORD.search(keyword) for keyword in keywords)
    return False


def _requires_cuda(node: cst.Call) -> bool:
    """``add_argument("--device", required=True)`` or ``choices=["cuda"]``: the user must
    name the GPU; the script declares it needs one."""
    flags = [string_value(arg.value) or "" for arg in node.args if arg.keyword is None]
    if not any(DEVICE_OPTION.match(flag) for flag in flags):
        return False
    keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
    required = dotted(keywords["required"]) == "True" if "required" in keywords else False
    choices = keywords.get("choices")
    if isinstance(choices, cst.List | cst.Tuple | cst.Set) and choices.elements:
        texts = [string_value(element.value) or "" for element in choices.elements]
        return all(text.startswith("cuda") for text in texts)
    return required
