"""GPD503: a device flag parsed with argparse's `type=bool`, which cannot be turned off."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.events import CallEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import dotted, keyword
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.visit import walk

# Flags that choose where the script runs: --cuda, --use_gpu, --gpu-mode, --no_cuda, --cpu,
# --device_ids, --mps, --cudnn_benchmark. Other booleans parsed this way are broken too, but
# they are not a placement bug, and gpudoc stays on its subject.
DEVICE_WORD = re.compile(r"cuda|gpu|cpu|device|mps|cudnn", re.IGNORECASE)


class BoolDeviceFlag(Rule):
    """`parser.add_argument("--cuda", type=bool, ...)`: `--cuda False` still means True.

    ## What it does
    Finds an argparse option whose name (or `dest=`) is about the device (`cuda`, `gpu`, `cpu`,
    `device`, `mps`, `cudnn`) and whose `type=` is `bool`; also one with `action="store_true"`
    and `default=True`, which is on whether it is given or not and cannot be turned off.

    ## Why is this bad?
    argparse calls `type` on the text given: `bool("False")` and `bool("0")` are `True`, since
    any non-empty string is. A user on a CPU-only machine who passes `--gpu_mode False` still
    gets the GPU path and `Torch not compiled with CUDA enabled`; `--no_cuda False` forces the
    CPU on a GPU machine. The bug was fixed this way in znxlwm/pytorch-generative-model-collections
    (commit 1427611); the argparse documentation warns that `bool()` "is not recommended as a
    type converter".

    ## Example
    ```python
    parser.add_argument("--gpu_mode", type=bool, default=True)
    ```

    ## Use instead
    ```python
    parser.add_argument("--gpu_mode", action=argparse.BooleanOptionalAction, default=True)
    ```

    ## Known problems
    No fix is offered: `action="store_true"` or `BooleanOptionalAction` change how the flag is
    spelled on the command line (`--gpu_mode False` becomes `--no-gpu_mode`), which breaks the
    scripts and READMEs that call it. Like every rule, it reads only files that mention
    `torch`, so an options module that never does is not checked. A file whose every
    `parse_args` is given its arguments in the code (`parser.parse_args("")` in a notebook) is
    not reported: no command line ever sets the option. Neither is an option that a file which
    parses its own command line never reads (`args.cuda` appears nowhere): it changes nothing.
    """

    CODE = "GPD503"
    NAME = "bool-device-flag"
    SUMMARY = "a device flag parsed with type=bool: `--cuda False` is still True"
    PLACEMENT = False
    VALID = (
        """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action=argparse.BooleanOptionalAction, default=True)
parser.add_argument("--no_cuda", action="store_true")
parser.add_argument("--shuffle", type=bool, default=True)
""",
    )
    INVALID = (
        Invalid(
            """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--gpu_mode", type=bool, default=True)
""",
            line=4,
            col=35,
        ),
        Invalid(
            """\
import torch
def add_options(group):
    group.add_argument(
        "-c",
        dest="use_cuda",
        type=bool,
        default=False,
    )
