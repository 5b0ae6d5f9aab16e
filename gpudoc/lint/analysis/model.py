"""The semantic model: what the walk knows at the point it has reached, and nothing else.

Bindings live in scopes (scope.py) and hold values (values.py); the rest is where the walk is
(the functions being walked for a call, the guards and ``with torch.device`` blocks around it)
and what it found about the whole file. The collaborators that evaluate expressions, resolve
calls and walk statements all read and write this one object; rules read it through the
``Semantic`` protocol (events.py), which this class implements.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from gpudoc.lint.analysis.events import EventBus, EventKind
from gpudoc.lint.analysis.flow import (
    Join,
    Polarity,
    answers_cuda,
    counts_several_gpus,
    guard_polarity,
    join_of,
    needs_cuda,
    option_of,
)
from gpudoc.lint.analysis.functions import FunctionSyntax
from gpudoc.lint.analysis.names import (
    CallCensus,
    ImportTable,
    assigned_value,
    call_census,
    dotted,
)
from gpudoc.lint.analysis.scope import Scope
from gpudoc.lint.analysis.semantic import FileFlags, ModuleClass
from gpudoc.lint.analysis.values import Kind, Place, Value

if TYPE_CHECKING:
    from gpudoc.lint.analysis.homes import Home
    from gpudoc.lint.project import ProjectModule


class SemanticModel:
    def __init__(
        self,
        imports: ImportTable,
        bus: EventBus | None = None,
        path: str | None = None,
        module: cst.Module | None = None,
    ) -> None:
        self.imports = imports
        self.bus = bus if bus is not None else EventBus()
        self.path = path
        """The file being linted, to find the project modules it imports."""
        self.module = module
        self.flags = FileFlags()
        """What the walk found about the whole file (complete once it is over)."""
        self._init_definitions()
        self._init_position()
        self.call_operands: dict[cst.Call, list[tuple[tuple[Value, ...], Value | None]]] = {}
        """Each call's argument values (and receiver), kept until its call event is built."""
        self.call_roles: dict[cst.Call, tuple[str | None, Value | None, bool]] = {}
        """For the call event: the module a call calls (its name and value), and whether the
        call combines its tensor arguments."""
        self.moved_receivers: set[cst.Call] = set()
        """Calls whose result the expression around them moves (``f(x).to(dev)``)."""
        self.polarities: dict[cst.BaseExpression, Polarity | None] = {}
        self.cuda_answers: dict[cst.FunctionDef, bool] = {}
        self.gpu_choices: set[str] = set()
        """Options of device tests whose CPU path uses CUDA too (``if args.gpu is not None:``
        then ``else: model = DataParallel(model).cuda()``): they pick a GPU, not GPU or CPU."""
        self._census: CallCensus | None = None
        """Calls in the file by name, and the names it uses as modules: read the first time
        either matters."""
        self.resolve_project_name: Callable[[str], None] = lambda local: None
        """Reads an imported project name the first time it matters (homes.ProjectNames)."""
        self.home_member: Callable[[cst.Attribute], cst.FunctionDef | None] = lambda func: None
        self.home_class: Callable[[str], None] = lambda name: None
        """``utils.get_vocab`` in another file's body walked here, that file's ``import utils``
        (project_names.ProjectNames)."""

    def _init_definitions(self) -> None:
        """The file's functions and classes, and what walking them has found."""
        self.project_imports: dict[str, tuple[Path, str]] = {}
        """Names imported from the project's own modules, not read yet."""
        self.homes: dict[cst.FunctionDef, Home] = {}
        """Functions imported from the project's other modules, with their home module."""
        self.local_functions: dict[str, cst.FunctionDef] = {}
        """Module-level functions of this file by name: calls walk their bodies."""
        self.later_functions: dict[str, cst.FunctionDef] = {
            statement.name.value: statement
            for statement in (self.module.body if self.module is not None else ())
            if isinstance(statement, cst.FunctionDef)
        }
        """Every module-level ``def`` of this file, also those below the point of the walk: a
        function body runs once the module is loaded, when they exist (``forward`` calling a
        ``pad()`` defined after its class)."""
        self.local_classes: dict[str, ModuleClass | str] = {}
        """Class name -> its ModuleClass, or ``"dataset"``."""
        self.project_module_names: dict[str, Path] = {}
        """Names bound to the project's own modules (``import utils``)."""
        self.plain_classes: dict[str, Scope] = {}
        self.optimizer_classes: set[str] = set()
        """The plain classes that subclass ``torch.optim.Optimizer``: their instances are
        optimizers (``AdamW(model.parameters())``)."""
        """The file's classes that are neither modules nor datasets, with their class scope:
        their methods are walked where an instance calls them, with the call's values."""
        self.class_scopes: dict[str, Scope] = {}
        self.foreign_module_scopes: dict[str, Scope] = {}
        """Module classes imported from the project's other files, by local name: their methods,
        walked with their home's imports where this file calls them (``policy.act(obs)``)."""
        """Every class of this file by name, with its scope: a subclass reads the ``self.*``
        its bases set (Scope.bases)."""
        self.device_datasets: set[str] = set()
        """Dataset classes that move something: their batches' place is not known."""
        self.pending: dict[cst.FunctionDef, Scope] = {}
        """Functions and methods not walked yet, with the scope they are defined in."""
        self.summaries: dict[cst.FunctionDef, dict[tuple[object, ...], Value]] = {}
        """What a function returned, by the shape of the arguments it was walked for."""
        self.summary_moves: dict[
            tuple[cst.FunctionDef, tuple[object, ...]], frozenset[tuple[str, Place]]
        ] = {}
        """Per summary: the parameters whose module its walk moved in place, and where."""
        self.syntax: dict[cst.FunctionDef, FunctionSyntax] = {}
        """What each function's text says, read once (bodies.facts_of)."""

    def _init_position(self) -> None:
        """Where the walk is: scopes, the calls being walked, guards and blocks around it."""
        self.module_scope = Scope()
        self.scope = self.module_scope
        self.call_stack: list[cst.FunctionDef] = []
        self.moved_results: list[bool] = []
        """For each call being walked: its caller moves the result (``helper(n).to(dev)``)."""
        self.returns: list[list[Value]] = []
        """What each function being walked has returned so far, innermost last."""
        self.yields: list[list[Value]] = []
        """What each function being walked has yielded so far (a generator), innermost last."""
        self.cpu_path_returns: list[list[bool]] = []
        """For each function being walked: whether each of its returns is on the CPU path of
        a device guard of its own body."""
        self.cpu_path_at_entry: list[int] = []
        self.rest_on_cpu: cst.BaseExpression | None = None
        """The test of an ``if`` whose GPU arm just ended the block (``if cuda: return
        x.cuda()``): the statements after it run on the CPU path."""
        self.context_stack: list[str] = []
        """The functions whose bodies are being walked for a call, outermost first."""
        self.context_classes: list[ModuleClass | None] = []
        """The module class of each function in ``context_stack``."""
        self.guard_depth = 0
        self.gpu_definitions: set[cst.FunctionDef] = set()
        """Functions and methods defined on the GPU path of a guard (``if
        torch.cuda.is_available(): class GpuTest(...)``): their bodies run only there."""
        self.cpu_path = 0
        """Inside the CPU path of a device guard: there, ``device`` is the CPU too."""
        self.cpu_path_tests: list[cst.BaseExpression] = []
        self.cpu_path_calls: list[int] = []
        """For each of ``cpu_path_tests``: how deep the call stack was where its path began."""
        """The tests of the ``if`` statements whose CPU path is being walked, innermost last."""
        self.gpu_path = 0
        """Inside the GPU path of a device guard (``if use_cuda:``): CUDA exists there."""
        self.device_context = 0
        """Inside ``with torch.device(...):``: new tensors and modules are not on the host."""
        self.device_contexts: list[cst.BaseExpression] = []
        """The devices of the enclosing ``with torch.device(...):`` blocks, innermost last."""
        self.branch_tests: list[cst.BaseExpression] = []
        """Tests of the enclosing ``if`` statements, innermost last."""
        self.dataset_stack: list[str] = []
        """Dataset subclasses being walked: a device move inside one makes its batches unknown."""
        self.terminated = False
        """The path being walked has returned, raised, broken out or continued."""
        self.loop_depth = 0
        self.step = 0

    # -- the semantic view rules get with events (events.Semantic) -------------------------
    def project_files(self) -> list[ProjectModule]:
        """The project modules whose functions or methods the walk went through."""
        found: dict[int, ProjectModule] = {}
        for home in self.homes.values():
            found.setdefault(id(home.parsed), home.parsed)
        return list(found.values())

    def lookup(self, name: str) -> Value | None:
        return self.scope.lookup(name)

    def qualify(self, node: cst.BaseExpression) -> str | None:
        return self.imports.qualify(node)

    def device_name(self) -> str | None:
        return self.scope.device_name()

    @property
    def function(self) -> str | None:
        return self.scope.function or None

    @property
    def context_function(self) -> str | None:
        return self.context_stack[0] if self.context_stack else self.function

    @property
    def module_class(self) -> ModuleClass | None:
        return self.scope.module_class

    @property
    def context_module_class(self) -> ModuleClass | None:
        return self.context_classes[0] if self.context_classes else self.module_class

    @property
    def in_init(self) -> bool:
        """In a module's ``__init__``, or a helper method it calls."""
        return self.scope.module_class is not None and "__init__" in self.context_stack

    @property
    def default_device_context(self) -> cst.BaseExpression | None:
        return self.device_contexts[-1] if self.device_contexts else None

    @property
    def under_guard(self) -> bool:
        return self.guard_depth > 0

    def result_moved(self, node: cst.Call) -> bool:
        return node in self.moved_receivers

    @property
    def result_moved_by_caller(self) -> bool:
        return any(self.moved_results)

    @property
    def function_node(self) -> cst.FunctionDef | None:
        return self.scope.function_node

    def lookup_local(self, name: str) -> Value | None:
        return self.scope.env.get(name)

    @property
    def home_module(self) -> ProjectModule | None:
        home = self.homes.get(self.call_stack[-1]) if self.call_stack else None
        return home.parsed if home is not None else None

    @property
    def call_chain(self) -> tuple[str, ...]:
        return tuple(self.context_stack)

    @property
    def on_cpu_path(self) -> bool:
        return self.cpu_path > 0

    @property
    def on_gpu_path(self) -> bool:
        return self.gpu_path > 0

    @property
    def walked_for_call(self) -> bool:
        return bool(self.call_stack)

    @property
    def on_placed_instance(self) -> bool:
        owner = self.class_scope()
        return owner is not None and owner.instance_place is Place.DEVICE

    @property
    def scope_id(self) -> int:
        return self.scope.serial

    @property
    def dataset(self) -> str | None:
        return self.dataset_stack[-1] if self.dataset_stack else None

    @property
    def cuda_initialised(self) -> bool:
        return self.scope.cuda_initialised or self.module_scope.cuda_initialised

    def in_branch_of(self, test: cst.BaseExpression) -> bool:
        return test in self.branch_tests

    @property
    def in_branch(self) -> bool:
        return bool(self.branch_tests)

    def is_module_class(self, node: cst.BaseExpression) -> bool:
        return isinstance(self.local_class(dotted(node) or ""), ModuleClass)

    def module_class_named(self, node: cst.BaseExpression) -> ModuleClass | None:
        found = self.local_class(dotted(node) or "")
        return found if isinstance(found, ModuleClass) else None

    def note_device_data(self) -> None:
        """A tensor placed on the device inside a Dataset class's methods: its items, and the
        batches a DataLoader makes of them, may be on the device already."""
        if self.dataset_stack:
            self.device_datasets.add(self.dataset_stack[-1])

    def class_method(self, class_name: str, method: str) -> cst.FunctionDef | None:
        scope = self.class_scopes.get(class_name) or self.foreign_module_scopes.get(class_name)
        return scope.method(method) if scope is not None else None

    def returns_module(self, node: cst.BaseExpression) -> bool:
        name = dotted(node) or ""
        function = self.local_functions.get(name)
        if function is None or self.local_class(name) is not None:
            return False
        # `make_head(dim, n)`: walked by the time its result is assigned
        return any(v.kind is Kind.MODULE for v in self.summaries.get(function, {}).values())

    @property
    def census(self) -> CallCensus:
        if self._census is None:
            empty = CallCensus({}, frozenset())
            self._census = call_census(self.module) if self.module is not None else empty
        return self._census

    def calls_named(self, name: str) -> int:
        return self.census.counts.get(name, 0)

    def is_local_function(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value in self.local_functions

    def local_function(self, node: cst.BaseExpression) -> cst.FunctionDef | None:
        name = node.value if isinstance(node, cst.Name) else ""
        if name in self.project_imports:
            self.resolve_project_name(name)
        return self.local_functions.get(name)

    def function_beside(self, method: cst.FunctionDef, name: str) -> cst.FunctionDef | None:
        home = self.homes.get(method)
        if home is not None:
            return home.functions.get(name)
        return self.local_function(cst.Name(name))

    # -- for the collaborators ----------------------------------------------------------------
    def globals_view(self) -> Scope:
        """The module's names as a function called from here sees them: with the modules the
        calling functions moved in place (``model.to(device)`` in ``train()``, then
        ``test()``)."""
        moved: dict[str, Value] = {}
        scope: Scope | None = self.scope
        while scope is not None and scope is not self.module_scope:
            moved = {**scope.moved_globals, **moved}
            scope = scope.parent
        if not moved:
            return self.module_scope
        # the view keeps them as moved globals too: a call from the callee sees them again
        return Scope(parent=self.module_scope, env=dict(moved), moved_globals=moved)

    def assign_name(self, name: str, value: Value) -> None:
        scope = self.scope
        owner = self.class_scope()
        if owner is not None and name in owner.moved_by_bases and value.kind is Kind.MODULE:
            value = value.with_place(Place.UNKNOWN)  # its base's `__init__` moves it after
        if name.startswith("self.") and scope.parent is not None and scope.parent.function == "":
            scope = scope.parent
        elif name in scope.global_names:
            while scope.parent is not None:  # `global device` in main(): the module's name
                scope = scope.parent
        scope.env[name] = value

    def project_member(self, func: cst.Attribute) -> str | None:
        """``utils.normalize_batch`` of ``import utils``, a project module: its name as the
        walk knows it (read the first time it is called)."""
        base = dotted(func.value)
        path = self.project_module_names.get(base or "")
        if base is None or path is None or self.scope.lookup(base) is not None:
            return None
        name = f"{base}.{func.attr.value}"
        if name not in self.local_functions and name not in self.plain_classes:
            self.project_imports.setdefault(name, (path, func.attr.value))
        return name

    def local_class(self, name: str) -> ModuleClass | str | None:
        if name in self.project_imports:
            self.resolve_project_name(name)
        return self.local_classes.get(name)

    def class_scope(self) -> Scope | None:
        scope: Scope | None = self.scope
        while scope is not None and scope.function != "":
            scope = scope.parent
        return scope

    def polarity(self, test: cst.BaseExpression) -> Polarity | None:
        """Which path a test's truth stands for (flow.guard_polarity), read once per test."""
        if test not in self.polarities:
            self.polarities[test] = (
                guard_polarity(test)
                or self.availability_flag(test)
                or self.availability_answer(test)
            )
        return self.polarities[test]

    def availability_answer(self, test: cst.BaseExpression) -> Polarity | None:
        """``if check_sru_requirement():``: a call of a function of this file (or one it
        imports from the project) that answers whether CUDA can be used (flow.answers_cuda) is
        a GPU test; ``not`` it, a CPU test."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.availability_answer(test.expression)
            return None if inner is None else "cpu"
        if not isinstance(test, cst.Call):
            return None
        function = self.local_function(test.func)
        if function is None:
            return None
        if function not in self.cuda_answers:
            self.cuda_answers[function] = answers_cuda(function)
        return "gpu" if self.cuda_answers[function] else None

    def availability_flag(self, test: cst.BaseExpression) -> Polarity | None:
        """``if opts.hybrid:`` where ``opts.hybrid = opts.no_cuda and opts.hybrid and
        torch.cuda.is_available()`` (DropEdge): a flag whatever its name, true only with CUDA."""
        name = dotted(test)
        held = self.scope.lookup(name) if name else None
        if name is None or held is None or held.binding is None:
            return None
        value = assigned_value(held.binding, name)
        return "gpu" if value is not None and needs_cuda(value) else None

    def note_cuda_on_cpu_path(self) -> None:
        """CUDA named on the CPU path of ``if <option>:``: that option picks a GPU; not when a
        function that path calls guards it with a GPU test of its own (``if self.use_gpu: r =
        r.cuda()`` in a method of the model)."""
        called = self.cpu_path_calls and len(self.call_stack) > self.cpu_path_calls[-1]
        if called and self.gpu_path > 0:
            return  # a callee's own GPU test guards it: that test decides, not the option
        if self.cpu_path > 0 and self.cpu_path_tests:
            option = option_of(self.cpu_path_tests[-1])
            if option is not None:
                self.gpu_choices.add(option)

    def picks_a_gpu(self, test: cst.BaseExpression) -> bool:
        """A device test whose other path uses a GPU too, by what the file did before."""
        option = option_of(test) if self.gpu_choices else None
        return option is not None and option in self.gpu_choices

    def join_after(self, test: cst.BaseExpression) -> Join:
        """How the paths of a test meet: a test that picks a GPU is no guard there (a value
        moved on one path only stays on the host on the other, where a GPU is used too)."""
        if counts_several_gpus(test):
            return "several-gpus"  # `if torch.cuda.device_count() > 1:`: one GPU takes the other
        if self.picks_a_gpu(test):
            return "unrelated"
        return join_of(self.polarity(test))

    def emit(self, kind: EventKind, event: object) -> None:
        self.bus.emit(kind, event, self)
