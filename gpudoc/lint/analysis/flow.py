"""Control flow: what names hold where branches meet, and which branch is the GPU path.

The walk keeps one environment per scope. At an ``if``, a ``try`` or a loop it snapshots the
environments it may write, walks each path from the state before it, and joins what the paths
that fall through leave behind (a path that returns, raises, breaks or continues does not reach
the code after it).

Guards tie a branch to the device: under ``if torch.cuda.is_available():`` (or ``use_cuda``,
``args.cuda``, ``device.type == "cuda"``) the true branch is the GPU path and the other one runs
on a CPU-only host, where ``device`` is the CPU too. So a tensor moved only on the GPU path is
placed whenever a GPU is used, and a value that is on the device on one path of an unrelated
test (``if debug:``) and on the host on the other is "host on some path" (Place.MIXED).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

import libcst as cst

from gpudoc.lint.analysis.names import calls_in, dotted, names_in
from gpudoc.lint.analysis.values import INSTANCE, UNKNOWN, Kind, Place, Value, replace

Polarity = Literal["gpu", "cpu", "device"]
"""``gpu``: the test holds on the GPU path; ``cpu``: it holds on the CPU path; ``device``: a
test about devices whose direction is not known."""

GPU_WORDS = ("cuda", "gpu", "accel", "mps", "xpu", "available", "device_count")
CPU_WORDS = ("cpu", "no_cuda", "nocuda", "no_gpu", "nogpu", "disable_cuda")
DEVICE_WORDS = ("device",)

Env = dict[str, Value]
Snapshot = list[tuple[dict[str, Value], Env]]
"""Each environment a path may write, with its content before the path."""


@lru_cache(maxsize=512)
def name_polarity(name: str) -> Polarity | None:
    """``guard_polarity`` of a bare name (``cuda``, ``use_gpu``), read once per name: the
    parameters of every walked call ask it."""
    return guard_polarity(cst.Name(name))


def guard_polarity(test: cst.BaseExpression) -> Polarity | None:
    """Which path a device test's truth stands for, or None for a test about something else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = guard_polarity(test.expression)
        return _flip(inner)
    if isinstance(test, cst.BooleanOperation):
        left, right = guard_polarity(test.left), guard_polarity(test.right)
        known = [p for p in (left, right) if p is not None]
        if not known:
            return None
        # `use_cuda and not args.no_cuda`: a side that needs the GPU decides an `and`;
        # `-1 in args.device_idx or not torch.cuda.is_available()`: a side that means the CPU
        # decides an `or` (its `else:` runs only with CUDA)
        if isinstance(test.operator, cst.Or) and "cpu" in known:
            return "cpu"
        return "gpu" if "gpu" in known else known[0]
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _comparison_polarity(test)
    return _word_polarity(test)


