"""Compound statements: ``if``, ``for``, ``while``, ``with``, ``try``. Each path is walked from
the state before them all and the paths that fall through are joined (flow.py); a loop body is
walked a second time when its first iteration changed what a name held before the loop."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial

import libcst as cst

from gpudoc.lint.analysis.binding import Binder
from gpudoc.lint.analysis.bodies import BlockWalker
from gpudoc.lint.analysis.expressions import Evaluator
from gpudoc.lint.analysis.flow import Env, Join, Polarity, join_envs, truth_on_cpu
from gpudoc.lint.analysis.functions import DEVICE_FLAG, OFF_FLAG
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import bound_names_of, dotted, iter_statements
from gpudoc.lint.analysis.narrowing import narrowed, type_test_arms
from gpudoc.lint.analysis.placement import SETTINGS
from gpudoc.lint.analysis.values import (
    PLACED_MODULES,
    Kind,
    Place,
    Value,
    element_of,
    replace,
)
from gpudoc.lint.visit import walk

MAX_SECOND_ITERATION_DEPTH = 2
"""Loops nested deeper than this are walked once: each level would double the work."""


class Compound:
    def __init__(
        self,
        model: SemanticModel,
        evaluator: Evaluator,
        binder: Binder,
        statements: BlockWalker,
    ) -> None:
        self.model = model
        self.evaluator = evaluator
        self.binder = binder
        self.statements = statements

    def walk(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.If):
            self.walk_if(node)
        elif isinstance(node, cst.For):
            self.walk_for(node)
        elif isinstance(node, cst.With):
            self.walk_with(node)
        elif isinstance(node, cst.While):
            self.evaluator.eval(node.test)
            self.walk_loop_body(lambda: self.statements.walk_body(node.body), frozenset())
        elif isinstance(node, cst.Try | cst.TryStar):
            self.walk_try(node)

    def walk_with(self, node: cst.With) -> None:
        model = self.model
        default_device = False
        for item in node.items:
            value = self.evaluator.eval(item.item)
            if value.kind is Kind.DEVICE and not default_device:  # `with torch.device(d):`
                default_device = True
                model.device_contexts.append(item.item)
            if item.asname is not None:
                self.binder.bind(item.asname.name, value, node)
        model.device_context += default_device
        self.statements.walk_body(node.body)
        model.device_context -= default_device
        if default_device:
            model.device_contexts.pop()

    def writable_envs(self) -> list[Env]:
        """The environments a path may write: this scope's, and its class's for ``self.*``."""
        envs = [self.model.scope.env]
        parent = self.model.scope.parent
        if parent is not None and parent.function == "":
            envs.append(parent.env)
        return envs

    def walk_paths(
        self, paths: Sequence[Callable[[], None]], join: Join | Callable[[], Join]
    ) -> int:
        """Walk each path from the state before them all, then join the paths that fall
        through; when none does, the code after them does not run either. For a
        ``gpu-first`` join the GPU path comes first."""
        envs = self.writable_envs()
        before = [dict(env) for env in envs]
        ends: list[list[Env]] = []
        # CUDA initialised on one path is not initialised on the others (`if distributed:
        # set_device(...)` / `else: os.environ["CUDA_VISIBLE_DEVICES"] = ...`); after them, on some
        scope = self.model.scope
        initialised, after = scope.cuda_initialised, scope.cuda_initialised
        for path in paths:
            for env, saved in zip(envs, before, strict=True):
                env.clear()
                env.update(saved)
            self.model.terminated = False
            scope.cuda_initialised = initialised
            path()
            after = after or scope.cuda_initialised
            if not self.model.terminated:
                ends.append([dict(env) for env in envs])
        scope.cuda_initialised = after
        self.model.terminated = not ends
        if callable(join):
            join = join()
        for index, env in enumerate(envs):
            env.clear()
            joined = join_envs([end[index] for end in ends], join, before[index])
            env.update(joined if ends else {})
        return len(ends)

    def off_flag_truth(self, test: cst.BaseExpression) -> bool | None:
        """``if cuda:`` (False) or ``if not cuda:`` (True) where this call turned the device
        flag off (``cuda=False`` passed or left at its default); None otherwise."""
        negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        name = test.expression if isinstance(test, cst.UnaryOperation) and negated else test
        if not isinstance(name, cst.Name):
            return None
        held = self.model.scope.lookup(name.value)
        return negated if held is not None and held.source == OFF_FLAG else None

    def passed_flag_polarity(self, test: cst.BaseExpression) -> Polarity | None:
        """``if use_prefetcher:`` where this call passed ``use_prefetcher=not args.no_cuda``:
        the path the switch stands for (flipped under ``not``)."""
        negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        name = test.expression if isinstance(test, cst.UnaryOperation) and negated else test
        if not isinstance(name, cst.Name):
            return None
        held = self.model.scope.lookup(name.value)
        if held is None or not held.source.startswith(DEVICE_FLAG):
            return None
        gpu = held.source.endswith("gpu") != negated
        return "gpu" if gpu else "cpu"

    def walk_if(self, node: cst.If) -> None:
        self.evaluator.eval(node.test)
        model = self.model
        polarity = model.polarity(node.test) or self.passed_flag_polarity(node.test)
        guarded = polarity is not None
        # `if attr.device != torch.device("cuda"): attr = attr.to("cuda")` (latent
        # diffusion's samplers): a test of where a tensor is guards only its GPU arm; the other
        # runs on every machine without one
        tensor_test = guarded and _tensor_device_test(node.test)
        body_guard = polarity == "gpu" if tensor_test else guarded
        # the other path of a test that picks a GPU is no CPU path
        cpu_side = None if model.picks_a_gpu(node.test) else polarity
        orelse = node.orelse
        # `if isinstance(x, torch.Tensor): ... else: np.copy(x)`: no tensor on one arm
        when_true, when_false = type_test_arms(node.test, model.qualify)

        flag = self.flag_of(node.test) if polarity is None else None
        placed_in_body: list[set[str]] = []

        def body() -> None:
            model.guard_depth += body_guard
            self.enter_cpu_path(node.test, cpu_side == "cpu")
            model.gpu_path += polarity == "gpu"
            model.branch_tests.append(node.test)
            with narrowed(model.scope.env, when_true), self.moved_with(flag):
                self.statements.walk_body(node.body)
            if flag is not None:
                placed_in_body[:] = [
                    {name for name, value in env.items() if value.place is Place.DEVICE}
                    for env in self.writable_envs()
                ]
            model.branch_tests.pop()
            model.gpu_path -= polarity == "gpu"
            self.leave_cpu_path(cpu_side == "cpu")
            model.guard_depth -= body_guard

        def other() -> None:
            # `if cpu: ... else: net.cuda()`: the other arm of a CPU test is the GPU's, guarded
            model.guard_depth += polarity == "cpu"
            self.enter_cpu_path(node.test, cpu_side == "gpu")
            model.gpu_path += polarity == "cpu"
            model.branch_tests.append(node.test)
            with narrowed(model.scope.env, when_false):
                if isinstance(orelse, cst.If):
                    self.walk_if(orelse)
                elif orelse is not None:
                    self.statements.walk_body(orelse.body)
            model.branch_tests.pop()
            model.gpu_path -= polarity == "cpu"
            self.leave_cpu_path(cpu_side == "gpu")
            model.guard_depth -= polarity == "cpu"

        paths: tuple[Callable[[], None], ...] = (
            (other, body) if polarity == "cpu" else (body, other)
        )
        truth = truth_on_cpu(node.test, model.polarity, model.scope.lookup)
        if truth is None:  # `if cuda:` in a call that passes `cuda=False`
            truth = self.off_flag_truth(node.test)
        if truth is not None:  # a GPU path that cannot run with this call's CPU device
            paths = (body,) if truth else (other,)
        # read after the paths: CUDA on the CPU path shows the test picks a GPU
        through = self.walk_paths(paths, lambda: model.join_after(node.test))
        if flag is not None and placed_in_body:
            self.note_moved_with(flag, placed_in_body)
        # `if torch.cuda.is_available(): return z.cuda()`: what follows runs on the CPU (an
        # `elif` of another test decides nothing of the kind for the whole `if`)
        gpu_arm_ended = through == 1 and len(paths) == 2 and orelse is None
        model.rest_on_cpu = node.test if gpu_arm_ended and cpu_side == "gpu" else None
        if through == 1 and len(paths) == 2:
            # `elif args.loss == "triplet": criterion = ....cuda()` / `else: raise`: the code
            # after runs only where the surviving arm ran, so its moves are unconditional there
            for env in self.writable_envs():
                for name, value in env.items():
                    if value.moved_if is node.test:
                        env[name] = value.unconditional()

    def flag_of(self, test: cst.BaseExpression) -> tuple[str, cst.CSTNode | None] | None:
        """``if av:``, ``if self.use_aux:``: a plain flag, with the statement that bound it."""
        if not isinstance(test, cst.Name | cst.Attribute):
            return None
        name = dotted(test)
        if name is None:
            return None
        held = self.model.scope.lookup(name)
        return name, held.binding if held is not None else None

    def note_moved_with(
        self, flag: tuple[str, cst.CSTNode | None], placed_in_body: list[set[str]]
    ) -> None:
        """Tensors on the device where the body of ``if flag:`` ended (``placed_in_body``, per
        environment), and on some paths only after it: a later ``if`` of the same flag runs
        where they were moved."""
        for env, placed in zip(self.writable_envs(), placed_in_body, strict=True):
            for name, value in env.items():
                if value.place is Place.MIXED and name in placed:
                    env[name] = replace(value, mixed_under=flag)

    @contextmanager
    def moved_with(self, flag: tuple[str, cst.CSTNode | None] | None) -> Iterator[None]:
        """In the body of ``if flag:``, what an earlier ``if`` of the same flag moved is on the
        device (unless the body binds it again)."""
        if flag is None:  # nearly every `if`: nothing to narrow
            yield
            return
        narrow: list[tuple[Env, str, Value, Value]] = []
        for env in self.writable_envs():
            for name, value in env.items():
                under = value.mixed_under
                if under is not None and under[0] == flag[0] and under[1] is flag[1]:
                    narrow.append((env, name, value, value.with_place(Place.DEVICE)))
        for env, name, _, placed in narrow:
            env[name] = placed
        try:
            yield
        finally:
            for env, name, value, placed in narrow:
                if env.get(name) is placed:
                    env[name] = value

    def enter_cpu_path(self, test: cst.BaseExpression, entered: bool) -> None:
        if entered:
            self.model.cpu_path += 1
            self.model.cpu_path_tests.append(test)
            self.model.cpu_path_calls.append(len(self.model.call_stack))

    def leave_cpu_path(self, entered: bool) -> None:
        if entered:
            self.model.cpu_path -= 1
            self.model.cpu_path_tests.pop()
            self.model.cpu_path_calls.pop()

    def walk_for(self, node: cst.For) -> None:
        element = element_of(self.evaluator.eval(node.iter))

        def iteration() -> None:
            self.binder.bind(node.target, element, node)
            self.statements.walk_body(node.body)

        self.walk_loop_body(iteration, bound_names_of(node.target))
        self.place_dict_values(values_moved_by_loop(node))
        moved = items_moved_in_place(node)
        held = self.model.scope.lookup(moved) if moved is not None else None
        if moved is not None and held is not None and held.is_tensorish:
            # `for k, v in batch.items(): batch[k] = v.to(device)`: every tensor of it moved
            self.model.assign_name(moved, held.with_place(Place.DEVICE))
        if node.orelse is not None:
            self.statements.walk_body(node.orelse.body)

    def place_dict_values(self, owner: str | None) -> None:
        """The modules of a dict (a ``Munch`` of networks) each moved in place: members read
        from it (``nets.diffusion``) are placed modules. A dict of tensors is not moved so."""
        held = self.model.scope.lookup(owner) if owner is not None else None
        if owner is None or (held is not None and held.is_tensorish):
            return
        placed = Value(Kind.MODULE, Place.DEVICE, weighted=True, source=PLACED_MODULES)
        self.model.assign_name(owner, placed)

    def walk_loop_body(self, iteration: Callable[[], None], rebound: frozenset[str]) -> None:
        """One iteration; then a second one from the state the first left, when it changed a
        name that was bound before the loop (``hidden = hidden.cpu()``): the bugs of the
        second iteration are in that state."""
        envs = self.writable_envs()
        before = [dict(env) for env in envs]
        self.model.loop_depth += 1
        iteration()
        self.model.terminated = False
        changed = any(
            name not in rebound and env.get(name) != value
            for env, saved in zip(envs, before, strict=True)
            for name, value in saved.items()
        )
        if changed and self.model.loop_depth <= MAX_SECOND_ITERATION_DEPTH:
            iteration()
            self.model.terminated = False
        self.model.loop_depth -= 1

    def walk_try(self, node: cst.Try | cst.TryStar) -> None:
        def body() -> None:
            self.statements.walk_body(node.body)
            if node.orelse is not None and not self.model.terminated:
                self.statements.walk_body(node.orelse.body)

        paths: list[Callable[[], None]] = [body]
        paths += [partial(self.statements.walk_body, handler.body) for handler in node.handlers]
        self.walk_paths(paths, "unrelated")
        if node.finalbody is not None:
            terminated, self.model.terminated = self.model.terminated, False
            self.statements.walk_body(node.finalbody.body)
            self.model.terminated = terminated or self.model.terminated


def values_moved_by_comprehension(value: cst.BaseExpression) -> str | None:
    """``[nets[key].to(device) for key in nets]`` (StyleTTS2, StarGAN-v2): the name of the dict
    whose values a comprehension moves one by one, else None. Modules move in place; what
    the list holds is thrown away."""
    if not isinstance(value, cst.ListComp | cst.GeneratorExp | cst.SetComp):
        return None
    clause = value.for_in
    if clause.inner_for_in is not None or not isinstance(clause.target, cst.Name):
        return None
    return _keyed_move(value.elt, clause.target.value, clause.iter)


def values_moved_by_loop(node: cst.For) -> str | None:
    """``for key in nets: nets[key].to(device)``: the dict whose values the loop moves."""
    if not isinstance(node.target, cst.Name) or not isinstance(node.body, cst.IndentedBlock):
        return None
    for statement in iter_statements(node.body.body):
        if isinstance(statement, cst.Expr):
            owner = _keyed_move(statement.value, node.target.value, node.iter)
            if owner is not None:
                return owner
    return None


def _keyed_move(expr: cst.BaseExpression, key: str, iterated: cst.BaseExpression) -> str | None:
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
        return None
    if expr.func.attr.value not in ("to", "cuda"):
        return None
    item = expr.func.value
    if not isinstance(item, cst.Subscript) or len(item.slice) != 1:
        return None
    index = item.slice[0].slice
    if not isinstance(index, cst.Index) or dotted(index.value) != key:
        return None
    owner = dotted(item.value)
    keys = (
        iterated.func.value
        if isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Attribute)
        and iterated.func.attr.value == "keys"
        else iterated
    )
    return owner if owner is not None and dotted(keys) == owner else None


def items_moved_in_place(node: cst.For) -> str | None:
    """``for k, v in batch.items(): batch[k] = v.to(device)`` (or ``= to_var(v)``, a helper
    whose name or body says it moves, or ``v.cuda()``), possibly under an ``if
    torch.is_tensor(v):``: the name of the dict whose items the loop moves, else None."""
    iterated = node.iter
    if not (isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute)):
        return None
    if iterated.func.attr.value != "items" or not isinstance(node.target, cst.Tuple):
        return None
    names = [dotted(element.value) for element in node.target.elements]
    owner = dotted(iterated.func.value)
    if owner is None or len(names) != 2 or None in names:
        return None
    key, item = names
    for statement in iter_statements(node.body.body):
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
            continue
        target = statement.targets[0].target
        if not isinstance(target, cst.Subscript) or dotted(target.value) != owner:
            continue
        index = target.slice[0].slice if len(target.slice) == 1 else None
        if not isinstance(index, cst.Index) or dotted(index.value) != key:
            continue
        if _moves(statement.value, item or ""):
            return owner
    return None


def _moves(value: cst.BaseExpression, item: str) -> bool:
    """``v.to(device)``, ``v.cuda()``, ``to_var(v)`` / ``to_device(v, device)``."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
        return dotted(func.value) == item
    name = (dotted(func) or "").rsplit(".", 1)[-1].lower()
    given = [dotted(arg.value) for arg in value.args]
    return item in given and any(word in name for word in ("cuda", "device", "var", "gpu"))


def _tensor_device_test(test: cst.BaseExpression) -> bool:
    """``x.device != torch.device("cuda")``, ``x.is_cuda``: a test of where a tensor is, not
    of the machine (``args.device``, ``config.device`` are the run's settings)."""
    found = _DeviceReads()
    walk(test, found)
    return found.tensor


class _DeviceReads(cst.CSTVisitor):
    def __init__(self) -> None:
        self.tensor = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value not in ("device", "is_cuda"):
            return
        owner = (dotted(node.value) or "").rsplit(".", 1)[-1]
        if owner not in ("torch", "cuda") and not SETTINGS.match(owner):
            self.tensor = True
