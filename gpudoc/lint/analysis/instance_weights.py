"""What an instance of one of the project's module classes holds, when the class keeps only
what its constructor is given (parameterless.weight_sources): the call's arguments decide.
``ProxyLoss(proxies, alpha=0.9)`` with ``proxies`` made on the device holds nothing to move;
``Wrapper(model)`` holds ``model``'s weights, and lives where ``model`` does."""

from __future__ import annotations

import re

import libcst as cst

from gpudoc.lint.analysis.functions import argument_for, bind_arguments
from gpudoc.lint.analysis.names import ImportTable, class_method, dotted
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import UNKNOWN, Kind, Place, Value

WEIGHTLESS_KINDS = frozenset({Kind.SCALAR, Kind.DEVICE, Kind.NONE, Kind.NDARRAY})
SETTING = re.compile(
    r"^(ignore|use|is|has|with|no|enable|disable|do|apply|keep|return|n|num|number_of)_"
    r"|(^|_)(size|dim|num|count|rate|prob|ratio|eps|epsilon|alpha|beta|gamma|temperature"
    r"|margin|reduction|mode|smoothing|k|p|min|max|thresh|threshold|index|steps|n)$"
)
"""Parameter names of a setting in nearly all code (``ignore_zero``, ``hidden_size``,
``n_classes``, ``reduction``): a flag, a number or a string, never the weights of a module."""


KEPT_DATA = re.compile(
    r"(^|_)(labels?|vocab|vocabulary|classes|class_names|tokens|alphabet|charset|chars|words)$"
)
"""What a module keeps of its constructor's arguments that is data, never weights: a decoder's
``labels`` or ``vocab`` (a list, or a tensor, which ``.to()`` would not move either: only
parameters, buffers and submodules move)."""


def holds_only_settings(cls: ModuleClass) -> bool:
    """Nothing to move, whatever the call passes: no weights of its own, and only settings
    given (``MovingAvg(kernel_size)``, whose ``nn.AvgPool1d`` has no parameters)."""
    return not cls.weighted or settings_only(cls.weights_from)


def settings_only(sources: frozenset[str] | None) -> bool:
    """The ``__init__`` parameters a class keeps (``weight_sources``) are all settings: it
    holds no weights of its own and none the caller can give it."""
    return sources is not None and all(SETTING.search(source) for source in sources)


def instance_holdings(
    cls: ModuleClass, call: cst.Call, values: list[Value], imports: ImportTable
) -> tuple[bool, list[Value]]:
    """Whether the instance ``call`` builds may hold weights, and the caller's modules when
    they are all it holds (a wrapper's)."""
    sources = cls.weights_from
    if sources is None:
        return cls.weighted, []
    init = class_method(cls.node, "__init__")
    if not sources or init is None:
        return bool(sources), []
    if any(arg.star for arg in call.args):  # `Loss(**config)`: what it passes is not known
        return True, []
    bound = bind_arguments(init.params, call, values, is_method=True)
    defaults = {
        param.name.value: param.default
        for param in [*init.params.params, *init.params.kwonly_params]
        if param.default is not None
    }
    modules: list[Value] = []
    for param in sorted(sources):
        arg = argument_for(init, call, param, is_method=True)
        if arg is None:
            default = defaults.get(param)
            if default is not None and _weightless(default, UNKNOWN, imports):
                continue
            return True, []
        value = bound.get(param, UNKNOWN)
        if _weightless(arg.value, value, imports) or SETTING.search(param):
            continue
        if KEPT_DATA.search(param) and value.kind is not Kind.MODULE:
            continue  # `GreedyCTCDecoder(labels=bundle.get_labels())`
        if value.kind is not Kind.MODULE:
            return True, []
        modules.append(value)
    return bool(modules), modules


def _weightless(expr: cst.BaseExpression, value: Value, imports: ImportTable) -> bool:
    """A number, a string, a device, ``None``, a function, a weightless module, or a tensor
    the caller already put on the device: nothing ``.to()`` would need to move."""
    if isinstance(expr, cst.BaseString | cst.Integer | cst.Float):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"):
        return True
    if value.kind in WEIGHTLESS_KINDS or (value.kind is Kind.MODULE and not value.weighted):
        return True
    if value.is_tensorish and value.place is Place.DEVICE:
        return True
    qualified = imports.qualify(expr) or ""
    function = (dotted(expr) or "").rsplit(".", 1)[-1]
    return qualified.startswith("torch.") and function[:1].islower()  # `F.cosine_similarity`