def needs_cuda(test: cst.BaseExpression) -> bool:
    """An ``and`` of which one side is ``torch.cuda.is_available()``: true only with CUDA."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return needs_cuda(test.left) or needs_cuda(test.right)
    return isinstance(test, cst.Call) and (dotted(test.func) or "").endswith("cuda.is_available")


def is_guard(test: cst.BaseExpression) -> bool:
    """A test about devices: `torch.cuda.is_available()`, `args.cuda`, `use_gpu`, `device`."""
    return guard_polarity(test) is not None


def answers_cuda(function: cst.FunctionDef) -> bool:
    """A function that says whether CUDA can be used: it returns an availability test
    (``return torch.cuda.is_available() and ...``) or a false value under a test that CUDA is
    missing (``if torch.cuda.is_available() is False: return False``, OpenNMT's
    ``check_sru_requirement``). Its call is a guard of the GPU path."""
    finder = _AvailabilityAnswers()
    function.body.visit(finder)
    return finder.answers


class _AvailabilityAnswers(cst.CSTVisitor):
    def __init__(self) -> None:
        self.answers = False
        self.missing_cuda = 0  # depth of `if` arms that run only without CUDA

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function answers for itself

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_If(self, node: cst.If) -> bool:
        polarity = guard_polarity(node.test)
        arms: list[tuple[cst.CSTNode | None, bool]] = [
            (node.body, polarity == "cpu"),
            (node.orelse, polarity == "gpu"),
        ]
        for arm, without_cuda in arms:
            if arm is None:
                continue
            self.missing_cuda += without_cuda
            arm.visit(self)
            self.missing_cuda -= without_cuda
        return False

    def visit_Return(self, node: cst.Return) -> None:
        value = node.value
        if value is None:
            self.answers |= self.missing_cuda > 0
            return
        self.answers |= _queries_cuda(value) or (self.missing_cuda > 0 and _falsy_literal(value))


def _queries_cuda(value: cst.BaseExpression) -> bool:
    """``torch.cuda.is_available() and HAVE_CUPY``, ``torch.cuda.device_count() > 0``: a real
    query of CUDA, not a name that happens to hold a GPU word (``batch.timestamps``)."""
    return any(
        (dotted(call.func) or "").endswith(("cuda.is_available", "cuda.device_count"))
        for call in calls_in(value)
    )


def _falsy_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value in ("False", "None")
    return isinstance(node, cst.Integer) and int(node.value, 0) == 0


def _flip(polarity: Polarity | None) -> Polarity | None:
    if polarity == "gpu":
        return "cpu"
    if polarity == "cpu":
        return "gpu"
    return polarity


def _word_polarity(node: cst.CSTNode) -> Polarity | None:
    words = [name.lower() for name in names_in(node)] + _option_keys(node)
    if any(word in name for name in words for word in CPU_WORDS):
        return "cpu"
    if any(word in name for name in words for word in GPU_WORDS):
        return "gpu"
    if any(word in name for name in words for word in DEVICE_WORDS):
        return "device"
    return None


def _option_keys(node: cst.CSTNode) -> list[str]:
    """``opt["data.cuda"]``, ``config["use_gpu"]``: an option read from a dict names the device
    by its key."""
    if not isinstance(node, cst.Subscript):
        return []
    keys = [element.slice.value for element in node.slice if isinstance(element.slice, cst.Index)]
    return [key.raw_value.lower() for key in keys if isinstance(key, cst.SimpleString)]


def _comparison_polarity(test: cst.Comparison) -> Polarity | None:
    """``device.type == "cuda"``, ``args.device != "cpu"``, ``args.gpu is not None``."""
    target = test.comparisons[0]
    operator = target.operator
    negated = isinstance(operator, cst.NotEqual | cst.IsNot | cst.NotIn)
    left = _word_polarity(test.left)
    right = _word_polarity(target.comparator)
    truth = _bool_literal(target.comparator)
    if truth is not None and isinstance(operator, cst.Is | cst.IsNot | cst.Equal | cst.NotEqual):
        # `torch.cuda.is_available() is False` (OpenNMT's SRU check): the test of `not ...`
        if left is None:
            return None
        return left if truth != negated else _flip(left)
    if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
        # `args.gpu is not None`: a GPU was chosen; `args.gpu is None`: none was. So for the
        # ids of devices (`self.device_id == None`, face.evoLVe's heads): a CPU has none
        if left == "device" and DEVICE_IDS.search((dotted(test.left) or "").rsplit(".", 1)[-1]):
            left = "gpu"
        if left not in ("gpu", "cpu"):
            return "device" if left == "device" else None
        return left if negated else _flip(left)
    none_chosen = _no_gpu_number(test.left, target.comparator, left)
    if none_chosen is not None and isinstance(operator, cst.Equal | cst.NotEqual):
        # `num_gpu == 0`, `args.gpu == -1`: no GPU; `!=`: some GPU
        return "gpu" if negated else "cpu"
    if none_chosen and isinstance(operator, cst.LessThanEqual):
        return "cpu"  # `opts.gpus <= 0`, `args.gpu <= -1`: no GPU
    if _fewer_than_one_gpu(test.left, target.comparator, left, operator):
        return "cpu"  # `opts.gpus < 1`
    sides = [p for p in (left, right) if p is not None]
    if "cpu" in sides:
        polarity: Polarity | None = "cpu"
    elif "gpu" in sides:
        polarity = "gpu"
    elif sides:
        return "device"
    else:
        return None
    if isinstance(operator, cst.GreaterThan | cst.GreaterThanEqual | cst.LessThan):
        return polarity if polarity != "cpu" else "device"  # `device_count() > 1`
    return _flip(polarity) if negated else polarity


def _bool_literal(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


GPU_COUNT = re.compile(r"^(n_?|num_?)gpus?$|^gpus$|^ngpus?$|gpu_?count$|^device_count$", re.I)
"""A number of GPUs (``num_gpu``, ``args.gpus``, ``torch.cuda.device_count()``): 0 is none."""


def _no_gpu_number(
    left: cst.BaseExpression, number: cst.BaseExpression, polarity: Polarity | None
) -> bool | None:
    """True when ``left == number`` says no GPU is used: a count of GPUs against 0, or a GPU
    index against a negative sentinel (``args.gpu == -1``). None for any other comparison."""
    if polarity != "gpu":
        return None
    if isinstance(number, cst.SimpleString) and number.evaluated_value == "-1":
        return True  # `args.visible_gpus != '-1'`: an option's text
    if isinstance(number, cst.UnaryOperation) and isinstance(number.operator, cst.Minus):
        return True if isinstance(number.expression, cst.Integer) else None
    if not isinstance(number, cst.Integer) or int(number.value, 0) != 0:
        return None
    return True if _gpu_count(left) else None


def _gpu_count(node: cst.BaseExpression) -> bool:
    """``num_gpu``, ``args.gpus``, ``torch.cuda.device_count()``, and a setting read by its
    key (``cfg.getint("common", "ngpu")``): a number of GPUs."""
    name = dotted(node.func if isinstance(node, cst.Call) else node) or ""
    if GPU_COUNT.search(name.rsplit(".", 1)[-1]):
        return True
    keys = [arg.value for arg in node.args] if isinstance(node, cst.Call) else []
    return any(GPU_COUNT.search(text) for key in keys if (text := _text(key)) is not None)


def _text(node: cst.BaseExpression) -> str | None:
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def _fewer_than_one_gpu(
    left: cst.BaseExpression,
    number: cst.BaseExpression,
    polarity: Polarity | None,
    operator: cst.BaseCompOp,
) -> bool:
    """``num_gpus < 1``: a count of GPUs below one is none."""
    if polarity != "gpu" or not isinstance(operator, cst.LessThan):
        return False
    if not isinstance(number, cst.Integer) or int(number.value, 0) != 1:
        return False
    return _gpu_count(left)


DEVICE_IDS = re.compile(r"device_?ids?$", re.I)
"""``device_id``, ``device_ids``: GPU indices (a CPU run has none)."""


def counts_several_gpus(test: cst.BaseExpression) -> bool:
    """``torch.cuda.device_count() > 1``, ``n_gpu >= 2`` (also one side of an ``and``): a test
    for several GPUs, whose other path still runs on one GPU."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return counts_several_gpus(test.left) or counts_several_gpus(test.right)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.comparator, cst.Integer) or _word_polarity(test.left) != "gpu":
        return False
    count = int(target.comparator.value, 0)
    if isinstance(target.operator, cst.GreaterThan):
        return count >= 1
    return isinstance(target.operator, cst.GreaterThanEqual) and count >= 2


