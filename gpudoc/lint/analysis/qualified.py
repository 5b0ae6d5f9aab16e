"""Calls of imported names: torch factories, nn constructors, loaders, optimizers, numpy."""

from __future__ import annotations

import re

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.builtin_calls import builtin_value
from gpudoc.lint.analysis.expressions import (
    PARAM_GROUPS,
    Evaluator,
    device_move_target,
    string_value,
)
from gpudoc.lint.analysis.functions import moves_anything
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import (
    assigned_value,
    dotted,
    is_number_expression,
    keyword,
    keyword_value,
    parameter_lists,
)
from gpudoc.lint.analysis.placement import Placement, formatted_cuda, per_process_cuda
from gpudoc.lint.analysis.values import (
    CHECKPOINT,
    COLLATED,
    ESTIMATOR,
    GRAPH,
    SCALAR,
    UNKNOWN,
    Kind,
    Place,
    Value,
    join_places,
    replace,
)
from gpudoc.lint.visit import walk

CONCATENATIONS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack"})


PREPROCESSOR = re.compile(r"(Tokenizer|Processor|FeatureExtractor)(Fast)?\.from_pretrained$")


TRAINERS = re.compile(r"^(transformers|trl|setfit)\.(\w+\.)*\w*Trainer$")
"""Training loops that place the model they are given (Hugging Face's ``Trainer`` family)."""


