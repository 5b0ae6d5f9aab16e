"""Evaluating calls: which function a call calls, and the value it returns.

Calls of imported names go to qualified.py, moves to placement.py, instances of the file's
plain classes to instances.py, and the file's own functions to bodies.py, which walks them.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from functools import lru_cache

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.bodies import Bodies
from gpudoc.lint.analysis.builtin_calls import BUILTINS, builtin_value
from gpudoc.lint.analysis.events import CallEvent
from gpudoc.lint.analysis.expressions import Evaluator, converts_only, string_value
from gpudoc.lint.analysis.follows_inputs import (
    note_helper,
    note_method_move,
    runs_where_its_inputs_are,
)
from gpudoc.lint.analysis.functions import argument_for
from gpudoc.lint.analysis.instance_weights import instance_holdings
from gpudoc.lint.analysis.instances import Instances
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import (
    bound_names,
    built_class,
    dotted,
    keyword,
    keyword_value,
    method_named,
    module_chain_root,
)
from gpudoc.lint.analysis.number_returns import number_items
from gpudoc.lint.analysis.placement import Placement
from gpudoc.lint.analysis.qualified import QualifiedCalls
from gpudoc.lint.analysis.scope import Scope
from gpudoc.lint.analysis.self_placing import (
    moves_to_the_run_device,
    on_gpu_by_default,
    passes_device,
    whole_instance_parameters,
)
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.sharing import move_module, wrapper_place
from gpudoc.lint.analysis.submodules import built_attributes
from gpudoc.lint.analysis.values import (
    APPENDED,
    SCALAR,
    UNKNOWN,
    Kind,
    Place,
    Value,
    called_module,
    element_of,
    join_places,
    replace,
)
from gpudoc.lint.visit import walk

CHAIN_METHODS = api.PLACE_KEEPING_METHODS | {
    *("type", "uniform_", "normal_", "random_", "bernoulli_", "exponential_", "masked_fill_"),
    *("scatter_", "index_fill_", "fill_diagonal_", "clamp_min", "clamp_max"),
}
"""Methods a moved chain's result passes through: ``torch.zeros(1).type(dtype).to(dev)`` moves
the factory's tensor (``.type(...)`` may move it to a GPU itself, which the ``.to`` then
overrides), and so does ``torch.empty(n).normal_().to(dev)``."""
MODULE_METHODS = frozenset(
    {"float", "double", "half", "bfloat16", "requires_grad_", "zero_", "type_as"}
)
"""Methods an nn.Module has too: their receiver may be a module."""
CHECKPOINT_METHODS = frozenset(
    {"get", "pop", "eval", "train", "float", "half", "double", "bfloat16", "requires_grad_"}
)
"""Methods of a dict or a module that return what it holds, or the module itself."""


MODULE_CLASS = "module-class"
"""The source of a value that holds a module class looked up by name in a namespace of
modules (``getattr(nn, "Linear")``): calling it builds a module."""


PROJECT_ZOOS = frozenset({"models", "networks", "nets", "archs", "architectures"})
"""A project package of model constructors, by its name."""


class CallEvaluator:
    """The value of a call, resolved to what it calls: an imported name (``library``), a move
    (``placement``), an instance of a plain class (``instances``), a function or method of
    the file (``bodies``), a module, a builtin."""

    def __init__(
        self,
        model: SemanticModel,
        evaluator: Evaluator,
        placement: Placement,
        library: QualifiedCalls,
        instances: Instances,
        bodies: Bodies,
    ) -> None:
        self.model = model
        self.evaluator = evaluator
        self.placement = placement
        self.library = library
        self.instances = instances
        self.bodies = bodies

    def eval_call(self, node: cst.Call) -> Value:
        if not self.model.bus.wants("call"):
            return self.call_value(node)
        result = self.call_value(node)
        func = node.func
        pending = self.model.call_operands.get(node)
        # a recursive method's call is evaluated again inside its own walk: innermost first
        args, receiver = pending.pop() if pending else ((), None)
        if len(args) != len(node.args):
            args = tuple(UNKNOWN for _ in node.args)
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        name, module, combines = self.model.call_roles.pop(node, (None, None, False))
        qualified = self.model.imports.qualify(func)
        event = CallEvent(node, qualified, method, receiver, args, result, name, module, combines)
        self.model.emit("call", event)
        return result

    def call_value(self, node: cst.Call) -> Value:
        func = node.func
        if node in self.model.moved_receivers:
            self.note_moved_chain(node)
        if self.is_zoo_lookup(func):
            self.evaluator.eval_args(node)
            # `getattr(nn, cfg.act)()` may be a ReLU: weights are not known
            weighted = not self.looks_up_layers(func)
            return Value(Kind.MODULE, Place.HOST, weighted=weighted, origin=node)
        if self.is_zoo_lookup(node):  # `layer_class = getattr(nn, name)`: a module class
            self.evaluator.eval_args(node)
            return Value(source=MODULE_CLASS)
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in api.MOVE_METHODS
            and not (func.attr.value == "to" and converts_only(node))
        ):
            note_method_move(self.model, node)
            self.model.moved_receivers.update(_operand_calls(func.value))
            if (dotted(func.value) or "").split(".", 1)[0] == "self":
                self.placement.note_self_placing()  # `self.cuda()`, `self.net.to(device)`
        qualified = self.model.imports.qualify(func)
        if qualified is not None:
            return self.library.eval_qualified(node, qualified)
        if isinstance(func, cst.Attribute):
            name = dotted(func) or ""
            kept = self.model.scope.lookup(name)
            held = called_module(kept)
            if held is not None and held.kind is Kind.MODULE:  # `self.model(x)`
                if name.startswith("self.") and self.model.scope.module_class is not None:
                    # a submodule moves with its parent: where the instance is, when the
                    # method is walked for a call on it, else anywhere
                    owner = self.model.class_scope()
                    place = owner.instance_place if owner is not None else None
                    held = held.with_place(place or Place.UNKNOWN)
                return self.module_call(node, name, held, self.evaluator.eval_args(node))
            if kept is not None and kept.source in ("transform", "tokenizer"):
                given = self.evaluator.eval_args(node)
                return host_output(kept, node, args=given)  # `self.tokenizer(texts, ...)`
            return self.eval_method(node, func)
        if isinstance(func, cst.Name):
            return self.eval_named_call(node, func.value)
        callee = self.evaluator.eval(func)
        args = self.evaluator.eval_args(node)
        if callee.kind is Kind.MODULE:
            return self.module_call(node, dotted(func) or "", callee, args)
        return host_output(callee, node, args=args)

    def note_moved_chain(self, node: cst.Call) -> None:
        """``torch.arange(n).unsqueeze(0).repeat(b, 1).to(dev)``, ``torch.exp(c *
        torch.arange(n)).to(dev)``: what a moved result was computed from moves with it (for
        GPD106, a factory at the start of the chain)."""
        func = node.func
        qualified = self.model.imports.qualify(func) or ""
        # `torch.tensor(torch.arange(n), dtype=long).to(dev)`: the copy moves what it copied
        copies = qualified in ("torch.tensor", "torch.as_tensor")
        computed = qualified.startswith("torch.") and qualified[6:] not in api.TENSOR_FACTORIES
        if copies or computed:
            for arg in node.args:
                if arg.keyword is None:
                    self.model.moved_receivers.update(_operand_calls(arg.value))
        elif isinstance(func, cst.Attribute) and func.attr.value in CHAIN_METHODS:
            receiver = func.value
            if isinstance(receiver, cst.Call):
                self.model.moved_receivers.add(receiver)

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
        qualified = self.model.imports.qualify(namespace) or ""
        # the project's own zoo (`import pose.models as models`), as pytorch/examples' ImageNet
        # script lists it: `sorted(name for name in models.__dict__ if name.islower() ...)`
        return qualified in api.ZOO_NAMESPACES or qualified.rpartition(".")[2] in PROJECT_ZOOS

    def looks_up_layers(self, func: cst.BaseExpression) -> bool:
        """``getattr(nn, name)``: a layer class of torch.nn, not a model of a zoo."""
        if not isinstance(func, cst.Call) or not func.args:
            return False
        return self.model.imports.qualify(func.args[0].value) == "torch.nn"

    def eval_named_call(self, node: cst.Call, name: str) -> Value:
        if self.model.call_stack and self.model.scope.lookup(name) is None:
            self.model.home_class(name)  # a class beside another file's function walked here
        if name in self.model.optimizer_classes and self.model.scope.lookup(name) is None:
            # a project's own optimizer class: built over parameters as torch's are
            return self.library.eval_qualified(node, f"torch.optim.{name}")
        instance = self.instances.named_call(node, name)
        if instance is not None:
            return instance
        local = self.model.local_class(name)
        callee = self.model.scope.lookup(name)
        args = self.evaluator.eval_args(node)
        function = self.model.local_functions.get(name) or self.defined_later(name)
        if function is not None and callee is None and local is None:
            note_helper(self.model, function, node)
            result = self.bodies.call_function(function, node, args, self.model.globals_view())
            self.placement.forget(node, args, host_modules=False)
            return result
        if local == "dataset":
            place = Place.UNKNOWN if name in self.model.device_datasets else Place.HOST
            if any(arg.place is Place.DEVICE for arg in args):
                place = Place.UNKNOWN  # `Dataset(X, Y)` of device tensors keeps them there
            return Value(Kind.LOADER, place, origin=node, source=f"dataset:{name}")
        if local is not None and not isinstance(local, str):
            return self.module_instance(node, local, args)
        if callee is not None and callee.source == MODULE_CLASS:
            return Value(Kind.MODULE, Place.HOST, origin=node)  # weights not known
        callee = called_module(callee)
        if callee is not None and callee.kind is Kind.MODULE:
            return self.module_call(node, name, callee, args)
        if callee is not None and callee.source in ("transform", "tokenizer"):
            return host_output(callee, node, args=args)
        if name not in BUILTINS:
            self.placement.forget(node, args)
        return builtin_value(name, args)

    def defined_later(self, name: str) -> cst.FunctionDef | None:
        """A function of this file defined below the function body being walked: it exists
        when the body runs (not at module level, where the call would fail first)."""
        model = self.model
        if model.scope.function is None or model.home_module is not None:
            return None
        if name in model.project_imports or model.local_class(name) is not None:
            return None
        function = model.later_functions.get(name)
        if function is None or not self.globals_ready(function):
            return None
        return function

    def globals_ready(self, function: cst.FunctionDef) -> bool:
        """Every module-level name ``function`` reads is bound already (or is a function,
        class, import or builtin): walked now, it sees what it will see when it runs."""
        model = self.model
        return all(
            name in model.module_scope.env
            or name in model.later_functions
            or model.local_class(name) is not None
            or model.imports.qualify(cst.Name(name)) is not None
            or name in model.project_imports
            or hasattr(builtins, name)
            for name in _free_names(function)
        )

    def note_appended(self, name: str, held: Value, expr: cst.BaseExpression, item: Value) -> None:
        """``outs = []`` then ``outs.append(model(x))``: a list of tensors where the appended
        ones are (``outs[0].numpy()``, ``[o.numpy() for o in outs]``). Not ``loss[0]`` (a
        number before PyTorch 0.4, an IndexError since). The conversion of the whole list
        is GPD202's list rule's (_numpy_lists.py), which names the append."""
        if held.items is None or not item.is_tensorish or item.place is Place.UNKNOWN:
            return
        if isinstance(expr, cst.Subscript):
            return
        items = (*held.items, item)[-MAX_APPENDED:]
        if all(part.is_tensorish for part in items):
            place = join_places([part.place for part in items])
            self.model.assign_name(name, Value(Kind.BATCH, place, source=APPENDED, items=items))

    def module_instance(self, node: cst.Call, local: ModuleClass, args: list[Value]) -> Value:
        """``Net(...)`` of a module class of the project: on the host, unless it places itself
        or is built from placed modules; a wrapper of the caller's modules lives where they
        do (sharing.py)."""
        weighted, parts = instance_holdings(local, node, args, self.model.imports)
        weighted = weighted and not runs_where_its_inputs_are(local)
        placed_parts = any(a.kind is Kind.MODULE and a.place is Place.DEVICE for a in args)
        unplaced = local.places_itself or self.model.device_context or placed_parts
        # `Yolo_loss(device=device)` whose __init__ moves what it builds there
        unplaced = unplaced or passes_device(local.node, local.placing_parameters, node)
        place = Place.UNKNOWN if unplaced else Place.HOST
        if parts and not (local.places_itself or self.model.device_context):
            place = wrapper_place(parts)
        if on_gpu_by_default(local.node, node) or moves_to_the_run_device(local.node):
            place = Place.DEVICE  # `__init__(self, device="cuda")` does `self.to(device)`
            self.model.flags.places = True  # (another file's class: nothing here moved it)
        elif self.placed_by_argument(local, node, args):
            place = Place.DEVICE  # `Encoder(n, device=device)` that moves its layers there
        instances = tuple(part.instance for part in parts if part.instance is not None)
        return Value(
            Kind.MODULE,
            place,
            weighted=weighted,
            managed=local.lightning,
            origin=node,
            parts=instances,
        )

    def placed_by_argument(self, local: ModuleClass, node: cst.Call, args: list[Value]) -> bool:
        """``node`` hands the run's device to a parameter that ``__init__`` moves all of the
        instance's weights with, as ``model.to(device)`` would."""
        init = method_named(local.node, "__init__")
        forward = method_named(local.node, "forward")
        if init is None or (forward is not None and moves_a_parameter(forward)):
            return False  # ignite's InceptionModel moves what it is given to its own device
        for parameter in whole_instance_parameters(local.node):
            argument = argument_for(init, node, parameter, is_method=True)
            if argument is None:
                continue
            value = next(v for a, v in zip(node.args, args, strict=True) if a is argument)
            if self.placement.place_of_target(argument.value, value) is Place.DEVICE:
                return True
        return False

    def module_call(self, node: cst.Call, name: str, module: Value, values: list[Value]) -> Value:
        if self.model.bus.wants("call"):
            self.model.call_roles[node] = (name, module, not module.weighted)
        result = self.module_output(module, values)
        cls = self.model.local_class(built_class(module.origin) or "")
        forward = method_named(cls.node, "forward") if isinstance(cls, ModuleClass) else None
        numbers = number_items(forward) if forward is not None else None
        if numbers is None or result.kind is not Kind.TENSOR:
            return result
        # `loss, accuracies = criterion(s, y)`, whose forward returns `.item()` floats as well
        tensor = Value(Kind.TENSOR, result.place)
        return replace(result, items=tuple(SCALAR if n else tensor for n in numbers))

    def module_output(self, module: Value, values: list[Value]) -> Value:
        if module.weighted and module.place is not Place.UNKNOWN:
            return Value(Kind.TENSOR, module.place)
        if not module.weighted:
            # a module without weights computes where its inputs are: `masker(tokens)` of
            # `tokens = encode(text).to(device)` (whatever `encode` returned, it is there now)
            inputs = [Value(Kind.TENSOR, Place.DEVICE) if _placed(v) else v for v in values]
            return self.evaluator.combine(inputs)
        return self.evaluator.combine([*values, Value(Kind.TENSOR, module.place)])

    def eval_method(self, node: cst.Call, func: cst.Attribute) -> Value:
        member = self.model.project_member(func)
        if member is not None:  # `utils.normalize(x)` of `import utils`, a project module
            return self.eval_named_call(node, member)
        foreign = self.model.home_member(func)
        if foreign is not None:  # the same, in another file's body walked for a call here
            args = self.evaluator.eval_args(node)
            return self.bodies.call_function(foreign, node, args, self.model.module_scope)
        instance = self.instances.method_call(node, func)
        if instance is None:
            instance = self.instances.alternative_constructor(node, func)
        if instance is not None:
            return instance
        method = func.attr.value
        receiver = self.evaluator.eval(func.value)
        args = self.evaluator.eval_args(node, receiver)
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            owner = self.model.class_scope()
            found = owner.method(method) if owner is not None else None
            if owner is not None and found is not None:
                # the class's own method, or a base class's of this file (a pooling encoder's
                # `self.build_pred_layers(...)` of its base): run with this instance's state
                return self.bodies.call_function(found, node, args, owner)
        if method == "numpy":
            return Value(Kind.NDARRAY, Place.HOST)
        typed = receiver.kind is Kind.MODULE and method == "type" and len(args) == 1
        if typed and args[0].kind is Kind.TYPENAME and args[0].place is not Place.UNKNOWN:
            # `Generator().type(dtype)` with `dtype = torch.cuda.FloatTensor`: a move in place,
            # to the device the script chose (as `.to(device)`)
            host = args[0].place is Place.HOST
            method, args = "to", [Value(Kind.DEVICE, cpu_device=host)]
        if method in ("to", "cuda", "cpu", "to_empty"):
            result = self.placement.moved(node, receiver, method, args)
            name = dotted(func.value)
            # `_ = model.eval().cuda()`: `eval()` returns the module, which moves in place
            root = dotted(module_chain_root(func.value))
            if root is not None and receiver.kind is Kind.MODULE and result.kind is Kind.MODULE:
                # `net.to(device).eval()`: a module moves in place, whatever the chain does next
                move_module(self.model, root, replace(result, binding=receiver.binding))
            elif name is not None and receiver.inplace_to and method in ("to", "cuda", "cpu"):
                # `print(inputs.to(device))`: a BatchEncoding (or a PyG batch, which also has
                # `.cuda()`/`.cpu()`) moves its tensors in place and returns itself; at a
                # statement's top, statements.py moves it on each path
                moved = replace(
                    result, kind=receiver.kind, binding=receiver.binding, source=receiver.source
                )
                self.model.assign_name(name, replace(moved, inplace_to=True))
            return result
        if receiver.kind is Kind.MODULE:
            return self.module_method(node, func, receiver, method, args)
        return self.value_method(node, func, receiver, method, args)

    def value_method(
        self, node: cst.Call, func: cst.Attribute, receiver: Value, method: str, args: list[Value]
    ) -> Value:
        """A method of anything but a module: tensors, loaders, tokenizers, accelerate's."""
        if method in ("set_format", "with_format") and _formats_onto_a_device(node):
            # Hugging Face datasets: `ds.set_format("torch", device="cuda")` yields device
            # tensors (in place; `with_format` returns the formatted data set)
            placed = Value(Kind.LOADER, Place.UNKNOWN, source="device-format")
            name = dotted(func.value)
            if method == "set_format" and name is not None:
                self.model.assign_name(name, placed)
            return placed
        if receiver.source == "tokenizer" and method in (
            "encode",
            "encode_plus",
            "batch_encode_plus",
        ):
            return host_output(receiver, node, method)
        if method == "prepare":
            self.model.flags.frameworks.add("accelerate")
            self.model.flags.places = True
            return Value(items=tuple(arg.with_place(Place.DEVICE) for arg in args))
        if method in ("from_pretrained", "from_config") and _looks_like_model(func.value):
            return self.library.pretrained_model(node)
        if receiver.source == "checkpoint" and method in CHECKPOINT_METHODS:
            return receiver  # `ckpt.get("model")`, `ckpt["model"].float().eval()`
        if method in ("next", "__next__") and receiver.kind is Kind.LOADER:
            return element_of(receiver)  # `iter(loader).next()`, Python 2 style
        if method in api.SCALAR_METHODS:
            return SCALAR
        if method == "append" and len(args) == 1 and isinstance(func.value, cst.Name):
            self.note_appended(func.value.value, receiver, node.args[0].value, args[0])
        elif method in LIST_CHANGES and receiver.source == APPENDED:
            name = dotted(func.value)
            if name is not None:
                self.model.assign_name(name, UNKNOWN)  # `outs.clear()`, `outs.insert(0, h)`
        if method == "add_graph" and args and args[0].kind is Kind.MODULE:
            # TensorBoard's `writer.add_graph(model, x)` traces `model(x)`: a call of it
            name = dotted(node.args[0].value) or ""
            return self.module_call(node, name, args[0], args[1:])
        if method == "type" and not node.args:  # only tensors have a `.type()` of nothing
            return Value(Kind.TYPENAME, receiver.place)
        if method == "type" and receiver.is_tensorish and args[0].kind is Kind.TYPENAME:
            return Value(Kind.TENSOR, args[0].place)  # `t.type(x.type())`: where x is
        dtype = method == "type" and self.model.imports.qualify(node.args[0].value) in api.DTYPES
        if dtype and receiver.is_tensorish:
            # `torch.linspace(0, 99, 4).type(torch.long)`: a dtype, converted where it is
            return Value(Kind.TENSOR, receiver.place, by_name=receiver.by_name)
        if method.startswith("new_") or method in ("type_as",):
            if method == "type_as" and args:
                return Value(Kind.TENSOR, args[0].place)
            given = keyword_value(node, args, "device")
            if given is not None:  # `x.new_empty(shape, device=next(m.parameters()).device)`
                place = self.placement.place_of_target(given[0].value, given[1])
                return Value(Kind.TENSOR, place or Place.UNKNOWN)
            return Value(Kind.TENSOR, receiver.place) if receiver.is_tensorish else UNKNOWN
        if receiver.is_tensorish and (
            method in api.PLACE_KEEPING_METHODS or method in ("items", "values")
        ):
            kind = Kind.BATCH if method in ("items", "values") else Kind.TENSOR
            return Value(kind, receiver.place, by_name=receiver.by_name)
        moved = receiver.kind is Kind.UNKNOWN and receiver.place is Place.DEVICE
        if moved and method in api.PLACE_KEEPING_METHODS - MODULE_METHODS:
            return Value(Kind.TENSOR, Place.DEVICE)  # `yt.cuda().long()`: only tensors have it
        return UNKNOWN

    def own_method(self, module: Value, method: str) -> tuple[cst.FunctionDef, Scope] | None:
        """A method (not ``forward``, which runs as the module's call) that the file's own class
        of ``module`` defines: walked for this call, with its arguments."""
        if method == "forward" or method.startswith("__"):
            return None
        name = built_class(module.origin) or ""
        scope = self.model.class_scopes.get(name) or self.model.foreign_module_scopes.get(name)
        definition = scope.methods.get(method) if scope is not None else None
        return (definition, scope) if definition is not None and scope is not None else None

    def module_method(
        self, node: cst.Call, func: cst.Attribute, module: Value, method: str, args: list[Value]
    ) -> Value:
        if method in ("parameters", "named_parameters"):
            # named_parameters yields (name, parameter) pairs: `items` is one element's shape
            pair = (UNKNOWN, Value(Kind.TENSOR)) if method == "named_parameters" else None
            return Value(Kind.PARAMS, module.place, source=dotted(func.value) or "", items=pair)
        if _returns_parameters(method):
            # `model.get_1x_lr_params()`, `model.set_train_params(lrs)`: its parameter groups
            return Value(Kind.PARAMS, module.place, source=dotted(func.value) or "")
        own = self.own_method(module, method)
        if own is not None:  # `model.generate(mels)`, `actor_critic.act(obs)`: the class's own
            definition, scope = own
            result = self.bodies.call_function(definition, node, args, scope, module.place)
            moves = moves_a_parameter(definition)
            runs_layers = module.place is Place.HOST and runs_own_layers(definition, scope.methods)
            if runs_layers and not moves:
                # `flow.nll(x)` runs the flow's layers on `x`, as `flow(x)` would
                self.model.call_roles[node] = (dotted(func.value) or "", module, False)
            if method != "generate" or moves:
                return result  # it places what it is given itself
            # HF-style `generate` runs forward on its inputs; one that ends in
            # `.cpu().numpy()` hands back a host copy
            called = self.module_call(node, dotted(func.value) or "", module, args)
            # `return wav.cpu().numpy(), hall`: the walk knows each part better than a call
            host = result.kind is Kind.NDARRAY or result.place is Place.HOST
            return result if host or result.items is not None else called
        if method in ("forward", "generate"):  # HF `generate` runs forward on its inputs
            return self.module_call(node, dotted(func.value) or "", module, args)
        if method in ("eval", "train", "half", "float", "double", "requires_grad_", "bfloat16"):
            return module
        member = self.evaluator.placed_member(module, method)
        if member is not None:  # `model.encoder(x)`: a submodule of a placed model
            return self.module_call(node, dotted(func) or "", member, args)
        return UNKNOWN


