"""Precision regressions from the fourteenth held-out set of public repositories (a metric
learning library and its tests, a transformer library's training scripts, a textbook's
notebooks), reduced and rewritten here: correct code each rule must leave alone, next to the
bug it must still report."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

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


# an encoder of sentences: its first input is a list of strings, its second a tensor
SENTENCES = """\
import torch
import torch.nn as nn
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)
    def forward(self, sentences, lengths):
        ids = torch.tensor([[hash(w) % 100 for w in s.split()] for s in sentences])
        return self.emb(ids).sum(1) + lengths.float()[:, None]
model = Encoder().cuda()
"""


def test_a_fix_takes_the_device_of_a_tensor_input_not_of_a_list_of_strings() -> None:
    result = lint_source(SENTENCES, "x.py", LintConfig(select=("GPD106",)))
    assert [f.line for f in result.findings] == [8]
    assert "lengths.device" in result.findings[0].message
    assert "sentences.device" not in result.findings[0].message


def test_no_fix_without_an_input_known_to_be_a_tensor() -> None:
    source = SENTENCES.replace(", lengths", "").replace(" + lengths.float()[:, None]", "")
    result = lint_source(source, "x.py", LintConfig(select=("GPD106",)))
    assert [f.line for f in result.findings] == [8]
    assert result.findings[0].fix is None
    assert "sentences.device" not in result.findings[0].message


# a stub text encoder of a test: no weights, its input a list of strings
STUB = """\
import torch
class TextModel(torch.nn.Module):
    def forward(self, list_of_text):
        return torch.randn(len(list_of_text), 32)
"""


def test_a_weightless_module_fed_no_tensor_meets_no_device() -> None:
    assert lines(STUB, "GPD106") == []
    assert lines(STUB.replace("list_of_text", "x"), "GPD106") == [4]


# random crops of a table: host offsets, made into positions by host arithmetic, then indices
CROP = """\
import torch
import torch.nn as nn
class Crop(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("table", torch.randn(n, 16))
    def forward(self, x):
        offs = torch.randint(0, 8, (4,))
        pos = offs[:, None] + torch.arange(4{device})
        rows = torch.arange(4, device=self.table.device)[:, None]
        return x + self.table[rows, pos]
model = Crop(8).cuda()
"""


def test_host_arithmetic_read_only_as_an_index_is_an_index() -> None:
    assert lines(CROP.format(device=""), "GPD106") == []


def test_arithmetic_with_a_device_operand_is_no_host_index() -> None:
    # `offs` plus a device tensor fails where the sum is computed
    assert lines(CROP.format(device=", device=x.device"), "GPD106") == [8]


def test_a_host_tensor_indexed_by_a_device_tensor_is_still_reported() -> None:
    source = """\
import torch
import torch.nn as nn
class OneHot(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 4)
    def forward(self, labels):
        return self.fc(torch.eye(10)[labels])
model = OneHot().cuda()
"""
    assert lines(source, "GPD106") == [8]


# a boolean mask kept as a plain attribute, only ever used to select from a device tensor
MASK = """\
import torch
import torch.nn as nn
class Reg(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n))
        self.mask = torch.zeros(n, n, dtype=torch.bool)
    def forward(self, x):
        sim = self.w.t() @ self.w
        return x.sum() + {use}
model = Reg(4).cuda()
"""


def test_an_attribute_read_only_as_a_mask_is_no_unmoved_buffer() -> None:
    assert lines(MASK.format(use="sim[self.mask].sum()"), "GPD105") == []
    assert lines(MASK.format(use="(sim * self.mask).sum()"), "GPD105") == [7]
    assert lines(MASK.format(use="self.mask[x.long()].sum()"), "GPD105") == [7]


# a reference loss of a test: a zero made, converted to the input's dtype, moved to its device
TYPED = """\
import torch
import torch.nn as nn
class RankLoss(nn.Module):
    def forward(self, batch):
        dtype, device = batch.dtype, batch.device
        loss = {made}
        return loss + batch.sum()
