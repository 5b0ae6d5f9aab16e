"""The one walk over a module: statements in program order, scopes, classes, bindings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.classes import ClassFacts
from gpudoc.lint.analysis.events import (
    BindingEvent,
    ClassEvent,
    EventBus,
    FunctionEvent,
    ItemEvent,
    ReturnEvent,
    StatementEvent,
    WalkedCallEvent,
)
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.flow import Env, Join, join_envs, join_of, terminates
from gpudoc.lint.analysis.functions import (
    FunctionSyntax,
    argument_names,
    argument_shapes,
    bind_arguments,
    moves_anything,
    returns_moved,
)
from gpudoc.lint.analysis.homes import Home, load_name, project_modules, project_names
from gpudoc.lint.analysis.names import (
    ImportTable,
    bound_names,
    bound_names_of,
    dotted,
    module_chain_root,
)
from gpudoc.lint.analysis.scope import Scope, parameter_values
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import UNKNOWN, Kind, Place, Value, element_of
from gpudoc.lint.project import ProjectModule

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
MAX_SECOND_ITERATION_DEPTH = 2
"""Loops nested deeper than this are walked once: each level would double the work."""


INSTANCE = "instance:"
"""``Value.source`` of an instance of one of the file's plain classes: ``instance:Trainer``."""


