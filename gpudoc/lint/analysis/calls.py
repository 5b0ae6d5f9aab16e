"""Evaluating calls: torch functions, module constructors and calls, tensor methods."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, CudaEvent
from gpudoc.lint.analysis.expressions import Evaluator, string_value
from gpudoc.lint.analysis.names import dotted, keyword
from gpudoc.lint.analysis.scope import Scope
from gpudoc.lint.analysis.values import (
    SCALAR,
    UNKNOWN,
    Kind,
    Place,
    Value,
    element_of,
    join_places,
)

MOVE_METHODS = frozenset({"to", "cuda", "cpu", "type_as", "to_device"})
BUILTINS = frozenset(
    [
        "print",
        "len",
        "isinstance",
        "issubclass",
        "str",
        "repr",
        "type",
        "id",
        "sum",
        "list",
        "tuple",
        "dict",
        "set",
        "sorted",
        "enumerate",
        "zip",
        "iter",
        "next",
        "range",
        "hasattr",
        "getattr",
        "setattr",
        "vars",
        "dir",
        "hash",
        "min",
        "max",
        "any",
        "all",
    ]
)
ITERATION_BUILTINS = frozenset({"iter", "tqdm", "list", "tuple", "sorted", "reversed", "trange"})


def keyword_value(call: cst.Call, values: list[Value], name: str) -> tuple[cst.Arg, Value] | None:
    """The keyword argument ``name`` and its already evaluated value."""
    for arg, value in zip(call.args, values, strict=True):
        if arg.keyword is not None and arg.keyword.value == name:
            return arg, value
    return None


class CallEvaluator(Evaluator):
    def note_self_placing(self) -> None:
        """``self.to(device)`` / ``self.cuda()`` in ``__init__``: the class places itself."""
        cls = self.scope.module_class
        if cls is not None and self.in_init:
            cls.places_itself = True

    def note_cuda(self, node: cst.CSTNode, text: str) -> None:
        self.flags.device_notion = True
        if api.CUDA_LITERAL.match(text) or text == ".cuda()":
            self.scope.cuda_initialised = True
            if self.bus.wants("cuda"):
                self.emit("cuda", CudaEvent(node, text))

    def eval_call(self, node: cst.Call) -> Value:
        if not self.bus.wants("call"):
            return self.call_value(node)
        result = self.call_value(node)
        func = node.func
        pending = self.call_operands.get(node)
        # a recursive method's call is evaluated again inside its own walk: innermost first
        args, receiver = pending.pop() if pending else ((), None)
        if len(args) != len(node.args):
            args = tuple(UNKNOWN for _ in node.args)
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        name, module, combines = self.call_roles.pop(node, (None, None, False))
        qualified = self.imports.qualify(func)
        event = CallEvent(node, qualified, method, receiver, args, result, name, module, combines)
        self.emit("call", event)
        return result

    def call_value(self, node: cst.Call) -> Value:
        func = node.func
        if node in self.moved_receivers:
            self.note_moved_chain(node)
        if self.is_zoo_lookup(func):
            self.eval_args(node)
            return Value(Kind.MODULE, Place.HOST, weighted=True, origin=node)
        if isinstance(func, cst.Attribute) and func.attr.value in MOVE_METHODS:
            if isinstance(func.value, cst.Call):
                self.moved_receivers.add(func.value)
            if isinstance(func.value, cst.Name) and func.value.value == "self":
                self.note_self_placing()
        qualified = self.imports.qualify(func)
        if qualified is not None:
            return self.eval_qualified(node, qualified)
        if isinstance(func, cst.Attribute):
            name = dotted(func) or ""
            held = self.scope.lookup(name)
            if held is not None and held.kind is Kind.MODULE:  # `self.model(x)`
                if name.startswith("self.") and self.scope.module_class is not None:
                    held = held.with_place(Place.UNKNOWN)  # a submodule moves with its parent
                return self.module_call(node, name, held, self.eval_args(node))
            return self.eval_method(node, func)
        if isinstance(func, cst.Name):
            return self.eval_named_call(node, func.value)
        callee = self.eval(func)
        args = self.eval_args(node)
        if callee.kind is Kind.MODULE:
            return self.module_call(node, dotted(func) or "", callee, args)
        return host_output(callee, node)

    def eval_qualified(self, node: cst.Call, qualified: str) -> Value:
        raise NotImplementedError

    def note_moved_chain(self, node: cst.Call) -> None:
        """``torch.arange(n).unsqueeze(0).repeat(b, 1).to(dev)``: what a moved result was
        computed from moves with it (for GPD106, a factory at the start of the chain)."""
        func = node.func
        qualified = self.imports.qualify(func) or ""
        if qualified.startswith("torch.") and qualified[6:] not in api.TENSOR_FACTORIES:
            for arg in node.args:
                if isinstance(arg.value, cst.Call) and arg.keyword is None:
                    self.moved_receivers.add(arg.value)
        elif isinstance(func, cst.Attribute) and func.attr.value in api.PLACE_KEEPING_METHODS:
            receiver = func.value
            if isinstance(receiver, cst.Call):
                self.moved_receivers.add(receiver)

    def is_zoo_lookup(self, func: cst.BaseExpression) -> bool:
        """``models.__dict__[arch]`` or ``getattr(models, arch)``: a model-zoo constructor."""
        namespace: cst.BaseExpression | None = None
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute):
            if func.value.attr.value == "__dict__":
                namespace = func.value.value
        elif isinstance(func, cst.Call) and dotted(func.func) == "getattr" and func.args:
            namespace = func.args[0].value
        if namespace is None:
            return False
        return (self.imports.qualify(namespace) or "") in api.ZOO_NAMESPACES

    def call_function(
        self, node: cst.FunctionDef, call: cst.Call, values: list[Value], parent: Scope
    ) -> Value:
        raise NotImplementedError

    def class_scope(self) -> Scope | None:
        scope: Scope | None = self.scope
        while scope is not None and scope.function != "":
            scope = scope.parent
        return scope

    def eval_args(self, node: cst.Call, receiver: Value | None = None) -> list[Value]:
        values = [self.eval(arg.value) for arg in node.args]
        if self.bus.wants("call"):  # for the call event, without evaluating anything twice
            self.call_operands.setdefault(node, []).append((tuple(values), receiver))
        return values

    # -- calls of plain names: local classes, modules held in variables, builtins ------------
    def eval_named_call(self, node: cst.Call, name: str) -> Value:
        local = self.local_class(name)
        callee = self.scope.lookup(name)
        args = self.eval_args(node)
        function = self.local_functions.get(name)
        if function is not None and callee is None and local is None:
            return self.call_function(function, node, args, self.module_scope)
        if local == "dataset":
            place = Place.UNKNOWN if name in self.device_datasets else Place.HOST
            return Value(Kind.LOADER, place, origin=node, source=f"dataset:{name}")
        if local is not None and not isinstance(local, str):
            placed_parts = any(a.kind is Kind.MODULE and a.place is Place.DEVICE for a in args)
            unplaced = local.places_itself or self.device_context or placed_parts
            place = Place.UNKNOWN if unplaced else Place.HOST
            return Value(Kind.MODULE, place, weighted=True, managed=local.lightning, origin=node)
        if callee is not None and callee.kind is Kind.UNKNOWN and callee.place is Place.DEVICE:
            # `decoder = Decoder(...)` from a file not read, then `decoder.cuda()`: only a
            # module is both moved and called
            callee = replace(callee, kind=Kind.MODULE, weighted=True)
        if callee is not None and callee.kind is Kind.MODULE:
            return self.module_call(node, name, callee, args)
        if callee is not None and callee.source in ("transform", "tokenizer"):
            return host_output(callee, node)
        if name not in BUILTINS:
            self.forget_placement(node, args)
        return self.eval_builtin(name, args)

    def forget_placement(self, node: cst.Call, args: list[Value]) -> None:
        """A helper given a host module may move it in place (`place(model, device)`)."""
        for arg, value in zip(node.args, args, strict=True):
            name = dotted(arg.value)
            if name is not None and value.kind is Kind.MODULE and value.place is Place.HOST:
                self.scope.env[name] = value.with_place(Place.UNKNOWN)

    def eval_builtin(self, name: str, args: list[Value]) -> Value:
        if not args:
            return UNKNOWN
        if name == "enumerate":
            return (
                Value(Kind.LOADER, args[0].place, source="enumerate", by_name=args[0].by_name)
                if (args[0].kind is Kind.LOADER)
                else UNKNOWN
            )
        if name == "zip":
            if any(arg.kind is Kind.LOADER for arg in args):
                return Value(Kind.LOADER, join_places([a.place for a in args]), source="zip")
            return UNKNOWN
        if name == "next":
            return element_of(args[0])
        if name in ITERATION_BUILTINS:
            first = args[0]
            if first.kind is Kind.LOADER or first.is_tensorish:
                return first
        if name in ("len", "int", "float", "range", "round", "bool", "abs"):
            return SCALAR
        if name == "dict" and args[0].is_tensorish:
            return args[0]
        return UNKNOWN

    # -- modules ----------------------------------------------------------------------------
    def module_call(self, node: cst.Call, name: str, module: Value, values: list[Value]) -> Value:
        if self.bus.wants("call"):
            self.call_roles[node] = (name, module, not module.weighted)
        if module.weighted and module.place is not Place.UNKNOWN:
            return Value(Kind.TENSOR, module.place)
        return self.combine([*values, Value(Kind.TENSOR, module.place)])

    # -- methods ----------------------------------------------------------------------------
    def eval_method(self, node: cst.Call, func: cst.Attribute) -> Value:
        method = func.attr.value
        receiver = self.eval(func.value)
        args = self.eval_args(node, receiver)
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            owner = self.class_scope()
            own_method = owner.methods.get(method) if owner is not None else None
            if owner is not None and own_method is not None:
                return self.call_function(own_method, node, args, owner)
        if method == "numpy":
            return Value(Kind.NDARRAY, Place.HOST)
        if method in ("to", "cuda", "cpu", "to_empty"):
            result = self.moved(node, receiver, method, args)
            name = dotted(func.value)
            if name is not None and receiver.kind is Kind.MODULE and result.kind is Kind.MODULE:
                # `net.to(device).eval()`: a module moves in place, whatever the chain does next
                self.assign_name(name, replace(result, binding=receiver.binding))
            return result
        if receiver.kind is Kind.MODULE:
            return self.module_method(node, func, receiver, method, args)
        if receiver.source == "tokenizer" and method in (
            "encode",
            "encode_plus",
            "batch_encode_plus",
        ):
            return host_output(receiver, node, method)
        if method == "prepare":
            self.flags.frameworks.add("accelerate")
            self.flags.places = True
            return Value(items=tuple(arg.with_place(Place.DEVICE) for arg in args))
        if method in ("from_pretrained", "from_config") and _looks_like_model(func.value):
            return Value(Kind.MODULE, Place.HOST, weighted=True, origin=node)
        if method in ("next", "__next__") and receiver.kind is Kind.LOADER:
            return element_of(receiver)  # `iter(loader).next()`, Python 2 style
        if method in api.SCALAR_METHODS:
            return SCALAR
        if method.startswith("new_") or method in ("type_as",):
            if method == "type_as" and args:
                return Value(Kind.TENSOR, args[0].place)
            return Value(Kind.TENSOR, receiver.place) if receiver.is_tensorish else UNKNOWN
        if receiver.is_tensorish and (
            method in api.PLACE_KEEPING_METHODS or method in ("items", "values")
        ):
            kind = Kind.BATCH if method in ("items", "values") else Kind.TENSOR
            return Value(kind, receiver.place, by_name=receiver.by_name)
        return UNKNOWN

    def module_method(
        self, node: cst.Call, func: cst.Attribute, module: Value, method: str, args: list[Value]
    ) -> Value:
        if method in ("parameters", "named_parameters"):
            # named_parameters yields (name, parameter) pairs: `items` is one element's shape
            pair = (UNKNOWN, Value(Kind.TENSOR)) if method == "named_parameters" else None
            return Value(Kind.PARAMS, source=dotted(func.value) or "", items=pair)
        if method in ("forward", "generate"):  # HF `generate` runs forward on its inputs
            return self.module_call(node, dotted(func.value) or "", module, args)
        if method in ("eval", "train", "half", "float", "double", "requires_grad_", "bfloat16"):
            return module
        return UNKNOWN

    def moved(self, node: cst.Call, receiver: Value, method: str, args: list[Value]) -> Value:
        if receiver.kind is Kind.DEVICE:
            # torch.device has no .to()/.cuda(): whatever this receiver really is, the result is
            # not a device, and a fix must never move tensors "to" it.
            return UNKNOWN
        if method == "cuda":
            self.note_cuda(node, ".cuda()")
            self.flags.places = True
            self.flags.per_rank_device |= bool(node.args)
            place = Place.DEVICE
        elif method == "cpu":
            place = Place.HOST
        else:
            place = self.target_place(node, args)
        if place is Place.DEVICE and self.dataset_stack:
            self.device_datasets.add(self.dataset_stack[-1])
        if place is Place.UNKNOWN:
            return receiver if receiver.kind is not Kind.UNKNOWN else UNKNOWN
        if receiver.kind is Kind.UNKNOWN:
            return Value(place=place)
        if receiver.kind is Kind.LOADER:
            return receiver
        return receiver.with_place(place)

    def target_place(self, node: cst.Call, values: list[Value]) -> Place:
        """Where ``x.to(...)`` sends x: HOST, DEVICE, or UNKNOWN for a dtype-only conversion."""
        for arg, value in zip(node.args, values, strict=True):
            name = arg.keyword.value if arg.keyword is not None else None
            if name in ("dtype", "non_blocking", "copy", "memory_format"):
                continue
            place = self.place_of_target(arg.value, value)
            if place is not None:
                return place
        return Place.UNKNOWN

    def place_of_target(self, expr: cst.BaseExpression, value: Value) -> Place | None:
        text = string_value(expr)
        if text is not None:
            if api.CPU_LITERAL.match(text):
                return Place.HOST
            self.flags.places = True
            self.note_cuda(expr, text)
            return Place.DEVICE
        if value.kind is Kind.DEVICE:
            if value.cpu_device:
                return Place.HOST
            # `x.to(y.device)` follows a tensor; `x.to(self.device)` names the script's device
            tensor_device = isinstance(expr, cst.Attribute) and expr.attr.value == "device"
            if not tensor_device or self.scope.lookup(dotted(expr) or "") is not None:
                self.flags.places = True
            return Place.DEVICE
        if value.is_tensorish or value.kind is Kind.MODULE:
            return value.place
        if isinstance(expr, cst.Integer):
            self.flags.places = True
            return Place.DEVICE
        name = dotted(expr) or ""
        last = name.rsplit(".", 1)[-1]
        if "dtype" in last.lower() or (self.imports.qualify(expr) or "").startswith("torch."):
            return None
        if api.DEVICE_NAME.search(last):
            self.flags.places = True
            self.flags.per_rank_device |= "rank" in last or "gpu" in last
            return Place.DEVICE
        return None


def _looks_like_model(receiver: cst.BaseExpression) -> bool:
    name = (dotted(receiver) or "").rsplit(".", 1)[-1]
    if any(word in name for word in ("Tokenizer", "Processor", "Config", "Extractor")):
        return False
    return "Model" in name or "For" in name


def host_output(callee: Value, node: cst.Call, method: str = "__call__") -> Value:
    """What a torchvision transform or a tokenizer returns: tensors on the host."""
    if callee.source == "transform":
        return Value(Kind.TENSOR, Place.HOST)
    if callee.source != "tokenizer" or keyword(node, "return_tensors") is None:
        return UNKNOWN
    if method == "encode":
        return Value(Kind.TENSOR, Place.HOST)
    return Value(Kind.BATCH, Place.HOST, inplace_to=True)