def truth_on_cpu(
    test: cst.BaseExpression,
    polarity_of: Callable[[cst.BaseExpression], Polarity | None],
    lookup: Callable[[str], Value | None],
) -> bool | None:
    """The truth of a device test about a device this walk knows is the CPU (``if "cuda" in
    device.type:`` in a helper called with ``device="cpu"``): the other path is the only one
    that runs. None when the test is about anything else, or its truth is not known."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth_on_cpu(test.expression, polarity_of, lookup)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        sides = [truth_on_cpu(side, polarity_of, lookup) for side in (test.left, test.right)]
        return False if False in sides else True if sides == [True, True] else None
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    if not any(
        _held_cpu_device(part, lookup) for part in (test.left, test.comparisons[0].comparator)
    ):
        return None
    polarity = polarity_of(test)
    return False if polarity == "gpu" else True if polarity == "cpu" else None


def _held_cpu_device(node: cst.BaseExpression, lookup: Callable[[str], Value | None]) -> bool:
    """``device``, ``device.type``, ``torch.device(device).type``, ``str(device)``: the
    expression reads a name that holds the CPU device."""
    while True:
        name = dotted(node)
        held = lookup(name) if name is not None else None
        if held is not None and held.kind is Kind.DEVICE and held.cpu_device:
            return True
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Call) and len(node.args) == 1:
            node = node.args[0].value
        else:
            return False


def option_of(test: cst.BaseExpression) -> str | None:
    """The option a device test reads, the same for a test and its negation: ``args.gpu
    None`` for ``args.gpu is not None`` and ``args.gpu is None``, ``n_gpu 1`` for ``n_gpu >
    1``, ``use_cuda`` for ``not use_cuda``; None for calls and compound tests."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return option_of(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparator = test.comparisons[0].comparator
        option = option_of(test.left)
        if option is None or not isinstance(comparator, cst.Name | cst.Integer | cst.SimpleString):
            return None
        return f"{option} {comparator.value}"
    return dotted(test) if isinstance(test, cst.Name | cst.Attribute) else None


