"""Regressions of held-out set 51 (public repositories) and of the recall reports gathered
beside it, reduced and rewritten here: the reported bugs each rule now finds, next to the
correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# Flower's quickstart client: the labels are moved only inside the loss call, then compared
# on the host with the device predictions
EVALUATE = """\
import torch
from torch.utils.data import DataLoader

DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def test(net, testloader):
    criterion = torch.nn.CrossEntropyLoss()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for images, labels in testloader:
            outputs = net(images.to(DEVICE))
            loss += criterion(outputs, labels.to(DEVICE)).item()
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    return loss, correct


def test_moved(net, testloader):
    correct, seen = 0, 0
    for step, (images, labels) in enumerate(testloader):
        images, labels = images.to(DEVICE), labels.to(DEVICE)
        outputs = net(images)
        correct += (outputs.argmax(1) == labels).sum().item()
        seen += labels.size(0)
        print(correct / (step + 1))
    return correct / seen


net = torch.nn.Linear(4, 2).to(DEVICE)
loader = DataLoader(list(range(8)))
test(net, loader)
test_moved(net, loader)
"""


def test_host_labels_compared_with_device_predictions() -> None:
    assert lines(EVALUATE, "GPD101") == [14]


# the index enumerate() pairs with each batch is a Python int: dividing a device sum by it is
# fine on any device
ENUMERATED = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
loader = DataLoader(list(range(8)))
running = 0.0
for i, (x, y) in enumerate(loader, 1):
    x, y = x.to(device), y.to(device)
    pred = model(x).argmax(1)
    running += (pred == y).float().mean()
    print(running / i, pred.sum() / i)
"""


def test_enumerate_index_is_a_number() -> None:
    assert lines(ENUMERATED, "GPD101") == []


# a CPU arm of the device test: the comparison runs on the host there
CPU_ARM = """\
import torch
from torch.utils.data import DataLoader

use_cuda = torch.cuda.is_available()
model = torch.nn.Linear(4, 2)
loader = DataLoader(list(range(8)))
if use_cuda:
    model = model.cuda()
for x, y in loader:
    if use_cuda:
        out = model(x.cuda())
        print((out.argmax(1) == y.cuda()).sum())
    else:
        out = model(x)
        print((out.argmax(1) == y).sum())
"""


def test_comparison_on_the_cpu_arm_is_not_reported() -> None:
    assert lines(CPU_ARM, "GPD101") == []


# stable-baselines3#491: a feature extractor that builds its last layer in every forward
EXTRACTOR = """\
import torch
import torch.nn as nn


class CombinedExtractor(nn.Module):
    def __init__(self, extractors, features_dim=64):
        super().__init__()
        self.extractors = nn.ModuleDict(extractors)
        self.features_dim = features_dim

    def forward(self, observations):
        encoded = [e(observations[k]).flatten(1) for k, e in self.extractors.items()]
        cat = torch.cat(encoded, dim=1)
        self.last_layer = nn.Sequential(
            nn.Linear(cat.shape[1], self.features_dim), nn.Tanh()
        )
        return self.last_layer(cat)


class LazyHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = None
        self.body = nn.Linear(4, 4)

    def forward(self, x):
        if self.head is None:
            self.head = nn.Sequential(nn.Linear(x.size(-1), 2)).to(x.device)
        gate = nn.Sequential(self.body, nn.ReLU())
        return self.head(gate(x))
"""


def test_layer_stored_on_self_at_every_forward() -> None:
    assert lines(EXTRACTOR, "GPD109") == [14]


# contrastive-unpaired-translation's patch sampler: heads built once, by a helper `forward`
# calls under a test, and registered with setattr
PATCH_SAMPLER = """\
import torch.nn as nn


class PatchSample(nn.Module):
    def __init__(self, nc=256):
        super().__init__()
        self.nc = nc
        self.mlp_init = False

    def create_mlp(self, feats):
        for mlp_id, feat in enumerate(feats):
            mlp = nn.Sequential(nn.Linear(feat.shape[1], self.nc), nn.ReLU())
            setattr(self, "mlp_%d" % mlp_id, mlp)
        self.mlp_init = True

    def forward(self, feats):
        if not self.mlp_init:
            self.create_mlp(feats)
        head = nn.Sequential(nn.Linear(feats[0].shape[1], self.nc), nn.ReLU())
        return [getattr(self, "mlp_%d" % i)(f) for i, f in enumerate(feats)], head(feats[0])
"""