def _formats_onto_a_device(node: cst.Call) -> bool:
    """A ``device=`` argument that is not the CPU."""
    device = keyword(node, "device")
    if device is None:
        return False
    text = string_value(device.value)
    return text is None or not api.CPU_LITERAL.match(text)


def runs_own_layers(function: cst.FunctionDef, methods: Mapping[str, cst.FunctionDef]) -> bool:
    """The method calls the instance itself (``self(x)``, ``self.forward(x)``) or a layer its
    ``__init__`` builds (``self.net(x)``, not a module it was given, whose place a wrapper does
    not decide), itself or through the class's other methods it calls."""
    init = methods.get("__init__")
    built = {name[5:] for name, _ in built_attributes(init)} if init is not None else set()
    finder = _LayerCalls(methods, frozenset(built))
    pending, seen = [function], set[int]()
    while pending and not finder.found and len(seen) < MAX_METHODS_FOLLOWED:
        method = pending.pop()
        if id(method) in seen:
            continue
        seen.add(id(method))
        walk(method.body, finder)
        pending += [methods[name] for name in finder.methods_called if name in methods]
    return finder.found


MAX_METHODS_FOLLOWED = 8
LIST_CHANGES = frozenset({"clear", "pop", "insert", "remove", "extend", "sort", "reverse"})
"""List methods after which the appended items are no longer what the list holds."""
MAX_APPENDED = 4
"""Appends a list's value remembers (a loop appends on each of its walked iterations)."""


