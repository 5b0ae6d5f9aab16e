"""Type tests that tell a tensor from anything else: the arm where a name is no tensor, and
the one where it is.

``x.clone() if isinstance(x, torch.Tensor) else np.copy(x)`` (YOLO's box helpers): the NumPy arm
runs only for arrays, whatever the callers pass; ``if torch.is_tensor(x): ... else:`` likewise.
The walk forgets what such a name holds on the arm where it is no tensor, and only there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import libcst as cst

from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Kind, Place, Value

TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})
ARRAY_TYPES = frozenset({"numpy.ndarray", "list", "tuple", "int", "float"})

NOT_A_TENSOR = Value()
"""What a name holds on the arm where the test says it is no tensor: nothing known."""


Arm = tuple[tuple[str, bool], ...]
"""The names a type test tells about on one arm: (name, holds a tensor there)."""


def type_test_arms(
    test: cst.BaseExpression, qualify: Callable[[cst.BaseExpression], str | None]
) -> tuple[Arm, Arm]:
    """What ``test`` tells on the arm where it is true, and on the one where it is false."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        when_true, when_false = type_test_arms(test.expression, qualify)
        return when_false, when_true
    if not isinstance(test, cst.Call) or not test.args:
        return (), ()
    name = dotted(test.args[0].value)
    function = qualify(test.func) or dotted(test.func)
    if name is None:
        return (), ()
    if function == "torch.is_tensor" and len(test.args) == 1:
        return ((name, True),), ((name, False),)
    if function != "isinstance" or len(test.args) != 2:
        return (), ()
    types = test.args[1].value
    elements = types.elements if isinstance(types, cst.Tuple) else None
    named = [e.value for e in elements] if elements is not None else [types]
    qualified = {qualify(t) or dotted(t) for t in named}
    if qualified <= TENSOR_TYPES:
        return ((name, True),), ((name, False),)
    if qualified <= ARRAY_TYPES:
        return ((name, False),), ()
    return (), ()


@contextmanager
def narrowed(env: dict[str, Value], arm: Arm) -> Iterator[None]:
    """For the duration: a name that holds no tensor on this arm holds nothing known; one
    that holds a tensor is typed as one (``if isinstance(s, torch.Tensor): s.to(device)``), in
    the place it had. Unless the arm rebinds them."""
    if not arm:  # nearly every `if` of a walk: nothing to narrow, nothing to restore
        yield
        return
    saved = {name: env.get(name) for name, _ in arm}
    narrow: dict[str, Value] = {}
    for name, tensor in arm:
        held = saved[name]
        if not tensor:
            narrow[name] = NOT_A_TENSOR
        elif held is None or not held.is_tensorish:  # `rtg`, a parameter typed by its name
            narrow[name] = Value(Kind.TENSOR, held.place if held is not None else Place.UNKNOWN)
    env.update(narrow)
    try:
        yield
    finally:
        for name, value in narrow.items():
            if env.get(name) is value:
                if saved[name] is None:
                    del env[name]
                else:
                    env[name] = saved[name]  # type: ignore[assignment]
