"""GPD112: a tensor derived from a batch before the batch was moved, then used on the device."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis.events import BindingEvent, CallEvent, Semantic
from gpudoc.lint.analysis.names import assigned_value, dotted, keyword
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import any_on_device
from gpudoc.lint.visit import walk

HOST_ARGUMENTS = ("torch.nn.utils.rnn.",)
"""Functions that want some arguments on the CPU (``pack_padded_sequence``'s lengths)."""
MOVES = frozenset({"to", "cuda", "type_as", "to_device"})

Key = tuple[str | None, str]


LENGTHS = re.compile(r"(^|_)(len|lens|length|lengths|sizes|seq_len|seq_lens)$", re.I)
"""Sequence lengths, kept on the host on purpose (``pack_padded_sequence`` wants them there,
and a model's forward often calls ``lengths.cpu()`` itself)."""


@dataclass
class Derived:
    statement: cst.CSTNode
    sources: frozenset[str]
    move: cst.CSTNode | None = None
    """The later statement that moved one of ``sources`` to the device."""
    moved_source: str = ""


@dataclass
class Finding:
    derived: Derived
    name: str
    use: cst.Call


class _Names(cst.CSTVisitor):
    """The plain names an expression reads (not attribute names, not called functions)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)  # `x.shape`: x, not shape
        return False


class DerivedBeforeMove(Rule):
    """A tensor computed from a batch before the batch was moved, then used with device tensors.

    ## What it does
    Finds `derived = f(batch_tensor)` computed while `batch_tensor` is on the CPU, followed by
    `batch_tensor = batch_tensor.to(device)` (only the source moves), and then a use of
    `derived` next to device tensors: a placed model, or a loss or torch function whose other
    arguments are on the device.

    ## Why is this bad?
    Moving `captions` does not move what was already computed from it: `targets` stays on the
    CPU, and `criterion(outputs, targets)` fails with `Expected all tensors to be on the same
    device` on the first GPU batch. The move two lines below makes the line look correct.

    ## Example
    ```python
    for images, captions, lengths in loader:
        targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
        images, captions = images.to(device), captions.to(device)
        loss = criterion(model(images, captions, lengths), targets)
    ```

    ## Use instead
    ```python
    for images, captions, lengths in loader:
        images, captions = images.to(device), captions.to(device)
        targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
        loss = criterion(model(images, captions, lengths), targets)
    ```

    ## Known problems
    Only a derivation, a move and a use in one function are followed, and the use must be a
    call (`outputs - targets` is not seen). A batch from a loader defined in a file the linter
    does not read counts as on the host once the script moves it itself (`captions =
    captions.cuda()`); a script that moves a batch already on the device draws a report.
    Arguments of `torch.nn.utils.rnn` functions (the lengths of `pack_padded_sequence` must
    stay on the CPU) are never uses. A move is `.to()` / `.cuda()`, a torch function given
    `device=`, or a function of the project: a rebinding by arithmetic or a torch function
    without `device=` (`x = torch.where(mask, noise, x)`) meets device tensors, so it is none.

    ## Fix safety
    No fix: moving the derivation below the move can change what it computes from.
    """

    CODE = "GPD112"
    NAME = "derived-before-move"
    SUMMARY = "a tensor derived from a batch before the batch was moved stays on the CPU"
    EVENTS = ("binding", "call")
    VALID = (
        """\
import torch
from torch.nn.utils.rnn import pack_padded_sequence
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
criterion = torch.nn.CrossEntropyLoss()
loader = torch.utils.data.DataLoader(dataset, batch_size=4)
for images, captions, lengths in loader:
    images = images.to(device)
    captions = captions.to(device)
    targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
    loss = criterion(model(images, captions, lengths), targets)
""",
        """\
import torch
from torch.nn.utils.rnn import pack_padded_sequence
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
loader = torch.utils.data.DataLoader(dataset, batch_size=4)
for tokens, labels in loader:
    lengths = (tokens != 0).sum(1)
    mask = tokens != 0
    tokens = tokens.to(device)
    emb = model.embed(tokens)
    packed = pack_padded_sequence(emb, lengths, batch_first=True)
    mask = mask.to(device)
    out = model(tokens, mask)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
from torch.nn.utils.rnn import pack_padded_sequence
class Captioner(torch.nn.Module):
    pass
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Captioner().to(device)
criterion = torch.nn.CrossEntropyLoss()
loader = torch.utils.data.DataLoader(dataset, batch_size=4)
for images, captions, lengths in loader:
    targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
    images = images.to(device)
    captions = captions.to(device)
    outputs = model(images, captions, lengths)
    loss = criterion(outputs, targets)
""",
            line=10,
            col=5,
        ),
        Invalid(
            """\
import torch
def train_step(model, loader, device):
    for tokens, labels in loader:
        mask = (tokens != 0).float()
        tokens = tokens.to(device)
        labels = labels.to(device)
        logits = model(tokens, mask)
""",
            line=4,
            col=9,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.derived: dict[Key, Derived] = {}
        self.findings: list[Finding] = []

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        name = event.name
        function = semantic.function
        if "." in name:
            return
        if _moves_itself(event, name, semantic):
            # only this function's: a callee's `z1 = torch.tensor(z1).cuda()` moves its own
            # parameter, not the caller's `z1`
            for (owner, _), derived in self.derived.items():
                if owner == function and name in derived.sources and derived.move is None:
                    derived.move, derived.moved_source = event.statement, name
        self.derived.pop((function, name), None)
        value = event.assigned
        if value is None or not _off_device(event.value):
            return
        finder = _Names()
        walk(value, finder)
        sources = frozenset(
            source
            for source in finder.found - {name}
            if _maybe_host(semantic.lookup(source)) and not _is_callable_name(source, value)
        )
        if sources:
            self.derived[(function, name)] = Derived(event.statement, sources)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if not self.derived or (event.qualified or "").startswith(HOST_ARGUMENTS):
            return
        function = semantic.function
        for arg, value in zip(event.node.args, event.args, strict=True):
            name = dotted(arg.value)
            derived = self.derived.get((function, name or ""))
            if derived is None or derived.move is None or not _off_device(value):
                continue
            if LENGTHS.search(name or ""):
                continue  # `input_sizes`: lengths stay on the host for pack_padded_sequence
            if _with_device_tensors(event, semantic, arg):
                self.findings.append(Finding(derived, name or "", event.node))
                del self.derived[(function, name or "")]
                return

    def finish(self, context: Context) -> Iterator[Report]:
        for finding in self.findings:
            derived = finding.derived
            source = derived.moved_source
            move = _statement_text(context, derived.move)
            message = (
                f"`{finding.name}` is computed from `{source}` before `{source}` is moved "
                f"(`{move}`): it stays on the CPU, and `{context.code(finding.use)}` mixes it with "
                f"device tensors (`Expected all tensors to be on the same device`); compute it "
                "after the move, or move it too"
            )
            yield Report(derived.statement, message)


def _statement_text(context: Context, statement: cst.CSTNode | None) -> str:
    """The statement as one line: without the comments above it, its line breaks folded."""
    if statement is None:
        return ""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        statement = statement.body[0]
    return " ".join(context.code(statement).split())


def _off_device(value: Value | None) -> bool:
    """A tensor on the host, or one whose place is unknown (from a loader the linter cannot
    read): it becomes a finding only once the script moves its source itself."""
    return value is not None and value.is_tensorish and value.place in (Place.HOST, Place.UNKNOWN)


def _maybe_host(value: Value | None) -> bool:
    """What a later ``name = name.to(device)`` shows was on the host: a host tensor, or a
    value of unknown kind and place (a batch element of a loader defined elsewhere)."""
    if value is None:
        return False
    if value.kind is Kind.UNKNOWN:
        return value.place is Place.UNKNOWN and value.items is None
    return value.is_tensorish and value.place in (Place.HOST, Place.UNKNOWN)


def _moves_itself(event: BindingEvent, name: str, semantic: Semantic) -> bool:
    """``name = name.to(device)`` (or one element of ``a, b = a.to(d), b.to(d)``)."""
    if event.value.place is not Place.DEVICE or not _maybe_host(event.previous):
        return False
    value = assigned_value(event.statement, name)
    if value is None:
        return False
    finder = _Moved(semantic)
    walk(value, finder)
    return name in finder.found


class _Moved(cst.CSTVisitor):
    """The names an expression hands to a move: the receiver of ``.to()`` / ``.cuda()``, an
    argument of a torch function given ``device=`` or of a function that may move it (a
    helper). Not an operand of arithmetic or of a torch function without ``device=``:
    ``x = torch.where(mask, noise, x)`` meets device tensors, so ``x`` was there already."""

    def __init__(self, semantic: Semantic) -> None:
        self.semantic = semantic
        self.found: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MOVES:
            self.read(func.value)
            return
        qualified = self.semantic.qualify(func) or ""
        if qualified.startswith("torch.") and keyword(node, "device") is None:
            return
        for arg in node.args:
            self.read(arg.value)

    def read(self, expr: cst.BaseExpression) -> None:
        names = _Names()
        walk(expr, names)
        self.found |= names.found


def _is_callable_name(name: str, value: cst.BaseExpression) -> bool:
    """``f`` in ``f(x)``: a callee, not a source."""
    return isinstance(value, cst.Call) and dotted(value.func) == name


def _with_device_tensors(event: CallEvent, semantic: Semantic, used: cst.Arg) -> bool:
    others = [
        value for arg, value in zip(event.node.args, event.args, strict=True) if arg is not used
    ]
    if any_on_device(others):
        return True
    callee = dotted(event.node.func)
    held = semantic.lookup(callee) if callee is not None else None
    if held is None:
        return False
    # `model = Net().to(device)` with Net from another file: a callable moved to the device
    callable_kind = held.kind in (Kind.MODULE, Kind.UNKNOWN)
    return callable_kind and (held.place is Place.DEVICE or held.stale) and not held.wrapper