""",
            line=6,
            col=9,
        ),
    )

    EVENTS = ("call",)

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, Report, bool]] = []
        """Each option's ``dest``, its report, and whether it is a ``store_true`` flag that
        defaults to True (a ``store_false`` option of the same ``dest`` turns that one off)."""
        self.parses: list[cst.Call] = []
        self.turned_off: set[str] = set()
        """Destinations an option with ``action="store_false"`` sets."""
        self.parsed_for_caller = False
        """Some ``parse_args()`` runs in a function that returns a value (``return args``):
        the options may be read by its callers, in other files."""

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if event.method in ("parse_args", "parse_known_args"):
            self.parses.append(event.node)
            function = semantic.function_node
            self.parsed_for_caller |= function is not None and _returns_a_value(function)
        if event.method != "add_argument":
            return
        action = keyword(event.node, "action")
        stored = string_value(action.value) if action is not None else None
        if stored == "store_false":
            # `--no_use_gpu` with action="store_false", dest="use_gpu": the way to turn it off
            self.turned_off.add(_dest(event.node, _device_flag(event.node) or ""))
        bool_type = _bool_type_argument(event.node)
        default = keyword(event.node, "default")
        always_on = (
            stored == "store_true" and default is not None and dotted(default.value) == "True"
        )
        flag = _device_flag(event.node)
        if flag is None or (bool_type is None and not always_on):
            return
        if bool_type is not None:
            report = Report(bool_type, _message(flag))
        else:
            report = Report(event.node, _always_on_message(flag))  # the whole option
        self.found.append((_dest(event.node, flag), report, always_on and bool_type is None))

    def finish(self, context: Context) -> Iterator[Report]:
        if self.parses and all(_fixed_arguments(call) for call in self.parses):
            return  # `parser.parse_args("")` in a notebook: no command line ever sets it
        if not self.parses and (context.path or "").endswith(".ipynb"):
            return  # a notebook nothing imports, never parsing: its `args` are set by hand
        read: set[str] | None = None
        for dest, report, always_on in self.found:
            if always_on and dest in self.turned_off:
                continue  # `--no_use_gpu` turns it off
            if self.parses and not self.parsed_for_caller:  # the options are read here
                if read is None:
                    read = _names_read(context.module)
                if dest not in read:
                    continue  # parsed, never used: `--cuda False` changes nothing
            yield report


def _bool_type_argument(call: cst.Call) -> cst.Arg | None:
    for arg in call.args:
        named_type = arg.keyword is not None and arg.keyword.value == "type"
        if named_type and isinstance(arg.value, cst.Name) and arg.value.value == "bool":
            return arg
    return None


def _always_on_message(flag: str) -> str:
    return (
        f"`{flag}` is action='store_true' with default=True: it is on whether or not it is "
        "given, and no command line turns it off; use action=argparse.BooleanOptionalAction "
        "(which adds the `--no-` form) or default=False"
    )


def _device_flag(call: cst.Call) -> str | None:
    """The option as the user types it (its first option string, else ``dest``), when one of
    its names is about the device."""
    names: list[str] = []
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "dest":
            text = string_value(arg.value)
            if text is not None:
                names.append(text)
    if not any(DEVICE_WORD.search(name) for name in names):
        return None
    options = [name for name in names if name.startswith("-")]
    return (options or names)[0]


def _dest(call: cst.Call, flag: str) -> str:
    """Where argparse stores the option: ``dest=``, else the option without its dashes."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            return string_value(arg.value) or flag
    return flag.lstrip("-").replace("-", "_")


class _Reads(cst.CSTVisitor):
    """Attribute names read as values (``args.cuda``, not ``x.cuda()``) and string constants
    (``getattr(args, "cuda")``, ``vars(args)["cuda"]``)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.called: set[cst.Attribute] = set()
        self.declaring = 0
        """Inside ``add_argument(...)``, whose ``dest="use_cuda"`` declares, not reads."""
        self.torch_names = {"torch"}

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute):
            self.called.add(node.func)
            self.declaring += node.func.attr.value == "add_argument"

    def leave_Call(self, original_node: cst.Call) -> None:
        func = original_node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "add_argument":
            self.declaring -= 1

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:  # `import torch as th`
            if dotted(alias.name) == "torch" and alias.asname is not None:
                self.torch_names.add(dotted(alias.asname.name) or "torch")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # `torch.cuda.is_available()` reads torch's module, not an option named `cuda`
        root = (dotted(node) or "").partition(".")[0]
        if node not in self.called and root not in self.torch_names:
            self.names.add(node.attr.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        text = string_value(node)
        if text is not None and not self.declaring:
            self.names.add(text)


class _Returns(cst.CSTVisitor):
    def __init__(self) -> None:
        self.value = False

    def visit_Return(self, node: cst.Return) -> None:
        self.value |= node.value is not None


def _returns_a_value(function: cst.FunctionDef) -> bool:
    returns = _Returns()
    walk(function.body, returns)
    return returns.value


def _names_read(module: cst.Module) -> set[str]:
    reads = _Reads()
    walk(module, reads)
    return reads.names


def _message(flag: str) -> str:
    spelled = flag if flag.startswith("-") else f"--{flag}"
    return (
        f"`{flag}` is parsed with type=bool: bool('False') is True, so `{spelled} False` still "
        "turns it on; use action=argparse.BooleanOptionalAction (or action='store_true')"
    )


def _fixed_arguments(call: cst.Call) -> bool:
    """``parse_args("")``, ``parse_args([])``, ``parse_args(args=["--lr", "0.1"])``: the
    arguments are written in the code, not read from the command line."""
    if not call.args:
        return False
    value = call.args[0].value
    return isinstance(value, cst.SimpleString | cst.List | cst.Tuple)
