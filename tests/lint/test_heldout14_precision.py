"""Precision regressions from the fourteenth held-out set of public repositories (a metric
learning library and its tests, a transformer library's training scripts, a textbook's
notebooks), reduced and rewritten here: correct code each rule must leave alone, next to the
bug it must still report."""

from __future__ import annotations

from lint_lines import lines

# a loss written as a module whose constructor keeps only what the caller gives it
CALLER_GIVEN = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Margin(torch.nn.Module):
    def __init__(self, centers, scale, eps=1e-6):
        super().__init__()
        self.scale = scale
        self.eps = eps
        self.centers = {kept}
        self.count = centers.size(0)
    def forward(self, x):
        return (x @ self.centers.t()).mean() * self.scale
centers = {centers}
criterion = Margin(centers, scale={scale})
print(criterion(torch.randn(5, 3, device=device)))
"""
NORMED = "centers / (centers.norm() + eps)"


def test_a_module_keeping_only_caller_values_holds_no_weights() -> None:
    on_device = "torch.nn.Parameter(torch.randn(4, 3, device=device))"
    for kept in (NORMED, "centers"):
        source = CALLER_GIVEN.format(kept=kept, centers=on_device, scale="0.5")
        assert lines(source, "GPD102") == [], kept


def test_a_module_given_a_module_or_a_host_parameter_is_weighted() -> None:
    host = "torch.nn.Parameter(torch.randn(4, 3))"
    assert lines(CALLER_GIVEN.format(kept="centers", centers=host, scale="0.5"), "GPD102") == [13]
    on_device = "torch.randn(4, 3, device=device)"
    layer = "torch.nn.Linear(3, 3)"
    source = CALLER_GIVEN.format(kept=NORMED, centers=on_device, scale=layer)
    assert lines(source, "GPD102") == [13]


# a loss made of another weightless loss and the numbers it was given
NESTED = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Focal(torch.nn.Module):
    def __init__(self, gamma=2.0, device="cuda:0"):
        super().__init__()
        self.gamma = gamma
        self.device = device
    def forward(self, p, t):
        return ((1 - p) ** self.gamma * t).sum()
class Detection(torch.nn.Module):
    def __init__(self, factor, overlap, device="cuda:0", **kwargs):
        super().__init__()
        self.focal = Focal(**kwargs)
        self.factor = factor
        self.overlap = overlap
        self.device = device
    def forward(self, p, t):
        return self.focal(p, t) * self.factor
criterion = Detection({factor}, overlap=0.5)
net = torch.nn.Linear(4, 4).to(device)
x = torch.randn(2, 4).to(device)
print(criterion(net(x), x))
"""


def test_a_loss_of_weightless_parts_and_numbers_is_not_moved() -> None:
    assert lines(NESTED.format(factor="5.0"), "GPD102") == []
    assert lines(NESTED.format(factor="torch.nn.Linear(4, 4)"), "GPD102") == [19]


# a wrapper built around a model the script moves, before or after wrapping it
WRAPPED = """\
import torch
class Wrapper(torch.nn.Module):
    def __init__(self, net, pad=0):
        super().__init__()
        self.net = net
        self.pad = pad
        self.max_len = net.max_len
    def forward(self, x):
        return self.net(x)
model = torch.nn.Linear(4, 4)
{before}wrapped = Wrapper(model)
{after}x = torch.randn(2, 4).cuda()
print(wrapped(x))
"""


def test_a_wrapper_lives_where_the_model_it_wraps_does() -> None:
    for before, after in (("", "model.cuda()\n"), ("model.cuda()\n", ""), ("", "wrapped.cuda()\n")):
        source = WRAPPED.format(before=before, after=after)
        assert lines(source, "GPD102") == [], (before, after)
        assert lines(source, "GPD203") == [], (before, after)


def test_a_wrapper_of_an_unmoved_model_stays_gpd102() -> None:
    assert lines(WRAPPED.format(before="", after=""), "GPD102") == [11]


# a wrapper built in a method around a submodule, which moved with its parent
IN_METHOD = """\
import torch
class Wrapper(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net
    def generate(self, x, cond):
        return self.net(x + cond)
class Decoder(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.proj = torch.nn.Linear(4, 4)
    def generate(self, x):
        device = x.device
        cond = self.proj(torch.randn(x.shape[0], 4, device=device))
        wrapper = Wrapper(self.net)
        return wrapper.generate(x, cond)
"""


def test_a_wrapper_of_a_submodule_is_not_a_host_module() -> None:
    assert lines(IN_METHOD, "GPD102") == []


# another name for the model, moved in place: `.to()` moves the one object
ALIAS = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def build():
    return torch.nn.Linear(4, 4)
model = {model}
policy = {policy}
policy.to(device)
print(model(torch.randn(2, 4, device=device)))
"""


def test_a_module_moved_under_another_name_is_moved() -> None:
    assert lines(ALIAS.format(model="torch.nn.Linear(4, 4)", policy="model"), "GPD102") == []
    assert lines(ALIAS.format(model="build()", policy="model"), "GPD102") == []


def test_two_modules_of_one_factory_stay_two() -> None:
    assert lines(ALIAS.format(model="build()", policy="build()"), "GPD102") == [5]
    source = ALIAS.format(model="torch.nn.Linear(4, 4)", policy="torch.nn.Linear(4, 4)")
    assert lines(source, "GPD102") == [5]


def test_a_parameter_rebound_to_a_layer_is_a_weight() -> None:
    rebound = CALLER_GIVEN.replace(
        "super().__init__()", "super().__init__()\n        scale = torch.nn.Linear(3, 3)"
    )
    on_device = "torch.randn(4, 3, device=device)"
    assert lines(rebound.format(kept=NORMED, centers=on_device, scale="0.5"), "GPD102") == [14]


# a layer that brings its own weight to its input's device through the project's helper
HELPER = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def to_device(x, tensor=None, device=None):
    dv = device if device is not None else tensor.device
    if x.device != dv:
        x = x.to(dv)
    return x
class Cosine(torch.nn.Module):
    def __init__(self, n):
        super().__init__(){layer}
        self.weight = torch.nn.Parameter(torch.ones(n, n))
        self.register_buffer("scale", torch.ones(n))
        self.labels = torch.arange(n)
    def forward(self, x, labels):
        w = self.weight.renorm(2, 1, 1e-5)
        w = to_device(w, tensor=x)
        hit = to_device(self.labels, labels) == labels
        return x.mm(w) * {scale} + hit.sum()
layer = Cosine(4)
print(layer(torch.randn(2, 4, device=device), torch.zeros(2, device=device)))
"""
BROUGHT = "to_device(self.scale, x)"


def test_a_module_bringing_its_weights_to_its_input_is_not_moved() -> None:
    assert lines(HELPER.format(layer="", scale=BROUGHT), "GPD102") == []
    assert lines(HELPER.format(layer="", scale="self.scale.to(x.device)"), "GPD102") == []


def test_a_tensor_attribute_brought_by_the_helper_is_moved_where_used() -> None:
    assert lines(HELPER.format(layer="", scale=BROUGHT), "GPD105") == []


def test_a_module_with_a_weight_left_behind_stays_gpd102() -> None:
    assert lines(HELPER.format(layer="", scale="self.scale"), "GPD102") == [19]
    linear = "\n        self.fc = torch.nn.Linear(4, 4)"
    assert lines(HELPER.format(layer=linear, scale=BROUGHT), "GPD102") == [20]
