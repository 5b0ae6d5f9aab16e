"""Code that only runs in a multi-process job: after ``if world_size == 1: return`` (or
``if not dist.is_initialized(): return``), or under ``if args.distributed:``. Such code runs
once a process group exists, in practice NCCL's, which needs a GPU per process: a hard-coded
``.cuda()`` there is not a script's CPU path breaking (torchvision's reference ``all_gather``).
Also what follows a function's joining an NCCL group (the DDP tutorial's ``setup(rank,
world_size)``)."""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from gpudoc.lint.analysis.flow import terminates
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.rules._helpers import backend
from gpudoc.lint.visit import code_ids

DISTRIBUTED = re.compile(r"world_size|distributed|is_initialized|dist_avail|\bddp\b", re.I)


def distributed_only_ids(function: cst.FunctionDef | cst.If) -> set[int]:
    """ids of the nodes of ``function`` (or of an ``if``'s body) that only run distributed."""
    if isinstance(function, cst.If):
        meaning = means_distributed(function.test)
        if meaning:
            return set(code_ids(function.body))
        orelse = function.orelse
        if meaning is False and isinstance(orelse, cst.Else):
            # `if args.local_rank == -1: <one process> else: set_device(...); nccl`
            return set(code_ids(orelse.body))
        return set()
    found: set[int] = set()
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    for index, statement in enumerate(body):
        if isinstance(statement, cst.If) and means_distributed(statement.test) is False:
            block = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            if block and terminates(block[-1]) and statement.orelse is None:
                for rest in body[index + 1 :]:
                    found.update(code_ids(rest))
                break
    return found


def means_distributed(test: cst.BaseExpression) -> bool | None:
    """True where the test holding means a multi-process job (``world_size > 1``,
    ``args.distributed``, ``dist.is_initialized()``, ``local_rank != -1``), False where the
    test failing does (their negations, ``local_rank == -1 or args.no_cuda``), None for tests
    about anything else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = means_distributed(test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        # True: the test holding means distributed; False: the test failing does
        sides = (means_distributed(test.left), means_distributed(test.right))
        if isinstance(test.operator, cst.And):
            return True if True in sides else None
        return False if False in sides else None  # `local_rank == -1 or args.no_cuda`
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        rank = _rank_comparison(test)
        return _world_size_comparison(test) if rank is None else rank
    name = dotted(test.func) if isinstance(test, cst.Call) else dotted(test)
    return True if name is not None and DISTRIBUTED.search(name) else None


LOCAL_RANK = re.compile(r"local_rank$", re.I)


def _rank_comparison(test: cst.Comparison) -> bool | None:
    """``args.local_rank == -1`` (False: one process), ``local_rank != -1`` (True): torchrun's
    and the launcher's way of saying a process was started per GPU."""
    target = test.comparisons[0]
    comparator = target.comparator
    minus_one = (
        isinstance(comparator, cst.UnaryOperation)
        and isinstance(comparator.operator, cst.Minus)
        and isinstance(comparator.expression, cst.Integer)
        and comparator.expression.value == "1"
    )
    if not minus_one or not LOCAL_RANK.search(dotted(test.left) or ""):
        return None
    if isinstance(target.operator, cst.Equal):
        return False
    return True if isinstance(target.operator, cst.NotEqual) else None


def _world_size_comparison(test: cst.Comparison) -> bool | None:
    """``world_size == 1`` (False), ``world_size > 1`` (True), ``get_world_size() < 2``."""
    left = test.left.func if isinstance(test.left, cst.Call) else test.left
    target = test.comparisons[0]
    if not (DISTRIBUTED.search(dotted(left) or "") and isinstance(target.comparator, cst.Integer)):
        return None
    bound, operator = int(target.comparator.value), target.operator
    single = {cst.Equal: bound == 1, cst.LessThanEqual: bound <= 1, cst.LessThan: bound <= 2}
    several = {
        cst.NotEqual: bound == 1,
        cst.GreaterThan: bound >= 1,
        cst.GreaterThanEqual: bound >= 2,
    }
    if single.get(type(operator)):
        return False
    if several.get(type(operator)):
        return True
    return None


LocalFunction = Callable[[cst.BaseExpression], cst.FunctionDef | None]


def after_nccl_setup(function: cst.FunctionDef, local_function: LocalFunction) -> set[int]:
    """ids of the nodes after a top-level statement of ``function`` that joins an NCCL process
    group, itself or through a function of the file (the DDP tutorial's ``setup(rank,
    world_size)``, nnUNet's ``run_ddp``): NCCL runs on GPUs only."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    for index, statement in enumerate(body):
        if any(_joins_nccl(call, local_function, 1) for call in _top_calls(statement)):
            return set().union(*(code_ids(rest) for rest in body[index + 1 :]))
    return set()


def _top_calls(statement: cst.BaseStatement) -> list[cst.Call]:
    """The calls a simple statement line makes as its expression or assigned value."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return []
    values = [s.value for s in statement.body if isinstance(s, cst.Expr | cst.Assign)]
    return [value for value in values if isinstance(value, cst.Call)]


def _joins_nccl(call: cst.Call, local_function: LocalFunction, depth: int) -> bool:
    if (dotted(call.func) or "").rsplit(".", 1)[-1] == "init_process_group":
        return backend(call) == "nccl"
    helper = local_function(call.func) if depth > 0 else None
    if helper is None or not isinstance(helper.body, cst.IndentedBlock):
        return False
    return any(
        _joins_nccl(inner, local_function, depth - 1)
        for statement in helper.body.body
        for inner in _top_calls(statement)
    )