def test_heads_built_once_by_a_helper_under_a_test() -> None:
    assert lines(PATCH_SAMPLER, "GPD109") == [19]


# graves-handwriting's attention window: `torch.arange(..., out=kappa.new())` writes into a
# tensor where `kappa` is
WINDOW = """\
import torch
import torch.nn as nn


class SoftWindow(nn.Module):
    def __init__(self, n_in, k):
        super().__init__()
        self.k = k
        self.linear = nn.Linear(n_in, 3 * k)

    def forward(self, h, kappa_prev, seq_len):
        p = torch.exp(self.linear(h))
        kappa = kappa_prev + 0.1 * p[:, : self.k]
        u = torch.arange(0, seq_len, out=kappa.new()).view(-1, 1, 1)
        grid = torch.arange(0, seq_len).view(-1, 1, 1)
        return torch.sum(torch.exp(-((kappa - u) ** 2)), dim=-1) + (kappa * grid).sum()
"""


def test_factory_written_into_out_tensor() -> None:
    assert lines(WINDOW, "GPD106") == [15]


# a toy GAN whose sampler builds its batch with legacy CUDA constructors
SAMPLER = """\
import math
import torch
from torch.autograd import Variable


def sample_ring(n, k=8, radius=2.0):
    t = torch.arange(0, 2 * math.pi, 2 * math.pi / k, out=torch.cuda.FloatTensor())
    centers = torch.stack([radius * torch.sin(t), radius * torch.cos(t)], dim=1)
    idx = torch.randint(0, k, (n,), device=t.device)
    return torch.cuda.FloatTensor(n, 2).normal_() * 0.02 + centers[idx]


critic = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
critic.cuda()
for step in range(10):
    real = Variable(sample_ring(256))
    score = critic(real).mean()
    host = torch.randn(256, 2)
    print(critic(host))
"""


def test_batch_from_a_sampler_of_cuda_constructors() -> None:
    assert lines(SAMPLER, "GPD101") == [19]


# LukeDitria's token-drop augmentation: a module without weights computes where its input is,
# here a tokenizer's output moved to the device
TOKEN_DROP = """\
import torch
import torch.nn as nn
from text_utils import encode_text


class TokenDrop(nn.Module):
    def __init__(self, prob=0.1, pad=0):
        self.prob = prob
        self.pad = pad

    def __call__(self, sample):
        mask = torch.bernoulli(self.prob * torch.ones_like(sample)).long()
        return (1 - mask) * sample + mask * self.pad


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
classifier = nn.Sequential(nn.Embedding(100, 32), nn.Flatten(), nn.Linear(32 * 12, 2)).to(device)
drop = TokenDrop(prob=0.3)
loader = torch.utils.data.DataLoader(list(zip(["a b c"] * 64, [0] * 64)), batch_size=8)
for text, label in loader:
    tokens = drop(encode_text(list(text)).to(device))
    pred = classifier(tokens)
    raw = drop(torch.randint(0, 100, (8, 12)))
    print(classifier(raw))
"""


def test_weightless_module_output_follows_its_input() -> None:
    assert lines(TOKEN_DROP, "GPD101") == [24]


# Sinkhorn distance: a module without weights that keeps its iteration count on `self`
SINKHORN = """\
import torch


class Sinkhorn(torch.nn.Module):
    def __init__(self, eps, iters):
        super().__init__()
        self.eps = eps
        self.iters = iters

    def forward(self, mu, nu, cost):
        u = torch.zeros_like(mu)
        n_iter = 0
        for i in range(self.iters):
            n_iter += 1
            u = self.eps * torch.logsumexp(-cost + u.unsqueeze(-1), dim=-1) + u
        self.n_iter = n_iter
        return torch.sum(torch.exp(u)), u


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scale = torch.nn.Parameter(torch.ones(1))
        self.scale = scale
        return x * self.scale


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
a = torch.rand(50).to(device)
cost = torch.rand(50, 50).to(device)
ot = Sinkhorn(eps=1e-2, iters=50)
dist, plan = ot(a, a, cost)
scaled = Scaled()
print(scaled(a))
"""


def test_number_kept_on_self_holds_no_weights() -> None:
    assert lines(SINKHORN, "GPD102") == [35]


