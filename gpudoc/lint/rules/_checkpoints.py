"""What GPD201 needs to know about a file's checkpoints, read straight from its syntax.

Which paths the file itself saves to (and whether what it saves is on the CPU), where each
``torch.load`` reads from, whether the script ever offers a CPU path, and which of its names hold
its device at a given load: the value a ``map_location`` fix may pass.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.flow import counts_several_gpus, guard_polarity, terminates
from gpudoc.lint.analysis.functions import argument_for
from gpudoc.lint.analysis.homes import add_star_library_names, project_modules, project_names
from gpudoc.lint.analysis.names import (
    DISPATCHERS,
    ImportTable,
    bound_names,
    bound_names_of,
    class_method,
    dotted,
    iter_statements,
    keyword,
    name_counts,
    names_in,
    return_values,
    top_level_runs,
)
from gpudoc.lint.rules._cuda_extensions import compiles_cuda_at_import
from gpudoc.lint.rules._device_names import Binding, device_text
from gpudoc.lint.rules._helpers import Conditions, argparse_option, every_parameter
from gpudoc.lint.rules._project_scripts import importer_texts
from gpudoc.lint.visit import code_ids, walk

TEMPORARY = re.compile(r"expr:(tmp_path|tmpdir|tmp_path_factory)\b")
"""pytest's temporary-directory fixtures: a test writes there what it loads back."""

ROOT_NAME = re.compile(r"expr:([A-Za-z_]\w*)\b(?!\()")
"""The name a path expression starts from (``out_dir`` in ``out_dir / "m.pt"``), not a call."""

CHECKPOINT_HANDLERS = frozenset({"ModelCheckpoint", "Checkpoint", "DiskSaver"})
"""Training libraries' checkpoint writers given a directory first (ignite's
``ModelCheckpoint(dirname, ...)``, ``DiskSaver(dirname)``); ``Checkpoint(to_save, ...)`` is
given none and is skipped by the literal test."""
TEST_FRAMEWORKS = frozenset({"pytest", "unittest"})
TEST_NAME = re.compile(r"_?test")
CPU_SWITCH = re.compile(r"cuda|gpu|accel|cpu|device", re.I)
"""An option about these (``--no-cuda``, ``--accel``, ``--device``) offers a CPU path."""
GPU_MOVE = re.compile(r"\.cuda\(|\.to\((?!\s*[\"']cpu)")
"""A move that may land on a GPU: ``.cuda(...)``, ``.to(x)`` but not ``.to("cpu")``."""
MODULE_NAME = re.compile(r"(model|net|module|encoder|decoder|backbone|generator)s?$", re.I)
"""Names of modules: ``net_cpu = net.to("cpu")`` moves the one model, a choice of device."""
TENSOR_PLACE_TEST = re.compile(
    r"[\w.\]\[]+\.is_cuda\b(\(\))?|\bis_\w+_on_cuda\b"
    r"|\b(?!(?:args|opt|opts|config|cfg|conf|hparams|params|settings)\.)[\w.\]\[]+\.device"
    r"\s*[!=]=\s*(?:torch\.)?device\([^)]*\)"
)
"""``if raw_w.is_cuda: mask = mask.cuda()`` (or ``is_model_on_cuda``, read from the model's
parameters, or ``attr.device != torch.device("cuda")``): a test of a tensor's own device,
not a switch of the script between a GPU and the CPU."""


class Arm(NamedTuple):
    """One arm of an ``if`` around a load."""

    statement: int
    """id of the ``if``."""
    orelse: bool
    none: str | None
    """The name that is None on this arm (``args.gpu`` in ``if args.gpu is None:``)."""
    main_rank: bool = False
    """This arm runs on the main process alone (``if rank in [-1, 0]:``)."""
    single_process: bool = False
    """The arm of a distributed switch without the process group (``else:`` of ``if
    args.distributed:``)."""
    alternative: frozenset[str] = frozenset()
    """Names the other arm binds to tensors built from host data (``geno = torch.tensor(
    df.values)``): a load here that binds one of them reads a cache of that data."""


@dataclass
class LoadSite:
    call: cst.Call
    path_key: str | None
    function: cst.FunctionDef | None
    order: int
    map_location: cst.BaseExpression | None
    tests: tuple[str, ...]
    """The text of every ``if``/``while`` test around the load."""
    arms: tuple[Arm, ...] = ()
    """The arm of every ``if`` statement around the load, outermost first."""
    in_dataset: bool = False
    """In a method of a ``Dataset`` class: the load reads samples or features."""
    retried: bool = False
    """In a ``try:`` whose handler loads again with a map location (the CPU case handled)."""
    file_name: str | None = None
    """The literal file name its path ends in (``os.path.join(d, "model.pt")``)."""


REPORTERS = frozenset({"print", "info", "debug", "warning", "log", "write", "echo"})
"""Calls whose arguments are only shown: an availability query in one decides no path."""
GPU_QUERIES = frozenset(
    "torch.cuda." + name
    for name in (
        *("set_device", "current_device", "get_device_name", "get_device_properties"),
        *("get_device_capability", "synchronize", "mem_get_info"),
    )
)
"""CUDA calls that raise on a host without a GPU: run unconditionally, the script needs one."""
DEVICE_LIBRARIES = frozenset({"torch", "lightning", "pytorch_lightning", "accelerate"})
"""Libraries whose ``"cpu"`` keyword arguments choose the script's own device."""
WEAK = 9


