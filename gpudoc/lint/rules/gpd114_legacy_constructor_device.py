"""GPD114: a legacy tensor constructor (``torch.LongTensor(...)``) handed a GPU ``device=``."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
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
    device variable, `"cuda"`, `x.device`.

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
    EVENTS = ("call",)
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

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        qualified = event.qualified or ""
        head, _, last = qualified.rpartition(".")
        if head != "torch" or last not in api.LEGACY_TENSOR_TYPES:
            return
        for arg, value in zip(event.node.args, event.args, strict=True):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "device" and not _on_cpu(arg.value, value):
                shown = _code(arg.value)
                message = (
                    f"`torch.{last}(..., device={shown})` raises `legacy constructor expects "
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
