"""GPD114: a legacy tensor constructor (``torch.LongTensor(...)``) handed a GPU ``device=``."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, ClassEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import class_method, dotted
from gpudoc.lint.analysis.values import Kind, Value
from gpudoc.lint.rule import Invalid, Rule

DTYPES = {
    "Tensor": "torch.float32",
    "FloatTensor": "torch.float32",
    "DoubleTensor": "torch.float64",
    "HalfTensor": "torch.float16",
    "BFloat16Tensor": "torch.bfloat16",
    "ByteTensor": "torch.uint8",
    "CharTensor": "torch.int8",
    "ShortTensor": "torch.int16",
    "IntTensor": "torch.int32",
    "LongTensor": "torch.long",
    "BoolTensor": "torch.bool",
}
"""What ``torch.tensor`` needs to make the same type: it infers int64 from ``[1]``, where
``torch.Tensor([1])`` makes float32."""


class LegacyConstructorDevice(Rule):
    """A legacy constructor (`torch.Tensor`, `torch.LongTensor`...) given a `device=`.

    ## What it does
    Finds `torch.Tensor(...)`, `torch.FloatTensor(...)`, `torch.LongTensor(...)` and the other
    legacy tensor types called with a `device=` argument that is not the CPU: the script's
    device variable, `"cuda"`, `x.device`. Also through an attribute that the class's
    `__init__` sets to one, directly or from a parameter's default (torchtext's
    `Field(tensor_type=torch.LongTensor)`, then `self.tensor_type(arr, device=device)`).

    ## Why is this bad?
    The legacy constructors build CPU tensors only. Given a GPU, they raise
    `RuntimeError: legacy constructor expects device type: cpu but device type: cuda was passed`
    at once; on a machine without a GPU the same line runs, so a script tried on a laptop fails
    on the cluster (the seq2seq tutorials' `torch.LongTensor([[SOS_token]], device=device)`).

    ## Example
    ```python
    decoder_input = torch.LongTensor([[SOS_token]], device=device)
    ```

    ## Use instead
    ```python
    decoder_input = torch.tensor([[SOS_token]], dtype=torch.long, device=device)
    ```

    ## Known problems
    A `device=` known to be the CPU (`"cpu"`, `torch.device("cpu")`, a name bound to one) is
    left alone. `torch.cuda.FloatTensor(...)`, which takes a GPU, is another API.
    """

    CODE = "GPD114"
    NAME = "legacy-constructor-with-device"
    SUMMARY = "torch.LongTensor(..., device=gpu) raises: legacy constructors build CPU tensors only"
    PLACEMENT = False  # the line itself fails on a GPU, whatever else the file places
    IN_LIBRARIES = True
    EVENTS = ("class", "call")
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tokens = torch.tensor([[1]], dtype=torch.long, device=device)
host = torch.LongTensor([[1]], device="cpu")
typed = torch.cuda.LongTensor([[1]], device=device)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
decoder_input = torch.LongTensor([[0]], device=device)
""",
            line=3,
            col=17,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.typed_attributes: dict[int, dict[str, str]] = {}
        """id of a method -> the attributes its class's ``__init__`` binds to a legacy type."""

    def on_class(self, event: ClassEvent, semantic: Semantic) -> None:
        """``def __init__(self, tensor_type=torch.LongTensor): self.tensor_type = tensor_type``
        (torchtext's ``Field``): ``self.tensor_type(arr, device=device)`` is that constructor."""
        init = class_method(event.node, "__init__")
        if init is None:
            return
        defaults = {
            p.name.value: semantic.qualify(p.default) or ""
            for p in (*init.params.params, *init.params.kwonly_params)
            if p.default is not None
        }
        typed: dict[str, str] = {}
        for statement in init.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                    continue
                target = dotted(small.targets[0].target) or ""
                value = small.value
                qualified = semantic.qualify(value) or ""
                if isinstance(value, cst.Name) and value.value in defaults:
                    qualified = defaults[value.value]
                head, _, last = qualified.rpartition(".")
                if target.startswith("self.") and head == "torch" and last in DTYPES:
                    typed[target[5:]] = last
        if typed:
            methods = [s for s in event.node.body.body if isinstance(s, cst.FunctionDef)]
            self.typed_attributes.update((id(m), typed) for m in methods)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        qualified = event.qualified or ""
        head, _, last = qualified.rpartition(".")
        function = semantic.function_node
        attribute = dotted(event.node.func) or ""
        if function is not None and attribute.startswith("self."):
            typed = self.typed_attributes.get(id(function), {}).get(attribute[5:])
            head, last = ("torch", typed) if typed else (head, last)
        if head != "torch" or last not in api.LEGACY_TENSOR_TYPES:
            return
        # `self.tensor_type(...)`, an attribute `__init__` sets to `torch.LongTensor`
        via = not qualified.endswith(last)
        callee, named = (attribute, f" (`torch.{last}`)") if via else (f"torch.{last}", "")
        for arg, value in zip(event.node.args, event.args, strict=True):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "device" and not _on_cpu(arg.value, value):
                shown = _code(arg.value)
                message = (
                    f"`{callee}(..., device={shown})`{named} raises `legacy constructor expects "
                    f"device type: cpu` when `{shown}` is a GPU: legacy constructors build CPU "
                    f"tensors only; use `torch.tensor(..., dtype={DTYPES[last]}, "
                    f"device={shown})`"
                )
                self.report(event.node, message)


def _on_cpu(node: cst.BaseExpression, value: Value) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a name the walk knows holds the CPU."""
    text = string_value(node)
    if text is None and isinstance(node, cst.Call) and node.args:
        text = string_value(node.args[0].value)
    if text is not None and api.CPU_LITERAL.match(text):
        return True
    return value.kind is Kind.DEVICE and value.cpu_device


def _code(node: cst.BaseExpression) -> str:
    return cst.Module([]).code_for_node(node)