class QualifiedCalls:
    """The value of a call of an imported name (``torch.zeros``, ``nn.Linear``, ...), by its
    qualified name; what the file shows by calling it goes into the file's flags."""

    def __init__(self, model: SemanticModel, evaluator: Evaluator, placement: Placement) -> None:
        self.model = model
        self.evaluator = evaluator
        self.placement = placement
        self._parameter_lists: dict[int, tuple[cst.CSTNode, dict[str, str]]] = {}
        """By id of a function (or module): its parameter lists, read once (the tree does not
        change during a walk, and a module of optimizers would read it again for each one)."""

    def eval_qualified(self, node: cst.Call, qualified: str) -> Value:
        args = self.evaluator.eval_args(node)
        root, _, rest = qualified.partition(".")
        if root in ("lightning", "pytorch_lightning", "accelerate"):
            self.model.flags.frameworks.add(root)
        if root == "torch":
            return self.eval_torch(node, qualified, rest, args)
        if qualified in api.DATAPARALLEL:  # torch_geometric's, fed lists of graphs
            return self.wrap_module(node, qualified, args)
        if qualified in api.GRAPH_LOADERS or _graph_dataset(qualified):
            # graphs (batches of them), made on the host; `data.to(device)` moves one in place
            graphs = Value(Kind.BATCH, Place.HOST, inplace_to=True, source=GRAPH)
            return Value(Kind.LOADER, Place.HOST, element=graphs)
        last = qualified.rsplit(".", 1)[-1]
        if root == "sklearn" and last[:1].isupper():
            # `TSNE(n_components=2)`, `PCA(2)`; also `KFold(5)`, which is harmless: only the
            # fitting methods (GPD202's FITTING) read the tag
            return Value(source=ESTIMATOR)
        if qualified.startswith(api.DATAFRAME_ROOTS):
            return Value(Kind.NDARRAY, Place.HOST) if root == "numpy" else UNKNOWN
        if qualified in api.HOST_TENSOR_FUNCTIONS:
            return Value(Kind.TENSOR, Place.HOST)
        if qualified.startswith("torchvision.transforms.") and last[:1].isupper():
            # `Compose([ToTensor(), Lambda(lambda x: x.to(device))])` puts samples on a device
            if last == "ToPILImage":
                return Value(source="pil-transform")  # what it returns is a PIL image
            moving = any(_moves_to_a_device(arg.value) for arg in node.args)
            return Value(source="moving-transform" if moving else "transform")
        if PREPROCESSOR.search(qualified) and last == "from_pretrained":
            # a tokenizer's, a processor's or a feature extractor's BatchEncoding: host tensors
            return Value(source="tokenizer")
        if TRAINERS.match(qualified):
            # `Trainer(model=model, args=...)` of transformers or trl: `train()` moves the model
            # to the device it picks, in place
            self.placement.forget(node, args)
            return UNKNOWN
        if qualified.startswith(api.METRIC_PREFIXES) and last[:1].isupper():
            # `torchmetrics.Accuracy()`: a module whose state tensors move with `.to()` only
            return Value(Kind.MODULE, Place.HOST, weighted=True, origin=node)
        if qualified.startswith(api.MODEL_ZOO_PREFIXES):
            return self.zoo_model(node, qualified)
        if qualified.startswith("torchvision.datasets."):
            transform = keyword_value(node, args, "transform")
            moving = transform is not None and transform[1].source == "moving-transform"
            return Value(Kind.LOADER, Place.UNKNOWN if moving else Place.HOST)
        if root == "tqdm":
            return builtin_value("tqdm", args)
        if any(arg.kind is Kind.DEVICE and not arg.cpu_device for arg in args):
            # `d2l.train(net, loader, device)`: a function we cannot read, given a module and a
            # device, may move the module in place
            self.placement.forget(node, args)
        elif any(arg.kind is Kind.DEVICE for arg in args):
            self.placement.forget(node, args, host_modules=False)  # given the CPU
        elif api.LOADER_CALL.match(last):
            # `for x in get_loader(cfg):` of another module: batches of tensors, placed by
            # whatever that module does
            return Value(Kind.LOADER, Place.UNKNOWN, by_name=True)
        return UNKNOWN

    def eval_torch(self, node: cst.Call, qualified: str, rest: str, args: list[Value]) -> Value:
        """``torch.<rest>(...)``: tensors, CUDA and devices first, then objects (modules,
        optimizers, loaders), then torch's functions of tensors."""
        last = rest.rsplit(".", 1)[-1]
        if rest in api.TENSOR_FACTORIES:
            return self.factory(node, rest, args)
        if rest in api.LEGACY_TENSOR_TYPES:
            return Value(Kind.TENSOR, Place.HOST, origin=node)  # a factory, as GPD106 sees it
        if rest in ("autograd.Variable", "autograd.variable.Variable"):
            return args[0] if args else UNKNOWN  # the pre-0.4 wrapper: the tensor itself
        if rest in COMPILERS and args and args[0].kind is Kind.MODULE:
            return args[0]  # `torch.compile(model)`, `torch.jit.script(model)`: its parameters
        if rest.startswith("nn.utils.rnn.") and args:
            if last == "pad_packed_sequence":
                # `out, lengths = pad_packed_sequence(packed)`: the padded batch where the packed
                # one is, the lengths always a CPU int64 tensor
                padded = Value(Kind.TENSOR, args[0].place)
                return Value(
                    Kind.BATCH, args[0].place, items=(padded, Value(Kind.TENSOR, Place.HOST))
                )
            # pack_padded_sequence(captions, ...)[0] and pad_sequence(seqs) stay where their
            # first argument is; `lengths` must be on the CPU (not what the result is)
            return Value(Kind.BATCH if "pack" in last else Kind.TENSOR, args[0].place)
        if rest.startswith("cuda.") and last in api.LEGACY_TENSOR_TYPES:
            self.placement.note_cuda(node, f"torch.cuda.{last}(...)")
            self.model.flags.places = True
            return Value(Kind.TENSOR, Place.DEVICE)
        if rest.startswith("_C._cuda_"):  # `torch._C._cuda_getDeviceCount()`: CUDA's own init
            rest = "cuda." + rest[len("_C._cuda_") :]
        if rest.startswith("cuda.") and not rest.startswith("cuda.amp"):
            return self.cuda_call(node, rest)
        if rest == "device":
            return self.device_constructor(node, args)
        if rest in ("set_default_device", "set_default_tensor_type"):
            self.default_device(node)
            return UNKNOWN
        if rest == "hub.load":
            return self.zoo_model(node, qualified)
        if rest == "load":
            self.model.flags.loads_checkpoints = True
            if self.cuda_map_location(node):  # a data set saved as tensors, loaded to the GPU
                return Value(place=Place.DEVICE, source="checkpoint")
            return CHECKPOINT if _maps_to_cpu(node, args) else UNKNOWN
        if last == "init_process_group":
            return self.process_group(node)
        return self.torch_object(node, qualified, rest, args)

    def filled_from(self, name: str) -> str:
        """The module whose parameters a loop put into the list ``name`` (``for key, value in
        dict(model.named_parameters()).items(): params += [{"params": [value], ...}]``)."""
        owner: cst.FunctionDef | cst.Module | None = self.model.scope.function_node
        if owner is None:
            owner = self.model.module
        if owner is None:
            return ""
        known = self._parameter_lists.get(id(owner))
        if known is None:
            # the module's statements are the module's walk (through its index, once built)
            body = owner.body.body if isinstance(owner, cst.FunctionDef) else [owner]
            known = self._parameter_lists[id(owner)] = (owner, parameter_lists(body))
        return known[1].get(name, "")

    def torch_object(self, node: cst.Call, qualified: str, rest: str, args: list[Value]) -> Value:
        last = rest.rsplit(".", 1)[-1]
        if last in api.IN_PLACE_SHARDING and args and args[0].kind is Kind.MODULE:
            name = dotted(node.args[0].value)
            placed = args[0].with_place(Place.DEVICE)
            if name is not None:
                self.model.scope.env[name] = placed
            self.model.flags.places = True
            return placed
        if qualified in api.DISTRIBUTED_DP or qualified in api.DATAPARALLEL:
            return self.wrap_module(node, qualified, args)
        if rest.startswith("nn.") and not rest.startswith("nn.functional.") and last[:1].isupper():
            return self.nn_constructor(node, last, args)
        layer = rest.rsplit(".", 2)[-2] if rest.count(".") >= 2 else ""
        if rest.startswith("nn.") and last == "from_pretrained" and layer[:1].isupper():
            # `nn.Embedding.from_pretrained(vectors)`: the layer, on the host with its weights
            return Value(Kind.MODULE, Place.HOST, weighted=True, origin=node)
        if rest.startswith("optim.") and last[:1].isupper() and "lr_scheduler" not in rest:
            source = args[0].source if args and args[0].kind is Kind.PARAMS else ""
            if args and args[0].source.startswith(PARAM_GROUPS):
                source = args[0].source[len(PARAM_GROUPS) :]
            if not source and node.args and isinstance(node.args[0].value, cst.Name):
                source = self.filled_from(node.args[0].value.value)
            held = self.model.scope.lookup(source) if source else None
            if held is not None and held.kind is Kind.MODULE and held.stale:
                # a new model trained from scratch where the old one was: a fresh CPU workflow
                # (a notebook's next section), not a placed model forgotten after re-creation
                self.model.assign_name(source, replace(held, stale=False))
            return Value(Kind.OPTIMIZER, source=source)
        if last.endswith("DataLoader"):
            return self.data_loader(node, args)
        if last == "TensorDataset":
            return Value(Kind.LOADER, join_places([arg.place for arg in args]))
        if last == "random_split" and args and args[0].kind is Kind.LOADER:
            # `train, test = random_split(dataset, [800, 200])`: subsets of the same samples
            return Value(element=args[0])
        combines = rest.startswith("nn.functional.") or (
            "." not in rest and rest not in api.SHAPE_ONLY_FUNCTIONS
        )
        if combines and self.model.bus.wants("call"):
            self.model.call_roles[node] = (None, None, True)
        parts = args[0].items if last in CONCATENATIONS and args else None
        # `torch.cat([c, sampler.sample(n)])`: with one part on the device, the result is
        # there too (or the call fails), whatever the others are
        if parts and any(i.is_tensorish and i.place is Place.DEVICE for i in parts):
            return Value(Kind.TENSOR, Place.DEVICE)
        combined = self.evaluator.combine(args)
        if combined.kind is Kind.UNKNOWN and _returns_tensor(rest, last):
            # `torch.sign(yt.to(self.device))`: a moved argument puts the result there too
            moved = any(a.kind is Kind.UNKNOWN and a.place is Place.DEVICE for a in args)
            return Value(Kind.TENSOR, Place.DEVICE) if moved else Value(Kind.TENSOR)
        return combined

    def default_device(self, node: cst.Call) -> None:
        """``torch.set_default_device("cuda")``, ``set_default_tensor_type(torch.cuda.
        HalfTensor)``: new tensors are not on the host. A host tensor type
        (``torch.DoubleTensor``, for double precision) changes only the dtype."""
        first = node.args[0].value if node.args else None
        text = string_value(first) if first is not None else None
        typename = dotted(first) if first is not None else None
        if typename is not None and typename.rpartition(".")[2].endswith("Tensor"):
            text = typename  # `torch.FloatTensor`, `torch.cuda.HalfTensor`
        if text is not None and text.rpartition(".")[2].endswith("Tensor"):
            if "cuda" in text:
                self.model.flags.default_device = True
                self.model.flags.places = True
            return
        if text is None or "cuda" in text or api.DEVICE_LITERAL.match(text):
            self.model.flags.default_device = True
            self.model.flags.places = True

    def factory(self, node: cst.Call, function: str, args: list[Value]) -> Value:
        device = _device_keyword(node, args)
        if device is not None:
            place = self.placement.place_of_target(device[0].value, device[1])
            result = Value(Kind.TENSOR, place or Place.UNKNOWN)
        elif function in api.LIKE_FACTORIES:
            result = Value(Kind.TENSOR, args[0].place if args else Place.UNKNOWN)
        elif (out := keyword_value(node, args, "out")) is not None:
            # `torch.arange(n, out=x.new())`: written into that tensor, where it is
            result = Value(Kind.TENSOR, out[1].place)
        elif function == "tensor" and node.args and is_number_expression(node.args[0].value):
            result = SCALAR
        elif function in ("tensor", "as_tensor") and _copies_a_tensor(node, args):
            # `torch.tensor(y, dtype=torch.long)` of a tensor: a copy where `y` is
            result = Value(Kind.TENSOR, args[0].place)
        elif self.model.flags.default_device or self.model.device_context:
            result = Value(Kind.TENSOR)
        else:
            result = Value(Kind.TENSOR, Place.HOST, origin=node)
        return result

    def cuda_call(self, node: cst.Call, rest: str) -> Value:
        flags = self.model.flags
        flags.device_notion = True
        # `device_count()` asks NVML and leaves CUDA uninitialised (PyTorch 2.x: "Do not cache
        # the device count prior to CUDA initialization"); the seeding calls are queued until
        # CUDA starts (torch.cuda._lazy_call); every other call initialises it
        self.model.scope.cuda_initialised |= rest not in LEAVE_CUDA_UNINITIALISED
        if rest in ("cuda.is_available", "cuda.device_count"):
            flags.availability_check = True
            return SCALAR
        if rest == "cuda.set_device":
            if node.args and _constant_gpu(node.args[0].value):
                flags.constant_set_device = True  # every rank that runs it picks this one GPU
            else:
                flags.per_rank_device = True
            flags.places = True
        return UNKNOWN

    def cuda_map_location(self, node: cst.Call) -> bool:
        """``torch.load(f, map_location="cuda:0")`` restores every tensor on the GPU."""
        arg = keyword(node, "map_location")
        if arg is None and len(node.args) > 1 and node.args[1].keyword is None:
            arg = node.args[1]
        text = string_value(arg.value) if arg is not None else None
        if arg is None or text is None or not api.CUDA_LITERAL.match(text):
            return False
        self.placement.note_cuda(arg.value, text)
        return True

    def device_constructor(self, node: cst.Call, args: list[Value]) -> Value:
        self.model.flags.device_notion = True
        if not args:
            return Value(Kind.DEVICE)
        if len(args) > 1:
            self.model.flags.per_rank_device = True
        first = node.args[0].value
        text = string_value(first)
        if text is not None and not api.CPU_LITERAL.match(text):
            self.placement.note_cuda(node, text)
        if per_process_cuda(first, _built_per_process):
            self.model.flags.per_rank_device = True  # f"cuda:{rank}", "cuda:{}".format(rank)
        cpu = args[0].kind is Kind.DEVICE and args[0].cpu_device
        return Value(Kind.DEVICE, cpu_device=cpu)

    def process_group(self, node: cst.Call) -> Value:
        backend_arg = keyword(node, "backend")
        if backend_arg is None and node.args and node.args[0].keyword is None:
            backend_arg = node.args[0]
        backend = string_value(backend_arg.value) if backend_arg is not None else None
        if backend == "nccl":
            self.model.flags.cuda_only = True
            self.model.flags.places = True
        return UNKNOWN

    def wrap_module(self, node: cst.Call, qualified: str, args: list[Value]) -> Value:
        inner = args[0] if args else UNKNOWN
        if qualified in api.DATAPARALLEL:
            return replace(inner, kind=Kind.MODULE, wrapper=True, weighted=True)
        has_ids = keyword(node, "device_ids") is not None
        # with device_ids, DDP moves its inputs to device_ids[0] itself
        return replace(inner, kind=Kind.MODULE, weighted=True, wrapper=has_ids)

    def nn_constructor(self, node: cst.Call, name: str, args: list[Value]) -> Value:
        if name == "Parameter":
            cls = self.model.scope.module_class
            if cls is not None:  # a module's parameter moves with it
                # `nn.Parameter(torch.randn(k, n).to(device))` in `__init__`: a weight made on
                # the device, so the module is placed where it is built
                placed = args and args[0].place is Place.DEVICE
                cls.places_itself |= bool(placed) and self.model.in_init
                return Value(Kind.TENSOR, Place.UNKNOWN)
            return Value(Kind.TENSOR, args[0].place if args else Place.UNKNOWN)
        device = _device_keyword(node, args)
        place = Place.UNKNOWN if self.model.device_context else Place.HOST
        if device is not None:
            place = self.placement.place_of_target(device[0].value, device[1]) or Place.UNKNOWN
        weighted = name in api.WEIGHTED_LAYERS
        if name == "Sequential" and args and not node.args[0].star:
            # `nn.Sequential(nn.Identity())`, a placeholder: no weights, its output is its input's
            weighted = any(arg.kind is not Kind.MODULE or arg.weighted for arg in args)
        owner = _children_owner(node) if name in ("Sequential", "ModuleList") else None
        held = self.model.scope.lookup(owner) if owner is not None else None
        placed = held is not None and held.kind is Kind.UNKNOWN and held.place is Place.DEVICE
        if held is not None and (held.kind is Kind.MODULE or placed):
            # `nn.Sequential(*list(model.children())[:-1])`: the model's own layers, where
            # the model is (a value with `.children()` is a module)
            return Value(Kind.MODULE, held.place, weighted=True, origin=node)
        if name in ("Sequential", "ModuleList", "ModuleDict") and not all(
            arg.kind is Kind.MODULE and arg.place is Place.HOST for arg in args
        ):
            place = Place.UNKNOWN  # built from modules that may already be placed
        return Value(Kind.MODULE, place, weighted=weighted, origin=node)

    def data_loader(self, node: cst.Call, args: list[Value]) -> Value:
        dataset = keyword_value(node, args, "dataset")
        first = dataset[1] if dataset is not None else (args[0] if args else None)
        collate = keyword(node, "collate_fn")
        if collate is not None:
            # the project's own collate_fn that moves nothing (pads, stacks) keeps batches home
            function = self.collate_function(dotted(collate.value) or "")
            if function is None or moves_anything(function):
                # its batches may be objects of their own (a BatchEncoding, a batch class)
                return Value(Kind.LOADER, source=COLLATED)
        if first is not None and first.kind is Kind.LOADER:
            return Value(Kind.LOADER, first.place)
        return Value(Kind.LOADER, Place.HOST)

    def collate_function(self, name: str) -> cst.FunctionDef | None:
        """The file's function, or the class's method, a ``collate_fn=`` names: ``pad_batch``,
        ``self.collate``, or ``self.collate_fn`` that ``__init__`` binds to ``self.collate``."""
        if not name.startswith("self."):
            return self.model.local_functions.get(name)
        owner = self.model.class_scope()
        if owner is None or "." in name[5:]:
            return None
        method = owner.methods.get(name[5:])
        init = owner.methods.get("__init__")
        if method is None and isinstance(init, cst.FunctionDef):
            body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
            for statement in body:  # `self.collate_fn = self.collate` at its top level
                bound = assigned_value(statement, name)
                other = dotted(bound) if bound is not None else None
                if other is not None and other.startswith("self."):
                    method = owner.methods.get(other[5:])
        return method

    def zoo_model(self, node: cst.Call, qualified: str) -> Value:
        last = qualified.rsplit(".", 1)[-1]
        if any(word in qualified for word in ("Tokenizer", "Processor", "Config", "pipeline")):
            return UNKNOWN
        if last[:1].isupper() and not qualified.startswith("transformers."):
            return UNKNOWN
        return self.pretrained_model(node)

    def pretrained_model(self, node: cst.Call) -> Value:
        """A model-zoo model: on the host, unless ``device_map="auto"`` dispatched it (then
        accelerate's hooks move each input to its layer's device, like a DataParallel)."""
        mapped = keyword(node, "device_map")
        one_device = string_value(mapped.value) if mapped is not None else None
        if not _device_map(node) and not _quantized(node):
            return Value(Kind.MODULE, Place.HOST, weighted=True, origin=node)
        self.model.flags.places = True
        if mapped is None or (one_device is not None and api.CUDA_LITERAL.match(one_device)):
            # `device_map="cuda:0"`, or bitsandbytes' 4/8-bit loading, which puts the weights
            # on the GPU: no hooks move the inputs
            return Value(Kind.MODULE, Place.DEVICE, weighted=True, origin=node)
        return Value(Kind.MODULE, Place.DEVICE, weighted=True, wrapper=True, origin=node)