class Analyzer(ClassFacts):
    def __init__(self, imports: ImportTable, bus: EventBus | None = None) -> None:
        super().__init__(imports, bus)
        self.cpu_path_returns: list[list[bool]] = []
        """For each function being walked: whether each of its returns is on the CPU path of
        a device guard of its own body."""
        self.cpu_path_at_entry: list[int] = []
        self.project_module_names: dict[str, Path] = {}
        """Names bound to the project's own modules (``import utils``)."""
        self.plain_classes: dict[str, Scope] = {}
        """The file's classes that are neither modules nor datasets, with their class scope:
        their methods are walked where an instance calls them, with the call's values."""

    def walk_block(self, statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement]) -> None:
        for statement in statements:
            self.walk_statement(statement)
            if self.terminated:
                return  # the rest of the block does not run on this path

    def walk_body(self, body: cst.BaseSuite) -> None:
        if isinstance(body, cst.SimpleStatementSuite):  # `if use_cuda: x = x.cuda()`
            for small in body.body:
                self.walk_small(small, body)
            self.terminated = terminates(body)
            return
        self.walk_block(body.body)

    def walk_statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.walk_small(small, node)
            self.terminated = terminates(node)
        elif isinstance(node, cst.If):
            self.walk_if(node)
        elif isinstance(node, cst.For):
            self.walk_for(node)
        elif isinstance(node, cst.FunctionDef):
            self.define_function(node)
        elif isinstance(node, cst.ClassDef):
            self.walk_class(node)
        elif isinstance(node, cst.With):
            default_device = False
            for item in node.items:
                value = self.eval(item.item)
                if value.kind is Kind.DEVICE and not default_device:  # `with torch.device(d):`
                    default_device = True
                    self.device_contexts.append(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, value, node)
            self.device_context += default_device
            self.walk_body(node.body)
            self.device_context -= default_device
            if default_device:
                self.device_contexts.pop()
        elif isinstance(node, cst.While):
            self.eval(node.test)
            self.walk_loop_body(lambda: self.walk_body(node.body), frozenset())
        elif isinstance(node, cst.Try | cst.TryStar):
            self.walk_try(node)
        elif isinstance(node, cst.SimpleStatementSuite | cst.IndentedBlock):
            self.walk_block(node.body)

    # -- control flow (flow.py) ---------------------------------------------------------------
    def writable_envs(self) -> list[Env]:
        """The environments a path may write: this scope's, and its class's for ``self.*``."""
        envs = [self.scope.env]
        parent = self.scope.parent
        if parent is not None and parent.function == "":
            envs.append(parent.env)
        return envs

    def walk_paths(self, paths: Sequence[Callable[[], None]], join: Join) -> None:
        """Walk each path from the state before them all, then join the paths that fall
        through; when none does, the code after them does not run either. For a
        ``gpu-first`` join the GPU path comes first."""
        envs = self.writable_envs()
        before = [dict(env) for env in envs]
        ends: list[list[Env]] = []
        for path in paths:
            for env, saved in zip(envs, before, strict=True):
                env.clear()
                env.update(saved)
            self.terminated = False
            path()
            if not self.terminated:
                ends.append([dict(env) for env in envs])
        self.terminated = not ends
        for index, env in enumerate(envs):
            env.clear()
            env.update(join_envs([end[index] for end in ends], join) if ends else {})

    def walk_if(self, node: cst.If) -> None:
        self.eval(node.test)
        polarity = self.polarity(node.test)
        guarded = polarity is not None
        orelse = node.orelse

        def body() -> None:
            self.guard_depth += guarded
            self.cpu_path += polarity == "cpu"
            self.branch_tests.append(node.test)
            self.walk_body(node.body)
            self.branch_tests.pop()
            self.cpu_path -= polarity == "cpu"
            self.guard_depth -= guarded

        def other() -> None:
            self.cpu_path += polarity == "gpu"
            self.branch_tests.append(node.test)
            if isinstance(orelse, cst.If):
                self.walk_if(orelse)
            elif orelse is not None:
                self.walk_body(orelse.body)
            self.branch_tests.pop()
            self.cpu_path -= polarity == "gpu"

        paths = (other, body) if polarity == "cpu" else (body, other)
        self.walk_paths(paths, join_of(polarity))

    def walk_for(self, node: cst.For) -> None:
        element = element_of(self.eval(node.iter))

        def iteration() -> None:
            self.bind(node.target, element, node)
            self.walk_body(node.body)

        self.walk_loop_body(iteration, bound_names_of(node.target))
        if node.orelse is not None:
            self.walk_body(node.orelse.body)

    def walk_loop_body(self, iteration: Callable[[], None], rebound: frozenset[str]) -> None:
        """One iteration; then a second one from the state the first left, when it changed a
        name that was bound before the loop (``hidden = hidden.cpu()``): the bugs of the
        second iteration are in that state."""
        envs = self.writable_envs()
        before = [dict(env) for env in envs]
        self.loop_depth += 1
        iteration()
        self.terminated = False
        changed = any(
            name not in rebound and env.get(name) != value
            for env, saved in zip(envs, before, strict=True)
            for name, value in saved.items()
        )
        if changed and self.loop_depth <= MAX_SECOND_ITERATION_DEPTH:
            iteration()
            self.terminated = False
        self.loop_depth -= 1

    def walk_try(self, node: cst.Try | cst.TryStar) -> None:
        def body() -> None:
            self.walk_body(node.body)
            if node.orelse is not None and not self.terminated:
                self.walk_body(node.orelse.body)

        paths: list[Callable[[], None]] = [body]
        paths += [partial(self.walk_body, handler.body) for handler in node.handlers]
        self.walk_paths(paths, "unrelated")
        if node.finalbody is not None:
            terminated, self.terminated = self.terminated, False
            self.walk_body(node.finalbody.body)
            self.terminated = terminated or self.terminated

    def walk_small(
        self, node: cst.BaseSmallStatement, line: cst.SimpleStatementLine | cst.SimpleStatementSuite
    ) -> None:
        if isinstance(node, cst.Assign):
            value = self.eval(node.value)
            self.note_cuda_assignment(node.value)
            for target in node.targets:
                self.bind(target.target, value, line)
        elif isinstance(node, cst.Expr):
            self.walk_expression_statement(node, line)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.bind(node.target, self.eval(node.value), line)
        elif isinstance(node, cst.AugAssign):
            self.eval(node.value)
            if isinstance(node.target, cst.Subscript):
                self.eval(node.target)  # `cm[t, p] += 1` reads and writes at those indices
        elif isinstance(node, cst.Import | cst.ImportFrom):
            self.imports.add(node)
            if self.path is not None:
                self.import_project_names(node)
        elif isinstance(node, cst.Return):
            value = self.eval(node.value) if node.value is not None else UNKNOWN
            if self.returns:
                self.returns[-1].append(value)
                on_cpu_path = self.cpu_path > self.cpu_path_at_entry[-1]
                self.cpu_path_returns[-1].append(on_cpu_path)
            if self.bus.wants("return"):
                self.emit("return", ReturnEvent(node, value))

    def note_cuda_assignment(self, value: cst.BaseExpression) -> None:
        """``device = "cuda"``: a hard-coded device (an IfExp around it is the fallback)."""
        text = string_value(value)
        if text is not None and api.CUDA_LITERAL.match(text):
            self.note_cuda(value, text)
        if isinstance(value, cst.FormattedString) and any(
            isinstance(part, cst.FormattedStringText) and "cuda" in part.value
            for part in value.parts
        ):
            self.flags.per_rank_device = True  # f"cuda:{local_rank}"
            self.flags.device_notion = True

    def walk_expression_statement(
        self, node: cst.Expr, line: cst.SimpleStatementLine | cst.SimpleStatementSuite
    ) -> None:
        value, receiver = self.expression_statement_value(node, line)
        if self.bus.wants("statement"):
            whole_line = line if isinstance(line, cst.SimpleStatementLine) else None
            self.emit("statement", StatementEvent(node, value, receiver, whole_line))

    def expression_statement_value(
        self, node: cst.Expr, line: cst.SimpleStatementLine | cst.SimpleStatementSuite
    ) -> tuple[Value, Value | None]:
        """The statement's value, and for a move or conversion, its receiver's before it."""
        call = node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return self.eval(call), None
        method = call.func.attr.value
        if method not in api.DISCARDABLE_MOVES:
            return self.eval(call), None
        receiver_node = call.func.value
        receiver = self.eval(receiver_node)
        result = self.eval(call)
        name = dotted(module_chain_root(receiver_node))
        tensor = receiver.is_tensorish and not receiver.inplace_to
        if tensor or _tensor_subscript(receiver_node):
            pass  # a tensor's move, discarded: it changes no name
        elif name is not None and method in ("to", "cuda", "cpu", "to_empty"):
            moved = replace(result, kind=receiver.kind, binding=receiver.binding)
            test = self.branch_tests[-1] if self.branch_tests else None
            unrelated = test is not None and self.guard_depth == 0 and not _is_main_test(test)
            newly = receiver.place is not Place.DEVICE and result.place is Place.DEVICE
            if unrelated and receiver.kind is Kind.MODULE and newly:
                moved = replace(moved, moved_if=test, moved_at=line)
            self.assign_name(name, moved)
        return result, receiver

    # -- binding ----------------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, value: Value, statement: cst.CSTNode) -> None:
        if isinstance(target, cst.Name | cst.Attribute):
            name = dotted(target)
            if name is not None:
                self.bind_name(name, target, value, statement)
            return
        if isinstance(target, cst.Tuple | cst.List):
            for name, part in self.target_values(target, value):
                self.bind_name(name, None, part, statement)
            return
        if isinstance(target, cst.Subscript):
            if self.bus.wants("subscript"):
                self.eval(target)  # `x[mask] = 0`: a store at the indices, seen as a subscript
            self.bind_subscript(target, statement)

    def bind_subscript(self, target: cst.Subscript, statement: cst.CSTNode) -> None:
        if self.bus.wants("item"):
            self.emit("item", ItemEvent(target, statement))
        base = dotted(target.value)
        if base is not None:
            held = self.scope.lookup(base)
            if held is not None and held.is_tensorish:
                self.assign_name(base, held.with_place(Place.UNKNOWN))

    def bind_name(
        self, name: str, target: cst.BaseExpression | None, value: Value, statement: cst.CSTNode
    ) -> None:
        previous = self.scope.lookup(name)
        if (
            value.kind is Kind.MODULE
            and value.place is Place.HOST
            and previous is not None
            and previous.is_device_module
        ):
            value = replace(value, stale=True)
        if self.bus.wants("binding"):
            self.emit("binding", BindingEvent(name, target, value, previous, statement))
        cls = self.scope.module_class
        if cls is not None and self.in_init and name.startswith("self."):
            # `self.net1 = nn.Linear(...).to("cuda:0")`: the module places its own parts
            cls.places_itself |= value.kind is Kind.MODULE and value.place is Place.DEVICE
        self.assign_name(name, value.bound_at(statement))

    # -- functions: walked where they are called, with the arguments' values -----------------
    def define_function(self, node: cst.FunctionDef) -> None:
        """A module-level function waits for its calls, a method for its class's walk; a nested
        function is walked where it is defined."""
        if self.scope is self.module_scope:
            self.local_functions[node.name.value] = node
            self.pending[node] = self.module_scope
        elif self.scope.function == "":
            self.scope.methods[node.name.value] = node
            self.pending[node] = self.scope
        else:
            self.walk_function(node, self.scope)

    def call_function(
        self, node: cst.FunctionDef, call: cst.Call, values: list[Value], parent: Scope
    ) -> Value:
        """The value a call of a function of this file returns, its body walked for this call
        (once per shape of arguments). A module the body moves is moved for the caller too."""
        shapes = argument_shapes(values)
        summaries = self.summaries.setdefault(node, {})
        if shapes in summaries:
            return summaries[shapes]
        if node in self.call_stack or len(self.call_stack) >= MAX_CALL_DEPTH:
            return UNKNOWN
        if len(summaries) >= MAX_CONTEXTS:
            return UNKNOWN
        is_method = parent.function == ""
        arguments = bind_arguments(node.params, call, values, is_method)
        self.pending.pop(node, None)
        self.call_stack.append(node)
        self.moved_results.append(call in self.moved_receivers or self.facts_of(node).moved)
        home = self.homes.get(node)
        saved = self.imports, self.local_functions
        if home is not None:  # another file's function: its own imports and siblings
            self.imports, self.local_functions = home.imports, home.functions
            parent = parent if is_method else home.scope
        start = self.step
        try:
            result, scope = self.walk_function(node, parent, arguments)
        finally:
            self.call_stack.pop()
            self.moved_results.pop()
            self.imports, self.local_functions = saved
        summaries[shapes] = result
        if self.bus.wants("walked"):
            self.emit("walked", WalkedCallEvent(node, call, is_method, home is not None, start))
        self.moved_in_place(call, arguments, scope, is_method)
        return result

    def moved_in_place(
        self, call: cst.Call, arguments: dict[str, Value], scope: Scope, is_method: bool
    ) -> None:
        """``def place(model, device): model.to(device)``, or a trainer's ``self.model =
        model.to(device)``: the caller's module moved too (a module moves in place)."""
        owner = scope.parent if scope.parent is not None and scope.parent.function == "" else None
        placed = [
            value.origin
            for env in (scope.env, owner.env if owner is not None else {})
            for value in env.values()
            if value.kind is Kind.MODULE and value.place is Place.DEVICE and value.origin
        ]
        for param, name in argument_names(scope.function_node, call, is_method).items():
            given, final = arguments.get(param), scope.env.get(param)
            if given is None or given.kind is not Kind.MODULE or given.place is Place.DEVICE:
                continue
            placed_here = final is not None and final.kind is Kind.MODULE
            placed_here = placed_here and final is not None and final.place is Place.DEVICE
            if placed_here or (given.origin is not None and given.origin in placed):
                self.assign_name(name, given.with_place(Place.DEVICE))

    def walk_function(
        self,
        node: cst.FunctionDef,
        parent: Scope,
        arguments: dict[str, Value] | None = None,
    ) -> tuple[Value, Scope]:
        """Walk a body; ``arguments`` are the call's values, else parameters are typed by their
        annotations and names. Returns the join of what it returns, and its scope."""
        scope = Scope(parent=parent, function=node.name.value, module_class=parent.module_class)
        scope.function_node = node
        scope.local_names = self.facts_of(node).local_names
        scope.env.update(parameter_values(node.params, self.imports))
        for name, value in (arguments or {}).items():
            if value.kind in (Kind.MODULE, Kind.DEVICE):
                # its binding: where the caller created it (a device the file chose, say)
                scope.env[name] = value
            elif value.kind is not Kind.UNKNOWN:
                scope.env[name] = replace(value, binding=None)  # a move fix stays in the body
        if any(v.kind is Kind.MODULE and v.place is Place.DEVICE for v in scope.env.values()):
            self.flags.places = True  # `def test(model, device, loader)`: for a device
        if node.name.value in ("_apply", "to", "cuda") and parent.module_class is not None:
            parent.module_class.custom_apply = True
        if self.bus.wants("function"):
            self.emit("function", FunctionEvent(node, dict(scope.env)))
        called = arguments is not None
        saved = (self.scope, self.guard_depth, self.terminated, self.loop_depth, self.cpu_path)
        self.scope, self.terminated, self.loop_depth = scope, False, 0
        if not called:
            self.guard_depth = self.cpu_path = 0  # no call site: no guard around it
        self.context_stack.append(node.name.value)
        self.returns.append([])
        self.cpu_path_returns.append([])
        self.cpu_path_at_entry.append(self.cpu_path)
        try:
            self.walk_body(node.body)
        finally:
            returned = self.returns.pop()
            on_cpu_path = self.cpu_path_returns.pop()
            self.cpu_path_at_entry.pop()
            self.context_stack.pop()
            self.scope, self.guard_depth, self.terminated, self.loop_depth, self.cpu_path = saved
        # `if device.type == "cpu": return batch`: on a GPU the other returns are the ones taken
        gpu_returns = [value for value, cpu in zip(returned, on_cpu_path, strict=True) if not cpu]
        returned = gpu_returns or returned
        result = join_envs([{"": value} for value in returned], "unrelated").get("", UNKNOWN)
        return result, scope

    def import_project_names(self, node: cst.Import | cst.ImportFrom) -> None:
        """``from model import Net``, ``import utils``: the project's own function, class or
        module, not a library's."""
        assert self.path is not None
        if isinstance(node, cst.ImportFrom):
            for local, where in project_names(node, self.path).items():
                self.imports.aliases.pop(local, None)
                self.project_imports[local] = where
        for local, path in project_modules(node, self.path).items():
            self.imports.aliases.pop(local, None)
            self.project_imports.pop(local, None)
            self.project_module_names[local] = path

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

    def resolve_project_name(self, local: str) -> None:
        """Read what an imported project name stands for, the first time it matters."""
        where = self.project_imports.pop(local, None)
        found = load_name(*where) if where is not None else None
        if found is None:
            return
        definition, home = found
        if isinstance(definition, cst.FunctionDef):
            self.local_functions[local] = definition
            self.homes[definition] = home
            return
        saved, self.imports = self.imports, home.imports
        try:
            kind = self.class_kind(definition)
        finally:
            self.imports = saved
        if kind is None:  # a plain class (a trainer, a schedule): walked where it is used
            self.plain_classes[local] = self.foreign_class_scope(definition, home)
        elif kind == "dataset":
            self.local_classes[local] = "dataset"
            if moves_anything(definition):  # its batches' place is not known then
                self.device_datasets.add(local)
        elif kind is not None:
            self.local_classes[local] = ModuleClass(local, definition, kind == "lightning")

    def foreign_class_scope(self, node: cst.ClassDef, home: Home) -> Scope:
        """The scope of a plain class of another project module: its methods, walked with
        their home's imports where this file's instances call them."""
        scope = Scope(parent=home.scope, function="")
        for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
            if isinstance(statement, cst.FunctionDef):
                scope.methods[statement.name.value] = statement
                self.homes[statement] = home
        return scope

    def project_files(self) -> list[ProjectModule]:
        """The project modules whose functions or methods the walk went through."""
        found: dict[int, ProjectModule] = {}
        for home in self.homes.values():
            found.setdefault(id(home.parsed), home.parsed)
        return list(found.values())

    def facts_of(self, node: cst.FunctionDef) -> FunctionSyntax:
        """What a function's text says (its local names, whether it returns moved tensors):
        read once, however often its body is walked."""
        known = self.syntax.get(node)
        if known is None:
            known = self.syntax[node] = FunctionSyntax(bound_names(node), returns_moved(node))
        return known

    def walk_pending(self) -> None:
        """Functions and methods no call in this file reached: walked on their own."""
        while self.pending:
            node, parent = next(iter(self.pending.items()))
            del self.pending[node]
            self.walk_function(node, parent)

    def walk_class(self, node: cst.ClassDef) -> None:
        module_class = self.register_class(node)
        if self.bus.wants("class"):
            self.emit("class", ClassEvent(node, module_class))
        scope = Scope(parent=self.module_scope, function="", module_class=module_class)
        saved = self.scope
        self.scope = scope
        is_dataset = self.local_classes.get(node.name.value) == "dataset"
        try:
            self.walk_body(node.body)
            if module_class is None and not is_dataset:
                # a plain class (a trainer, a metric, a noise schedule): its methods wait for
                # the calls of its instances, like the file's functions wait for theirs
                self.plain_classes[node.name.value] = scope
            else:
                self.walk_methods(node, scope)
        finally:
            self.scope = saved
            if is_dataset:
                self.dataset_stack.pop()

    # -- instances of the file's plain classes ------------------------------------------------
    def eval_named_call(self, node: cst.Call, name: str) -> Value:
        """``Trainer(model)`` runs ``__init__`` with the call's values; ``predictor(images)``
        runs the instance's ``__call__``."""
        if name in self.project_imports:
            self.resolve_project_name(name)
        held = self.scope.lookup(name)
        scope = self.plain_classes.get(name) if held is None else None
        if scope is not None:
            if self.call_method(scope, "__init__", node) is None:
                self.eval_args(node)
            return Value(source=INSTANCE + name)
        if held is not None and held.source.startswith(INSTANCE):
            result = self.call_method(self.instance_scope(held), "__call__", node)
            if result is not None:
                return result
        return super().eval_named_call(node, name)

    def eval_method(self, node: cst.Call, func: cst.Attribute) -> Value:
        """``trainer.step(batch)`` (or ``Trainer(model).fit(loader)``) walks the method with
        the call's values; ``utils.helper(x)`` calls a project module's function."""
        member = self.project_member(func)
        if member is not None:
            return self.eval_named_call(node, member)
        name = dotted(func.value)
        held = self.scope.lookup(name) if name is not None else None
        constructor = func.value
        if isinstance(constructor, cst.Call) and isinstance(constructor.func, cst.Name):
            scope = self.plain_classes.get(constructor.func.value)
            if scope is not None and func.attr.value in scope.methods:
                held = self.eval(constructor)
        if held is not None and held.source.startswith(INSTANCE):
            result = self.call_method(self.instance_scope(held), func.attr.value, node, held)
            if result is not None:
                return result
        return super().eval_method(node, func)

    def instance_scope(self, instance: Value) -> Scope | None:
        return self.plain_classes.get(instance.source[len(INSTANCE) :])

    def call_method(
        self, scope: Scope | None, method: str, node: cst.Call, receiver: Value | None = None
    ) -> Value | None:
        """The value a method of a plain class returns for this call, None when the class has
        no such method (then nothing is evaluated)."""
        function = scope.methods.get(method) if scope is not None else None
        if scope is None or function is None:
            return None
        return self.call_function(function, node, self.eval_args(node, receiver), scope)

    def walk_methods(self, node: cst.ClassDef, scope: Scope) -> None:
        """``__init__`` first (it sets ``self.*``), then the methods that drive the others
        (``forward``, ``fit``, ...), then the rest in order: a helper method that one of them
        calls is walked there, in that caller's context, and not again on its own."""

        def rank(method: cst.FunctionDef) -> int:
            name = method.name.value
            return 0 if name == "__init__" else 1 if name in ENTRY_METHODS else 2

        for method in sorted(scope.methods.values(), key=rank):
            if method in self.pending:
                del self.pending[method]
                self.walk_function(method, scope)


def _tensor_subscript(node: cst.BaseExpression) -> bool:
    """``batch["x"].to(device)`` as a statement: an element of a batch, never a module."""
    if not isinstance(node, cst.Subscript):
        return False
    base = (dotted(node.value) or "").rsplit(".", 1)[-1]
    return base.lower() in ("batch", "data", "inputs", "sample", "samples", "tensors", "x")


def _is_main_test(test: cst.BaseExpression) -> bool:
    return isinstance(test, cst.Comparison) and dotted(test.left) == "__name__"


def analyze(module: cst.Module, bus: EventBus | None = None, path: str | None = None) -> Analyzer:
    """Walk ``module``; ``path`` is its file, whose project modules its imports may name."""
    from gpudoc.lint.analysis.names import ImportTable

    analyzer = Analyzer(ImportTable(), bus)
    analyzer.path = path
    analyzer.module = module
    analyzer.walk_block(module.body)
    analyzer.terminated = False
    analyzer.walk_pending()
    return analyzer


__all__ = ["UNKNOWN", "Analyzer", "analyze"]
