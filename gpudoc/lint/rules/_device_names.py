"""Which of a script's names hold its device: what a ``map_location=`` fix may pass.

Read from the syntax of the bindings: ``torch.device(...)``, ``torch.accelerator.
current_accelerator()``, ``accelerator.device``, ``f"cuda:{rank}"``, ``"cuda" if ... else "cpu"``,
an ``Accelerator()`` (its ``.device``), or a parameter named ``device``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import ImportTable, dotted

DEVICE_PARAMETER = re.compile(r"^(device|dev|\w+_device)$")
"""Parameters trusted by name alone: ``gpu`` or ``rank`` is often an int or None."""


@dataclass
class Binding:
    name: str
    value: cst.BaseExpression | None
    """None for a function parameter."""
    function: cst.FunctionDef | None
    order: int


def device_text(name: str, bound: list[Binding], imports: ImportTable) -> str | None:
    """The text a ``map_location=`` fix passes for ``name``, when every binding of it holds a
    device (an accelerator, or the CPU fallback of one); None when it may hold anything else."""
    values = [b.value for b in bound]
    if any(value is None for value in values):
        # a parameter, typed by its name only: `gpu` or `rank` is often an int or None
        return name if DEVICE_PARAMETER.match(name) else None
    kinds = [device_kind(value, imports) for value in values if value is not None]
    if "accelerator" in kinds and len(kinds) == 1:
        return f"{name}.device"
    if "device" in kinds and all(kind in ("device", "cpu") for kind in kinds):
        return name
    return None


def device_kind(value: cst.BaseExpression, imports: ImportTable) -> str | None:
    """``device`` (may be an accelerator), ``cpu``, ``accelerator`` (accelerate), or None."""
    if isinstance(value, cst.IfExp):
        kinds = {device_kind(value.body, imports), device_kind(value.orelse, imports)}
        return "device" if "device" in kinds and kinds <= {"device", "cpu"} else None
    text = string_value(value)
    if text is not None:
        return (
            "cpu"
            if api.CPU_LITERAL.match(text)
            else ("device" if api.DEVICE_LITERAL.match(text) else None)
        )
    if isinstance(value, cst.FormattedString):
        head = value.parts[0] if value.parts else None
        is_cuda = isinstance(head, cst.FormattedStringText) and head.value.startswith("cuda")
        return "device" if is_cuda else None
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        return "device"
    if not isinstance(value, cst.Call):
        return None
    qualified = imports.qualify(value.func) or dotted(value.func) or ""
    if qualified == "torch.device":
        first = value.args[0].value if value.args else None
        if first is None:
            return None
        return device_kind(first, imports) or "device"
    if qualified.endswith("current_accelerator"):
        return "device"
    if qualified == "accelerate.Accelerator":
        return "accelerator"
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "format":
        template = string_value(func.value) or ""
        return "device" if template.startswith("cuda") else None
    return None