def _quantized(node: cst.Call) -> bool:
    """``load_in_4bit=True`` / ``load_in_8bit=True`` / ``quantization_config=...``: bitsandbytes
    loads the weights onto the GPU."""
    for name in ("load_in_4bit", "load_in_8bit"):
        arg = keyword(node, name)
        if arg is not None and dotted(arg.value) == "True":
            return True
    return keyword(node, "quantization_config") is not None


def _device_map(node: cst.Call) -> bool:
    """``from_pretrained(name, device_map="auto")`` (``"cpu"`` or ``None`` keeps the host)."""
    arg = keyword(node, "device_map")
    if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
        return False
    text = string_value(arg.value)
    return text is None or not api.CPU_LITERAL.match(text)


def _maps_to_cpu(node: cst.Call, args: list[Value]) -> bool:
    """``map_location="cpu"`` (or ``torch.device("cpu")``, ``lambda storage, loc: storage``)."""
    found = keyword_value(node, args, "map_location")
    if found is None and len(args) > 1 and node.args[1].keyword is None:
        found = node.args[1], args[1]
    if found is None:
        return False
    arg, value = found
    if value.kind is Kind.DEVICE:
        return value.cpu_device
    function = arg.value
    if not isinstance(function, cst.Lambda) or not function.params.params:
        return False
    body = function.body
    return isinstance(body, cst.Name) and body.value == function.params.params[0].name.value


