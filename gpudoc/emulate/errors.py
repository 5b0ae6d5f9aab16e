"""The errors a GPU raises, with the text PyTorch gives there, built for emulated devices.

The wording follows the CUDA build of the installed PyTorch: the device check that the code
generator puts in each CUDA kernel wrapper (``wrapper_CUDA_addmm``), TensorIterator's check for
pointwise operations, convolution's input/weight type check, and ``.numpy()``'s check. Which check
an operation has is read from the ``native_functions.yaml`` that ships with torch (torchgen),
only when an error is raised.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path
from typing import Any

import torch
import torch.utils.data

from gpudoc.emulate.state import STATE

CUDA_ERROR_TAIL = (
    "\nCUDA kernel errors might be asynchronously reported at any other API call, so the "
    "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"
    "\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)


class EmulatedDeviceError(RuntimeError):
    """A device error a GPU would raise; ``operands`` are the tensors involved, by argument."""

    kind = "device-mismatch"

    def __init__(self, message: str, operands: list[tuple[str, torch.Tensor]]) -> None:
        super().__init__(message)
        self.operands = operands


class NumpyOnDeviceError(TypeError):
    """``.numpy()`` on a device tensor; a TypeError, as on a GPU."""

    kind = "numpy-on-device"

    def __init__(self, tensor: torch.Tensor) -> None:
        super().__init__(
            f"can't convert {tensor.device} device type tensor to numpy. Use Tensor.cpu() to "
            "copy the tensor to host memory first."
        )
        self.operands = [("self", tensor)]


class CudaInForkedWorkerError(RuntimeError):
    """CUDA used in a forked DataLoader worker after the parent initialised it.

    One-argument constructor on purpose: the DataLoader re-raises a worker's exception in the
    main process as ``type(error)(message)``, so this class survives the trip.
    """

    kind = "cuda-in-forked-worker"

    def __init__(self, message: str = "") -> None:
        self.operands: list[tuple[str, torch.Tensor]] = []
        super().__init__(
            message
            or "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
            "you must use the 'spawn' start method"
        )


def check_not_in_forked_worker() -> None:
    """On a GPU, a forked DataLoader worker cannot touch CUDA once the parent has."""
    if STATE.cuda_initialized and torch.utils.data.get_worker_info() is not None:
        raise CudaInForkedWorkerError()


class GpudocFailure(Exception):
    """gpudoc's own work failed (not the script): reported as gpudoc's, never as the user's."""

    def __init__(self, doing: str, failure: BaseException) -> None:
        super().__init__(f"gpudoc failed while {doing}: {type(failure).__name__}: {failure}")


class NotEmulatedError(RuntimeError):
    """Something only a real GPU can run (a CUDA extension, a Triton kernel)."""


def not_emulated(what: str) -> NotEmulatedError:
    return NotEmulatedError(
        f"cannot emulate {what}: it needs a real GPU. "
        "Guard it behind a flag, or run this part on a GPU machine."
    )


def invalid_ordinal() -> EmulatedDeviceError:
    error = EmulatedDeviceError("CUDA error: invalid device ordinal" + CUDA_ERROR_TAIL, [])
    error.kind = "invalid-device-ordinal"
    return error


def device_name(tensor: torch.Tensor) -> str:
    return str(tensor.device)