Join = Literal["unrelated", "guard", "gpu-first", "several-gpus"]
"""How two paths relate: the branches of a test about something else; the two paths of a
device guard whose direction is unknown; a guard whose first path is the GPU path; or the
branches of a test for more than one GPU (``torch.cuda.device_count() > 1``), joined as
unrelated, except that a DataParallel on one of them is a plain module on one GPU."""


def join_of(polarity: Polarity | None) -> Join:
    return "unrelated" if polarity is None else "gpu-first" if polarity != "device" else "guard"


def join_values(first: Value | None, second: Value | None, join: Join) -> Value | None:
    """What a name holds after two paths that left ``first`` and ``second`` in it.

    On the two paths of a guard, a value placed on one of them is placed whenever a GPU is in
    use; when the GPU path is known, its value is the one that meets the GPU (on the CPU path
    ``device`` is the CPU, so "placed" there means on the host anyway).
    """
    if first is None or second is None:
        value = first if second is None else second
        if value is not None and value.moved_if is not None and value.moved_at is value.binding:
            # `model = Net().to(device)` on one path where no `model` existed before (a first
            # iteration, an `elif` of a choice): no path leaves it on the host
            return value.unconditional()
        return value
    if first == second:
        return first
    if first.kind is not second.kind:
        if _empty_list(first) and second.kind is Kind.BATCH and second.items:
            return second  # `outs = []` before a loop that appends: what it appended
        if _empty_list(second) and first.kind is Kind.BATCH and first.items:
            return first
        # `optimizer = SGD(...)` for training, `optimizer = None` for testing: where there is
        # an optimizer, it is that one
        if first.kind is Kind.OPTIMIZER and _binds_none(second):
            return first
        if second.kind is Kind.OPTIMIZER and _binds_none(first):
            return second
        return UNKNOWN
    instances = first.source.startswith(INSTANCE) or second.source.startswith(INSTANCE)
    if instances and first.source != second.source:
        return _either_instance(first, second)
    if first.kind is Kind.DEVICE and first.cpu_device != second.cpu_device:
        # the CPU on one path only (`if debug: device = "cpu"`): not known to be the CPU
        return first if join == "gpu-first" else (second if first.cpu_device else first)
    places = {first.place, second.place}
    if len(places) == 1:
        kept = first if first.binding is not None else second
        if first.wrapper != second.wrapper:
            # a DataParallel on one path scatters host inputs (pytorch/examples' ImageNet moves
            # them on the other path), but one made only for several GPUs leaves one GPU's
            # plain module to take them
            kept = replace(kept, wrapper=join != "several-gpus")
        if places == {Place.DEVICE} and (
            first.moved_if is None or second.moved_if is None or first.moved_if is second.moved_if
        ):
            # moved on both paths (`model.cuda()` / `model = DataParallel(model).cuda()`)
            kept = kept.unconditional()
        return kept
    if join == "gpu-first":
        return first
    if Place.UNKNOWN in places:
        return replace(first, place=Place.UNKNOWN).unconditional()
    device = first if first.place is Place.DEVICE else second
    other = second if device is first else first
    if first.kind is Kind.MODULE and other.place is Place.HOST and _holds_nothing(other):
        # `criterion = nn.CrossEntropyLoss()` on one path, moved on the other: nothing of it
        # needs moving, it computes wherever its inputs are
        return device.unconditional()
    if join == "guard" or first.kind is Kind.MODULE:
        # a module moved in an unrelated branch keeps `moved_if`, which GPD102 reports
        return device
    if places == {Place.DEVICE, Place.HOST} or Place.MIXED in places:
        return replace(device, place=Place.MIXED)
    return replace(first, place=Place.UNKNOWN)


def _holds_nothing(module: Value) -> bool:
    """A module with nothing to move: no weights, and no ``weight=`` given to a loss."""
    origin = module.origin
    given = isinstance(origin, cst.Call) and any(
        arg.keyword is not None and "weight" in arg.keyword.value for arg in origin.args
    )
    return not module.weighted and not given


def _empty_list(value: Value) -> bool:
    """``[]``: no element to be anywhere."""
    return value.kind is Kind.UNKNOWN and value.items == ()