LEAVE_CUDA_UNINITIALISED = frozenset(
    {"cuda.device_count", "cuda.manual_seed", "cuda.manual_seed_all", "cuda.seed", "cuda.seed_all"}
)
"""``torch.cuda`` calls that do not start CUDA: CUDA_VISIBLE_DEVICES set after them counts."""

COMPILERS = frozenset(
    ["compile", "jit.script", "jit.trace", "jit.freeze", "jit.optimize_for_inference"]
)
"""What they return runs the module given, with the same parameter objects, wherever they are."""

NOT_TENSOR_FUNCTIONS = frozenset(
    [
        "save",
        "load",
        "manual_seed",
        "no_grad",
        "enable_grad",
        "inference_mode",
        "set_grad_enabled",
        "is_tensor",
        "numel",
        "compile",
        "device",
        "Generator",
        "is_grad_enabled",
        "set_num_threads",
        "get_num_threads",
        "seed",
        "use_deterministic_algorithms",
        "set_printoptions",
        "get_default_dtype",
        "set_default_dtype",
        "is_floating_point",
        "is_complex",
        "initial_seed",
        "get_rng_state",
        "set_rng_state",
        "autocast",
    ]
)


def _returns_tensor(rest: str, last: str) -> bool:
    """torch.<op>, torch.nn.functional.<op>, torch.fft/linalg/special.<op>: tensor results."""
    namespace = rest.rsplit(".", 1)[0] if "." in rest else ""
    if namespace not in ("", "nn.functional", "fft", "linalg", "special"):
        return False
    return last[:1].islower() and last not in NOT_TENSOR_FUNCTIONS