model = RankLoss().cuda()
"""


def test_a_dtype_conversion_before_the_move_keeps_the_move() -> None:
    for made in ("torch.zeros(1).type(dtype).to(device)", "torch.empty(1).normal_().to(device)"):
        assert lines(TYPED.format(made=made), "GPD106") == [], made


def test_a_dtype_conversion_alone_is_no_move() -> None:
    assert lines(TYPED.format(made="torch.zeros(1).type(dtype)"), "GPD106") == [6]


# a masked replacement of random tokens: `x` is rebound by torch.where, not moved
WHERE = """\
import torch
import torch.nn as nn
class Masker(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Embedding(10, 4)
    def forward(self, x):
        device = x.device
        orig = x.clone()
        noise = torch.randint(0, 10, x.shape, device=device)
        mask = torch.rand(x.shape, device=device) < 0.1
        x = {rebind}
        return torch.where(mask, self.net(x).argmax(-1), orig)
model = Masker().cuda()
"""


def test_a_masked_replacement_is_no_move() -> None:
    assert lines(WHERE.format(rebind="torch.where(mask, noise, x)"), "GPD112") == []


def test_a_torch_function_given_a_device_moves() -> None:
    source = """\
import torch
def train_step(model, loader, device):
    for tokens, labels in loader:
        mask = (tokens != 0).float()
        tokens = torch.as_tensor(tokens, device=device)
        labels = labels.to(device)
        logits = model(tokens, mask)
"""
    assert lines(source, "GPD112") == [4]


# attention scaled by the square root of a head size kept on the module
SCALED = """\
import torch
import torch.nn as nn
class Attention(nn.Module):
    def __init__(self, dim, d_head: int, levels=(1, 2)):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.d_head = d_head
        self.half = d_head // 2
        self.levels = list(levels)
    def forward(self, x, scale: float = 1.0):
        d_k = x.size(-1)
        a = self.q(x) @ x.transpose(-2, -1)
        return a / torch.sqrt(torch.tensor({value}))
model = Attention(8, 4).cuda()
"""


def test_a_tensor_of_a_number_attribute_or_name_is_a_scalar() -> None:
    for value in ("self.d_head", "self.half * 2.0", "d_k", "scale"):
        assert lines(SCALED.format(value=value), "GPD106") == [], value


def test_a_tensor_of_a_list_attribute_stays_gpd106() -> None:
    assert lines(SCALED.format(value="self.levels"), "GPD106") == [13]
    assert lines(SCALED.format(value="[self.d_head]"), "GPD106") == [13]
    # a size by a name that often holds a tuple
    source = SCALED.replace("levels=(1, 2)", "kernel_size=None").replace(
        "list(levels)", "kernel_size"
    )
    assert lines(source.format(value="self.levels"), "GPD106") == [13]


# a notebook's polynomial degrees: converted, the result discarded, the name never read again
UNUSED = """\
import torch
degrees = torch.arange(20)
degrees.float()
features = torch.randn(200, 1)
print(features.pow(2).mean(){read})
"""


def test_a_discarded_conversion_of_a_name_never_read_again_changes_nothing() -> None:
    assert lines(UNUSED.format(read=""), "GPD103") == []


def test_a_discarded_conversion_of_a_name_read_later_stays_gpd103() -> None:
    assert lines(UNUSED.format(read=" + degrees.mean()"), "GPD103") == [3]
    assert lines(UNUSED.format(read="").replace(".float()", ".cuda()"), "GPD103") == [3]


# a reference loss: a host buffer filled by slices, reduced, then moved back to the input's device
FILLED = """\
import torch
import torch.nn as nn
def hardest(dmat):
    r, c = dmat.size()
    best = torch.zeros(max(r, c))
    best[:c], _ = torch.min(dmat, dim=0)
    return best
class RefLoss(nn.Module):
    def forward(self, x):
        loss = hardest(x @ x.t()).mean()
        return {result}
model = RefLoss().cuda()
"""


def test_a_helper_result_moved_after_a_method_chain_is_placed() -> None:
    assert lines(FILLED.format(result="loss.to(device=x.device, dtype=x.dtype)"), "GPD106") == []


def test_a_helper_result_never_moved_stays_gpd106() -> None:
    assert lines(FILLED.format(result="loss + x.sum()"), "GPD106") == [5]