class _LayerCalls(cst.CSTVisitor):
    def __init__(self, methods: Mapping[str, cst.FunctionDef], built: frozenset[str]) -> None:
        self.methods = methods
        self.built = built
        self.found = False
        self.methods_called: list[str] = []

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func) or ""
        root, _, attribute = name.partition(".")
        if root != "self" or not node.args or "." in attribute:
            return
        if attribute in self.methods and attribute != "forward":
            self.methods_called.append(attribute)
        else:
            self.found |= attribute in ("", "forward") or attribute in self.built


@lru_cache(maxsize=256)
def _free_names(function: cst.FunctionDef) -> frozenset[str]:
    """The plain names ``function``'s body reads (not attribute names) that it does not bind:
    asked at each call of a function defined below, read once."""
    reader = _ReadNames()
    walk(function.body, reader)
    return frozenset(reader.found - bound_names(function))


class _ReadNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk(node.value, self)
        return False  # `f(device=d)`: `device` is a keyword, not a name read


def moves_a_parameter(function: cst.FunctionDef) -> bool:
    """``mels = mels.cuda()``, ``x.to(self.device)``: the function moves one of its parameters."""
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params)} - {"self"}
    moves = _Moves(names)
    walk(function.body, moves)
    return moves.found


class _Moves(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            self.found |= self._parameter(func.value)
        name = dotted(func) or ""
        if name.rpartition(".")[2] in ("as_tensor", "tensor") and node.args:
            # `mels = torch.as_tensor(mels, device=device)`: a copy on the given device
            self.found |= _formats_onto_a_device(node) and self._parameter(node.args[0].value)

    def visit_If(self, node: cst.If) -> bool:
        """``if not is_tensor(latents): latents = tensor(latents, device=d)``: only what is no
        tensor yet is made on the device; a tensor given stays where it is."""
        test = node.test
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
        name = dotted(test.func) if isinstance(test, cst.Call) else None
        return (name or "").rsplit(".", 1)[-1] not in ("is_tensor", "isinstance")

    def _parameter(self, expr: cst.BaseExpression) -> bool:
        root = expr
        while isinstance(root, cst.Attribute | cst.Subscript | cst.Call):
            root = root.func if isinstance(root, cst.Call) else root.value
        return isinstance(root, cst.Name) and root.value in self.names


def _returns_parameters(method: str) -> bool:
    """A module's own method named for its parameters (or parameter groups), not for a count of
    them (``num_params``)."""
    lowered = method.lower()
    return "param" in lowered and not any(word in lowered for word in ("num", "count", "size"))


def _operand_calls(expr: cst.BaseExpression) -> list[cst.Call]:
    """The calls whose results ``expr`` computes with: itself, or the operands of its
    arithmetic (``-c * torch.arange(n) / h``)."""
    if isinstance(expr, cst.Call):
        return [expr]
    if isinstance(expr, cst.BinaryOperation):
        return [*_operand_calls(expr.left), *_operand_calls(expr.right)]
    if isinstance(expr, cst.UnaryOperation):
        return _operand_calls(expr.expression)
    return []


def _looks_like_model(receiver: cst.BaseExpression) -> bool:
    name = (dotted(receiver) or "").rsplit(".", 1)[-1]
    if any(word in name for word in ("Tokenizer", "Processor", "Config", "Extractor")):
        return False
    return "Model" in name or "For" in name


def host_output(
    callee: Value, node: cst.Call, method: str = "__call__", args: list[Value] | None = None
) -> Value:
    """What a torchvision transform or a tokenizer returns: tensors on the host; a transform
    of a tensor (`Normalize` of an image already on the GPU) keeps its device."""
    if callee.source == "transform":
        given = args[0] if args else None
        if given is not None and given.is_tensorish and given.place is not Place.HOST:
            return Value(Kind.TENSOR, given.place)
        if given is not None and given.place is Place.DEVICE:
            return Value(Kind.TENSOR, Place.DEVICE)  # only a tensor is ever on the device
        if given is not None and node.args and _tensor_method_result(node.args[0].value):
            return Value(Kind.TENSOR, given.place)  # `tfms(im.clip(0, 1))`: a tensor, anywhere
        return Value(Kind.TENSOR, Place.HOST)
    if callee.source != "tokenizer" or keyword(node, "return_tensors") is None:
        return UNKNOWN
    if method == "encode":
        return Value(Kind.TENSOR, Place.HOST)
    return Value(Kind.BATCH, Place.HOST, inplace_to=True)


def _tensor_method_result(expr: cst.BaseExpression) -> bool:
    """``im.clip(0, 1)``, ``x.unsqueeze(0)``: what a method only tensors have returns (PIL
    images have ``transpose``, ``split``, ``resize`` and ``convert`` too)."""
    func = expr.func if isinstance(expr, cst.Call) else None
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    return method in api.PLACE_KEEPING_METHODS and method not in PIL_METHODS


PIL_METHODS = frozenset({"transpose", "split", "copy", "rotate", "resize", "crop", "reduce"})


def _placed(value: Value) -> bool:
    """Something of unknown kind moved to the device (``encode(text).to(device)``)."""
    return value.kind is Kind.UNKNOWN and value.place is Place.DEVICE