class DeviceMismatchError(EmulatedDeviceError):
    def __init__(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        operands = _named_operands(func, args, kwargs)
        super().__init__(mismatch_message(func, operands), operands)


def check_indexing(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """CUDA tensors accept CPU indices; a CPU tensor refuses CUDA indices when read at them,
    and takes them when stored into (``index_put_`` moves its indices to the tensor's device,
    as ATen's ``make_info`` does: ``onehot[rows, labels] = 1.0`` runs on a GPU)."""
    operands = _named_operands(func, args, kwargs)
    indexed = operands[0][1]
    stores = func._schema.name.endswith(("index_put", "index_put_"))
    for name, tensor in [] if stores else operands[1:]:
        if name == "indices" and tensor.device not in (indexed.device, torch.device("cpu")):
            message = (
                "indices should be either on cpu or on the same device as the indexed "
                f"tensor ({indexed.device})"
            )
            raise EmulatedDeviceError(message, operands)
    if any(name != "indices" and t.device != indexed.device and t.dim() for name, t in operands):
        raise DeviceMismatchError(func, args, kwargs)


def _named_operands(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, torch.Tensor]]:
    """Tensor operands by schema argument name, out= arguments first (the order checks use)."""
    schema_args = func._schema.arguments
    named: list[tuple[str, Any]] = []
    for position, argument in enumerate(schema_args):
        value = args[position] if position < len(args) else kwargs.get(argument.name)
        named.append((argument.name, value))
    outs = {argument.name for argument in schema_args if argument.is_out}
    ordered = [item for item in named if item[0] in outs] + [i for i in named if i[0] not in outs]
    operands: list[tuple[str, torch.Tensor]] = []
    for name, value in ordered:
        values = value if isinstance(value, (list, tuple)) else [value]
        operands.extend((name, item) for item in values if isinstance(item, torch.Tensor))
    return operands


def check_rnn(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The check ATen's recurrent layers make before any kernel (``check_attributes`` in
    RNN.cpp): each hidden state, then each parameter, on the input's device. The emulated run
    would otherwise fail later, inside the cell's ``addmm``, with another message."""
    if len(args) < 3 or not isinstance(args[0], torch.Tensor):
        return
    # a packed sequence's call is (data, batch_sizes, hx, params, ...): its batch sizes are
    # integers, where an unpacked call has its hidden state (floating point, or LSTM's pair)
    sizes = args[1]
    packed = isinstance(sizes, torch.Tensor) and not sizes.is_floating_point() and len(args) > 3
    hidden, params = (args[2], args[3]) if packed else (args[1], args[2])
    hiddens = list(hidden) if isinstance(hidden, list | tuple) else [hidden]
    data = args[0]
    for name, group in (("hidden", hiddens), ("parameter", list(params))):
        for tensor in group:
            if isinstance(tensor, torch.Tensor) and tensor.device != data.device:
                message = (
                    f"Input and {name} tensors are not at the same device, found input tensor "
                    f"at {data.device} and {name} tensor at {tensor.device}"
                )
                raise EmulatedDeviceError(message, [("input", data), (name, tensor)])


def check_rnn_cell(args: tuple[Any, ...], fused: str) -> None:
    """The checks a GPU's LSTM and GRU cells meet for a CUDA input (``LSTMCell`` / ``GRUCell``
    in RNN.cpp): ``mm(input, w_ih.t())``, ``mm(h, w_hh.t())``, then the fused kernel's own
    check of the cell state and the biases. The CPU build runs ``addmm`` instead, whose check
    names the operands the other way round."""
    if len(args) < 4 or not isinstance(args[0], torch.Tensor) or not args[0].is_cuda:
        return
    data, hidden, w_ih, w_hh = args[:4]
    state = list(hidden) if isinstance(hidden, list | tuple) else [hidden]
    for first, weight in ((data, w_ih), (state[0] if state else None, w_hh)):
        if isinstance(first, torch.Tensor) and isinstance(weight, torch.Tensor):
            pair = [("self", first), ("mat2", weight)]
            if first.device != weight.device:
                raise EmulatedDeviceError(_codegen_message("wrapper_CUDA_mm", pair), pair)
    extra = [("cx", state[1])] if fused == "_thnn_fused_lstm_cell" and len(state) > 1 else []
    if fused == "_thnn_fused_gru_cell" and state:
        extra = [("hx", state[0])]
    biases = [("input_bias", args[4]), ("hidden_bias", args[5])] if len(args) > 5 else []
    operands = [("input_gates", data), *extra, *biases]
    operands = [(name, t) for name, t in operands if isinstance(t, torch.Tensor)]
    if any(t.device != data.device for _, t in operands):
        method = _check_style(fused, "") or f"wrapper_CUDA__{fused}"
        raise EmulatedDeviceError(_codegen_message(method, operands), operands)


def mismatch_message(func: Any, operands: list[tuple[str, torch.Tensor]]) -> str:
    name = func._schema.name.split("::")[-1]
    overload = func._overloadname if func._overloadname != "default" else ""
    if name == "convolution":
        return _convolution_message(operands)
    if name in BATCH_NORMS and _cudnn_batch_norm(operands):
        return _codegen_message("wrapper_CUDA__cudnn_batch_norm", operands)
    if name in ("masked_fill", "masked_fill_") and len(operands) > 1:
        by_name = dict(operands)
        data, mask = by_name.get("self"), by_name.get("mask")
        if data is not None and mask is not None and data.is_cuda and mask.device != data.device:
            return (  # the CUDA kernel's own check, before TensorIterator's
                "expected self and mask to be on the same device, but got mask on "
                f"{mask.device} and self on {data.device}"
            )
    if name == "embedding":  # CompositeExplicitAutograd: the check is index_select's
        renamed = [("self" if n == "weight" else "index", t) for n, t in operands]
        return _codegen_message("wrapper_CUDA__index_select", renamed)
    style = _check_style(name, overload)
    if style is None:
        return _tensor_iterator_message(operands)
    return _codegen_message(style, operands)


BATCH_NORMS = frozenset(
    {"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training"}
)


def _cudnn_batch_norm(operands: list[tuple[str, torch.Tensor]]) -> bool:
    """A GPU runs batch norm of a CUDA input of a cuDNN dtype with cuDNN (its check then names
    ``cudnn_batch_norm``); the CPU build runs ``native_batch_norm``."""
    data = dict(operands).get("input")
    cudnn_dtypes = (torch.float32, torch.float16, torch.bfloat16)
    return data is not None and data.is_cuda and data.dtype in cudnn_dtypes


def _convolution_message(operands: list[tuple[str, torch.Tensor]]) -> str:
    by_name = dict(operands)
    data, weight, bias = by_name["input"], by_name["weight"], by_name.get("bias")
    second = ("weight", weight) if data.device != weight.device else ("bias", bias)
    other = second[1]
    assert other is not None
    if data.type() == other.type():
        # Same type on two GPUs passes the type check; cuDNN's generated device check fires.
        renamed = [("self", data), (second[0], other)]
        return _codegen_message("wrapper_CUDA__cudnn_convolution", renamed)
    message = f"Input type ({data.type()}) and {second[0]} type ({other.type()}) should be the same"
    # ATen's convolution picks its backend by the input's device: a host input of a oneDNN dtype
    # goes to the Mkldnn backend, whose check says more; a device input goes to cuDNN, whose
    # check says only this (both measured on an H200 with torch 2.11).
    if data.device.type == "cpu" and data.dtype in (torch.float32, torch.bfloat16):
        message += f" or input should be a MKLDNN tensor and {second[0]} is a dense tensor"
    return message


def _tensor_iterator_message(operands: list[tuple[str, torch.Tensor]]) -> str:
    devices = [t.device for _, t in operands]
    common = next((d for d in devices if d.type != "cpu"), devices[0])
    for _name, tensor in operands:
        is_cpu_scalar = tensor.device.type == "cpu" and tensor.dim() == 0
        if tensor.device != common and not is_cpu_scalar:
            return (
                "Expected all tensors to be on the same device, but found at least two "
                f"devices, {common} and {tensor.device}!"
            )
    return (
        f"Expected all tensors to be on the same device, but found at least two devices, {common}"
    )


def _codegen_message(method: str, operands: list[tuple[str, torch.Tensor]]) -> str:
    common = operands[0][1].device
    for arg_name, tensor in operands:
        if tensor.device != common:
            return (
                f"Expected all tensors to be on the same device, but got {arg_name} is on "
                f"{tensor.device}, different from other tensors on {common} (when checking "
                f"argument in method {method})"
            )
    return _tensor_iterator_message(operands)


def _check_style(name: str, overload: str) -> str | None:
    """The CUDA wrapper whose generated device check fires, or None for TensorIterator's."""
    table = _native_functions()
    entry = table.get((name, overload))
    if entry is None or "NoCheck" in entry["device_check"]:
        return None
    kernel = entry
    if entry["delegate"]:
        base, _, delegate_overload = entry["delegate"].partition(".")
        kernel = table.get((base, delegate_overload), entry)
    if not kernel["cuda"]:
        return None
    if entry["structured"]:
        return f"wrapper_CUDA_{name}" + (f"_{overload}" if overload else "")
    return f"wrapper_CUDA_{overload}_{name}"


@functools.cache
def _native_functions() -> dict[tuple[str, str], dict[str, Any]]:
    spec = importlib.util.find_spec("torchgen")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    if not path.is_file():
        return {}
    return _parse_native_functions(path.read_text(encoding="utf-8"))


def _parse_native_functions(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Just the three facts we need per operator; a full YAML parse costs seconds."""
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("- func: "):
            qualified = line[len("- func: ") :].split("(", 1)[0]
            name, _, overload = qualified.partition(".")
            current = {"device_check": "", "structured": False, "cuda": False, "delegate": ""}
            entries[(name, overload)] = current
        elif current is not None:
            stripped = line.strip()
            if stripped.startswith("device_check:"):
                current["device_check"] = stripped
            elif stripped.startswith("structured_delegate:"):
                current["structured"] = True
                current["delegate"] = stripped.split(":", 1)[1].strip()
            elif stripped.startswith("structured: True"):
                current["structured"] = True
            elif ":" in stripped and line.startswith("    "):
                keys = {key.strip() for key in stripped.split(":", 1)[0].split(",")}
                current["cuda"] = current["cuda"] or "CUDA" in keys
    return entries


# Device errors that torch's own Python code raises (DataParallel, RNN input checks, ...).
_TORCH_DEVICE_MESSAGES = (
    "module must have its parameters and buffers on device",
    "Expected all tensors to be on the same device",
    "are not at the same device",
    "device type tensor to numpy",
)


def is_device_message(failure: BaseException) -> bool:
    text = str(failure)
    return (isinstance(failure, RuntimeError | TypeError) or from_child(failure)) and any(
        fragment in text for fragment in _TORCH_DEVICE_MESSAGES
    )


def from_child(failure: BaseException) -> bool:
    """An error a child process raised, passed on with its traceback as text (mp.spawn)."""
    return type(failure).__name__ == "ProcessRaisedException"


def needs_real_gpu(failure: BaseException) -> str | None:
    """Name what a failure needed from a real GPU (Triton, NCCL, CUDA itself), or None."""
    text = str(failure)
    files = []
    tb = failure.__traceback__
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    if any(f"{os.sep}triton{os.sep}" in name for name in files):
        return "a Triton kernel"
    # a build with NCCL joins the group; its first collective then finds no backend for the
    # emulated tensors' storage ("No backend type associated with device type cpu")
    if "NCCL" in text or "No backend type associated with device type cpu" in text:
        return "NCCL collectives (torch.distributed with the nccl backend)"
    if "Torch not compiled with CUDA enabled" in text or "CUDA driver" in text:
        return "a CUDA call gpudoc does not emulate" + _last_torch_function(failure)
    return None


def _last_torch_function(failure: BaseException) -> str:
    tb, name = failure.__traceback__, ""
    while tb is not None:
        code = tb.tb_frame.f_code
        if f"{os.sep}torch{os.sep}" in code.co_filename:
            module = code.co_filename.rsplit(f"{os.sep}torch{os.sep}", 1)[1].removesuffix(".py")
            name = f" (torch/{module}.py, {code.co_name})"
        tb = tb.tb_next
    return name
