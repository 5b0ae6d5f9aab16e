"""Statements in program order: the dispatch to compound statements (compound.py), function
and class definitions (bodies.py), and the simple statements themselves."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.binding import Binder
from gpudoc.lint.analysis.bodies import Bodies
from gpudoc.lint.analysis.compound import Compound, values_moved_by_comprehension
from gpudoc.lint.analysis.events import AugmentedEvent, ReturnEvent, StatementEvent
from gpudoc.lint.analysis.expressions import Evaluator
from gpudoc.lint.analysis.flow import counts_several_gpus, terminates
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import assigned_value, calls_in, dotted, module_chain_root
from gpudoc.lint.analysis.placement import Placement
from gpudoc.lint.analysis.project_names import ProjectNames
from gpudoc.lint.analysis.values import UNKNOWN, Kind, Place, Value, replace

Line = cst.SimpleStatementLine | cst.SimpleStatementSuite


class StatementWalker:
    """Walks a block's statements in order, stopping where the path ends (a return, a raise,
    a break); compound statements go to ``compound``, definitions to ``bodies``."""

    def __init__(
        self,
        model: SemanticModel,
        evaluator: Evaluator,
        placement: Placement,
        bodies: Bodies,
        projects: ProjectNames,
    ) -> None:
        self.model = model
        self.evaluator = evaluator
        self.placement = placement
        self.bodies = bodies
        self.projects = projects
        self.binder = Binder(model, evaluator)
        self.compound = Compound(model, evaluator, self.binder, self)

    def walk_block(self, statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement]) -> None:
        model = self.model
        on_cpu = 0
        for statement in statements:
            self.walk_statement(statement)
            if model.terminated:
                break  # the rest of the block does not run on this path
            if model.rest_on_cpu is not None:
                # after `if gpu: return ...`, the rest of the block is the CPU path
                model.cpu_path += 1
                model.cpu_path_tests.append(model.rest_on_cpu)
                model.cpu_path_calls.append(len(model.call_stack))
                model.rest_on_cpu = None
                on_cpu += 1
        model.cpu_path -= on_cpu
        if on_cpu:
            del model.cpu_path_tests[-on_cpu:]
            del model.cpu_path_calls[-on_cpu:]

    def walk_body(self, body: cst.BaseSuite) -> None:
        if isinstance(body, cst.SimpleStatementSuite):  # `if use_cuda: x = x.cuda()`
            for small in body.body:
                self.walk_small(small, body)
            self.model.terminated = terminates(body)
            return
        self.walk_block(body.body)

    def walk_statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.walk_small(small, node)
            self.model.terminated = terminates(node)
        elif isinstance(node, cst.FunctionDef):
            self.bodies.define_function(node)
        elif isinstance(node, cst.ClassDef):
            self.bodies.walk_class(node)
        elif isinstance(node, cst.SimpleStatementSuite | cst.IndentedBlock):
            self.walk_block(node.body)
        else:
            self.compound.walk(node)

    def walk_small(self, node: cst.BaseSmallStatement, line: Line) -> None:
        if isinstance(node, cst.Assign):
            # `model = model.to(device)` in one branch, as the statement form below; what
            # `model` held is read first: evaluating the move places it already
            moves = bool(self.model.branch_tests) and _moves(node.value)
            names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
            before = {name: self.model.scope.lookup(name) for name in names} if moves else {}
            value = self.evaluator.eval(node.value)
            self.placement.note_cuda_assignment(node.value)
            for target in node.targets:
                bound = value
                if isinstance(target.target, cst.Name) and moves:
                    bound = self.conditional_move(before[target.target.value], value, line)
                self.binder.bind(target.target, bound, line)
            self.compound.place_dict_values(values_moved_by_comprehension(node.value))
        elif isinstance(node, cst.Expr):
            self.walk_expression_statement(node, line)
            self.compound.place_dict_values(values_moved_by_comprehension(node.value))
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.binder.bind(node.target, self.evaluator.eval(node.value), line)
        elif isinstance(node, cst.AugAssign):
            added = self.evaluator.eval(node.value)
            updating = node.target
            if isinstance(updating, cst.Name | cst.Subscript) and self.model.bus.wants("augmented"):
                # `total += err`, also `mask[idx[k]] += m[k]`: updated in place, on its device
                base = updating.value if isinstance(updating, cst.Subscript) else updating
                updated = self.model.scope.lookup(dotted(base) or "") or UNKNOWN
                self.model.emit("augmented", AugmentedEvent(node, updated, added))
            if isinstance(node.target, cst.Name) and added.is_tensorish:
                held = self.model.scope.lookup(node.target.value)
                if held is None or held.kind is Kind.SCALAR:
                    # `mse = 0` then `mse += (a - b) ** 2`: a number plus a tensor is a tensor
                    self.binder.bind(node.target, Value(Kind.TENSOR, added.place), line)
            if isinstance(node.target, cst.Subscript):
                # `cm[t, p] += 1` reads and writes at those indices
                self.evaluator.eval(node.target)
        elif isinstance(node, cst.Import | cst.ImportFrom):
            self.model.imports.add(node)
            if self.model.path is not None:
                self.projects.import_project_names(node)
        elif isinstance(node, cst.Return):
            self.walk_return(node)
        elif isinstance(node, cst.Assert):
            self.note_asserted_cuda(node.test)

    def note_asserted_cuda(self, test: cst.BaseExpression) -> None:
        """``assert torch.cuda.is_available()`` initialises CUDA as any other ``torch.cuda``
        call (yolov5's select_device sets CUDA_VISIBLE_DEVICES after one: ultralytics/yolov5
        #6431). Only that: the test is not a CPU path, so nothing else of it is read."""
        for call in calls_in(test):
            qualified = self.model.imports.qualify(call.func) or ""
            if qualified.startswith("torch.cuda.") and qualified != "torch.cuda.device_count":
                self.model.scope.cuda_initialised = True

    def walk_return(self, node: cst.Return) -> None:
        model = self.model
        value = self.evaluator.eval(node.value) if node.value is not None else UNKNOWN
        if model.returns:
            model.returns[-1].append(value)
            model.cpu_path_returns[-1].append(model.cpu_path > model.cpu_path_at_entry[-1])
        if model.bus.wants("return"):
            model.emit("return", ReturnEvent(node, value))

    def walk_expression_statement(self, node: cst.Expr, line: Line) -> None:
        value, receiver = self.expression_statement_value(node, line)
        if self.model.bus.wants("statement"):
            whole_line = line if isinstance(line, cst.SimpleStatementLine) else None
            self.model.emit("statement", StatementEvent(node, value, receiver, whole_line))

    def expression_statement_value(self, node: cst.Expr, line: Line) -> tuple[Value, Value | None]:
        """The statement's value, and for a move or conversion, its receiver's before it."""
        call = node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return self.evaluator.eval(call), None
        method = call.func.attr.value
        if method in MODE_SWITCHES and isinstance(call.func.value, cst.Name) and _mode_only(call):
            self.note_mode_switch(call.func.value.value)
        if method not in api.DISCARDABLE_MOVES or self.model.project_member(call.func):
            # `utils.cuda([G])`: a function of the project's `utils` module, not a move of it
            return self.evaluator.eval(call), None
        receiver_node = call.func.value
        receiver = self.evaluator.eval(receiver_node)
        result = self.evaluator.eval(call)
        name = dotted(module_chain_root(receiver_node))
        tensor = receiver.is_tensorish and not receiver.inplace_to
        if tensor or _tensor_subscript(receiver_node):
            pass  # a tensor's move, discarded: it changes no name
        elif name is not None and method in ("to", "cuda", "cpu", "to_empty"):
            moved = replace(result, kind=receiver.kind, binding=receiver.binding)
            moved = self.conditional_move(receiver, moved, line)
            self.model.assign_name(name, moved)
            self.move_global(name, receiver, moved)
        return result, receiver

    def note_mode_switch(self, name: str) -> None:
        """``model.eval()`` on what another library's call returned (``blip_itm(...)``): only
        a module switches modes, so the name holds one, of unknown place."""
        held = self.model.scope.lookup(name)
        if held is None or held.kind is not Kind.UNKNOWN or held.binding is None:
            return
        made = assigned_value(held.binding, name)  # `model = blip_itm(...)`
        if not isinstance(made, cst.Call) or self._of_the_project(made.func):
            return  # the project's own class (`policy = DDPG(...)`) is read, not guessed
        self.model.assign_name(name, replace(held, kind=Kind.MODULE, weighted=True))

    def _of_the_project(self, func: cst.BaseExpression) -> bool:
        """A class or function of this file or of the project's modules."""
        model = self.model
        root = dotted(func) or ""
        first = root.split(".", 1)[0]
        # before `local_class`, which reads (and so forgets) a project import it resolves
        if first in model.project_imports or first in model.project_module_names:
            return True
        if first in model.local_functions or first in model.plain_classes:
            return True
        if model.local_class(first) is not None:
            return True
        return isinstance(func, cst.Attribute) and model.project_member(func) is not None

    def move_global(self, name: str, before: Value, after: Value) -> None:
        """``model.to(device)`` in ``train()``, run for a call, where ``model`` is the
        module's: the one object moves, for the functions ``train()`` calls next too."""
        model = self.model
        module = model.module_scope
        if model.scope is module or "." in name:
            return
        if before.kind is not Kind.MODULE or module.env.get(name) is None:
            return
        if name in model.scope.local_names:
            return  # the function's own name for it (its parameters among them)
        enclosing = model.scope.parent
        while enclosing is not None and enclosing is not module:
            if enclosing.function is not None and name in enclosing.env:
                return  # a name of an enclosing function, not the module's (views aside)
            enclosing = enclosing.parent
        model.scope.moved_globals[name] = after

    def conditional_move(self, before: Value | None, after: Value, line: Line) -> Value:
        """A module newly moved to the device inside an ``if`` about something else: placed on
        some paths only, which the join after the ``if`` keeps (flow.join_values)."""
        test = self.model.branch_tests[-1] if self.model.branch_tests else None
        # `if torch.cuda.device_count() > 1:` guards CUDA calls, but one GPU takes the other path
        guarded = self.model.guard_depth > 0 and not (test and counts_several_gpus(test))
        if test is None or guarded or _is_main_test(test):
            return after
        placed = before is not None and before.kind is Kind.MODULE and before.place is Place.DEVICE
        newly = after.kind is Kind.MODULE and after.place is Place.DEVICE and not placed
        return replace(after, moved_if=test, moved_at=line) if newly else after


MODE_SWITCHES = frozenset({"eval", "train"})


def _mode_only(call: cst.Call) -> bool:
    """``model.eval()``, ``model.train()``, ``model.train(False)``: ``nn.Module``'s mode switch,
    not an agent's ``policy.train(replay_buffer, iterations)``."""
    if not call.args:
        return True
    if len(call.args) != 1:
        return False
    arg = call.args[0]
    named = arg.keyword is None or arg.keyword.value == "mode"
    return named and dotted(arg.value) in ("True", "False")


def _tensor_subscript(node: cst.BaseExpression) -> bool:
    """``batch["x"].to(device)`` as a statement: an element of a batch, never a module."""
    if not isinstance(node, cst.Subscript):
        return False
    base = (dotted(node.value) or "").rsplit(".", 1)[-1]
    return base.lower() in ("batch", "data", "inputs", "sample", "samples", "tensors", "x")


def _moves(node: cst.BaseExpression) -> bool:
    """``m.to(device)``, ``DataParallel(m).cuda()``, ``DDP(m.to(device))``: an expression
    that moves what it builds or wraps (not a plain alias of a placed module)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute):
        if func.attr.value in ("to", "cuda", "to_empty"):
            return True
        if _moves(func.value):
            return True
    return any(_moves(arg.value) for arg in node.args)


def _is_main_test(test: cst.BaseExpression) -> bool:
    return isinstance(test, cst.Comparison) and dotted(test.left) == "__name__"