# vgae_pytorch: a graph VAE whose training script hides the GPUs and runs from its top level
GRAPH_VAE = """\
import torch
import torch.nn as nn


class GraphVAE(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.enc = nn.Linear(n_in, n_out)
        self.n_out = n_out

    def forward(self, feats):
        noise = torch.randn(feats.size(0), self.n_out)
        return torch.sigmoid(noise * self.enc(feats))
"""
TRAIN = """\
import os
import torch
import model

# Train on CPU (hide GPU) due to memory constraints
os.environ['CUDA_VISIBLE_DEVICES'] = ""
features = torch.rand(10, 4)
vae = model.GraphVAE(4, 2){move}
print(vae(features))
"""


def _graph_vae_lines(tmp_path: Path, move: str) -> list[int]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "model.py").write_text(GRAPH_VAE)
    (tmp_path / "train.py").write_text(TRAIN.format(move=move))
    config = LintConfig(select=("GPD106",))
    result = lint_paths([str(tmp_path / "model.py")], config, jobs=1, use_cache=False)
    assert not result.errors
    return [finding.line for finding in result.findings]


def test_a_project_that_hides_its_gpus_runs_on_the_cpu(tmp_path: Path) -> None:
    assert _graph_vae_lines(tmp_path, "") == []
    # the same script moving the model to a GPU meets the host noise there
    assert _graph_vae_lines(tmp_path, ".cuda()") == [12]


# conversational-uptake#3: each input built as a tensor in a dict, then its move discarded
UPTAKE = """\
import torch


def get_prediction(model, instance, device):
    for key in ["input_ids", "token_type_ids", "attention_mask"]:
        instance[key] = torch.tensor(instance[key]).unsqueeze(0)
        instance[key].to(device)
    for name in ["encoder", "decoder"]:
        model.parts[name].to(device)
    return model(**instance)


device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(2, 2).to(device)
get_prediction(model, {}, device)
"""


def test_discarded_move_of_an_item_stored_as_a_tensor() -> None:
    assert lines(UPTAKE, "GPD103") == [7]


# rome (set 52): a library helper's own optional device, nested one function down, and a
# backup copy kept on the host by a memory setting: neither is a CPU path of the script
ROME = """\
import torch
import torch.nn as nn


def fast_copy(module, device=None):
    def collect(mod):
        return [p if device is None else p.to(device) for p in mod.parameters()]

    return collect(module)


def apply_edit(model, conserve_memory):
    keep = "cpu" if conserve_memory else "cuda"
    return {k: v.detach().clone().to(keep) for k, v in model.state_dict().items()}


if __name__ == "__main__":
    model = nn.Linear(32, 32).cuda()
    backup = apply_edit(model, True)
    print(model(torch.randn(2, 32).cuda()))
"""


def test_a_helpers_device_option_and_a_host_backup_offer_no_cpu_path() -> None:
    assert lines(ROME, "GPD203") == []
    # a device choice the script makes on a test about CUDA is one
    chosen = ROME.replace('"cpu" if conserve_memory', '"cpu" if not torch.cuda.is_available()')
    assert lines(chosen, "GPD203") == [18, 20]


# StarGANv2-VC's demo (set 52): a class id left on the host only indexes the device output
STYLE = """\
import torch
import torch.nn as nn


class StyleHead(nn.Module):
    def __init__(self, dim=8, n_domains=4):
        super().__init__()
        self.shared = nn.Linear(16, dim)
        self.heads = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_domains))

    def forward(self, feats, domain):
        h = self.shared(feats)
        out = torch.stack([head(h) for head in self.heads], dim=1)
        rows = torch.arange(domain.size(0)).to(domain.device)
        return out[rows, domain]


head = StyleHead().to("cuda")
feats = torch.randn(1, 16).to("cuda")
domain = torch.LongTensor([2])
print(head(feats, domain))
print(head(torch.randn(1, 16), domain))
"""


def test_a_host_tensor_the_module_reads_only_as_an_index() -> None:
    assert lines(STYLE, "GPD101") == [22]


# MorvanZhou's GPU tutorial (recall set 52): a slice of the dataset's labels moved to the GPU
TUTORIAL = """\
import torch
import torchvision

test_data = torchvision.datasets.MNIST(root="./mnist/", train=False)
test_y = test_data.test_labels[:2000].cuda()
print(test_y[:10].numpy(), "real number")
print(test_y[:10].cpu().numpy())
"""


def test_a_slice_of_what_was_moved_is_on_the_device() -> None:
    assert lines(TUTORIAL, "GPD202") == [6]
