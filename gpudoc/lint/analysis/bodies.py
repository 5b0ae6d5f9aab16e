"""Bodies of functions and classes: walked where they are called, with the call's values.

A module-level function waits for its calls and a method for its class's walk; a call walks
the body once per shape of its arguments (bounded in depth and in contexts) and its summary is
what it returned. What no call reached is walked on its own at the end (``walk_pending``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.classes import ClassFacts, optimizer_class
from gpudoc.lint.analysis.events import ClassEvent, FunctionEvent, WalkedCallEvent
from gpudoc.lint.analysis.flow import join_envs, name_polarity
from gpudoc.lint.analysis.functions import (
    OFF_FLAG,
    FunctionSyntax,
    argument_names,
    argument_shapes,
    bind_arguments,
    returns_moved,
)
from gpudoc.lint.analysis.homes import project_names
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import (
    assigned_value,
    bound_names,
    declared_globals,
    dotted,
    iter_statements,
    method_named,
    moves_each,
)
from gpudoc.lint.analysis.scope import Scope, parameter_values
from gpudoc.lint.analysis.sharing import move_module
from gpudoc.lint.analysis.submodules import weighted_submodules
from gpudoc.lint.analysis.values import (
    INSTANCE,
    UNKNOWN,
    Kind,
    Place,
    Value,
    called_module,
    replace,
)

if TYPE_CHECKING:
    from gpudoc.lint.analysis.homes import Home

ENTRY_METHODS = frozenset(
    [
        *("forward", "__call__", "training_step", "validation_step", "test_step"),
        *("predict_step", "fit", "train", "run", "main", "evaluate", "validate", "test"),
    ]
)
"""Methods that call the others: walked before them, so helpers are judged in their context."""
MAX_CALL_DEPTH = 4
"""Calls nested deeper than this return an unknown value instead of walking the callee."""
MAX_CONTEXTS = 4
"""Shapes of arguments one function is walked for; further ones return an unknown value."""


class BlockWalker(Protocol):
    """What walking a body needs (statements.StatementWalker): declared here, so that bodies
    do not depend on the statements that define them."""

    def walk_body(self, body: cst.BaseSuite) -> None: ...


class Bodies:
    """Walks the bodies of the file's functions and classes. A body's statements are walked by
    ``statements`` (set once the walk's collaborators are built, walker.analyze): a call in a
    statement walks a body, whose statements hold calls."""

    def __init__(self, model: SemanticModel, classes: ClassFacts) -> None:
        self.model = model
        self.classes = classes
        self.statements: BlockWalker

    def define_function(self, node: cst.FunctionDef) -> None:
        """A module-level function waits for its calls, a method for its class's walk; a nested
        function is walked where it is defined."""
        model = self.model
        if model.gpu_path:  # `if torch.cuda.is_available(): def gpu_test(): ...`
            model.gpu_definitions.add(node)
        if model.scope is model.module_scope:
            model.project_imports.pop(node.name.value, None)  # it rebinds an imported name
            # `train = pd.read_csv(...)` above `def train(loader)`: the name is the function now
            model.scope.env.pop(node.name.value, None)
            model.local_functions[node.name.value] = node
            if not model.summaries.get(node):  # not walked yet for a call from a body above
                model.pending[node] = model.module_scope
        elif model.scope.function == "":
            model.scope.methods[node.name.value] = node
            model.pending[node] = model.scope
        else:
            self.walk_function(node, model.scope)

    def call_function(
        self,
        node: cst.FunctionDef,
        call: cst.Call,
        values: list[Value],
        parent: Scope,
        instance: Place | None = None,
    ) -> Value:
        """The value a call of a function of this file returns, its body walked for this call
        (once per shape of arguments). A module the body moves is moved for the caller too.
        ``instance``: for a module's own method, where the module the call is made on is; its
        submodules (``self.base``) are there too."""
        model = self.model
        is_method = parent.function == ""
        self.moved_elements(call, node, is_method)  # read from the text: however it is walked
        # `check(bn, x, cuda=True)` and `check(bn, x)` walk different arms of `if cuda:`
        # and a call on the CPU path of a device test is walked apart from one on its GPU path
        # (`if opt.no_gpu: g = make(opt)` / `else: g = make(opt).cuda()`): each has its findings
        path = ("gpu" if model.gpu_path else "", "cpu" if model.cpu_path else "")
        # `self.get_opacities()` inside a method walked for a placed instance: the same view
        held_by = parent.instance_place if is_method and instance is None else None
        # the module's modules a calling function moved in place (model.globals_view)
        overlay: tuple[tuple[str, str], ...] = ()
        if parent.parent is model.module_scope and parent.function is None:
            overlay = tuple(sorted((n, v.place.value) for n, v in parent.env.items()))
        shapes = (
            *argument_shapes(values), *_literal_flags(call), *path, instance, held_by, overlay
        )  # fmt: skip
        summaries = model.summaries.setdefault(node, {})
        if shapes in summaries:
            # `train_network(other, ...)` then `train_network(net, ...)`: one walk for both, and
            # each call's own module moved by it
            moved = model.summary_moves.get((node, shapes))
            if moved:
                arguments = bind_arguments(node.params, call, values, is_method)
                self.move_given(call, node, moved, arguments, is_method)
            return summaries[shapes]
        if node in model.call_stack or len(model.call_stack) >= MAX_CALL_DEPTH:
            return UNKNOWN
        if len(summaries) >= MAX_CONTEXTS:
            return UNKNOWN
        arguments = bind_arguments(node.params, call, values, is_method)
        lightning = is_method and parent.module_class is not None and parent.module_class.lightning
        if lightning and instance is Place.HOST:
            # a LightningModule's method the script calls itself, on an instance it left on the
            # host (the Trainer's teardown brings one back there after `fit`): `self.device`
            # is the CPU
            arguments["self.device"] = Value(Kind.DEVICE, Place.HOST, cpu_device=True)
        model.pending.pop(node, None)
        home = model.homes.get(node) or _sibling_home(model, node)
        model.call_stack.append(node)
        model.moved_results.append(call in model.moved_receivers or self.facts_of(node).moved)
        saved = model.imports, model.local_functions
        if home is not None:  # another file's function: its own imports and siblings
            model.imports, model.local_functions = home.imports, home.functions
            parent = parent if is_method else home.scope
        start = model.step
        view = placed_instance(parent, node, instance, home) if is_method and instance else None
        try:
            result, scope = self.walk_function(node, view[0] if view else parent, arguments)
            if view is not None:
                keep_attribute_writes(*view, parent)
        finally:
            model.call_stack.pop()
            model.moved_results.pop()
            model.imports, model.local_functions = saved
        result = _new_instance(result)
        summaries[shapes] = result
        if model.bus.wants("walked"):
            model.emit("walked", WalkedCallEvent(node, call, is_method, home is not None, start))
        moved = self.moved_in_place(call, arguments, scope, is_method)
        model.summary_moves[(node, shapes)] = moved
        self.move_given(call, node, moved, arguments, is_method)
        return result

    def moved_in_place(
        self, call: cst.Call, arguments: dict[str, Value], scope: Scope, is_method: bool
    ) -> frozenset[tuple[str, Place]]:
        """``def place(model, device): model.to(device)``, or a trainer's ``self.model =
        model.to(device)``: the parameters whose module the body moved, and where (in place:
        the caller's module moves too); ``def plot_model(X, model): model.cpu()`` brings the
        caller's placed module back to the host."""
        owner = scope.parent if scope.parent is not None and scope.parent.function == "" else None
        placed = [
            value.origin
            for env in (scope.env, owner.env if owner is not None else {})
            for value in env.values()
            if value.kind is Kind.MODULE and value.place is Place.DEVICE and value.origin
        ]
        moved: set[tuple[str, Place]] = set()
        for param in argument_names(scope.function_node, call, is_method):
            raw, final = arguments.get(param), scope.env.get(param)
            given = _given_module(raw)
            if given is None:
                if _brought_back(raw, final):
                    moved.add((param, Place.HOST))
                continue
            if raw is not None and raw.source == "checkpoint":
                final = called_module(final)
            placed_here = final is not None and final.kind is Kind.MODULE
            placed_here = placed_here and final is not None and final.place is Place.DEVICE
            if placed_here or (given.origin is not None and given.origin in placed):
                moved.add((param, Place.DEVICE))
        return frozenset(moved)

    def move_given(
        self,
        call: cst.Call,
        function: cst.FunctionDef,
        moved: frozenset[tuple[str, Place]],
        arguments: dict[str, Value],
        is_method: bool,
    ) -> None:
        """The caller's modules passed for the ``moved`` parameters are where the body moved
        them now."""
        for param, name in argument_names(function, call, is_method).items():
            if (param, Place.DEVICE) in moved:
                given = _given_module(arguments.get(param))
                if given is not None:
                    move_module(self.model, name, given.with_place(Place.DEVICE))
            elif (param, Place.HOST) in moved:
                held = arguments.get(param)
                if held is not None and held.kind is Kind.MODULE:
                    move_module(self.model, name, held.with_place(Place.HOST))

    def moved_elements(self, call: cst.Call, function: cst.FunctionDef, is_method: bool) -> None:
        """``utils.cuda([G, D])`` whose body moves each element (``[x.cuda() for x in xs]``):
        each module of the list the caller wrote moves in place."""
        positional = [*function.params.posonly_params, *function.params.params]
        positional = positional[1:] if is_method else positional
        for arg, param in zip(call.args, positional, strict=False):
            if arg.keyword is not None or arg.star:
                break
            if not isinstance(arg.value, cst.List | cst.Tuple):
                continue
            if not moves_each(function, param.name.value):
                continue
            for element in arg.value.elements:
                name = dotted(element.value)
                held = self.model.scope.lookup(name) if name is not None else None
                if name is not None and held is not None and held.kind is Kind.MODULE:
                    move_module(self.model, name, held.with_place(Place.DEVICE))

    def function_scope(
        self, node: cst.FunctionDef, parent: Scope, arguments: dict[str, Value] | None
    ) -> Scope:
        """A body's scope: parameters typed by the call's values, else by their annotations
        and names."""
        scope = Scope(parent=parent, function=node.name.value, module_class=parent.module_class)
        scope.function_node = node
        scope.local_names = self.facts_of(node).local_names
        scope.global_names = declared_globals(node)
        scope.env.update(parameter_values(node.params, self.model.imports))
        typed = dict(scope.env)
        for name, value in (arguments or {}).items():
            if value.kind in (Kind.MODULE, Kind.DEVICE):
                # its binding: where the caller created it (a device the file chose, say)
                scope.env[name] = value
            elif value.kind is not Kind.UNKNOWN:
                scope.env[name] = replace(value, binding=None)  # a move fix stays in the body
            elif value.source.startswith(INSTANCE) and name not in typed:
                # `train(model, es)`: `es(loss, model)` walks its class; a parameter its name
                # types (`train_dl`, a loader) keeps that typing
                scope.env[name] = value
            elif value.place is Place.DEVICE and name in typed and typed[name].kind is Kind.MODULE:
                # `teacher_train(BERT_Model(cfg).to(cfg.device), ...)` of a class not read:
                # what the caller moved is the `model` the body calls
                scope.env[name] = typed[name].with_place(Place.DEVICE)
        params = node.params
        named = [*params.posonly_params, *params.params, *params.kwonly_params]
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                named.append(star)
        for name in (param.name.value for param in named):
            # a parameter hides the module's name, known or not (`def align(predictions, ...)`
            # beside a global `predictions` on the device)
            scope.env.setdefault(name, UNKNOWN)
        on_cpu = any(v.kind is Kind.DEVICE and v.cpu_device for v in (arguments or {}).values())
        # `generate(decoder, cuda=False)`: the GPU switch is off for this call
        on_cpu = on_cpu or any(
            v.source == OFF_FLAG and name_polarity(name) == "gpu"
            for name, v in (arguments or {}).items()
        )
        if on_cpu:
            # `trainer(model, loss_fn, device="cpu")`: a module typed by its annotation or name
            # as placed (`loss_fn: nn.Module` beside a device) is not, in a call on the CPU
            for name, value in typed.items():
                if scope.env.get(name) is value and value.is_device_module:
                    scope.env[name] = value.with_place(Place.UNKNOWN)
        if any(v.kind is Kind.MODULE and v.place is Place.DEVICE for v in scope.env.values()):
            self.model.flags.places = True  # `def test(model, device, loader)`: for a device
        if node.name.value in ("_apply", "to", "cuda") and parent.module_class is not None:
            parent.module_class.custom_apply = True
        return scope

    def walk_function(
        self,
        node: cst.FunctionDef,
        parent: Scope,
        arguments: dict[str, Value] | None = None,
    ) -> tuple[Value, Scope]:
        """Walk a body; ``arguments`` are the call's values. Returns the join of what it
        returns, and its scope."""
        model = self.model
        scope = self.function_scope(node, parent, arguments)
        if model.bus.wants("function"):
            model.emit("function", FunctionEvent(node, dict(scope.env)))
        saved = (model.scope, model.guard_depth, model.terminated, model.loop_depth, model.cpu_path)
        model.scope, model.terminated, model.loop_depth = scope, False, 0
        if arguments is None:  # no call site: no guard around it but its definition's
            model.guard_depth = int(node in model.gpu_definitions)
            model.cpu_path = 0
        model.context_stack.append(node.name.value)
        model.context_classes.append(scope.module_class)
        model.returns.append([])
        model.yields.append([])
        model.cpu_path_returns.append([])
        model.cpu_path_at_entry.append(model.cpu_path)
        try:
            self.statements.walk_body(node.body)
        finally:
            returned = model.returns.pop()
            yielded = model.yields.pop()
            on_cpu_path = model.cpu_path_returns.pop()
            model.cpu_path_at_entry.pop()
            model.context_stack.pop()
            model.context_classes.pop()
            model.scope, model.guard_depth, model.terminated, model.loop_depth = saved[:4]
            model.cpu_path = saved[4]
        if yielded:  # a generator function: its calls return an iterator over what it yields
            return _iterator_of(yielded), scope
        return _joined_returns(returned, on_cpu_path), scope

    def facts_of(self, node: cst.FunctionDef) -> FunctionSyntax:
        """What a function's text says (its local names, whether it returns moved tensors):
        read once, however often its body is walked."""
        known = self.model.syntax.get(node)
        if known is None:
            known = FunctionSyntax(bound_names(node), returns_moved(node))
            self.model.syntax[node] = known
        return known

    def walk_pending(self) -> None:
        """Functions and methods no call in this file reached: walked on their own. The
        functions nothing in the file calls go first (tests, ``main``): the helpers they call
        are then walked with their arguments (``_check("cpu")``), not on their own."""
        model = self.model
        pending = model.pending
        unbuilt = {
            id(scope) for name, scope in model.class_scopes.items() if not model.calls_named(name)
        }
        for node, parent in list(pending.items()):
            # a plain class no code here builds (a library's trainer): its `__init__`, then
            # the methods none of its methods call (`fit`), which walk their helpers
            # (`self.evaluate(self.valid_loader)`) with the values they pass
            top = parent is model.module_scope or id(parent) in unbuilt
            called = node.name.value != "__init__" and model.calls_named(node.name.value) > 0
            if top and not called and pending.pop(node, None) is not None:
                self._walk_alone(node, parent)
        while pending:
            node, parent = next(iter(pending.items()))
            del pending[node]
            self._walk_alone(node, parent)

    def _walk_alone(self, node: cst.FunctionDef, parent: Scope) -> None:
        fresh = dict(parent.env) if _runs_on_a_fresh_fixture(node, parent) else None
        self.walk_function(node, parent)
        if fresh is not None:
            parent.env = fresh

    def walk_class(self, node: cst.ClassDef) -> None:
        model = self.model
        if model.scope is model.module_scope:
            model.project_imports.pop(node.name.value, None)  # it rebinds an imported name
        if model.gpu_path:  # a test class defined only where CUDA exists: its methods too
            model.gpu_definitions.update(
                s for s in node.body.body if isinstance(s, cst.FunctionDef)
            )
        datasets_open = len(model.dataset_stack)
        module_class = self.classes.register_class(node)
        if model.bus.wants("class"):
            model.emit("class", ClassEvent(node, module_class))
        scope = Scope(parent=model.module_scope, function="", module_class=module_class)
        scope.bases = _base_scopes(node, model.class_scopes)
        scope.moved_by_bases = _moved_by_bases(node, model)
        model.class_scopes[node.name.value] = scope
        saved = model.scope
        model.scope = scope
        # this definition opened a dataset (not an earlier class of the same name: ReChorus
        # nests a `Dataset` in every model class, some of them no dataset by their bases)
        is_dataset = len(model.dataset_stack) > datasets_open
        try:
            self.statements.walk_body(node.body)
            if module_class is None and not is_dataset:
                # a plain class (a trainer, a metric, a noise schedule): its methods wait for
                # the calls of its instances, like the file's functions wait for theirs
                model.plain_classes[node.name.value] = scope
                _inherit_methods(node, scope, model.plain_classes)
                if optimizer_class(node, model):
                    model.optimizer_classes.add(node.name.value)
            else:
                self.walk_methods(scope)
        finally:
            model.scope = saved
            if is_dataset:
                model.dataset_stack.pop()

    def walk_methods(self, scope: Scope) -> None:
        """``__init__`` first (it sets ``self.*``), then the methods that drive the others
        (``forward``, ``fit``, ...), then the rest in order: a helper method that one of them
        calls is walked there, in that caller's context, and not again on its own."""

        def rank(method: cst.FunctionDef) -> int:
            name = method.name.value
            return 0 if name == "__init__" else 1 if name in ENTRY_METHODS else 2

        for method in sorted(scope.methods.values(), key=rank):
            if method in self.model.pending:
                del self.model.pending[method]
                self.walk_function(method, scope)


def _new_instance(result: Value) -> Value:
    """What a call returns is a new object for each call (``a = make(); b = make()``), not
    the instance its body bound (sharing.py)."""
    if result.items is not None:
        items = tuple(replace(item, instance=None) for item in result.items)
        result = replace(result, items=items)
    return replace(result, instance=None) if result.instance is not None else result


def _iterator_of(yielded: list[Value]) -> Value:
    """What a call of a generator function returns: an iterator whose elements are what its
    body yielded, joined."""
    element = join_envs([{"": value} for value in yielded], "unrelated").get("", UNKNOWN)
    return Value(Kind.LOADER, element.place, element=element)


def _sibling_home(model: SemanticModel, node: cst.FunctionDef) -> Home | None:
    """``get_vocab`` of another file calls ``get_status`` beside it: that one is of the same
    home, walked with its imports, and what rules see in it is of that file too."""
    outer = model.homes.get(model.call_stack[-1]) if model.call_stack else None
    if outer is None or outer.functions.get(node.name.value) is not node:
        return None
    model.homes[node] = outer
    return outer


def _joined_returns(returned: list[Value], on_cpu_path: list[bool]) -> Value:
    """What a body returns: the join of its returns. ``if device.type == "cpu": return
    batch``: on a GPU the other returns are the ones taken."""
    gpu_returns = [value for value, cpu in zip(returned, on_cpu_path, strict=True) if not cpu]
    returned = gpu_returns or returned
    return join_envs([{"": value} for value in returned], "unrelated").get("", UNKNOWN)


FIXTURE_SETUPS = ("setUp", "setup_method")
"""A test class's set-up: run before each test on a fresh instance (unittest, pytest)."""


def _runs_on_a_fresh_fixture(node: cst.FunctionDef, parent: Scope) -> bool:
    """A test of a class with a set-up: what another test did to ``self`` (``self.model.cuda()``)
    is not what this one starts from. The class's ``self.*`` are restored after it."""
    is_setup = node.name.value in FIXTURE_SETUPS
    return (
        parent.function == "" and not is_setup and any(s in parent.methods for s in FIXTURE_SETUPS)
    )


def _literal_flags(call: cst.Call) -> tuple[str, ...]:
    """The call's ``True`` / ``False`` arguments, by position or keyword."""
    return tuple(
        f"{arg.keyword.value if arg.keyword else index}={arg.value.value}"
        for index, arg in enumerate(call.args)
        if isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False")
    )


def _brought_back(given: Value | None, final: Value | None) -> bool:
    """A placed module the body moved to the host in place (``model.cpu()``): the same
    instance, now on the host."""
    if given is None or final is None or given.kind is not Kind.MODULE:
        return False
    same = given.instance is not None and final.instance is given.instance
    return same and given.place is Place.DEVICE and final.place is Place.HOST


def _given_module(given: Value | None) -> Value | None:
    """The host module a caller passed (a whole module loaded to the CPU counts: placed by
    ``place(model, device)``); None for anything else."""
    if given is not None and given.source == "checkpoint":
        given = called_module(given)
    if given is None or given.kind is not Kind.MODULE or given.place is Place.DEVICE:
        return None
    return given


def _moved_by_bases(node: cst.ClassDef, model: SemanticModel) -> frozenset[str]:
    """The ``self`` attributes the ``__init__`` of a base class (of this file or of a project
    module) moves (``self.model = self.model.to(self.device)``): the subclass's hook that
    builds them runs before (qfettes' DQN agents' ``declare_networks``)."""
    moved: set[str] = set()
    for base in node.bases:
        name = dotted(base.value) or ""
        found = _class_named(model, name)
        init = method_named(found, "__init__")
        if init is not None:
            moved |= _self_moves(init)
    return frozenset(moved)


def _class_named(model: SemanticModel, name: str) -> cst.ClassDef | None:
    """The class ``name`` of this file, or of the project module this file imports it from
    (``nn.Module`` and other dotted names are a library's)."""
    if model.module is None or not name or "." in name:
        return None
    local, imported = _class_index(model.module)
    if name in local:
        return local[name]
    node = imported.get(name)
    if node is None or model.path is None:
        return None
    where = project_names(node, model.path).get(name)
    parsed = project.load(where[0]) if where is not None else None
    return parsed.classes.get(where[1]) if parsed is not None and where is not None else None


_class_indexes: dict[int, tuple[cst.Module, dict[str, cst.ClassDef], dict[str, cst.ImportFrom]]]
_class_indexes = {}


def _class_index(
    module: cst.Module,
) -> tuple[dict[str, cst.ClassDef], dict[str, cst.ImportFrom]]:
    """The module's classes by name, and the ``from ... import`` that binds each other name:
    read once per module (a file of many classes asks for each of its bases)."""
    cached = _class_indexes.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1], cached[2]
    local: dict[str, cst.ClassDef] = {}
    imported: dict[str, cst.ImportFrom] = {}
    for statement in module.body:
        if isinstance(statement, cst.ClassDef):
            local.setdefault(statement.name.value, statement)
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for node in small:
            if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(bound, cst.Name):
                        imported.setdefault(bound.value, node)
    if len(_class_indexes) > 64:
        _class_indexes.clear()
    _class_indexes[id(module)] = (module, local, imported)
    return local, imported


def _self_moves(function: cst.FunctionDef) -> set[str]:
    """``self.x = self.x.to(d)`` and ``self.x.to(d)`` / ``.cuda()``: the attributes moved."""
    found: set[str] = set()
    for statement in iter_statements(function.body.body):
        value = statement.value if isinstance(statement, cst.Assign | cst.Expr) else None
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
            continue
        receiver = dotted(value.func.value) or ""
        if value.func.attr.value in ("to", "cuda") and receiver.startswith("self."):
            found.add(receiver)
    return found


def _base_scopes(node: cst.ClassDef, known: dict[str, Scope]) -> tuple[Scope, ...]:
    """The scopes of a class's bases that this file defined above it."""
    names = [base.value.value for base in node.bases if isinstance(base.value, cst.Name)]
    return tuple(known[name] for name in names if name in known)


def _inherit_methods(node: cst.ClassDef, scope: Scope, plain: dict[str, Scope]) -> None:
    """``class UniformSampler(ScheduleSampler)``: an instance's call of a method its class
    inherits from a plain class defined above it walks the base's method (the class's own
    methods win, the first base first, as Python looks them up)."""
    for base in node.bases:
        found = plain.get(base.value.value) if isinstance(base.value, cst.Name) else None
        for name, method in found.methods.items() if found is not None else ():
            scope.methods.setdefault(name, method)


def placed_instance(
    scope: Scope, method: cst.FunctionDef, place: Place, home: Home | None
) -> tuple[Scope, dict[str, Value]] | None:
    """A view of a module class's scope for a method called on an instance at ``place``: its
    submodules (``self.base``, built in ``__init__``) are where the instance is,
    as ``.to()`` leaves them; with the placed submodules. None when no submodule would change."""
    if place is not Place.DEVICE:
        return None
    held = {**_inherited_attributes(scope), **scope.env}
    moved = {
        name: value.with_place(place)
        for name, value in held.items()
        if name.startswith("self.")
        and value.place is not place
        and (value.kind is Kind.MODULE or _parameter(name, value))
    }
    owner = _class_of(method, home.parsed.classes) if home is not None else None
    if home is not None and owner is not None:
        # another file's class: its `__init__` was not walked, so read what it builds
        built = weighted_submodules(owner, home.parsed.classes)
        moved.update(
            (name, Value(Kind.MODULE, place, weighted=True))
            for name in built
            if name not in scope.env
        )
    if not moved:
        return None
    placed = Scope(
        parent=scope.parent,
        function="",
        module_class=scope.module_class,
        env={**scope.env, **moved},
        methods=scope.methods,
        bases=scope.bases,
        instance_place=place,
    )
    return placed, moved


def _inherited_attributes(scope: Scope) -> dict[str, Value]:
    """What the ``__init__`` of the class's bases in this file set on ``self`` (``self.bert``
    of ``class Encoder(BertBase)``), the first base first, as Python finds them."""
    found: dict[str, Value] = {}
    for base in scope.bases:
        for name, value in {**_inherited_attributes(base), **base.env}.items():
            found.setdefault(name, value)
    return found


def _parameter(name: str, value: Value) -> bool:
    """``self.alpha_logit = nn.Parameter(...)``: it moves with the module."""
    if value.kind is not Kind.TENSOR or value.place is not Place.UNKNOWN or value.binding is None:
        return False
    assigned = assigned_value(value.binding, name)
    if not isinstance(assigned, cst.Call):
        return False
    return (dotted(assigned.func) or "").rsplit(".", 1)[-1] == "Parameter"


def _class_of(method: cst.FunctionDef, classes: dict[str, cst.ClassDef]) -> cst.ClassDef | None:
    for node in classes.values():
        if isinstance(node.body, cst.IndentedBlock) and method in node.body.body:
            return node
    return None


def keep_attribute_writes(placed: Scope, view: dict[str, Value], scope: Scope) -> None:
    """What the method bound on ``self`` (``self.hidden = ...``) stays bound for the class; the
    submodules the view placed (``view``) stay where the class has them."""
    for name, value in placed.env.items():
        if value is not scope.env.get(name) and value is not view.get(name):
            scope.env[name] = value
