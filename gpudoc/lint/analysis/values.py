"""The light type lattice: what a name holds (kind) and where it lives (place)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

import libcst as cst


class Kind(Enum):
    UNKNOWN = "unknown"
    MODULE = "module"
    TENSOR = "tensor"
    BATCH = "batch"
    """A tuple, list or dict of tensors, as a DataLoader yields them."""
    LOADER = "loader"
    """Iterating it yields BATCH values in its ``place`` (or its ``element``)."""
    OPTIMIZER = "optimizer"
    DEVICE = "device"
    NDARRAY = "ndarray"
    SCALAR = "scalar"
    """A number or a 0-dim tensor: PyTorch combines these with tensors on any device."""
    PARAMS = "params"
    """``model.parameters()``: remembers the module it came from."""
    TYPENAME = "typename"
    """``x.type()``: a tensor type's name (``'torch.cuda.FloatTensor'``), which names the
    device too: ``t.type(x.type())`` moves ``t`` where ``x`` is."""
    NONE = "none"
    """``None`` where a device goes (a ``device=None`` parameter the call leaves out): the
    default device for a new tensor, no move at all for ``.to(device)``."""


class Place(Enum):
    UNKNOWN = "unknown"
    HOST = "host"
    DEVICE = "device"
    MIXED = "mixed"
    """On the device on some paths and on the host on others (flow.py joins them)."""


def join_places(places: list[Place]) -> Place:
    """The place of a result computed from several tensors: a device wins, else all must agree."""
    if Place.DEVICE in places:
        return Place.DEVICE
    if places and all(place is Place.HOST for place in places):
        return Place.HOST
    if Place.MIXED in places and all(place in (Place.HOST, Place.MIXED) for place in places):
        return Place.MIXED
    return Place.UNKNOWN


PLACED_MODULES = "placed-modules"
"""The ``source`` of a dict (a ``Munch``) of networks each moved in place, and of what is read
from it: ``nets.diffusion.diffusion`` is a placed module."""


@dataclass(frozen=True)
class Value:
    kind: Kind = Kind.UNKNOWN
    place: Place = Place.UNKNOWN
    weighted: bool = False
    """A module with parameters or buffers (a loss without weights is not: it runs anywhere)."""
    stale: bool = False
    """A module rebinding a name that was placed on the device before, not placed since."""
    wrapper: bool = False
    """nn.DataParallel: it scatters host inputs itself."""
    managed: bool = False
    """A Lightning module: its trainer moves batches and the module."""
    cpu_device: bool = False
    """For DEVICE values: the device is the CPU."""
    by_name: bool = False
    """Typed only by a conventional parameter name (``x``, ``images``), not by its binding."""
    source: str = ""
    """For PARAMS and OPTIMIZER: the name of the module whose parameters they hold; for
    callables that make host tensors: ``transform`` (torchvision) or ``tokenizer``; for what
    ``torch.load`` mapped to the CPU, and its items: ``checkpoint``."""
    inplace_to: bool = False
    """A tokenizer's BatchEncoding: its ``.to(device)`` moves it in place."""
    binding: cst.CSTNode | None = None
    """The statement (or ``for`` loop) that bound the name: where a fix inserts a move."""
    origin: cst.CSTNode | None = None
    """For modules: the expression that created it; for a tensor a factory made on the host
    (``torch.zeros(n)``), that call."""
    instance: cst.CSTNode | None = None
    """For modules: the statement that first bound it to a name; the names that hold one
    instance are one object (sharing.py)."""
    parts: tuple[cst.CSTNode, ...] = ()
    """For a module whose only weights are modules the caller gave it (``Wrapper(model)``):
    their instances."""
    moved_if: cst.BaseExpression | None = None
    """For modules moved inside an ``if`` about something else: that test (placed on some paths)."""
    moved_at: cst.CSTNode | None = None
    unmoved_at: cst.CSTNode | None = None
    """For modules with ``moved_if``: where another path of that ``if`` bound the module and
    left it on the host (``if args.pretrained: model = resnet18()``)."""
    mixed_under: tuple[str, cst.CSTNode | None] | None = None
    """For a tensor moved in one branch of ``if flag:`` only (MIXED): the flag's name and the
    statement that bound it then. A later ``if`` of the same, unchanged flag runs only on the
    path where it was moved (``if av: lip = lip.to(device)`` ... ``if av: model(lip)``)."""
    items: tuple[Value, ...] | None = None
    """For tuples of known shape: the value of each element."""
    element: Value | None = None
    """For LOADER values that a call of a generator function returns: what it yields (the
    join of its ``yield`` values)."""
    row: bool = False
    """An element of an iterated tensor (``for t in labels``): one dimension less, a 0-dim
    tensor for a vector, which indexes like a Python int on any device."""

    def __eq__(self, other: object) -> bool:
        """The dataclass's field-by-field equality, without building two tuples of 19 fields
        for it: joins and loops compare every name's value, most often with itself."""
        if self is other:
            return True
        if other.__class__ is not Value:
            return NotImplemented
        return self.__dict__ == other.__dict__

    def with_place(self, place: Place) -> Value:
        stale = False if place is Place.DEVICE else self.stale
        return replace(
            self,
            place=place,
            stale=stale,
            moved_if=None,
            moved_at=None,
            unmoved_at=None,
            mixed_under=None,
        )

    def unconditional(self) -> Value:
        """The same value, placed (or not) on every path."""
        return replace(self, moved_if=None, moved_at=None, unmoved_at=None, mixed_under=None)

    def bound_at(self, node: cst.CSTNode) -> Value:
        return replace(self, binding=node)

    @property
    def is_tensorish(self) -> bool:
        return self.kind in (Kind.TENSOR, Kind.BATCH)

    @property
    def is_device_module(self) -> bool:
        """A module that should receive device inputs: placed, or a stale rebinding."""
        return self.kind is Kind.MODULE and (self.place is Place.DEVICE or self.stale)


