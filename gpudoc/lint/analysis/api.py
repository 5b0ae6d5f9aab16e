"""What the analysis knows about the PyTorch API, by qualified name. Data only."""

from __future__ import annotations

import re

TENSOR_FACTORIES = frozenset(
    [
        "tensor",
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "rand",
        "randn",
        "randint",
        "randperm",
        "eye",
        "linspace",
        "logspace",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "as_tensor",
        "from_numpy",
        "normal",
        "bernoulli",
        "multinomial",
        "tril_indices",
        "triu_indices",
        "empty_strided",
        "sparse_coo_tensor",
    ]
)
"""torch.<name>(...) that makes a new tensor."""

LIKE_FACTORIES = frozenset(
    [*(name for name in TENSOR_FACTORIES if name.endswith("_like")), "multinomial", "bernoulli"]
)
"""Factories whose result is on their tensor argument's device (``torch.multinomial(probs, 1)``
samples where ``probs`` lives)."""
SHAPE_FACTORIES = frozenset(
    [
        *("zeros", "ones", "empty", "full", "rand", "randn", "randint", "eye", "arange"),
        *("linspace", "logspace"),
    ]
)
"""Factories that build a sized tensor: the ones that bite when created in forward()."""

PLACE_KEEPING_METHODS = frozenset(
    [
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "permute",
        "transpose",
        "t",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "contiguous",
        "clone",
        "detach",
        "detach_",
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "int",
        "short",
        "bool",
        "byte",
        "char",
        "type_as",
        "expand",
        "expand_as",
        "repeat",
        "repeat_interleave",
        "narrow",
        "select",
        "index_select",
        "gather",
        "masked_fill",
        "masked_select",
        "sum",
        "mean",
        "max",
        "min",
        "argmax",
        "argmin",
        "softmax",
        "log_softmax",
        "sigmoid",
        "tanh",
        "relu",
        "exp",
        "log",
        "abs",
        "sqrt",
        "pow",
        "clamp",
        "clamp_",
        "round",
        "floor",
        "ceil",
        "neg",
        "sign",
        "norm",
        "std",
        "var",
        "prod",
        "cumsum",
        "chunk",
        "split",
        "unbind",
        "flip",
        "roll",
        "sort",
        "topk",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "mul",
        "add",
        "sub",
        "div",
        "matmul",
        "mm",
        "bmm",
        "squeeze_",
        "unsqueeze_",
        "requires_grad_",
        "add_",
        "mul_",
        "sub_",
        "div_",
        "fill_",
        "zero_",
        "copy_",
        "pin_memory",
        "float_",
        "to_dense",
        "to_sparse",
        "any",
        "all",
        "nonzero",
        "argsort",
        "logsumexp",
        *("triu", "tril", "triu_", "tril_", "diag", "diagonal", "cumprod", "amax", "amin"),
        *("logical_not", "logical_and", "logical_or", "square", "rsqrt", "reciprocal"),
        *("sin", "cos", "remainder", "fmod", "scatter", "scatter_add", "index_fill"),
        *("clip", "clip_", "clamp_min", "clamp_max", "log1p", "expm1", "sigmoid_", "relu_"),
        *("exp_", "abs_", "neg_", "lerp", "minimum", "maximum", "masked_fill_", "index_add"),
    ]
)
"""Tensor methods whose result lives where the receiver lives."""

IN_PLACE_MODULE_METHODS = frozenset(
    [
        *("to", "cuda", "cpu", "to_empty", "train", "eval", "requires_grad_", "apply"),
        *("half", "float", "double", "bfloat16", "share_memory"),
    ]
)
"""Module methods that change the module in place and return it (``model.eval().to(d)``)."""

DISCARDABLE_MOVES = frozenset(
    [
        *("to", "cuda", "cpu", "to_empty"),
        *("half", "float", "double", "bfloat16", "long", "int", "bool", "type"),
    ]
)
"""Methods that return a converted copy of a tensor, but convert a module in place."""

SCALAR_METHODS = frozenset(["item", "tolist", "size", "dim", "numel", "__len__", "element_size"])

