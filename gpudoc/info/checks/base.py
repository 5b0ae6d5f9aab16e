"""What a doctor check is, and the decorator that declares one.

A check is a pure function from an InfoReport to findings, each with a fix. Its id is its
function's name with dashes (`def cvd_empty` is `cvd-empty`), written nowhere else: `finding()`
leaves the id empty and the doctor fills it in from the check that yielded it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpudoc.info.model import Finding, InfoReport, Severity
from gpudoc.info.preconditions import Precondition, always

CheckFunction = Callable[[InfoReport], Iterable[Finding]]
_REGISTERED: dict[str, list[Check]] = {}


@dataclass(frozen=True)
class Check:
    check_id: str
    title: str  # what a passing check vouches for, e.g. "torchvision matches torch"
    severities: str  # documentation for --list-checks: "fail", "fail/warn", ...
    function: CheckFunction
    precondition: Precondition = always  # why the check cannot apply here, or None


def check(
    title: str, severities: str, precondition: Precondition = always
) -> Callable[[CheckFunction], CheckFunction]:
    """Declare the decorated function a doctor check of its module, in definition order."""

    def register(function: CheckFunction) -> CheckFunction:
        check_id = function.__name__.replace("_", "-")
        declared = Check(check_id, title, severities, function, precondition)
        _REGISTERED.setdefault(function.__module__, []).append(declared)
        return function

    return register


def checks_of(module_name: str) -> tuple[Check, ...]:
    """The checks a module declared, in the order it declares them."""
    return tuple(_REGISTERED.get(module_name, ()))


def finding(severity: Severity, message: str, fix: str | None, gpu: int | None = None) -> Finding:
    """A finding of the check that yields it (the doctor sets `check_id`)."""
    return Finding(check_id="", severity=severity, message=message, fix=fix, gpu=gpu)