_FIELDS = frozenset(field.name for field in fields(Value))


def replace(value: Value, **changes: Any) -> Value:
    """``dataclasses.replace`` for a Value, at a fraction of its cost: the walk makes one for
    most names it binds, and the generic one builds the keyword arguments of all 19 fields and
    sets each through the frozen class's guard. Value has no ``__post_init__`` to run."""
    if not changes.keys() <= _FIELDS:
        raise TypeError(f"Value has no field {sorted(changes.keys() - _FIELDS)}")
    new = object.__new__(Value)
    new.__dict__.update(value.__dict__)
    new.__dict__.update(changes)
    return new


INSTANCE = "instance:"
"""``Value.source`` of an instance of one of the project's plain classes: ``instance:Trainer``."""
GRAPH = "graph"
"""``Value.source`` of a PyTorch Geometric graph (``Data``, ``HeteroData``, a ``Batch``): its
``.to()`` moves it in place; ``data["author"]`` is a part of it, moved with it."""
COLLATED = "collate"
"""The ``source`` of a loader with a ``collate_fn`` the walk cannot read, and of its batches:
whatever that function builds (a ``BatchEncoding``, a batch class whose ``.to()`` moves it in
place), not known to be plain tensors."""

APPENDED = "appended"
"""The source of a list value grown by ``append`` (``outs = []``, ``outs.append(out)``)."""
ESTIMATOR = "sklearn-estimator"
"""The ``source`` of a scikit-learn estimator (``TSNE(n_components=2)``): its ``fit``,
``transform`` and ``predict`` methods turn their data into NumPy arrays."""

UNKNOWN = Value()
CHECKPOINT = Value(place=Place.HOST, source="checkpoint")
"""What ``torch.load(f, map_location="cpu")`` returns, and its items: whatever it holds (a
whole pickled module too) is on the host."""
SCALAR = Value(Kind.SCALAR)


def called_module(held: Value | None) -> Value | None:
    """What a name holds, seen as the module it is when it is called: only a module is both
    moved and called (``decoder = Decoder(...)`` from a file not read, then
    ``decoder.cuda()``), and a callable in a checkpoint mapped to the CPU is a pickled module
    on the host (``model = ckpt["model"].float()``)."""
    if held is None or held.kind is not Kind.UNKNOWN:
        return held
    if held.place is Place.DEVICE or (held.source == "checkpoint" and held.place is Place.HOST):
        return replace(held, kind=Kind.MODULE, weighted=True, source="")
    return held


def host_module(value: Value) -> bool:
    """A module on the host, or what may be one (an item of a checkpoint on the host)."""
    if value.place is not Place.HOST:
        return False
    return value.kind is Kind.MODULE or (
        value.kind is Kind.UNKNOWN and value.source == "checkpoint"
    )


def element_of(value: Value) -> Value:
    """What iterating ``value`` yields."""
    if value.element is not None:
        return value.element
    if value.kind is Kind.LOADER:
        source = COLLATED if value.source == COLLATED else ""
        return Value(Kind.BATCH, value.place, by_name=value.by_name, source=source)
    if value.kind in (Kind.TENSOR, Kind.BATCH):
        row = value.kind is Kind.TENSOR
        return Value(Kind.TENSOR, value.place, by_name=value.by_name, row=row)
    if value.kind is Kind.PARAMS:
        # `next(model.parameters())`: a parameter, where the module was when asked (so
        # `.device` of it follows the module); `named_parameters()` gives the shape of its
        # (name, parameter) pairs in `items`
        if value.items is not None:
            return Value(items=value.items)
        return Value(Kind.TENSOR, value.place)
    return UNKNOWN


def unpack(value: Value, count: int) -> list[Value]:
    """The values that ``a, b, ... = value`` binds."""
    if value.items is not None and len(value.items) == count:
        return list(value.items)
    if value.kind in (Kind.TENSOR, Kind.BATCH):
        return [Value(Kind.TENSOR, value.place, by_name=value.by_name) for _ in range(count)]
    if (
        value.kind is Kind.UNKNOWN
        and value.element is not None
        and value.element.kind is Kind.LOADER
    ):
        return [value.element] * count  # `train, test = random_split(dataset, ...)`
    return [UNKNOWN] * count