def _device_keyword(node: cst.Call, args: list[Value]) -> tuple[cst.Arg, Value] | None:
    """The ``device=`` argument of a constructor, unless it is None (the default device)."""
    device = keyword_value(node, args, "device")
    return None if device is None or device[1].kind is Kind.NONE else device


def _constant_gpu(node: cst.BaseExpression) -> bool:
    """``0``, ``"cuda:0"``, ``torch.device("cuda:0")``: one fixed GPU, not the rank's."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Call) and len(node.args) == 1:
        node = node.args[0].value
    text = string_value(node)
    return text is not None and re.fullmatch(r"cuda(:\d+)?", text) is not None


def _moves_to_a_device(node: cst.CSTNode) -> bool:
    """``Lambda(lambda x: x.to(device))`` somewhere in ``node``: a move not to the CPU."""
    finder = _DeviceMove()
    walk(node, finder)
    return finder.found


class _DeviceMove(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        target = device_move_target(node)
        text = string_value(target) if target is not None else None
        self.found |= target is not None and (text is None or not text.startswith("cpu"))


def _children_owner(node: cst.Call) -> str | None:
    """``model`` of ``nn.Sequential(*list(model.children())[:-1])`` (also ``.modules()``,
    without the ``list`` or the slice)."""
    for arg in node.args:
        if arg.star != "*":
            continue
        expr = arg.value
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        if isinstance(expr, cst.Call) and dotted(expr.func) in ("list", "tuple") and expr.args:
            expr = expr.args[0].value
        if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute):
            continue
        if expr.func.attr.value in ("children", "modules"):
            return dotted(expr.func.value)
    return None


def _copies_a_tensor(node: cst.Call, args: list[Value]) -> bool:
    """``torch.tensor(x)`` whose data ``x`` is a tensor (not a list or an array to convert)."""
    return bool(args) and node.args[0].keyword is None and args[0].kind is Kind.TENSOR


def _built_per_process(node: cst.BaseExpression) -> bool:
    """``torch.device(f"{kind}:{rank}")``: any f-string, or CUDA formatted with a value."""
    return isinstance(node, cst.FormattedString) or formatted_cuda(node)


def _graph_dataset(qualified: str) -> bool:
    """A PyTorch Geometric data set (``Planetoid(root, "Cora")``): its graphs are on the host."""
    package, _, name = qualified.rpartition(".")
    return package.startswith("torch_geometric.datasets") and name[:1].isupper()