class CheckpointScan(cst.CSTVisitor):
    def __init__(self, module: cst.Module, path: str | None = None) -> None:
        super().__init__()
        self.module = module
        self.path = path
        """The file's path, to read its base classes' files (None: this file alone)."""
        self.imports = ImportTable()
        self.saved: dict[str, bool] = {}
        """path key -> whether every save to it writes CPU state."""
        self.loads: list[LoadSite] = []
        self.first_save: dict[str, int] = {}
        """path key -> the order of its first save."""
        self.saves_in: dict[int, set[str]] = {}
        """id of a function (or of ``None``: the module) -> the path keys it saves to."""
        self.joined_saves: dict[str, int] = {}
        """``os.path.join("models", "net-{}.ckpt".format(e))`` saves, as their templates."""
        self.handler_dirs: dict[str, int] = {}
        """Directories a training library's checkpoint handler writes into
        (``ModelCheckpoint("./saved_models", ...)``) -> when it was made."""
        self.helper_saves: dict[re.Pattern[str], int] = {}
        """File names a project helper saved (``save_model(..., model_name=...)``) -> when."""
        self.bindings: list[Binding] = []
        self._by_name: dict[str, list[Binding]] = {}
        self._by_function: dict[int, list[Binding]] = {}
        self._by_value: dict[int, list[Binding]] = {}
        """``bindings`` by name, by id of their function (0: the module) and by id of their
        value, each in order: a file rebinds one name hundreds of times, and the questions
        asked at each load and save would otherwise scan every binding."""
        self.none_params: set[tuple[cst.FunctionDef | None, str]] = set()
        """(function, name) of names that hold None: a ``=None`` default or assignment."""
        self.declared_global: set[str] = set()
        """Names some function declares ``global``: it may rebind a module-level None."""
        self.defaulted: dict[tuple[cst.FunctionDef | None, str], int] = {}
        """``if device is None: device = ...``: where a None name got its value (first order)."""
        self.options_without_default: set[str] = set()
        """argparse destinations whose default is None (``--gpu`` with no ``default=``)."""
        self.always_on: set[str] = set()
        """argparse destinations of ``store_true`` switches whose default is True."""
        self._option_switches: list[tuple[list[str], cst.FunctionDef | None]] = []
        """Moves under an option's test (``if args.cuda:``), judged once every option is read."""
        self.gpu_functions: dict[int, int] = {}
        """id of a function that calls ``torch.cuda.set_device`` unconditionally -> when."""
        self.string_names: dict[str, str | None] = {}
        """Names bound to one string literal in the whole file (a checkpoint's path)."""
        self.tests = False
        """The file imports pytest or unittest: its ``test_*`` functions are tests."""
        self.offloads = False
        """FSDP state gathered to the CPU: ``offload_to_cpu=True``, ``cpu_offload=...``."""
        self.evidence: dict[int, str] = {}
        """By strength (0 strongest): what shows that the script runs on the CPU too."""
        self.value_options: list[tuple[str, str]] = []
        """(dest, evidence) of options about the device that take a value (``--cuda 1``): a
        CPU path unless the value only picks GPUs (``CUDA_VISIBLE_DEVICES = args.cuda``)."""
        self._on_host: set[tuple[int, str | None]] = set()
        """(function, name) of modules a statement moved to the CPU in place (``net.cpu()``)."""
        self.gpu_selectors: set[str] = set()
        """Option dests whose value becomes ``CUDA_VISIBLE_DEVICES``: which GPUs, not whether."""
        self._attributes_read: set[str] = set()
        """Every attribute name the file reads of something other than torch (``args.cuda``
        -> ``cuda``)."""
        self._namespaces: set[str] = set()
        """Names bound to ``parser.parse_args()``."""
        self._callees: set[int] = set()
        """ids of the expressions called (``model.cuda`` of ``model.cuda()``)."""
        self._handed: set[str] = set()
        """Plain names passed whole to a call (``train(args)``, ``Model(opt)``)."""
        self.cpu_options: dict[str, str] = {}
        """Dest to flag of each option that can choose the CPU (``gpu_ids`` of ``--gpu_ids``,
        "use -1 for CPU"): other project files that read it take it as their CPU path."""
        self.requires_gpu = False
        """``assert torch.cuda.is_available()`` (or ``if not ...: sys.exit(...)``) outside any
        ``if``: the script stops on a CPU-only host, whatever else it tests."""
        self._functions: list[cst.FunctionDef] = []
        self._classes: list[cst.ClassDef] = []
        self.flag_classes: dict[int, cst.ClassDef | cst.FunctionDef] = {}
        self._method_evidence: list[tuple[int, str, str]] = []
        self._helper_evidence: list[tuple[int, str, str]] = []
        self._top_level: set[int] | None = None
        """CPU choices inside a top-level function of a script: they count once something in
        the file names the function (a leftover `to_var` helper never called chooses nothing)."""
        """CPU choices made in a method: (strength, text, the method's name)."""
        self._called: set[str] = set()
        """The last name of everything the file calls (``_acquire_device``)."""
        self._constants: tuple[frozenset[str], frozenset[str]] | None = None
        """The ``self`` attributes only ever set ``True`` here, and all those set here."""
        """Classes (functions) that move things only under a flag of their own (``if
        self.cuda:``, a ``cuda`` parameter): a CPU path for their own code, not evidence about the
        rest of the file."""
        self._flag_class_ids: set[int] | None = None
        self._opened: list[dict[str, cst.BaseExpression]] = []
        self._tries: list[cst.Try] = []
        self._tests: list[str] = []
        self._test_ifs: list[cst.If | None] = []
        """For each of ``_tests``: its ``if`` (None for ``x if t else y``)."""
        self._every_arm: dict[cst.If, bool] = {}
        """``if``s whose every arm moves to the device (``if ngpu > 1: net =
        DataParallel(net).cuda()`` / ``else: net = net.cuda()``): no CPU path. Read only for
        the ``if``s around a move, once each."""
        self._reported: set[int] = set()
        """ids of what is only printed or logged (``print(torch.cuda.is_available())``)."""
        self._reporters: frozenset[str] | None = None
        """The file's functions that only print (read the first time a call needs it)."""
        self._name_counter: _NameCounter | None = None
        """How often the file names each name (counted the first time one is asked)."""
        self._tested: set[str] | None = None
        """The names the file reads in a test (collected the first time one is asked)."""
        self._hard_gpu_names: set[str] = set()
        """Module names bound unconditionally to a hard-coded GPU (``device = "cuda:0"``)."""
        self._parameter_defaults: dict[int, tuple[cst.FunctionDef, str, int]] = {}
        """id of a parameter's default -> its function, the parameter and its position."""
        self._cuda_checks: list[cst.If] = []
        """The enclosing ``if torch.cuda.is_available():`` blocks that assert (unit tests)."""
        self._check_evidence: list[tuple[int, str]] = []
        """CPU evidence found inside those blocks, weighed once the file is read."""
        self._moved_results: set[int] = set()
        """ids of calls whose result is moved at once (``get_noise(n, z).to(device)``)."""
        self._default_cpu: list[tuple[int, str, cst.FunctionDef, str, int]] = []
        """``def get_noise(n, device="cpu")``: a helper's default, the script's CPU path where
        the script does not hard-code CUDA itself (``device = "cuda"``), or where a call of the
        helper leaves it out (``train(model, loader)``: that run is on the CPU)."""
        self._displayed: list[str] = []
        """Availability queries only displayed (a notebook's bare ``torch.cuda.is_available()``)."""
        self._arms: list[Arm] = []
        """The arm the walk is in of each enclosing ``if`` statement."""
        self._ifs: list[tuple[cst.If, Arm]] = []
        """Each enclosing ``if`` statement and its ``else`` arm, entered at its ``else``."""
        self.saving_helpers: dict[str, list[tuple[cst.FunctionDef, str, cst.BaseExpression]]] = {}
        """Function name -> (function, parameter, object) of a ``torch.save(object, parameter)``
        in its body: each call saves to the argument it passes for that parameter."""
        self.calls_of: dict[str, list[tuple[cst.Call, int, cst.FunctionDef | None]]] = {}
        """Calls by the last name called, with their order and enclosing function: the
        paths a loading function's callers pass (``_callers_saved``)."""
        self._later_calls: list[tuple[str, cst.Call, int]] = []
        """Calls of plain names met before any saving function of that name (and their order)."""
        self.saving_methods: dict[str, list[tuple[cst.FunctionDef, str, cst.BaseExpression]]] = {}
        """Method name -> (method, parameter, object) of a ``torch.save(object, parameter)``."""
        self._method_calls: list[tuple[str, cst.Call, int]] = []
        """Method calls (``net.to_file("e.pt")``), settled against ``saving_methods`` at the end."""
        self.defined: set[str] = set()
        """Names of the file's functions (any depth): a call of one may build a path."""
        self.class_defs: dict[str, cst.ClassDef] = {}
        self.attribute_saves: list[tuple[cst.ClassDef, str]] = []
        """(class, attribute) of ``torch.save(m, self.<attribute>)`` in a method: a runner
        object saving to the path its constructor was given."""
        self._saved_names: dict[int, set[str]] = {}
        """id of a function -> the local names it saves to (``torch.save(sd, path)``)."""
        self.path_returners: set[str] = set()
        """Functions that return the path they saved to (``return best_state_path``)."""
        self._order = 0
        self._foreign_cpu: set[int] = set()
        """ids of ``"cpu"`` strings given to a library's own keyword (``summary(...,
        device="cpu")``): where that library runs, weak evidence of the script's CPU path."""
        self._transfers: set[int] = set()
        """``"cpu"`` strings that are where a result is brought back (``feat.to("cpu")``
        handed on or chained) or where a checkpoint is loaded (``map_location="cpu"``): a
        copy for NumPy, saving or loading, not a device the script runs on."""
        self.converted: set[int] = set()
        """ids of calls whose result goes to NumPy at once (``torch.load(f).numpy()``)."""
        self._shown: set[int] = set()
        """``"cpu"`` strings in an expression a notebook cell only displays
        (``torch.device("cpu"), torch.device("cuda:1")``): a demo, not a path the script runs."""

    # -- structure -------------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        self.imports.add(node)
        names = [dotted(alias.name) or "" for alias in node.names]
        self.tests |= any(name.partition(".")[0] in TEST_FRAMEWORKS for name in names)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.add(node)
        if isinstance(node.names, cst.ImportStar) and self.path is not None:
            add_star_library_names(self.imports, node, self.path)  # `torch` of `config`
        module = dotted(node.module) if node.module is not None else ""
        self.tests |= (module or "").partition(".")[0] in TEST_FRAMEWORKS

    def visit_Global(self, node: cst.Global) -> None:
        self.declared_global.update(item.name.value for item in node.names)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node)
        self.defined.add(node.name.value)
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        for param in params:
            self._bind(Binding(param.name.value, None, node, self._next()))
            default = param.default
            if isinstance(default, cst.Name) and default.value == "None":
                self.none_params.add((node, param.name.value))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()
        saved = self._saved_names.get(id(original_node))
        if saved and _returns_one_of(original_node, saved, self.bound_in(original_node)):
            self.path_returners.add(original_node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node)
        self.class_defs.setdefault(node.name.value, node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_Assert(self, node: cst.Assert) -> None:
        if self._unconditional() and _availability(node.test):
            self.requires_gpu = True

    def visit_If(self, node: cst.If) -> None:
        test = node.test
        if _checks_on_cuda_too(node) and self._function() is None:
            self._cuda_checks.append(node)
        if isinstance(test, cst.Call) and _availability(test) and _only_seeds(node):
            # `if torch.cuda.is_available(): torch.cuda.manual_seed(seed)`: a seed helper,
            # ready for either machine, not a CPU path of the script
            self._reported.add(id(test))
        if isinstance(test, cst.Call) and _availability(test) and _only_shows(node):
            # `if torch.cuda.is_available(): print("GPU found") else: print("no GPU")`: a GPU
            # lesson's check that tells, and chooses nothing
            self._reported.add(id(test))
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            stops = _availability(test.expression) and _stops(node.body)
            # `if not torch.cuda.is_available(): sys.exit("needs a GPU")`
            self.requires_gpu |= stops and self._unconditional()
        if _no_gpu_named(test) and _stops(node.body):
            # `if device_name != "/device:GPU:0": raise SystemError("GPU device not found")`,
            # the BERT fine-tuning notebooks' first cell (TensorFlow asked for the GPU)
            self.requires_gpu |= self._unconditional()
        self._tests.append(self.module.code_for_node(node.test))
        self._test_ifs.append(node)
        self._enter_else(node)  # an `elif`
        body, orelse = _none_names(node.test)
        main = _main_rank_arm(node.test)
        many = _distributed_switch(node.test)
        built = _host_built_names(node.body)
        other = _host_built_names(node.orelse.body) if isinstance(node.orelse, cst.Else) else set()
        else_arm = Arm(id(node), True, orelse, main is False, many is True, frozenset(built))
        self._ifs.append((node, else_arm))
        self._arms.append(Arm(id(node), False, body, main is True, many is False, frozenset(other)))

    def leave_If(self, original_node: cst.If) -> None:
        if self._cuda_checks and self._cuda_checks[-1] is original_node:
            self._cuda_checks.pop()
        self._tests.pop()
        self._test_ifs.pop()
        self._ifs.pop()
        self._arms.pop()

    def visit_Else(self, node: cst.Else) -> None:
        self._enter_else(node)

    def _enter_else(self, node: cst.Else | cst.If) -> None:
        """From ``node`` on, the walk is in the other arm of the innermost ``if`` (when ``node``
        is that ``if``'s ``else`` or ``elif``, not a loop's ``else``)."""
        if self._ifs and self._ifs[-1][0].orelse is node:
            self._arms[-1] = self._ifs[-1][1]

    def visit_IfExp(self, node: cst.IfExp) -> None:
        test = self.module.code_for_node(node.test)
        self._tests.append(test)
        self._test_ifs.append(None)
        # `"cpu" if conserve_memory else "cuda"`: where a copy is kept, chosen by a setting
        # about memory, not a CPU path (that test would name cuda, a GPU or the device)
        arms = [string_value(node.body), string_value(node.orelse)]
        choice = None not in arms and any(text and text.startswith("cuda") for text in arms)
        if choice and not CPU_SWITCH.search(test):
            self._transfers.update(id(arm) for arm in (node.body, node.orelse))

    def leave_IfExp(self, original_node: cst.IfExp) -> None:
        self._tests.pop()
        self._test_ifs.pop()

    def _every_arm_moves(self, node: cst.If | None) -> bool:
        if node is None:
            return False
        if node not in self._every_arm:
            self._every_arm[node] = self._arms_move(node)
        return self._every_arm[node]

    def _arms_move(self, node: cst.If) -> bool:
        arms: list[cst.CSTNode] = [node.body]
        orelse: cst.If | cst.Else | None = node.orelse
        while isinstance(orelse, cst.If):
            arms.append(orelse.body)
            orelse = orelse.orelse
        if orelse is None:
            return False
        arms.append(orelse.body)
        return all(GPU_MOVE.search(self.module.code_for_node(arm)) for arm in arms)

    def visit_With(self, node: cst.With) -> None:
        opened: dict[str, cst.BaseExpression] = {}
        for item in node.items:
            call = item.item
            target = item.asname.name if item.asname is not None else None
            is_open = isinstance(call, cst.Call) and dotted(call.func) == "open" and call.args
            if is_open and isinstance(call, cst.Call) and isinstance(target, cst.Name):
                opened[target.value] = call.args[0].value
        self._opened.append(opened)

    def leave_With(self, original_node: cst.With) -> None:
        self._opened.pop()

    def visit_Try(self, node: cst.Try) -> None:
        self._tries.append(node)

    def leave_Try(self, original_node: cst.Try) -> None:
        self._tries.pop()

    # -- facts -----------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and (dotted(value.func) or "").endswith(".parse_args"):
            self._namespaces.update(
                target.target.value
                for target in node.targets
                if isinstance(target.target, cst.Name)
            )
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            # `points_cpu = points_gpu.to(device="cpu")`: a copy brought back under another
            # name, not a choice of device (`model = model.to("cpu")`)
            receiver = dotted(value.func.value)
            names = [dotted(target.target) for target in node.targets]
            module = MODULE_NAME.search(receiver or "")
            # `y = y.to("cpu")` then `return y`: the function's result brought back
            returned = receiver in names and receiver in self._returned_names()
            if receiver is not None and (receiver not in names or returned) and module is None:
                self._transfers.update(_cpu_transfer(value))
        self._note_demo_device(node)
        if isinstance(value, cst.Call) and (dotted(value.func) or "").endswith(AVAILABILITY):
            # `HAS_CUDA = torch.cuda.is_available()` that nothing reads: it chooses nothing
            names = [dotted(t.target) for t in node.targets]
            # `USE_CUDA = torch.cuda.is_available()` only printed (ASTGCN) chooses nothing either
            if all(name and "." not in name and self.only_shown(name) for name in names):
                self._reported.add(id(value))
            # `n_gpus = torch.cuda.device_count()` read only as a size (`num_workers=n_gpus`)
            counted = (dotted(value.func) or "").endswith("device_count")
            if counted and all(
                name and "." not in name and not self.tested(name) for name in names
            ):
                self._reported.add(id(value))
        returner = value.func if isinstance(value, cst.Call) else None
        if isinstance(returner, cst.Name) and returner.value in self.path_returners:
            # `state_path = train(model, ...)`, which returns the path it saved the best to
            for target in node.targets:
                self._save_to(target.target, None)
        for target in node.targets:
            if _visible_devices(target.target) and isinstance(node.value, cst.Attribute):
                self.gpu_selectors.add(node.value.attr.value)
            if isinstance(target.target, cst.Name):
                binding = Binding(target.target.value, node.value, self._function(), self._next())
                self._bind(binding)
                text = string_value(node.value)  # `model_name = "rnn.net"`, one value only
                known = self.string_names.get(target.target.value, text)
                self.string_names[target.target.value] = text if known == text else None
                none = isinstance(node.value, cst.Name) and node.value.value == "None"
                if none and not self._on_gpu_arm():
                    # (`else: loc = None` of `if num_gpu == 0:`: None only where GPUs run)
                    self.none_params.add((self._function(), target.target.value))
                elif self._arms and self._arms[-1].none == target.target.value:
                    self.defaulted.setdefault((self._function(), binding.name), binding.order)

    def _on_gpu_arm(self) -> bool:
        """The walk is on the GPU arm of the innermost ``if`` (the body of ``if use_cuda:``,
        the ``else:`` of ``if num_gpu == 0:``)."""
        if not self._ifs or not self._arms:
            return False
        polarity = guard_polarity(self._ifs[-1][0].test)
        orelse = self._arms[-1].orelse
        return polarity == ("cpu" if orelse else "gpu")

    def _note_demo_device(self, node: cst.Assign) -> None:
        """``device = torch.device("cuda:0")`` run unconditionally, later ``device =
        torch.device("cpu")``: a GPU chapter showing a tensor moved back, not a CPU path (on a
        CPU-only host the script failed at its first use of the hard-coded GPU already)."""
        if self._function() is not None or not self._unconditional() or len(node.targets) != 1:
            return
        target = node.targets[0].target
        text = _device_literal(node.value)
        if not isinstance(target, cst.Name) or text is None:
            return
        if api.DEVICE_LITERAL.match(text) and text.startswith("cuda"):
            self._hard_gpu_names.add(target.value)
        elif api.CPU_LITERAL.match(text) and target.value in self._hard_gpu_names:
            self._transfers.update(code_ids(node.value))

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        shown = not isinstance(value, cst.Call) or dotted(value.func) == "torch.device"
        if shown:
            self._shown.update(code_ids(value))
        func = value.func if isinstance(value, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value in ("is_available", "device_count"):
            # a notebook cell that only displays `torch.cuda.is_available()`: it chooses
            # nothing; it counts as a CPU path only where nothing commits to a GPU (all_evidence)
            self._reported.add(id(value))
            self._displayed.append(f"`{dotted(func)}()`")
        moved = _module_moved_in_place(value)
        if moved is not None:
            # `net.eval().cpu()` as a statement: a module moves in place; its state saved after
            # that is on the CPU (until a move back)
            name, to_cpu = moved
            key = (id(self._function()), name)
            if to_cpu:
                self._on_host.add(key)
            else:
                self._on_host.discard(key)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # `6 * torch.cuda.device_count()`: a size, not a test for a GPU
        for operand in (node.left, node.right):
            if isinstance(operand, cst.Call) and _counts_gpus(operand):
                self._reported.add(id(operand))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        # `rt /= torch.cuda.device_count()`: an average over the ranks, not a test for a GPU
        if isinstance(node.value, cst.Call) and _counts_gpus(node.value):
            self._reported.add(id(node.value))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `torch.cuda.device_count() > 1`: several GPUs or one, not a GPU or the CPU
        if len(node.comparisons) != 1 or not isinstance(node.left, cst.Call):
            return
        if (dotted(node.left.func) or "").endswith("device_count") and _more_than_one(node):
            self._reported.add(id(node.left))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        # `("cpu", "cuda")[x.is_cuda]`: the device the input is on, followed, not chosen
        value, index = node.value, node.slice[0].slice
        follows = isinstance(index, cst.Index) and "is_cuda" in names_in(index.value)
        if isinstance(value, cst.Tuple | cst.List) and follows:
            self._transfers.update(code_ids(value))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        text = string_value(node)
        if text is not None and api.CPU_LITERAL.match(text):
            if id(node) in self._transfers or id(node) in self._shown:
                return
            strength = WEAK if id(node) in self._foreign_cpu else 1
            default = self._parameter_defaults.get(id(node))
            if default is not None:
                self._default_cpu.append((strength, f'a `"{text}"` device', *default))
                return  # weighed once the file is read (all_evidence)
            self._evidence(strength, f'a `"{text}"` device')

    def visit_Param(self, node: cst.Param) -> None:
        function = self._function()
        if node.default is not None and function is not None:
            params = [*function.params.params, *function.params.kwonly_params]
            index = next((i for i, p in enumerate(params) if p is node), -1)
            self._parameter_defaults[id(node.default)] = (function, node.name.value, index)

    def visit_Arg(self, node: cst.Arg) -> None:
        name = node.keyword.value if node.keyword is not None else ""
        value = node.value
        if name == "map_location":
            self._transfers.update(code_ids(value))  # its strings among them
        if name in ("pin_memory", "non_blocking"):
            # `pin_memory=torch.cuda.is_available()`: a loader setting, no choice of device
            self._reported.update(code_ids(value))
        if name == "offload_to_cpu" and dotted(value) == "True":
            self.offloads = True
        if name == "cpu_offload" and dotted(value) not in ("None", "False"):
            self.offloads = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            self._moved_results.add(id(func.value))
        self._handed.update(arg.value.value for arg in node.args if isinstance(arg.value, cst.Name))
        self._callees.add(id(node.func))
        name = dotted(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if not name and isinstance(node.func, cst.Attribute):
            last = node.func.attr.value  # `Trainer(model).save_checkpoint(path)`
        self._called.add(last)
        library = self.imports.qualify(node.func) or ""
        self._note_transfers(node)
        if last in CHECKPOINT_HANDLERS and node.args:
            directory = string_value(node.args[0].value)
            if directory:
                self.handler_dirs.setdefault(directory, self._next())
        if library and library.partition(".")[0] not in DEVICE_LIBRARIES:
            # `summary(model, shape, device="cpu")`, whisper's `mel_filters("cpu", n_mels)`: where
            # that library computes, not where the script runs
            self._foreign_cpu.update(id(arg.value) for arg in node.args)
        distributed = library.startswith("torch.distributed.")  # a process group, not CUDA
        if last in REPORTERS or name in self._reporter_functions():
            # `print("CUDA:", torch.cuda.is_available())` chooses nothing
            for arg in node.args:  # nor `print("using {} GPUs".format(torch.cuda.device_count()))`
                self._reported.update(code_ids(arg.value))
        if name in ("range", "list"):  # `range(torch.cuda.device_count())`: which GPUs
            self._reported.update(id(arg.value) for arg in node.args)
        if last in ("DataParallel", "DistributedDataParallel"):
            # `device_ids=range(torch.cuda.device_count())`: which GPUs, not whether any
            for arg in node.args:
                self._reported.update(code_ids(arg.value))
        asked = last in ("is_available", "device_count") and name != last
        if asked and not distributed and id(node) not in self._reported:
            self._evidence(0, f"`{name}()`")
        if last == "add_argument":
            self._option(node)
        switches = [
            test
            for test, branch in zip(self._tests, self._test_ifs, strict=True)
            if last in ("to", "cuda")
            if CPU_SWITCH.search(TENSOR_PLACE_TEST.sub("", test))
            and not self._every_arm_moves(branch)
            # `if torch.cuda.device_count() > 1: model = DataParallel(model).cuda()`: one
            # GPU or several, never the CPU
            and not (isinstance(branch, cst.If) and counts_several_gpus(branch.test))
            and not GPU_INDEX_TEST.fullmatch(test.strip())  # `if args.gpu is not None:`
        ]
        switches = [test for test in switches if not self._constant_switch(test)]
        if switches:
            scope = self._flag_scope(switches)
            if scope is not None:
                # `if self.cuda: grid = grid.cuda()`, `def check(x, cuda=False): if cuda: ...`:
                # one object's or one call's choice, not the script's
                self.flag_classes.setdefault(id(scope), scope)
            elif all(OPTION_TEST.fullmatch(test.strip()) for test in switches):
                # `if args.cuda:` read above the `add_argument` that may make it always on
                self._option_switches.append((switches, self._function()))
            else:
                self._evidence(3, "it moves to the device only under a condition")
        qualified = library or None
        if qualified in DEFAULT_PLACERS and self._function() is None and self._unconditional():
            # `torch.set_default_tensor_type("torch.cuda.FloatTensor")` in `__main__`: every
            # run of the script needs CUDA, whatever it tests elsewhere
            self.requires_gpu |= _names_cuda(node)
        if qualified in GPU_QUERIES and self._unconditional() and not self._tries:
            # only where CUDA exists: it raises on a host without a GPU
            function = self._function()
            if function is None:
                # `print(torch.cuda.current_device())` before any CPU choice: a GPU script
                # (a query after a fallback is a bug of a script that offers the CPU: GPD205)
                first = qualified == "torch.cuda.set_device" or not self.evidence
                self.requires_gpu |= first
            else:
                self.gpu_functions.setdefault(id(function), self._next())
        if qualified == "torch.save":
            self._save(node)
        elif name.endswith("fabric.save"):  # Lightning Fabric: save(path, state)
            self._save_to(_argument(node, 0, "path"), _argument(node, 1, "state"))
        elif HELPER_SAVE.search(last):
            self._helper_save(node)
        elif any(arg.keyword and SAVE_KEYWORD.search(arg.keyword.value) for arg in node.args):
            # `train(model, ..., best_model_save_path="best.pt")`: a trainer that saves there
            self._helper_save(node)
        elif qualified == "torch.load":
            positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
            if len(positional) >= 2:  # torch.load(f, "cpu")
                self._transfers.update(code_ids(positional[1].value))
            self._load(node)
        if isinstance(node.func, cst.Name) and qualified not in ("torch.save", "torch.load"):
            self._helper_call(node.func.value, node, self._next())
        elif (
            isinstance(node.func, cst.Attribute)
            and not (qualified or "").startswith("torch.")
            and self._unconditional()
        ):
            # only one outside any `if`: `if args.train: agent.save_model(path)` and
            # `if args.test: agent.load_model(path)` are two runs, maybe two machines
            self._method_calls.append((node.func.attr.value, node, self._next()))
        if not (qualified or "").startswith("torch."):
            self.calls_of.setdefault(last, []).append((node, self._order, self._function()))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "__dict__" and isinstance(node.value, cst.Name):
            self._handed.add(node.value.value)  # `dict(args.__dict__)`: read by its keys
        called = id(node) in self._callees  # `model.cuda()` calls, `args.cuda` reads
        if not called and not (self.imports.qualify(node.value) or "").startswith("torch"):
            self._attributes_read.add(node.attr.value)  # `args.cuda`, not `torch.cuda`
        self._transfers.update(_cpu_transfer(node.value))  # `dist.to("cpu").numpy()`
        if node.attr.value in ("numpy", "tolist") and type(node.value) is cst.Call:
            self.converted.add(id(node.value))

    def visit_DictComp(self, node: cst.DictComp) -> None:
        # `{k: v.to("cpu") for k, v in net.state_dict().items()}`: each tensor brought back
        self._transfers.update(_cpu_transfer(node.value))

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._transfers.update(_cpu_transfer(node.elt))

    def _note_transfers(self, node: cst.Call) -> None:
        """``features.append(feat.to("cpu"))``, ``torch.svd(W).V.to("cpu")``: a result brought
        back. ``model.to("cpu")`` / ``model = model.to("cpu")`` stay a choice of device."""
        for arg in node.args:
            self._transfers.update(_cpu_transfer(arg.value))
        func = node.func
        if isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Name):
            self._transfers.update(_cpu_transfer(node))

    # -- helpers ---------------------------------------------------------------------------
    def _bind(self, binding: Binding) -> None:
        self.bindings.append(binding)
        self._by_name.setdefault(binding.name, []).append(binding)
        self._by_function.setdefault(_scope_key(binding.function), []).append(binding)
        if binding.value is not None:
            self._by_value.setdefault(id(binding.value), []).append(binding)

    def bound(self, name: str) -> list[Binding]:
        """The bindings of ``name``, in order."""
        return self._by_name.get(name, [])

    def bound_any(self, names: set[str]) -> list[Binding]:
        """The bindings of any of ``names``, in order."""
        found = [binding for name in names for binding in self.bound(name)]
        return sorted(found, key=lambda binding: binding.order)

    def bound_in(self, function: cst.FunctionDef | None) -> list[Binding]:
        """The bindings in ``function`` (None: at module level), in order."""
        return self._by_function.get(_scope_key(function), [])

    def bound_to(self, value: cst.BaseExpression) -> list[Binding]:
        """The bindings whose value is ``value`` (the node itself), in order."""
        return self._by_value.get(id(value), [])

    def _next(self) -> int:
        self._order += 1
        return self._order

    def _function(self) -> cst.FunctionDef | None:
        return self._functions[-1] if self._functions else None

    def _reporter_functions(self) -> frozenset[str]:
        """The file's functions that only print what they are given (``def show(v):
        print(v)``): an availability query handed to one chooses nothing."""
        if self._reporters is None:
            self._reporters = frozenset(
                statement.name.value
                for statement in self.module.body
                if isinstance(statement, cst.FunctionDef) and _only_prints(statement)
            )
        return self._reporters

    def uses(self, name: str) -> int:
        """How many times the file names ``name`` (its bindings included)."""
        return self._names().counts.get(name, 0)

    def only_shown(self, name: str) -> bool:
        """``name`` is read only in what ``print``/``logger.info`` show, bound once."""
        names = self._names()
        return names.counts.get(name, 0) == 1 + names.shown.get(name, 0)

    def tested(self, name: str) -> bool:
        """Whether the file reads ``name`` in a test (``if n_gpu > 0:``, ``x if n else y``,
        ``use_gpu = n_gpu > 0``)."""
        if self._tested is None:
            conditions = Conditions(comparisons=True)
            walk(self.module, conditions)
            self._tested = {name for test in conditions.found for name in names_in(test)}
        return name in self._tested

    def _names(self) -> _NameCounter:
        if self._name_counter is None:
            self._name_counter = _NameCounter()
            walk(self.module, self._name_counter)
        return self._name_counter

    def _left_out(self, function: cst.FunctionDef, parameter: str, index: int) -> bool:
        """A call of ``function`` in this file passes nothing for ``parameter``."""
        if _is_method(function):
            return False  # `model.train()` is not `def train(self, ...)` of some class here
        for call, _, _ in self.calls_of.get(function.name.value, []):
            if dotted(call.func) != function.name.value:
                continue  # `net.train()`: a method of that name, not this function
            if any(arg.star for arg in call.args) or id(call) in self._moved_results:
                continue  # `get_noise(n, z).to(device)`: made on the CPU, used on the device
            named = any(
                arg.keyword is not None and arg.keyword.value == parameter for arg in call.args
            )
            positional = sum(arg.keyword is None for arg in call.args)
            if not named and not (0 <= index < positional):
                return True
        return False

    def _returned_names(self) -> set[str]:
        """The plain names the innermost function returns."""
        function = self._function()
        if function is None:
            return set()
        return {dotted(value) or "" for value in return_values(function) if value is not None}

    def _unconditional(self) -> bool:
        """Outside any ``if`` but ``if __name__ == "__main__":``."""
        return all("__main__" in test for test in self._tests)

    def _evidence(self, strength: int, text: str) -> None:
        if self._cuda_checks:
            # `if torch.cuda.is_available(): assert f(x.cuda()).is_cuda`: a notebook's unit test
            # also run on CUDA, no CPU path of one that binds `device = "cuda"` (all_evidence)
            self._check_evidence.append((strength, text))
            return
        function = self._function()
        params = function.params.params if function is not None else ()
        private = function is not None and function.name.value.startswith("_")
        if private and params and params[0].name.value == "self" and function is not None:
            # a private method's CPU choice counts once the file calls it (SCINet's Exp_Basic
            # keeps `_acquire_device`, but its `__init__` calls `.cuda()` instead)
            self._method_evidence.append((strength, text, function.name.value))
            return
        if function is not None and id(function) in self._top_level_functions():
            self._helper_evidence.append((strength, text, function.name.value))
            return
        self.evidence.setdefault(strength, text)

    def _top_level_functions(self) -> set[int]:
        """The ids of the module's own undecorated functions (not methods, not nested)."""
        if self._top_level is None:
            self._top_level = {
                id(statement)
                for statement in self.module.body
                if isinstance(statement, cst.FunctionDef) and not statement.decorators
            }
        return self._top_level

    @property
    def cpu_path(self) -> str | None:
        """The best evidence that the script runs on the CPU too (``torch.cuda.is_available()``)."""
        if self.requires_gpu or self.needs_cuda_extension:
            return None
        evidence = self.all_evidence()
        return evidence[min(evidence)] if evidence else None

    @cached_property
    def needs_cuda_extension(self) -> bool:
        """An import compiles a CUDA-only extension: the script fails at start without CUDA."""
        return compiles_cuda_at_import(self.module, self.path)

    def all_evidence(self) -> dict[int, str]:
        evidence = dict(self.evidence)
        if not self._hard_gpu_names:
            for strength, text in self._check_evidence:
                evidence.setdefault(strength, text)
        for strength, text, function, parameter, index in self._default_cpu:
            if not self._hard_gpu_names or self._left_out(function, parameter, index):
                evidence.setdefault(strength, text)
                break
        if self._displayed and not self._hard_gpu_names:
            # a course notebook that shows the query, then `a.cuda()` in one demo cell: a CPU
            # reader runs the rest; a GPU chapter that binds `device = "cuda:0"` has no CPU path
            evidence.setdefault(0, self._displayed[0])
        for dest, text in self.value_options:
            if dest not in self.gpu_selectors and self._option_read(dest):
                evidence.setdefault(2, text)
        return evidence

    def _option_read(self, dest: str) -> bool:
        """The option's value may be read: the file reads an attribute of that name, or hands
        its parsed namespace to other code (``main(args)``), or parses none itself. An option
        declared and never read (``--cuda``, ``default="on"``, in a script that binds
        ``device = torch.device("cuda")``) chooses nothing."""
        if dest in self._attributes_read or not self._namespaces:
            return True
        return bool(self._namespaces & self._handed)

    def _constant_switch(self, test: str) -> bool:
        """``if self.use_cuda:`` where the file only ever sets ``self.use_cuda = True``: a
        constant, not a switch (a GPU-only wrapper's leftover)."""
        option = re.fullmatch(r"\w+\.(\w+)", test.strip())
        if option is not None and option.group(1) in self.always_on:
            return True  # `if args.cuda:` of `--cuda`, store_true with default=True
        match = re.fullmatch(r"self\.(\w+)", test.strip())
        if match is None:
            return False
        if self._constants is None:
            self._constants = _constant_true_attributes(self.module)
        constants, assigned = self._constants
        name = match.group(1)
        if name in constants or name in assigned or not self.path:
            return name in constants
        # set nowhere here: a base class of another project file sets it (`BaseModel.__init__`
        # of ozan-oktay's Attention-Gated-Networks: `self.use_cuda = True`)
        return name in _inherited_constants(self.module, self.path)

    def _flag_scope(self, switches: list[str]) -> cst.ClassDef | cst.FunctionDef | None:
        """The class whose own attribute (``self.cuda``), or the function whose own parameter
        (``cuda``), every switch tests; None for the script's flags (``args.cuda``)."""
        roots = {
            re.split(r"[^\w]", test.removeprefix("not ").strip(), maxsplit=1)[0]
            for test in switches
        }
        if roots == {"self"} and self._classes:
            return self._classes[-1]
        # the innermost function whose parameters they are: a nested helper tests its
        # enclosing function's (`def monkeypatch(model, device=None): def collect(m): ...`)
        for function in reversed(self._functions):
            params = {
                p.name.value for p in (*function.params.params, *function.params.kwonly_params)
            }
            if not roots <= params - {"self", "args", "opt", "cfg", "config"}:
                continue
            if function.name.value == "__init__" and self._classes:
                return self._classes[-1]  # `def __init__(self, ..., gpu): if gpu: self.cuda()`
            return function
        return None

    def cpu_path_at(self, node: cst.CSTNode) -> str | None:
        """The file's evidence of a CPU path, or, for code inside a class that moves things
        only under a flag of its own, that flag."""
        evidence = self.cpu_path
        if evidence is not None or not self.flag_classes:
            return evidence
        return self.flag_path_at(node)

    def flag_path_at(self, node: cst.CSTNode) -> str | None:
        """For code inside a class that moves things only under a flag of its own: that flag."""
        if not self.flag_classes:
            return None
        if self._flag_class_ids is None:
            scopes = [*self.flag_classes.values(), *self._flag_subclasses()]
            self._flag_class_ids = {i for c in scopes for i in code_ids(c)}
        if id(node) in self._flag_class_ids:
            return "it moves to the device only under a flag of its own"
        return None

    def _flag_subclasses(self) -> list[cst.ClassDef]:
        """The file's classes derived from a class that moves only under a flag of its own
        (``class Scorer(ScorerBase)``, whose ``predict`` tests ``self.opt.cuda``): the same
        flag runs them on the CPU."""
        names = {c.name.value for c in self.flag_classes.values() if isinstance(c, cst.ClassDef)}
        found: list[cst.ClassDef] = []
        for statement in self.module.body:
            if isinstance(statement, cst.ClassDef) and statement.name.value not in names:
                bases = {(dotted(base.value) or "").rsplit(".", 1)[-1] for base in statement.bases}
                if bases & names:
                    found.append(statement)
        return found

    @property
    def cpu_path_is_weak(self) -> bool:
        """The only evidence is a ``"cpu"`` keyword of a library call (``summary(model, shape,
        device="cpu")``), which says where that library runs, not where the script does."""
        evidence = self.all_evidence()
        return bool(evidence) and min(evidence) == WEAK

    def _option(self, node: cst.Call) -> None:
        option = argparse_option(node)
        if option is None:
            return
        flag, dest, keywords = option
        action = string_value(keywords["action"]) if "action" in keywords else None
        if action == "store_true" and _default_is(keywords, "True"):
            self.always_on.add(dest)
        if CPU_SWITCH.search(flag) and _may_choose_cpu(flag, keywords):
            self.cpu_options[dest] = flag
            if action in (None, "store") and dotted(keywords.get("type", cst.Name("x"))) != "bool":
                self.value_options.append((dest, f"the `{flag}` option"))
            else:
                self._evidence(2, f"the `{flag}` option")
        default = keywords.get("default")
        required = dotted(keywords["required"]) == "True" if "required" in keywords else False
        no_default = default is None or dotted(default) == "None"
        if no_default and not required and action in (None, "store"):
            self.options_without_default.add(dest)

    def path_key(self, expr: cst.BaseExpression | None, depth: int = 0) -> str | None:
        if expr is None:
            return None
        if isinstance(expr, cst.Call) and dotted(expr.func) in ("open", "io.open") and expr.args:
            return self.path_key(expr.args[0].value)  # `torch.load(open(name, "rb"))`
        if isinstance(expr, cst.Name):
            for opened in reversed(self._opened):
                if expr.value in opened:
                    return self.path_key(opened[expr.value])
            named = self.string_names.get(expr.value)
            if named is not None:
                return f"str:{named}"
            function = self._function()
            if function is not None and expr.value in every_parameter(function):
                # `def save(self, path)` and `def load(self, path)`: two callers' paths
                return f"expr:{expr.value}@{id(function)}"
            assigned = _single_assignment(function, expr.value) if function else None
            if function is None:  # `STATE_PATH = best_state_path`: the one path, renamed
                module_level = [b for b in self.bound(expr.value) if not b.function]
                alias = module_level[0].value if len(module_level) == 1 else None
                assigned = alias if isinstance(alias, cst.Name) else None
            a_file = isinstance(assigned, cst.Call) and dotted(assigned.func) in ("open", "io.open")
            if assigned is not None and depth < 8 and not a_file:
                # `model_path = os.path.join(save_dir, ...)` in `load` and another
                # `model_path` in `save`: two locals, each the path it was given (a file object,
                # `f = open(path, "wb")`, keeps its name: a save/load helper pair shares it)
                return self.path_key(assigned, depth + 1)
        builder = self._builder_key(expr)
        if builder is not None:
            return builder
        text = string_value(expr)
        if text is not None:
            return f"str:{text}"
        template = _path_template(expr)
        if template is not None:
            return f"template:{template}"
        name = dotted(expr) or ""
        parts = name.split(".")
        if len(parts) >= 3 and parts[0] == "self" and parts[1] in SETTINGS_OBJECTS:
            # `self.args.ckpt_path` in a trainer's method is the `args.ckpt_path` that the
            # script gave it: the same settings object, kept on the instance
            return "expr:" + name[5:]
        return "expr:" + re.sub(r"\s+", "", self.module.code_for_node(expr))

    def _builder_key(self, expr: cst.BaseExpression) -> str | None:
        """``ckpt_path(epoch)``, a call of the file's own path-building function or lambda:
        keyed by the builder and its literal arguments (``ckpt_path(best)`` names a file of the
        same family; ``path_of("released.pt")`` and ``path_of("mine.pt")`` two files)."""
        if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Name):
            return None
        name = expr.func.value
        lambdas = [b for b in self.bound(name) if isinstance(b.value, cst.Lambda)]
        if name not in self.defined and not lambdas:
            return None
        args = [  # literal arguments as written: a directory stays quoted for _handler_saved
            "**" if arg.star else
            self.module.code_for_node(arg.value) if string_value(arg.value) is not None else "*"
            for arg in expr.args
        ]  # fmt: skip
        return f"builder:{name}({','.join(args)})"

    def _save(self, node: cst.Call) -> None:
        path, obj = _argument(node, 1, "f"), _argument(node, 0, "obj")
        self._save_to(path, obj)
        for opened in reversed(self._opened):  # `with open(path, "wb") as f: torch.save(x, f)`
            if isinstance(path, cst.Name) and path.value in opened:
                path = opened[path.value]
        if isinstance(path, cst.Call) and dotted(path.func) in ("open", "io.open") and path.args:
            path = path.args[0].value  # `torch.save(model, open(self.checkpoint_name, "wb"))`
        function = self._function()
        if isinstance(path, cst.Attribute) and dotted(path.value) == "self" and self._classes:
            self.attribute_saves.append((self._classes[-1], path.attr.value))
        if function is not None and isinstance(path, cst.Name):
            self._saved_names.setdefault(id(function), set()).add(path.value)
        if function is None or obj is None or not isinstance(path, cst.Name):
            return
        params = [*function.params.posonly_params, *function.params.params]
        names = [p.name.value for p in (*params, *function.params.kwonly_params)]
        if path.value in names and names[0] not in ("self", "cls"):
            # `def fit(model, ..., model_file): torch.save(model.state_dict(), model_file)`
            helpers = self.saving_helpers.setdefault(function.name.value, [])
            helpers.append((function, path.value, obj))
        elif path.value in names and self._classes:
            # `def to_file(self, path): torch.save(..., path)`, called `net.to_file("e.pt")`
            methods = self.saving_methods.setdefault(function.name.value, [])
            methods.append((function, path.value, obj))

    def _helper_call(self, name: str, node: cst.Call, order: int) -> None:
        """``fit(vae, ..., vae_model_file)`` of a function above that saves to its parameter
        ``model_file``: a save to ``vae_model_file`` here (a call above the function's ``def``
        is settled once the whole file is read)."""
        if name not in self.saving_helpers:
            self._later_calls.append((name, node, order))
            return
        starred = any(arg.star for arg in node.args)
        for function, param, obj in self.saving_helpers[name]:
            arg = argument_for(function, node, param, is_method=False)
            if arg is not None:
                self._save_to(arg.value, obj, order)
            elif not starred:  # left out: the parameter's default (after `*args`: unknown)
                self._save_to(_default(function, param), obj, order)

    def finish(self) -> None:
        """The calls met before the function they call was defined; the CPU choices of the
        methods something in the file calls."""
        for strength, text, method in self._method_evidence:
            if method in self._called or method.startswith("__"):
                self.evidence.setdefault(strength, text)
        helpers = {name for _, _, name in self._helper_evidence}
        named = name_counts(self.module, helpers | DISPATCHERS) if helpers else {}
        program = top_level_runs(self.module, calls=False)  # not a library's set-up calls
        if not program or any(named.get(name) for name in DISPATCHERS):
            named = {}  # a library's functions, or a script's that `fire.Fire()` runs
        unnamed = {name for name in helpers if named.get(name, 2) == 1}
        if unnamed and self.path:
            unnamed -= _named_by_importers(self.path, unnamed)
        for strength, text, helper in self._helper_evidence:
            if helper not in unnamed:  # called or handed on here, or by a file importing it
                self.evidence.setdefault(strength, text)
        later, self._later_calls = self._later_calls, []
        for name, node, order in later:
            if name in self.saving_helpers:
                self._helper_call(name, node, order)
        for cls, attribute in self.attribute_saves:
            self._constructor_saves(cls, attribute)
        for name, node, order in self._method_calls:
            for saver, param, obj in self.saving_methods.get(name, ()):
                arg = argument_for(saver, node, param, is_method=True)
                if arg is not None:
                    self._save_to(arg.value, obj, order)
        for switches, function in self._option_switches:
            if all(self._constant_switch(test) for test in switches):
                continue
            functions, self._functions = self._functions, [function] if function else []
            self._evidence(3, "it moves to the device only under a condition")
            self._functions = functions

    def _constructor_saves(self, saver: cst.ClassDef, attribute: str) -> None:
        """``CNNRunner(model, opt, ckpt_name)`` of a class whose method saves to
        ``self.checkpoint_name``, which its ``__init__`` (its own or a base's in this file)
        sets from a parameter: a save to ``ckpt_name``, where the object is made."""
        for cls in self.class_defs.values():
            lineage = self._lineage(cls)
            if saver not in lineage:
                continue
            init = next(
                (m for c in lineage if (m := class_method(c, "__init__")) is not None), None
            )
            param = _attribute_parameter(init, attribute) if init is not None else None
            if init is None or param is None:
                continue
            for call, order, caller in self.calls_of.get(cls.name.value, []):
                arg = argument_for(init, call, param, is_method=True)
                if arg is None:
                    continue
                functions, self._functions = self._functions, [caller] if caller else []
                try:
                    self._save_to(arg.value, None, order)
                finally:
                    self._functions = functions

    def _lineage(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """``cls`` and its bases defined in this file, nearest first."""
        found: list[cst.ClassDef] = []
        todo = [cls]
        while todo and len(found) < 16:
            current = todo.pop(0)
            if current in found:
                continue
            found.append(current)
            for base in current.bases:
                name = dotted(base.value)
                if name in self.class_defs:
                    todo.append(self.class_defs[name])
        return found

    def _helper_save(self, node: cst.Call) -> None:
        """``utils.save_model(model=m, target_dir="models", model_name=name)``, the project's
        own helper around ``torch.save``: the file names it is given (literal, a name bound to
        one, or an f-string template) are this run's checkpoints from here on."""
        order = self._next()
        for arg in node.args:
            for pattern in self._name_patterns(arg.value):
                self.helper_saves.setdefault(pattern, order)

    def _name_patterns(self, expr: cst.BaseExpression) -> list[re.Pattern[str]]:
        if isinstance(expr, cst.Name):
            values = [b.value for b in self.bound(expr.value) if b.value]
            expr = values[-1] if values else expr
        text = string_value(expr)
        template = _path_template(expr) if text is None else None
        if text is not None and CHECKPOINT_FILE.search(text):
            return [re.compile(re.escape(text.rsplit("/", 1)[-1]))]
        if template is not None and CHECKPOINT_FILE.search(template):
            parts = [re.escape(part) for part in template.rsplit("/", 1)[-1].split("{}")]
            return [re.compile("[^/]*".join(parts))]
        return []

    def _save_to(
        self,
        path: cst.BaseExpression | None,
        obj: cst.BaseExpression | None,
        order: int | None = None,
    ) -> None:
        key = self.path_key(path)
        if key is None:
            return
        order = self._next() if order is None else order
        wrapped = _wrapped_path(path)
        if wrapped is not None:  # `torch.save(sd, make_path(path))`: the file is `path`
            self._save_to(wrapped, obj, order)
        cpu = obj is not None and self._on_cpu(obj)
        self.saved[key] = self.saved.get(key, True) and cpu
        self.first_save[key] = min(self.first_save.get(key, order), order)
        self.saves_in.setdefault(id(self._function()), set()).add(key)
        joined = _joined_template(path) if path is not None else None
        if joined is not None:
            self.joined_saves[joined] = min(self.joined_saves.get(joined, order), order)

    def _on_cpu(self, obj: cst.BaseExpression) -> bool:
        if ".cpu()" in self.module.code_for_node(obj) or _host_made(obj):
            return True
        if isinstance(obj, cst.Call) and _copies_to_cpu(obj):
            return True
        func = obj.func if isinstance(obj, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value == "state_dict":
            # `net.eval().cpu()`, then `torch.save(net.state_dict(), path)`
            return (id(self._function()), dotted(func.value)) in self._on_host
        if isinstance(obj, cst.Dict):
            # `{"state_dict": sd, "epoch": epoch}`: each tensor in it on the CPU, the rest
            # numbers and names of plain values
            return all(
                isinstance(element, cst.DictElement) and self._plain_or_on_cpu(element.value)
                for element in obj.elements
            )
        if isinstance(obj, cst.Name):
            function = self._function()
            if function is not None and _items_brought_to_cpu(function, obj.value):
                return True  # `for k in sd: sd[k] = sd[k].cpu()`
            values = [b.value for b in self.bound(obj.value) if b.value is not None]
            if not values:
                return False
            # `train_data = torch.Tensor(100, 28, 28)`, then `torch.save(train_data, path)`
            return ".cpu()" in self.module.code_for_node(values[-1]) or _host_made(values[-1])
        return False

    def _load(self, node: cst.Call) -> None:
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        location = _argument(node, 1, "map_location") if len(positional) >= 2 else None
        location = location or _keyword(node, "map_location")
        site = LoadSite(
            node,
            self.path_key(_argument(node, 0, "f")),
            self._function(),
            self._next(),
            location,
            tuple(self._tests),
            tuple(self._arms),
            any(_dataset_class(cls) for cls in self._classes),
            any(_handler_maps(block) for block in self._tries),
            self._named_file(_argument(node, 0, "f")),
        )
        self.loads.append(site)

    def _plain_or_on_cpu(self, value: cst.BaseExpression) -> bool:
        """A number, a string, a plain counter (``epoch``), or something on the CPU."""
        if isinstance(value, cst.Integer | cst.Float | cst.SimpleString):
            return True
        if isinstance(value, cst.Name) and PLAIN_VALUE.search(value.value):
            return True
        return self._on_cpu(value)

    def _named_file(self, path: cst.BaseExpression | None) -> str | None:
        """The literal file name ``path`` ends in, through a name bound to it before here
        (``weights = os.path.join("data", "resnet18-5c106cde.pth")``)."""
        found = _file_name(path)
        if found is None and isinstance(path, cst.Name):
            function = self._function()
            bound = [b.value for b in self.bound(path.value) if b.function is function]
            found = _file_name(bound[-1]) if bound and bound[-1] is not None else None
        return found

    # -- questions the rule asks -----------------------------------------------------------
    def after_set_device(self, site: LoadSite) -> bool:
        """The load's function selected a GPU unconditionally before it: it runs only where
        CUDA exists (char_rnn's ``predict``)."""
        function = site.function
        selected = self.gpu_functions.get(id(function)) if function is not None else None
        return selected is not None and selected < site.order

    def in_test(self, site: LoadSite) -> bool:
        """A test (``test_*``, or a ``_test_*`` helper of tests) reads back what it, or its
        fixtures, wrote moments before, on the device it runs on: a GPU checkpoint from
        elsewhere is not what a test suite loads."""
        function = site.function
        return self.tests and function is not None and bool(TEST_NAME.match(function.name.value))

    def saved_here(self, site: LoadSite) -> bool:
        """The file writes this path itself (before, or in an earlier run of the same script),
        or the path lies in a temporary directory, which only this run can have written."""
        key = site.path_key
        if key is None:
            return False
        if _loads_what_it_is_asked(site):
            # `Trainer.load(milestone)` beside `Trainer.save(milestone)`: an API that restores
            # whichever earlier run's checkpoint its caller names, on whatever device that run
            # had; only a save of its own before the load, or its caller's save to the path it
            # hands over (`save_checkpoint(f)`, then `load_checkpoint(f)`: below), excuses it
            own = key in self.saves_in.get(id(site.function), set())
            if own and self.first_save.get(key, site.order) < site.order:
                return True
            if not key.endswith(f"@{id(site.function)}"):
                return False
        if key.startswith("template:"):
            # `"{}.pkl".format(best)` after the loop saved `"{}.pkl".format(epoch)`: this run's
            # own file; a resume above the saves (`generator_{opt.epoch}.pth`) may be a GPU run's.
            # `"ae_20_{}.pt" % device` reads what `"ae_{}_{}.pt" % (epoch, device)` wrote
            return any(
                order < site.order and _instance_of(key[9:], saved[9:])
                for saved, order in self.first_save.items()
                if saved.startswith("template:")
            )
        if key.startswith("str:") and self._helper_saved(key[4:], site.order):
            return True
        templates = [
            (saved[9:], order) for saved, order in self.first_save.items()
            if saved.startswith("template:")
        ] + list(self.joined_saves.items())  # fmt: skip
        if key.startswith("str:") and any(
            order < site.order and _named_instance(key[4:], template)
            for template, order in templates
        ):
            return True  # `"models/net-2-3000.ckpt"`, one of the `"net-{}-{}.ckpt"` saved above
        if self._handler_saved(key, site.order):
            return True
        if site.function is not None and key.endswith(f"@{id(site.function)}"):
            if self.first_save.get(key, site.order) < site.order:
                return True  # the function saved to its own parameter just before
            return self._callers_saved(site.function, key[5:].rsplit("@", 1)[0])
        if key.startswith("str:") and self._same_name_saved(key[4:]):
            return True
        if site.file_name is not None and self._same_name_saved(site.file_name):
            return True  # `os.path.join(root_dir, "model.pt")` after a helper saved "model.pt"
        return key in self.saved or self._temporary(key, site.function)

    def _same_name_saved(self, path: str) -> bool:
        """``torch.load("../../book/04/lstm_model.pt")`` where the run saved ``"lstm_model.pt"``:
        the file it wrote, read by another path to it."""
        name = _checkpoint_file(path)
        if name is None:
            return False
        return any(
            saved.startswith("str:") and _base_name(saved[4:]) == name for saved in self.saved
        )

    def _callers_saved(self, function: cst.FunctionDef, param: str) -> bool:
        """``def load(fn): torch.load(fn)``: every call of it in the file passes a path the run
        saved before that call (``model_save(args.save)`` then ``model_load(args.save)``)."""
        calls = self.calls_of.get(function.name.value, [])
        params = [*function.params.posonly_params, *function.params.params]
        method = bool(params) and params[0].name.value in ("self", "cls")
        saved_functions = self._functions
        try:
            for call, order, caller in calls:
                arg = argument_for(function, call, param, is_method=method)
                self._functions = [caller] if caller is not None else []
                key = self.path_key(arg.value) if arg is not None else None
                if key is None or not (
                    self.first_save.get(key, order) < order
                    or self._temporary(key, caller)
                    or (key.startswith("str:") and self._helper_saved(key[4:], order))
                ):
                    return False  # (a helper: `runner.save_checkpoint("m.pth")` before it)
        finally:
            self._functions = saved_functions
        return bool(calls)

    def _handler_saved(self, key: str, order: int) -> bool:
        """The path names a directory that a checkpoint handler made earlier writes into
        (``torch.load(last_checkpoint("./saved_models"))`` after
        ``ModelCheckpoint("./saved_models", ...)``): this run's own checkpoint."""
        text = key.partition(":")[2]
        return any(
            made < order and (text == directory or f"{directory}/" in text or
                              f"'{directory}'" in text or f'"{directory}"' in text)
            for directory, made in self.handler_dirs.items()
        )  # fmt: skip

    def _helper_saved(self, path: str, order: int) -> bool:
        """A project helper saved a file of this name earlier in the run (a notebook's
        ``utils.save_model(...)`` cell, then ``torch.load("models/<that name>")``)."""
        name = path.rsplit("/", 1)[-1]
        return any(
            pattern.fullmatch(name) and saved < order
            for pattern, saved in self.helper_saves.items()
        )

    def _temporary(self, key: str, function: cst.FunctionDef | None, depth: int = 0) -> bool:
        """``tmp_path / "m.pt"``, also through ``out = tmp_path / "out"`` in the same function."""
        if TEMPORARY.match(key):
            return True
        root = ROOT_NAME.match(key)
        if root is None or depth > 3:
            return False
        values = [
            b.value
            for b in self.bound(root.group(1))
            if b.function is function and b.value is not None
        ]
        return bool(values) and all(
            self._temporary(self.path_key(value) or "", function, depth + 1) for value in values
        )

    def own_rank_file(self, site: LoadSite) -> bool:
        """``queue{rank}.pth``, which each rank saves and reads back itself: it returns to the
        GPU it was saved from, that rank's own."""
        if site.function is None or not site.call.args or not self.saved_here(site):
            return False
        path = site.call.args[0].value
        expressions: list[cst.BaseExpression] = [path]
        name = dotted(path)
        if name is not None:
            for statement in iter_statements(site.function.body.body):
                if isinstance(statement, cst.Assign) and any(
                    dotted(target.target) == name for target in statement.targets
                ):
                    expressions.append(statement.value)
        return any(
            "rank" in text.lower() for expression in expressions for text in names_in(expression)
        )

    def main_rank_only(self, site: LoadSite) -> bool:
        """The load runs on the main process alone (``if rank in [-1, 0]:``): no other rank
        restores onto cuda:0 beside it."""
        return any(arm.main_rank for arm in site.arms)

    def without_rank_device(self, site: LoadSite) -> bool:
        """The load runs only where the rank's device is None: ``if args.gpu is None:
        torch.load(path)`` (one process drives every GPU), also any ``if x is None:`` arm whose
        other arm loads the same path with a ``map_location`` (pytorch/examples' ImageNet), and
        the single-process arm of a distributed switch whose other arm loads with one (ckgc's
        ``if distributed:`` ... ``else:``, of another file on each arm)."""
        for arm in site.arms:
            if arm.none is None and not arm.single_process:
                continue
            if arm.none is not None and RANK_DEVICE.match(arm.none.rsplit(".", 1)[-1]):
                return True
            if any(
                load.map_location is not None
                and (load.path_key == site.path_key or arm.single_process)
                and any(a.statement == arm.statement and a.orelse != arm.orelse for a in load.arms)
                for load in self.loads
            ):
                return True
        return False

    def saves_cpu_state(self) -> bool:
        """Everything the file saves is on the CPU: its own checkpoints load anywhere."""
        return self.offloads or (bool(self.saved) and all(self.saved.values()))

    def device_at(self, site: LoadSite) -> str | None:
        """An expression naming the script's device at ``site``, for ``map_location=``: a name
        bound in the load's function before it, else a module-level name it does not hide."""
        hidden: set[str] = set()
        if site.function is not None:
            found = self._device_in(site, site.function, set())
            if found is not None:
                return found
            hidden = {b.name for b in self.bound_in(site.function)}
        return self._device_in(site, None, hidden)

    def _device_in(
        self, site: LoadSite, scope: cst.FunctionDef | None, hidden: set[str]
    ) -> str | None:
        # a module-level name is set before any function that reads it is called
        before_only = scope is site.function
        names: dict[str, list[Binding]] = {}
        for binding in self.bound_in(scope):
            seen = not before_only or binding.order < site.order
            if binding.name not in hidden and seen:
                names.setdefault(binding.name, []).append(binding)

        def rank(name: str) -> tuple[bool, bool]:
            parameter = any(b.value is None for b in names[name])
            return parameter, api.DEVICE_NAME.search(name) is None

        for name in sorted(names, key=rank):
            text = device_text(name, names[name], self.imports)
            if text is not None:
                return text
        return None

    def may_be_none(self, site: LoadSite) -> str | None:
        """The ``map_location`` text when it may be None on this path (it then maps nothing)."""
        location = site.map_location
        text = dotted(location) if location is not None else None
        if text is None or any(re.search(rf"\b{re.escape(text)}\b", t) for t in site.tests):
            return None
        if isinstance(location, cst.Name):
            scopes: tuple[cst.FunctionDef | None, ...] = (site.function,)
            local = site.function is not None and text in bound_names(site.function)
            if not local and text not in self.declared_global:
                scopes += (None,)  # the module's name, unless a function rebinds it (`global`)
            defaulted = self.defaulted.get((site.function, text))
            if defaulted is not None and defaulted < site.order:
                return None  # `if device is None: device = "cuda" if ... else "cpu"` before
            function = site.function
            if function is not None and self._caller_chooses(function, text):
                return None
            if any((scope, text) in self.none_params for scope in scopes):
                return text
            return None
        head, _, rest = text.partition(".")
        if (
            head in ("args", "opt", "opts", "config", "cfg")
            and rest in self.options_without_default
        ):
            return text
        return None

    def _caller_chooses(self, function: cst.FunctionDef, param: str) -> bool:
        """``def attempt_load(weights, map_location=None)`` handing torch.load's own option on:
        the callers choose, as they do for torch.load. It may be None only where a call of this
        file leaves it out (or passes None); a function no call of this file reaches is the
        project's API, whose callers in other files pass their device (YOLO's detect, test,
        export and train). A ``device=None`` parameter is the function's own choice (Whisper's
        ``load_model(name, device=None)``, whose users leave it out)."""
        if param != "map_location" or (function, param) not in self.none_params:
            return False
        if any(
            isinstance(target, cst.Name) and target.value == param
            for target in _assigned_names(function)
        ):
            return False  # rebound in the body: the default is not simply handed on
        params = [*function.params.posonly_params, *function.params.params]
        method = bool(params) and params[0].name.value in ("self", "cls")
        for call, _order, _caller in self.calls_of.get(function.name.value, []):
            arg = argument_for(function, call, param, is_method=method)
            if arg is None or dotted(arg.value) == "None":
                return False
        return True


def _assigned_names(function: cst.FunctionDef) -> Iterator[cst.BaseExpression]:
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return  # `def f(x, map_location=None): return torch.load(x, map_location)`
    for small in iter_statements(body.body):
        if isinstance(small, cst.Assign):
            yield from (target.target for target in small.targets)
        elif isinstance(small, cst.AnnAssign | cst.AugAssign):
            yield small.target


DEFAULT_PLACERS = frozenset({"torch.set_default_tensor_type", "torch.set_default_device"})


def _names_cuda(call: cst.Call) -> bool:
    """The call's first argument names CUDA: ``"cuda"``, ``torch.cuda.FloatTensor``."""
    if not call.args:
        return False
    value = call.args[0].value
    text = string_value(value) or dotted(value) or ""
    return text.startswith("cuda") or "cuda." in text


def _argument(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if len(positional) > index:
        return positional[index].value
    return _keyword(call, name)


def _default(function: cst.FunctionDef, param: str) -> cst.BaseExpression | None:
    params = function.params
    for each in (*params.posonly_params, *params.params, *params.kwonly_params):
        if each.name.value == param:
            return each.default
    return None


MAIN_RANK = re.compile(
    r"^(?:not\s+)?\(?\s*(?:[\w.]*rank(?:\(\))?\s*(?:in\s*[\[(]\s*-1\s*,\s*0\s*[\])]|==\s*0|<=\s*0)"
    r"|[\w.]*(?:is_main_process|is_master|is_rank_zero|main_process)\b(?:\(\))?)\s*\)?$"
)
"""``rank in [-1, 0]``, ``args.local_rank == 0``, ``dist.get_rank() == 0``, ``is_main_process()``
(YOLO's, DETR's): a test that holds on the main process only."""


def _main_rank_arm(test: cst.BaseExpression) -> bool | None:
    """True when the body of ``if test:`` runs on the main process alone, False when its
    ``else`` does (``if rank not in [-1, 0]:``, ``if not is_main_process():``), else None."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    inner = test.expression if negated and isinstance(test, cst.UnaryOperation) else test
    text = re.sub(r"\s+", " ", cst.Module([]).code_for_node(inner))
    if isinstance(inner, cst.Comparison) and len(inner.comparisons) == 1:
        operator = inner.comparisons[0].operator
        flipped = isinstance(operator, cst.NotIn | cst.NotEqual)
        if flipped:
            text = text.replace(" not in ", " in ").replace("!=", "==")
        if MAIN_RANK.match(text):
            return flipped == negated
        return None
    if MAIN_RANK.match(text):
        return not negated
    return None


def _scope_key(function: cst.FunctionDef | None) -> int:
    return 0 if function is None else id(function)


def _device_literal(value: cst.BaseExpression) -> str | None:
    """``"cuda:0"`` or ``torch.device("cuda:0")``: the literal device, else None."""
    if isinstance(value, cst.Call) and dotted(value.func) == "torch.device" and value.args:
        if len(value.args) != 1:
            return None
        value = value.args[0].value
    return string_value(value)


def _none_names(test: cst.BaseExpression) -> tuple[str | None, str | None]:
    """The name that is None in the body of ``if test:`` and the one that is None in its
    ``else``: ``(x, None)`` for ``x is None``, ``(None, x)`` for ``x is not None``."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None, None
    target = test.comparisons[0]
    name = dotted(test.left)
    if name is None or dotted(target.comparator) != "None":
        return None, None
    if isinstance(target.operator, cst.Is):
        return name, None
    if isinstance(target.operator, cst.IsNot):
        return None, name
    return None, None


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


_last_scan: list[tuple[CheckpointScan, int]] = []
"""The latest scan, and the lint it was made in: GPD201 and GPD203 both read the same file's
scan in one run (and only in that one: it reads the files of the file's base classes)."""


def scan(module: cst.Module, remember: bool = True, path: str | None = None) -> CheckpointScan:
    """The whole file read once for checkpoint paths and CPU-path evidence (a full visit, so
    the rules that need it share it). Another project file's scan (``remember=False``) does
    not take the linted file's place."""
    lint = project.lint_number()
    if _last_scan and _last_scan[0][0].module is module and _last_scan[0][1] == lint:
        return _last_scan[0][0]
    scanner = CheckpointScan(module, path)
    walk(module, scanner)
    scanner.finish()
    if remember:
        _last_scan[:] = [(scanner, lint)]
    return scanner


def _cpu_transfer(node: cst.BaseExpression) -> set[int]:
    """The ``"cpu"`` argument of ``x.to("cpu")`` (by id), if ``node`` is such a call."""
    # exact types: isinstance misses on libcst's abstract-base classes run Python code, and
    # this runs for every call and attribute of the file
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
        return set()
    if node.func.attr.value != "to" or not node.args:
        return set()
    first = node.args[0]
    value = first.value
    if type(value) is cst.Call and dotted(value.func) == "torch.device" and value.args:
        value = value.args[0].value  # `v.to(torch.device("cpu"))`
    text = string_value(value)
    is_device = first.keyword is None or first.keyword.value == "device"
    return {id(value)} if is_device and text is not None and api.CPU_LITERAL.match(text) else set()


def _host_made(expr: cst.BaseExpression) -> bool:
    """``torch.Tensor(n, d)``, ``torch.zeros(n)``, ``torch.from_numpy(a)``: a tensor made on the
    host (no ``device=``), which a save writes with CPU storages."""
    if not isinstance(expr, cst.Call) or any(
        arg.keyword is not None and arg.keyword.value == "device" for arg in expr.args
    ):
        return False
    name = dotted(expr.func) or ""
    root, _, last = name.rpartition(".")
    host = last in api.TENSOR_FACTORIES or last in api.LEGACY_TENSOR_TYPES
    return root == "torch" and host


def _returns_one_of(function: cst.FunctionDef, saved: set[str], bindings: list[Binding]) -> bool:
    """``return best_state_path`` where that name holds (or is) a path the function saved to."""
    held = set(saved)
    for binding in bindings:  # `best_state_path = path`
        value = binding.value
        if binding.function is function and isinstance(value, cst.Name) and value.value in saved:
            held.add(binding.name)
    return any(
        isinstance(value, cst.Name) and value.value in held for value in return_values(function)
    )


def _attribute_parameter(init: cst.FunctionDef, attribute: str) -> str | None:
    """The parameter ``__init__`` stores as ``self.<attribute> = <parameter>``."""
    params = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)}
    for statement in iter_statements(init.body.body):
        if not isinstance(statement, cst.Assign) or not isinstance(statement.value, cst.Name):
            continue
        for target in statement.targets:
            is_self = dotted(target.target) == f"self.{attribute}"
            if is_self and statement.value.value in params:
                return statement.value.value
    return None


def _single_assignment(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The value of ``name = value`` when that is the one binding of ``name`` in the function
    (not a loop, an unpacking, an augmented assignment or a second assignment)."""
    found: list[cst.BaseExpression] = []
    for statement in iter_statements(function.body.body):
        targets: list[cst.BaseExpression] = []
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    found.append(statement.value)
                else:
                    targets.append(target.target)
        elif isinstance(statement, cst.AugAssign | cst.AnnAssign | cst.For):
            targets.append(statement.target)
        elif isinstance(statement, cst.With):
            targets += [item.asname.name for item in statement.items if item.asname is not None]
        if any(name in bound_names_of(target) for target in targets):
            return None
    return found[0] if len(found) == 1 else None


def _path_template(expr: cst.BaseExpression) -> str | None:
    """``"{}.pkl".format(epoch)`` and ``f"{name}_{step}.pt"`` as their templates (``{}.pkl``,
    ``{}_{}.pt``): a run that saves ``"{}.pkl".format(epoch)`` and reloads
    ``"{}.pkl".format(best)`` reads back one of its own checkpoints."""
    template = None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        text = string_value(expr.func.value) if expr.func.attr.value == "format" else None
        template = None if text is None else re.sub(r"\{[^{}]*\}", "{}", text)
    elif isinstance(expr, cst.FormattedString):
        parts = [
            part.value if isinstance(part, cst.FormattedStringText) else "{}" for part in expr.parts
        ]
        template = "".join(parts)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        text = string_value(expr.left)  # `"ae_%d_%s.pt" % (epoch, device)`
        template = None if text is None else re.sub(r"%[-+ #0-9.]*[diufFeEgGsr]", "{}", text)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        # `args.save + "_epoch_" + str(i) + ".pth"`: each non-literal part is a hole
        texts = [string_value(part) for part in _added(expr)]
        template = "".join("{}" if text is None else text for text in texts)
        template = re.sub(r"(\{\})+", "{}", template)
    # `f"{path}"` alone says nothing about which file it is
    return template if template and template.replace("{}", "") else None


def _added(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a chain of ``+``."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return [*_added(expr.left), *_added(expr.right)]
    return [expr]


def _availability(test: cst.BaseExpression) -> bool:
    """``torch.cuda.is_available()``, also as the first operand of an ``and``."""
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        test = test.left
    return isinstance(test, cst.Call) and (dotted(test.func) or "").endswith("cuda.is_available")


def _named_by_importers(path: str, names: set[str]) -> set[str]:
    """Of ``names`` (functions of the file at ``path``), those a script of the project that may
    import it names (FaceMaskDetection's `pytorch_inference`, called from its demo script)."""
    found: set[str] = set()
    for text in importer_texts(path):
        found |= {name for name in names - found if _uses(text, name)}
    return found


def _uses(text: str, name: str) -> bool:
    """``name`` appears in ``text`` other than where it defines its own function of that name
    (two scripts of a project that each keep a `to_var` helper)."""
    return len(re.findall(rf"\b{name}\b", text)) > len(re.findall(rf"\bdef\s+{name}\b", text))


def _no_gpu_named(test: cst.BaseExpression) -> bool:
    """``x != "/device:GPU:0"``: a test that no GPU device was found, by its name."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    named = string_value(target.comparator) or string_value(test.left) or ""
    return isinstance(target.operator, cst.NotEqual) and named.startswith("/device:GPU")


def _file_name(path: cst.BaseExpression | None) -> str | None:
    """The literal file name a path ends in: ``"m.pt"``, ``os.path.join(d, "m.pt")``,
    ``d + "/m.pt"``, ``d / "m.pt"``."""
    last: cst.BaseExpression | None = path
    if isinstance(path, cst.Call) and (dotted(path.func) or "").endswith("join") and path.args:
        last = path.args[-1].value
    elif isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Add | cst.Divide):
        last = path.right
    text = string_value(last) if last is not None else None
    return _checkpoint_file(text) if text else None


def _checkpoint_file(path: str) -> str | None:
    """The file name a path ends in, when it names a checkpoint (``.pt``, ``.ckpt``, ...)."""
    name = _base_name(path)
    return name if CHECKPOINT_FILE.search(name) else None


def _base_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _handler_maps(block: cst.Try) -> bool:
    """``except ...: torch.load(path, map_location=...)``: a handler that loads again mapped."""
    for handler in block.handlers:
        for statement in iter_statements(handler.body.body):
            for call in _calls_in(statement):
                named = (dotted(call.func) or "").endswith("load")
                if named and _keyword(call, "map_location") is not None:
                    return True
    return False


def _calls_in(statement: cst.CSTNode) -> Iterator[cst.Call]:
    value = getattr(statement, "value", None)
    while isinstance(value, cst.Call):
        yield value
        value = value.args[0].value if value.args else None


def _dataset_class(cls: cst.ClassDef) -> bool:
    """``class VoxDataset(Dataset)``, PyG's ``InMemoryDataset``: a data set by its bases."""
    return any((dotted(base.value) or "").endswith("Dataset") for base in cls.bases)


def _only_seeds(node: cst.If) -> bool:
    """An ``if`` without ``else`` whose body only seeds CUDA or sets cuDNN's flags."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
        return False
    for statement in iter_statements(node.body.body):
        call = statement.value if isinstance(statement, cst.Expr) else None
        if isinstance(statement, cst.Assign):
            target = dotted(statement.targets[0].target) if len(statement.targets) == 1 else None
            if target is not None and target.startswith(("torch.backends.", "cudnn.")):
                continue
        name = dotted(call.func) if isinstance(call, cst.Call) else None
        if name is None or not SEEDING.search(name):
            return False
    return True


CPU_HELPER = re.compile(r"(^|_)cpu$", re.I)
"""``as_cpu``, ``to_cpu``, ``dict_to_cpu``, a ``cpu=`` keyword: names of host copies (not
``cpu_to_gpu``)."""
PLAIN_VALUE = re.compile(
    r"^(epoch|step|iteration|iter|best_\w+|lr|loss|args|config|\w*_(acc|score))s?$"
)
"""Names that hold numbers or settings in a checkpoint dict (``"epoch": epoch``)."""


def _items_brought_to_cpu(function: cst.FunctionDef, name: str) -> bool:
    """``for k in sd: sd[k] = sd[k].cpu()`` (or ``for k, v in sd.items(): sd[k] = v.cpu()``,
    KAIR's ``save_network``) in ``function``: every item of ``name`` copied to the CPU."""
    code = cst.Module([]).code_for_node(function)
    own = re.escape(name)
    if re.search(rf"\b{own}\[(\w+)\]\s*=\s*{own}\[\1\]\.cpu\(\)", code):
        return True
    loop = re.search(rf"\bfor\s+(\w+)\s*,\s*(\w+)\s+in\s+{own}\.items\(\)", code)
    if loop is None:
        return False
    key, item = (re.escape(part) for part in loop.groups())
    return re.search(rf"\b{own}\[{key}\]\s*=\s*{item}\.cpu\(\)", code) is not None


def _copies_to_cpu(call: cst.Call) -> bool:
    """``as_cpu(optimizer.state_dict())``, ``state_dict(model, cpu=True)`` (Jacinle's helpers):
    a helper that says it returns host copies."""
    name = dotted(call.func) or ""
    if CPU_HELPER.search(name.rsplit(".", 1)[-1]):
        return True
    return any(
        arg.keyword is not None
        and CPU_HELPER.search(arg.keyword.value)
        and isinstance(arg.value, cst.Name)
        and arg.value.value == "True"
        for arg in call.args
    )


def _only_shows(node: cst.If) -> bool:
    """An ``if`` (and its ``else``) whose arms only print what asks no GPU (a guarded
    ``print(torch.cuda.max_memory_allocated())`` keeps a CPU run from a CUDA query)."""
    arms = [node.body, node.orelse.body if isinstance(node.orelse, cst.Else) else None]
    if isinstance(node.orelse, cst.If):
        return False
    for arm in arms:
        block = arm.body if isinstance(arm, cst.IndentedBlock) else ()
        for statement in iter_statements(block):
            call = statement.value if isinstance(statement, cst.Expr) else None
            name = dotted(call.func) if isinstance(call, cst.Call) else None
            if name is None or name.rsplit(".", 1)[-1] not in REPORTERS:
                return False
            if "cuda" in cst.Module([]).code_for_node(statement):
                return False
    return True


SEEDING = re.compile(r"(^|\.)cuda\.manual_seed(_all)?$|(^|\.)(manual_)?seed$")


def _stops(body: cst.BaseSuite) -> bool:
    """A block that ends the script or function (``raise SystemExit(...)``, ``sys.exit(1)``)."""
    block = body.body if isinstance(body, cst.IndentedBlock) else ()
    return bool(block) and terminates(block[-1])


DISTRIBUTED_SWITCH = re.compile(r"^(distributed|multi|multi_?gpus?|ddp|use_ddp|is_distributed)$")
"""Flags that turn on a process group (``args.distributed``, ``opt.multi_gpu``)."""


def _distributed_switch(test: cst.BaseExpression) -> bool | None:
    """True when the test's truth turns the process group on (``if args.distributed:``),
    False when it turns it off (``if not distributed:``), None for any other test."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _distributed_switch(test.expression)
        return None if inner is None else not inner
    name = (dotted(test) or "").rsplit(".", 1)[-1]
    return True if DISTRIBUTED_SWITCH.match(name.lower()) else None


RANK_DEVICE = re.compile(r"^(gpu|gpu_id|gpu_index|local_rank|device_id)$")
"""The one device of a process in a job with one process per GPU (``args.gpu``)."""
HELPER_SAVE = re.compile(r"^save_?(model|checkpoint|ckpt|weights|state|network|net)s?$", re.I)
"""A project's own checkpoint helper (``save_model``, ``save_checkpoint``)."""
SAVE_KEYWORD = re.compile(r"save.*(path|file|name)|^(checkpoint|ckpt)_?(path|file)$", re.I)
"""A keyword naming where a project's trainer saves (``best_model_save_path=``)."""
CHECKPOINT_FILE = re.compile(r"\.(pth?|ckpt|pkl|bin|tar)$")


GPU_LIST = re.compile(r"^--?(n_?|num_?)?gpus?(_ids?|_num)?$|^--?ngpus?$", re.I)
"""``--gpus 0,1``, ``--ngpu 2``, ``--gpu_ids``: which or how many GPUs, not whether."""


def _joined_template(expr: cst.BaseExpression) -> str | None:
    """``os.path.join("models/", "net-{}.ckpt".format(epoch))`` as ``models/net-{}.ckpt``."""
    if not (isinstance(expr, cst.Call) and dotted(expr.func) in ("os.path.join", "osp.join")):
        return None
    joined = [string_value(arg.value) or _path_template(arg.value) for arg in expr.args]
    if not joined or joined[-1] is None or "{}" not in joined[-1]:
        return None
    return "/".join((part or "{}").rstrip("/") for part in joined)


def _named_instance(literal: str, saved: str) -> bool:
    """``models/net-2-3000.ckpt`` is a name ``models/net-{}-{}.ckpt`` makes in the same
    directory (a hole in the directory, ``{}mnist/data.pt``, may be another run's folder)."""
    folder, _, name = saved.rpartition("/")
    theirs, _, mine = literal.rpartition("/")
    same_folder = os.path.normpath(folder or ".") == os.path.normpath(theirs or ".")
    same_folder = same_folder and "{}" not in folder
    return same_folder and "{}" in name and _instance_of(mine, name)


def _instance_of(template: str, saved: str) -> bool:
    """``ae_20_{}.pt`` is one of the names ``ae_{}_{}.pt`` makes (each ``{}`` a part of a name)."""
    if template == saved:
        return True
    parts = [re.escape(part) for part in saved.split("{}")]
    return re.fullmatch("[^/]*".join(parts), template) is not None


def _counts_gpus(call: cst.Call) -> bool:
    return (dotted(call.func) or "").endswith("device_count")


def _more_than_one(comparison: cst.Comparison) -> bool:
    """``> 1``, ``>= 2``."""
    part = comparison.comparisons[0]
    bound = part.comparator.value if isinstance(part.comparator, cst.Integer) else None
    more = isinstance(part.operator, cst.GreaterThan) and bound == "1"
    return more or (isinstance(part.operator, cst.GreaterThanEqual) and bound == "2")


def _visible_devices(target: cst.BaseExpression) -> bool:
    """``os.environ["CUDA_VISIBLE_DEVICES"]`` as an assignment's target."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    key = string_value(index.value) if isinstance(index, cst.Index) else None
    return key == "CUDA_VISIBLE_DEVICES" and (dotted(target.value) or "").endswith("environ")


def _may_choose_cpu(flag: str, keywords: dict[str, cst.BaseExpression]) -> bool:
    """An option about the device that can pick the CPU: ``--cuda``, ``--no-cuda``,
    ``--device``; ``--gpus``/``--ngpu``/``--gpu_ids`` only when a value of it means the CPU
    (``-1``, or "cpu" in its help or default: ``help="0 = CPU"``) or it is a switch."""
    action = string_value(keywords["action"]) if "action" in keywords else None
    if action == "store_true" and _default_is(keywords, "True") and GPU_SWITCH.search(flag):
        return False  # `--cuda`, store_true, default=True: always on, there is no CPU run
    if _gpu_index(keywords):
        return False  # `--device`, type=int, default=0, help="GPU index": which GPU
    if SEVERAL_GPUS.search(flag) and action in ("store_true", "store_false"):
        return False  # `--multigpus`: DataParallel over several GPUs or one, never the CPU
    if not GPU_LIST.match(flag):
        return True
    if (
        action in ("store_true", "store_false")
        or dotted(keywords.get("type", cst.Name("x"))) == "bool"
    ):
        return True
    texts = [
        cst.Module([]).code_for_node(keywords[key]).lower()
        for key in ("help", "default")
        if key in keywords
    ]
    return any("cpu" in text or "-1" in text for text in texts)


SEVERAL_GPUS = re.compile(r"^-*(use_?)?(multi|m)[-_]?gpus?$", re.I)
"""``--multigpus``, ``--mgpus``, ``--multi-gpu``, ``--use_multi_gpu``: a switch between one GPU and
several, which leaves the CPU out."""

GPU_INDEX_TEST = re.compile(
    r"[\w.]*\b(gpu|gpu_id|gpu_ids|local_rank|device_id)\s+is\s+(not\s+)?None"
)
"""``args.gpu is not None``: which GPU (pytorch/examples' ImageNet idiom), not whether one."""
OPTION_TEST = re.compile(r"(?!self\.)\w+\.\w+")
"""``args.cuda``: an option's value (``self.cuda`` is the object's own flag)."""
GPU_SWITCH = re.compile(r"^--?(use_?|with_?|enable_?)?(cuda|gpus?)$", re.I)
"""A switch whose True means the GPU (``--cuda``, ``--use_gpu``), not ``--no-cuda``."""


def _gpu_index(keywords: dict[str, cst.BaseExpression]) -> bool:
    """An int option whose default is a GPU index (0, 1, ...) and whose help and default say
    nothing of the CPU or of -1."""
    if dotted(keywords.get("type", cst.Name("x"))) != "int" or "default" not in keywords:
        return False
    default = keywords["default"]
    if not (isinstance(default, cst.Integer) and default.evaluated_value >= 0):
        return False
    help_text = string_value(keywords["help"]) if "help" in keywords else ""
    return not re.search(r"cpu|-1", help_text or "", re.I)


def _default_is(keywords: dict[str, cst.BaseExpression], text: str) -> bool:
    return "default" in keywords and dotted(keywords["default"]) == text


def _wrapped_path(path: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """``path`` in ``make_path(path)`` / ``ensure_dir(path)``: a helper that prepares the
    directory of the path it is given and returns it."""
    if not isinstance(path, cst.Call) or len(path.args) != 1 or path.args[0].keyword:
        return None
    if not isinstance(path.func, cst.Name):
        return None
    argument = path.args[0].value
    return argument if isinstance(argument, cst.Name) else None


def base_class_files(module: cst.Module, path: str) -> Iterator[tuple[Path, cst.Module]]:
    """The project files (and their trees) of the classes this file's classes derive from
    (``from models.base_model import BaseModel``)."""
    bases = {
        dotted(base.value) or ""
        for statement in module.body
        if isinstance(statement, cst.ClassDef)
        for base in statement.bases
    }
    for statement in module.body if bases else ():
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for node in small:
            if not isinstance(node, cst.ImportFrom):
                continue
            for local, (where, _) in project_names(node, path).items():
                parsed = project.load(where) if local in bases else None
                if parsed is not None:
                    yield where, parsed.module


def base_cpu_path(module: cst.Module, path: str) -> str | None:
    """The CPU path of a base class of another project file (Open3D-ML's `BasePipeline`
    picks `torch.device("cpu")` without CUDA; its subclass's `load_ckpt` is here)."""
    for where, base in base_class_files(module, path):
        theirs = scan(base, remember=False)
        if theirs.cpu_path is None or theirs.cpu_path_is_weak:
            continue
        # a device it picks (`torch.device("cpu")`) or an option, not an availability test
        # alone (`if torch.cuda.is_available(): net.cuda()` after a save)
        evidence = theirs.all_evidence()
        chosen = {1, 2} & set(evidence)
        if chosen:
            return f"{evidence[min(chosen)]} in `{where.name}`, its base class's file"
    return None


def _module_moved_in_place(value: cst.BaseExpression) -> tuple[str, bool] | None:
    """``net.eval().cpu()`` -> (``net``, True); ``net.to(device)`` -> (``net``, False); None
    for anything else."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return None
    method = value.func.attr.value
    if method not in ("cpu", "cuda", "to"):
        return None
    receiver = value.func.value
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        if receiver.func.attr.value not in ("eval", "train", "float", "half"):
            return None
        receiver = receiver.func.value
    name = dotted(receiver)
    if name is None:
        return None
    target = string_value(value.args[0].value) if method == "to" and value.args else None
    return name, method == "cpu" or (
        target is not None and api.CPU_LITERAL.match(target) is not None
    )


def imported_device_cpu_path(module: cst.Module, path: str, helpers: bool = True) -> str | None:
    """The CPU path this file takes from another project file: a device that file picks and
    this one imports (``from talkingface.model_utils import device``, where ``device = "cuda"
    if torch.cuda.is_available() else "cpu"``), or a function of it that this file calls and
    that moves to the GPU only where there is one (``utils.cast(params)``, whose body is
    ``params.cuda() if torch.cuda.is_available() else params``; not with ``helpers=False``:
    a helper's fallback is its own generality, not a choice of the script that calls it)."""
    names: dict[str, tuple[Path, str]] = {}
    modules: dict[str, Path] = {}
    for statement in module.body:
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for node in small:
            if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
                names.update(_star_devices(node, path))  # `from config import *`
            elif isinstance(node, cst.ImportFrom):
                names.update(project_names(node, path))
            if isinstance(node, cst.Import | cst.ImportFrom):
                modules.update(project_modules(node, path))
    for local, (where, name) in names.items():
        if not api.DEVICE_NAME.search(local) or "rank" in local.lower():
            continue
        parsed = project.load(where)
        if parsed is None or not _binds_at_top(parsed.module, name):
            continue
        theirs = scan(parsed.module, remember=False)
        evidence = theirs.all_evidence()
        if theirs.requires_gpu or theirs.cpu_path_is_weak or not {1, 2} & set(evidence):
            continue
        return f"`{local}` from `{where.name}`, the CPU where no GPU is"
    for target, text in _devices_from_calls(module):
        where_function = _project_function(text, names, modules)
        if where_function is not None and _picks_the_cpu(where_function[1]):
            where = where_function[0]
            return f"`{target} = {text}()` from `{where.name}`, the CPU where no GPU is"
    called = _called_names(module) if helpers and (names or modules) else set()
    for text in sorted(called):
        where_function = _project_function(text, names, modules)
        if where_function is not None and _moves_if_available(where_function[1]):
            where = where_function[0]
            return f"`{text}` in `{where.name}`, which moves to the GPU only where there is one"
    return None


def _star_devices(node: cst.ImportFrom, importer: str) -> dict[str, tuple[Path, str]]:
    """The device names a project module binds at its top, which ``from it import *`` brings."""
    name = (dotted(node.module) or "") if node.module is not None else ""
    where = project.resolve(importer, name, len(node.relative))
    parsed = project.load(where) if where is not None else None
    if where is None or parsed is None:
        return {}
    bound = _top_bindings(parsed.module)
    return {device: (where, device) for device in bound if api.DEVICE_NAME.search(device)}


def _devices_from_calls(module: cst.Module) -> list[tuple[str, str]]:
    """``device = get_device()``, ``self.device = utils.pick_device(args)``: a device name
    bound to what a function (``f`` or ``module.f``) returns; (target, function) pairs."""
    found: list[tuple[str, str]] = []

    class _Bindings(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if len(node.targets) != 1 or not isinstance(node.value, cst.Call):
                return
            target = dotted(node.targets[0].target) or ""
            function = dotted(node.value.func) or ""
            last = target.rpartition(".")[2]
            named = api.DEVICE_NAME.search(last) and "rank" not in last.lower()
            if named and function and function.count(".") <= 1:
                found.append((target, function))

    walk(module, _Bindings())
    return found


def _project_function(
    text: str, names: dict[str, tuple[Path, str]], modules: dict[str, Path]
) -> tuple[Path, cst.FunctionDef] | None:
    """The project function ``f`` or ``utils.f`` names, with its file."""
    owner, _, attr = text.rpartition(".")
    if owner in modules:
        where, function = modules[owner], attr
    elif not owner and text in names:
        where, function = names[text]
    else:
        return None
    parsed = project.load(where)
    definition = parsed.functions.get(function) if parsed is not None else None
    return (where, definition) if isinstance(definition, cst.FunctionDef) else None


def _picks_the_cpu(function: cst.FunctionDef) -> bool:
    """A function that chooses the device: the CPU where no GPU is (``return
    torch.device("cuda:0") if torch.cuda.device_count() > 0 else torch.device("cpu")``)."""
    theirs = scan(cst.Module(body=[function]), remember=False)
    if theirs.requires_gpu or theirs.cpu_path_is_weak:
        return False
    return bool({1, 2} & set(theirs.all_evidence()))


def _called_names(module: cst.Module) -> set[str]:
    """``f`` and ``utils.f`` for each ``f(...)`` / ``utils.f(...)`` call in the file."""
    found: set[str] = set()

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            name = dotted(node.func)
            if name is not None and name.count(".") <= 1:
                found.add(name)

    walk(module, _Calls())
    return found


def _moves_if_available(function: cst.FunctionDef) -> bool:
    """A move of the function's own under an availability test (``x.cuda() if
    torch.cuda.is_available() else x``, ``if torch.cuda.is_available(): x = x.cuda()``)."""
    code = cst.Module([]).code_for_node(function)
    return bool(AVAILABILITY_MOVE.search(code))


AVAILABILITY_MOVE = re.compile(
    r"\.(cuda|to)\([^\n]*\bif\b[^\n]*cuda\.is_available\(\)"
    r"|\bif\b[^\n]*cuda\.is_available\(\)[^\n]*:\s*\n\s+[^\n]*\.(cuda|to)\("
)
"""``x.cuda() if torch.cuda.is_available() else x``, or ``if torch.cuda.is_available():``
with a move on the next line."""


def _binds_at_top(module: cst.Module, name: str) -> bool:
    """``name = ...`` among the module's own top-level statements."""
    return name in _top_bindings(module)


def _top_bindings(module: cst.Module) -> set[str]:
    """The names the module's own top-level assignments bind."""
    targets = [
        target
        for statement in module.body
        if isinstance(statement, cst.SimpleStatementLine)
        for node in statement.body
        for target in (
            [t.target for t in node.targets] if isinstance(node, cst.Assign)
            else [node.target] if isinstance(node, cst.AnnAssign) else []
        )
    ]  # fmt: skip
    return {name for target in targets for name in bound_names_of(target)}


def _inherited_constants(module: cst.Module, path: str) -> frozenset[str]:
    """The constant ``self`` attributes of the classes this file's classes derive from, where
    those come from another project file."""
    found: set[str] = set()
    for _, base in base_class_files(module, path):
        found |= _constant_true_attributes(base)[0]
    return frozenset(found)


def _constant_true_attributes(module: cst.Module) -> tuple[frozenset[str], frozenset[str]]:
    """The ``self`` attributes the file assigns, and only ever assigns ``True``, outside any
    ``if`` (``if cuda_flag: self.cuda = True`` is a switch: unset or True); and every ``self``
    attribute it assigns."""
    assigned: dict[str, bool] = {}
    for node, conditional in _self_assignments(module):
        for target in node.targets:
            expr = target.target
            if (
                isinstance(expr, cst.Attribute)
                and isinstance(expr.value, cst.Name)
                and expr.value.value == "self"
            ):
                constant = isinstance(node.value, cst.Name) and node.value.value == "True"
                constant = constant and not conditional
                name = expr.attr.value
                assigned[name] = assigned.get(name, True) and constant
    constants = frozenset(name for name, constant in assigned.items() if constant)
    return constants, frozenset(assigned)


def _self_assignments(module: cst.Module) -> list[tuple[cst.Assign, bool]]:
    found = _Assignments()
    walk(module, found)
    return found.assigns


class _Assignments(cst.CSTVisitor):
    """Every assignment, and whether it is under an ``if``, a loop, a ``try`` or a ``with``
    (named visit methods: walk's fast dispatch)."""

    def __init__(self) -> None:
        self.assigns: list[tuple[cst.Assign, bool]] = []
        self.depth = 0

    def visit_If(self, node: cst.If) -> None:
        self.depth += 1

    def leave_If(self, original_node: cst.If) -> None:
        self.depth -= 1

    def visit_For(self, node: cst.For) -> None:
        self.depth += 1

    def leave_For(self, original_node: cst.For) -> None:
        self.depth -= 1

    def visit_While(self, node: cst.While) -> None:
        self.depth += 1

    def leave_While(self, original_node: cst.While) -> None:
        self.depth -= 1

    def visit_Try(self, node: cst.Try) -> None:
        self.depth += 1

    def leave_Try(self, original_node: cst.Try) -> None:
        self.depth -= 1

    def visit_With(self, node: cst.With) -> None:
        self.depth += 1

    def leave_With(self, original_node: cst.With) -> None:
        self.depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns.append((node, self.depth > 0))


HOST_BUILDERS = frozenset(
    ["tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor", "LongTensor"]
)
"""Constructors that make a host tensor from data (``torch.tensor(df.values)``)."""


def _host_built_names(block: cst.BaseSuite) -> set[str]:
    """Names ``block`` binds (at its own level) to a tensor made from data on the host."""
    names: set[str] = set()
    if not isinstance(block, cst.IndentedBlock):
        return names
    for statement in block.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Call):
                continue
            name = (dotted(small.value.func) or "").rsplit(".", 1)[-1]
            if name not in HOST_BUILDERS or keyword(small.value, "device") is not None:
                continue
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    names.add(target.target.value)
    return names


AVAILABILITY = ("cuda.is_available", "cuda.device_count")


def _only_prints(function: cst.FunctionDef) -> bool:
    """Every statement of ``function`` prints or logs (a docstring aside)."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    if not body:
        return False
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            value = small.value if isinstance(small, cst.Expr) else None
            if isinstance(value, cst.BaseString):
                continue
            called = dotted(value.func) if isinstance(value, cst.Call) else None
            if called is None or called.rsplit(".", 1)[-1] not in REPORTERS:
                return False
    return True


class _NameCounter(cst.CSTVisitor):
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.shown: dict[str, int] = {}
        """Of those, the names a ``print``/``logger.info`` call shows as they are (its direct
        arguments, also through ``"{}".format(x)``), not what another call makes of them
        (``print(evaluate(net, USE_CUDA))`` uses the flag)."""
        self._showing: list[bool] = [False]

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1
        if self._showing[-1]:
            self.shown[node.value] = self.shown.get(node.value, 0) + 1

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = dotted(func) or ""
        formats = isinstance(func, cst.Attribute) and func.attr.value == "format"
        shows = name.rsplit(".", 1)[-1] in REPORTERS and name.partition(".")[0] not in MATH
        self._showing.append(shows or (formats and self._showing[-1]))

    def leave_Call(self, original_node: cst.Call) -> None:
        self._showing.pop()


MATH = frozenset({"torch", "math", "np", "numpy", "F"})
"""Roots of ``torch.log``, ``math.log``: arithmetic, not a logger."""


def _is_method(function: cst.FunctionDef) -> bool:
    params = function.params.params
    return bool(params) and params[0].name.value in ("self", "cls")


def _checks_on_cuda_too(node: cst.If) -> bool:
    """``if torch.cuda.is_available():`` with no other arm whose body asserts: a test of the
    notebook's code, run on CUDA as well where there is one."""
    if node.orelse is not None or not isinstance(node.test, cst.Call):
        return False
    if not _availability(node.test) or not isinstance(node.body, cst.IndentedBlock):
        return False
    return any(
        isinstance(small, cst.Assert)
        for statement in node.body.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    )


SETTINGS_OBJECTS = frozenset(
    {"args", "opt", "opts", "cfg", "config", "conf", "hparams", "params", "hp", "options",
     "settings", "flags", "FLAGS"}
)  # fmt: skip
"""Names a script gives its parsed options, which a trainer keeps as ``self.args``."""

LOADING_METHOD = re.compile(r"^(load|resume|restore)(_|$)")


def _loads_what_it_is_asked(site: LoadSite) -> bool:
    """A method named for loading (``load``, ``load_checkpoint``, ``resume``) whose path is built
    from its own parameters (``self.results_folder / f"model-{milestone}.pt"``): it restores
    what its caller names, an earlier run's file as well as this one's; so does one that loads
    the object's own path if it exists (``if os.path.exists(self.weights_path):``, a resume). A
    ``load_best()`` with no say in the path reads back what the run wrote."""
    function = site.function
    if function is None or not LOADING_METHOD.match(function.name.value):
        return False
    params = [param.name.value for param in function.params.params]
    if not params or params[0] != "self" or not site.call.args:
        return False
    path = site.call.args[0].value
    own = dotted(path) or ""
    if "best" not in function.name.value and own.startswith("self."):
        # `if os.path.exists(self.gen_weights_path): torch.load(self.gen_weights_path)` in
        # `load()`: the object resumes from its file if an earlier run left one (edge-connect);
        # an EarlyStopping's `load_checkpoint()` reads back what it saved in this run
        present = re.compile(rf"\b(exists|isfile)\(\s*{re.escape(own)}\s*\)")
        return any(present.search(test) for test in site.tests)
    # every Name under the path, f-strings too: `f"model-{milestone}.pt"`
    return any(name_counts(path, set(params[1:])).values())
