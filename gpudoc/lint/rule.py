"""The rule base class, what a rule reports, and rule discovery.

A rule listens to the events of the one walk over a file (analysis/events.py) and reports nodes;
the engine turns nodes into positions once per file, and only for files that have findings.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import ClassVar, Literal

import libcst as cst

from gpudoc.lint.analysis.events import EventBus, EventKind
from gpudoc.lint.analysis.semantic import FileFlags

Where = Literal["replace", "before", "after", "line_after", "line_before"]


@dataclass(frozen=True)
class NodeEdit:
    """An edit expressed on a node; the engine turns it into a position-based Edit.

    ``line_after`` / ``line_before`` insert a whole line, indented like the node's line.
    """

    node: cst.CSTNode
    text: str
    where: Where


@dataclass(frozen=True)
class FixSpec:
    edits: tuple[NodeEdit, ...]
    safe: bool
    description: str


@dataclass(frozen=True)
class Report:
    node: cst.CSTNode
    message: str
    fix: FixSpec | None = None


@dataclass(frozen=True)
class Invalid:
    """An INVALID example: the code and where the finding must be (1-based line and column).

    ``expected_replacement`` (Fixit's name) pins the exact text once the finding's fix is applied
    (safe or unsafe); it is required when the finding has a fix, and None when it has none.
    """

    code: str
    line: int
    col: int
    expected_replacement: str | None = None


@dataclass(frozen=True)
class Context:
    """What a rule's ``finish`` gets: the module, and what the walk found about the file."""

    module: cst.Module
    flags: FileFlags = field(default_factory=FileFlags)
    library: bool = False
    """A library module that places nothing itself (no ``if __name__ == "__main__":``, only
    definitions at top level): the project's scripts may place its classes."""
    path: str = ""
    """The linted file's path, as given (``<stdin>`` for standard input)."""

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


class Rule:
    """One check. Subclasses set the class variables, subscribe to the walk's events (``EVENTS``,
    one ``on_<kind>(event, semantic)`` method per kind, see analysis/events.py), keep their own
    state, ``report`` as they go, and optionally add findings that need the whole file in
    ``finish`` (``context.flags`` says what the walk found about the file)."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    SUMMARY: ClassVar[str]
    """One line: what is wrong (README and --explain headline)."""
    DEFAULT: ClassVar[bool] = True
    """Off-by-default rules (GPD9xx) run only when selected."""
    PLACEMENT: ClassVar[bool] = True
    """Placement rules stay quiet in files that never place anything on a device."""
    IN_LIBRARIES: ClassVar[bool] = False
    """A placement rule that also runs in a library module (a file with no
    ``if __name__ == "__main__":``), whose classes the project's scripts may place."""
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()
    EVENTS: ClassVar[tuple[EventKind, ...]] = ()
    """The walk's events this rule listens to; each needs an ``on_<kind>`` method."""

    def __init__(self) -> None:
        self.reports: list[Report] = []

    def subscribe(self, bus: EventBus) -> None:
        for kind in self.EVENTS:
            bus.subscribe(kind, getattr(self, f"on_{kind}"))

    def report(self, node: cst.CSTNode, message: str, fix: FixSpec | None = None) -> None:
        self.reports.append(Report(node, message, fix))

    def check(self, context: Context) -> Iterator[Report]:
        """The findings of one file: those reported during the walk, then ``finish``'s."""
        yield from self.reports
        yield from self.finish(context)

    def finish(self, context: Context) -> Iterator[Report]:
        return iter(())

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class in gpudoc.lint.rules, sorted by code."""
    from gpudoc.lint import rules

    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(rules.__path__):
        module = importlib.import_module(f"{rules.__name__}.{info.name}")
        for item in vars(module).values():
            is_rule = isinstance(item, type) and issubclass(item, Rule) and item is not Rule
            if is_rule and getattr(item, "CODE", None) and item.__module__ == module.__name__:
                found.append(item)
    return tuple(sorted(found, key=lambda rule: rule.CODE))


def rule_by_code(code: str) -> type[Rule] | None:
    for rule in all_rules():
        if code.upper() == rule.CODE:
            return rule
    return None
