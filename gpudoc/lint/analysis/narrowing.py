"""Type tests that tell a tensor from anything else: the arm where a name is no tensor.

``x.clone() if isinstance(x, torch.Tensor) else np.copy(x)`` (YOLO's box helpers): the NumPy arm
runs only for arrays, whatever the callers pass; ``if torch.is_tensor(x): ... else:`` likewise.
The walk forgets what such a name holds on the arm where it is no tensor, and only there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import libcst as cst

from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Value

TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})
ARRAY_TYPES = frozenset({"numpy.ndarray", "list", "tuple", "int", "float"})

NOT_A_TENSOR = Value()
"""What a name holds on the arm where the test says it is no tensor: nothing known."""


def not_tensor_arms(
    test: cst.BaseExpression, qualify: Callable[[cst.BaseExpression], str | None]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names that hold no tensor when ``test`` is true, and those when it is false."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        when_true, when_false = not_tensor_arms(test.expression, qualify)
        return when_false, when_true
    if not isinstance(test, cst.Call) or not test.args:
        return (), ()
    name = dotted(test.args[0].value)
    function = qualify(test.func) or dotted(test.func)
    if name is None:
        return (), ()
    if function == "torch.is_tensor" and len(test.args) == 1:
        return (), (name,)
    if function != "isinstance" or len(test.args) != 2:
        return (), ()
    types = test.args[1].value
    elements = types.elements if isinstance(types, cst.Tuple) else None
    named = [e.value for e in elements] if elements is not None else [types]
    qualified = {qualify(t) or dotted(t) for t in named}
    if qualified <= TENSOR_TYPES:
        return (), (name,)
    if qualified <= ARRAY_TYPES:
        return (name,), ()
    return (), ()


@contextmanager
def forgotten(env: dict[str, Value], names: tuple[str, ...]) -> Iterator[None]:
    """``names`` hold nothing known in ``env`` for the duration, unless the arm rebinds them."""
    if not names:  # nearly every `if` of a walk: nothing to forget, nothing to restore
        yield
        return
    saved = {name: env.get(name) for name in names}
    for name in names:
        env[name] = NOT_A_TENSOR
    try:
        yield
    finally:
        for name, value in saved.items():
            if env.get(name) is NOT_A_TENSOR:
                if value is None:
                    del env[name]
                else:
                    env[name] = value