def _either_instance(first: Value, second: Value) -> Value:
    """``converter = CTCLabelConverter(...)`` / ``else: converter = AttnLabelConverter(...)``:
    an instance of one class or the other (``instance:A|B``), whose methods are each walked
    and joined; beside anything else that is no instance, what its methods return is not
    known."""
    if not (first.source.startswith(INSTANCE) and second.source.startswith(INSTANCE)):
        # `evaluator = None` / `if args.eval: evaluator = Evaluator()`: where it is used, it
        # is that instance
        if _binds_none(first) and second.source.startswith(INSTANCE):
            return second
        if _binds_none(second) and first.source.startswith(INSTANCE):
            return first
        return UNKNOWN
    classes = {
        *first.source[len(INSTANCE) :].split("|"),
        *second.source[len(INSTANCE) :].split("|"),
    }
    return Value(source=INSTANCE + "|".join(sorted(classes)))


def join_envs(envs: list[Env], join: Join, before: Env | None = None) -> Env:
    """The environment after paths that left ``envs``, from ``before`` (where known)."""
    if not envs:
        return {}
    cpu_path = False
    if join != "gpu-first" and before is not None and len(envs) == 2:
        cpu_paths = [env for env in envs if _sets_cpu_device(env, before)]
        if len(cpu_paths) == 1:
            # `if args.test_mode: model = Small(); device = "cpu"` / `else: model.to(device)`:
            # the path that makes the device the CPU is the CPU path of a guard
            cpu_path, join = True, "gpu-first"
            envs = [env for env in envs if env is not cpu_paths[0]] + cpu_paths
    # in the envs' own order, never a set's: the joined env's order decides which device name
    # a message and a fix use, and a set's order changes with PYTHONHASHSEED
    names = dict.fromkeys(name for env in envs for name in env)
    joined: Env = {}
    for name in names:
        value: Value | None = envs[0].get(name)
        for other in envs[1:]:
            value = join_values(value, other.get(name), join)
        if value is not None and value.moved_if is not None and before is not None:
            earlier = before.get(name)
            if cpu_path and (earlier is None or earlier.moved_if is not value.moved_if):
                value = value.unconditional()  # moved on the GPU path: where it is needed
            else:
                value = _unmoved_path(value, [env.get(name) for env in envs], earlier)
        if value is not None:
            joined[name] = value
    return joined


def _sets_cpu_device(env: Env, before: Env) -> bool:
    """The path bound a name to the CPU device (``device = "cpu"``)."""
    return any(
        value.kind is Kind.DEVICE and value.cpu_device and before.get(name) != value
        for name, value in env.items()
    )


def _unmoved_path(value: Value, ends: list[Value | None], before: Value | None) -> Value:
    """A module moved on one path of an ``if`` and built, on the host, on another where no
    module was before: that is where the move is missing (``if args.pretrained: model =
    resnet18()``). A module from before the ``if`` is reported at the move."""
    if value.unmoved_at is not None or (before is not None and before.kind is Kind.MODULE):
        return value
    for end in ends:
        if end is None or end.binding is None:
            continue
        if end.kind is Kind.MODULE and end.place is Place.HOST and end.weighted:
            return replace(value, unmoved_at=end.binding)
    return value


def terminates(statement: cst.CSTNode) -> bool:
    """A statement after which the rest of its block does not run."""
    if isinstance(statement, cst.SimpleStatementLine | cst.SimpleStatementSuite):
        return any(_terminal_small(small) for small in statement.body)
    return False


_TERMINAL = frozenset([cst.Return, cst.Raise, cst.Continue, cst.Break])


def _terminal_small(node: cst.BaseSmallStatement) -> bool:
    # by exact type: isinstance against libcst's abstract-base classes runs Python code on
    # each miss, and this runs for every statement the walk passes
    if type(node) in _TERMINAL:
        return True
    if type(node) is cst.Expr and isinstance(node.value, cst.Call):
        return (dotted(node.value.func) or "") in ("sys.exit", "exit", "quit", "os._exit")
    return False


def _binds_none(value: Value) -> bool:
    """The value of a plain ``name = None``."""
    statement = value.binding
    if value.kind is not Kind.UNKNOWN or not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body[0] if len(statement.body) == 1 else None
    return (
        isinstance(small, cst.Assign)
        and isinstance(small.value, cst.Name)
        and small.value.value == "None"
    )