WEIGHTED_LAYERS = frozenset(
    [
        "Linear",
        "Bilinear",
        "LazyLinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "LazyConv1d",
        "LazyConv2d",
        "LazyConv3d",
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "SyncBatchNorm",
        "LayerNorm",
        "GroupNorm",
        "RMSNorm",
        "InstanceNorm1d",
        "InstanceNorm2d",
        "InstanceNorm3d",
        "LocalResponseNorm",
        "Embedding",
        "EmbeddingBag",
        "RNN",
        "LSTM",
        "GRU",
        "RNNCell",
        "LSTMCell",
        "GRUCell",
        "Transformer",
        "TransformerEncoder",
        "TransformerDecoder",
        "TransformerEncoderLayer",
        "TransformerDecoderLayer",
        "MultiheadAttention",
        "PReLU",
        "Sequential",
        "ModuleList",
        "ModuleDict",
        "ParameterList",
        "ParameterDict",
    ]
)
"""torch.nn classes that own parameters or buffers (losses and activations do not)."""

MODEL_ZOO_PREFIXES = (
    "torchvision.models.",
    "timm.create_model",
    "torch.hub.load",
    "transformers.",
    "segmentation_models_pytorch.",
)
"""Constructors that return a module with weights on the host."""

HOST_TENSOR_FUNCTIONS = frozenset(
    {
        "torchvision.transforms.functional.to_tensor",
        "torchvision.transforms.functional.pil_to_tensor",
        "torchvision.io.read_image",
    }
)
"""torchvision functions that make a tensor on the host from an image."""

SHAPE_ONLY_FUNCTIONS = frozenset(
    {"broadcast_tensors", "result_type", "is_same_size", "atleast_1d", "atleast_2d", "atleast_3d"}
)
"""torch functions of several tensors that read shapes or dtypes, or view each tensor on its
own: ``torch.broadcast_tensors(t, torch.empty(shape))`` only expands, on any devices."""

IN_PLACE_SHARDING = frozenset({"fully_shard"})
"""FSDP2's ``fully_shard(model)``: shards (and places) the module in place."""

ZOO_NAMESPACES = (
    *("torchvision.models", "timm.models", "timm", "segmentation_models_pytorch", "torch.nn"),
)
"""Modules whose ``__dict__[arch]`` / ``getattr(module, arch)`` is a model constructor."""

LEGACY_TENSOR_TYPES = frozenset(
    [
        "Tensor",
        "FloatTensor",
        "DoubleTensor",
        "HalfTensor",
        "BFloat16Tensor",
        "ByteTensor",
        "CharTensor",
        "ShortTensor",
        "IntTensor",
        "LongTensor",
        "BoolTensor",
    ]
)
"""``torch.LongTensor(...)`` builds a host tensor; ``torch.cuda.LongTensor(...)`` a device one."""

COLLECTIVES = frozenset(
    {
        "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
        "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
        "gather", "scatter", "send", "recv", "isend", "irecv",
    }
)  # fmt: skip
"""``torch.distributed``'s operations on tensors across processes."""

AVAILABILITY_TESTS = frozenset(
    {"torch.cuda.is_available", "torch.backends.mps.is_available", "torch.xpu.is_available"}
)
"""Calls that say whether an accelerator is there (true or false, not a count)."""

DATAFRAME_ROOTS = ("numpy.", "sklearn.", "matplotlib.", "scipy.", "pandas.")
"""Libraries that convert a tensor argument to a NumPy array."""

INDEXING_HELPERS = frozenset(
    {
        "sklearn.model_selection.train_test_split",
        "sklearn.utils.shuffle",
        "sklearn.utils.resample",
        # hands `fargs` to the frame function, which converts (or not) itself
        "matplotlib.animation.FuncAnimation",
    }
)
"""scikit-learn helpers that only index what they are given (``_safe_indexing``): a tensor
comes back a tensor, where it was, with no NumPy conversion; matplotlib's ``FuncAnimation``,
which passes its ``fargs`` on to the frame function."""

DATAPARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch_geometric.nn.DataParallel",  # scatters a list of graphs (DataListLoader batches)
        "torch_geometric.nn.data_parallel.DataParallel",
        "mmcv.parallel.MMDataParallel",  # OpenMMLab's: scatters its DataContainer batches
        "mmcv.parallel.data_parallel.MMDataParallel",
    }
)
GRAPH_LOADERS = frozenset(
    f"torch_geometric.{package}.{loader}"
    for package in ("loader", "data")
    for loader in ("DataLoader", "DataListLoader", "NeighborLoader", "LinkNeighborLoader")
)
"""PyTorch Geometric's loaders: like torch's ``DataLoader``, their batches are on the host."""
DISTRIBUTED_DP = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)

MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "torch.nn.Sequential",
        "torch.nn.ModuleList",
        "transformers.PreTrainedModel",
    }
)
LIGHTNING_BASES = frozenset(
    {
        "pytorch_lightning.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "pytorch_lightning.core.LightningModule",
    }
)
DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset",
        "torch.utils.data.IterableDataset",
        # a loader of the project's own (`class LMDataLoader(data.DataLoader)`): its batches
        # are on the host unless its own code moves them (then it is a device dataset)
        "torch.utils.data.DataLoader",
        "torch.utils.data.dataloader.DataLoader",
    }
)

DEVICE_LITERAL = re.compile(r"^(cuda|mps|xpu|hpu|npu|xla|meta|privateuseone)(:\d+)?$")
CUDA_LITERAL = re.compile(r"^cuda(:\d+)?$")
CPU_LITERAL = re.compile(r"^cpu(:\d+)?$")

DEVICE_NAME = re.compile(
    r"(^|_)(device|dev|devices|gpu|gpus|cuda|rank|local_rank|gpu_id|device_id|device_idx)$", re.I
)
"""Names (or attribute names) that hold a device: ``device``, ``args.device``, ``local_rank``."""

MODULE_NAME = re.compile(
    r"^(model|net|network|module|encoder|decoder|classifier|backbone|generator|discriminator"
    r"|netG|netD|critic|actor|policy|teacher|student|[a-z_]*_(model|net))$",
    re.I,
)
LOSS_NAME = re.compile(
    r"^(criterion|criteria|loss_fn|loss_func|loss_function|lossfn|[a-z_]*_criterion"
    r"|criterion_[a-z_]+|[a-z_]*_loss_fn)$",
    re.I,
)
"""Parameter names that hold a loss module: called on the outputs and the targets together."""
LOADER_NAME = re.compile(r"^([a-z_]*loader|[a-z_]*_dl|dl)$", re.I)
LOADER_CALL = re.compile(r"^(get|make|build|create)_(\w+_)?(data_?)?loader$", re.I)
"""A function of another module named for the DataLoader it returns (``get_loader(cfg)``)."""
TENSOR_NAME = re.compile(
    r"^(x|y|t|tensor|inputs?|images?|imgs?|labels?|targets?|masks?|logits|features?|feats"
    r"|weights?|embeddings?|hidden|h|x_\w+|input_ids|attention_mask)$",
    re.I,
)
"""Parameter names that hold tensors in nearly all code (typing a discarded .to() receiver)."""

NUMPY_CONVERTERS = frozenset(
    [
        "array",
        "asarray",
        "mean",
        "sum",
        "std",
        "var",
        "max",
        "min",
        "argmax",
        "argmin",
        "concatenate",
        "stack",
        "vstack",
        "hstack",
        "save",
        "savetxt",
        "unique",
        "where",
        "round",
        "sqrt",
        "exp",
        "log",
        "abs",
        "isnan",
        "isfinite",
        "histogram",
        "percentile",
        "median",
        "sort",
        "argsort",
        "cumsum",
        "clip",
        "dot",
        "matmul",
    ]
)
"""numpy functions that convert a tensor argument with __array__ (and fail on a device tensor)."""

METRIC_PREFIXES = ("torchmetrics.", "pytorch_lightning.metrics.", "lightning.pytorch.metrics.")
"""Metric classes: nn.Modules holding state tensors (``add_state``) that ``.to()`` moves."""

DTYPES = frozenset(
    "torch." + name
    for name in (
        *("float", "float16", "float32", "float64", "double", "half", "bfloat16"),
        *("long", "int", "int8", "int16", "int32", "int64", "short", "uint8", "bool"),
        *("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "chalf"),
        *("complex32", "complex64", "complex128", "cfloat", "cdouble"),
    )
)
"""torch's dtypes: ``x.type(torch.long)`` converts ``x`` where it is, as ``x.long()`` does."""

MOVE_METHODS = frozenset({"to", "cuda", "cpu", "type_as", "to_device"})
"""Tensor methods that return the tensor on another device (or dtype: ``converts_only``)."""
