"""Composite operations that make tensors inside C++ from their input's options (issue 13, item 1).

Each case builds a layer or calls a functional on emulated ``cuda:0`` tensors, in training mode
(forward and backward) and in evaluation mode (forward under no_grad): none may raise a device
error, since none does on a GPU. The counterpart tests check that a host tensor of the user's,
handed to the same composites, still raises the GPU's error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from gpudoc.emulate.errors import EmulatedDeviceError
from gpudoc.emulate.patches import emulated_cuda
from gpudoc.emulate.tensor import EmulatedTensor

Case = Callable[[], Any]  # runs the layer on cuda:0 and returns what to backpropagate from
D = "cuda"


@pytest.fixture(scope="module")
def gpu() -> Iterator[None]:
    with emulated_cuda(device_count=1, batch_limit=None):
        torch.manual_seed(0)
        yield


TRAINING = [True]  # the mode the cases build their modules in


def _on(module: nn.Module) -> Any:
    """A module on cuda:0, in the mode under test."""
    return module.to(D).train(TRAINING[0])


def _seq(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=D, requires_grad=True)


def _causal(size: int) -> torch.Tensor:
    return nn.Transformer.generate_square_subsequent_mask(size, device=torch.device(D))


def _attention() -> Any:
    q = _seq(2, 4, 6, 8)
    mask = torch.ones(6, 6, dtype=torch.bool, device=D).tril()
    return (
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.2, is_causal=True).sum()
        + F.scaled_dot_product_attention(q, q, q, attn_mask=mask, dropout_p=0.1).sum()
    )


def _multihead() -> Any:
    attention = _on(nn.MultiheadAttention(8, 2, dropout=0.2, batch_first=True))
    x = _seq(3, 5, 8)
    padding = torch.zeros(3, 5, dtype=torch.bool, device=D)
    padding[:, -1] = True
    out, weights = attention(x, x, x, key_padding_mask=padding, attn_mask=_causal(5))
    out2, _ = attention(x, x, x, need_weights=False, is_causal=True, attn_mask=_causal(5))
    return out.sum() + weights.sum() + out2.sum()


def _encoder() -> Any:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, norm_first=True)
    encoder = _on(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    return encoder(_seq(5, 3, 8), mask=_causal(5), is_causal=True).sum()


def _transformer() -> Any:
    model = _on(nn.Transformer(8, 2, 1, 1, 16, dropout=0.2, batch_first=True))
    source, target = _seq(2, 5, 8), _seq(2, 4, 8)
    return model(source, target, tgt_mask=_causal(4), tgt_is_causal=True).sum()


def _recurrent(kind: type[nn.RNNBase]) -> Case:
    def case() -> Any:
        layer = kind(8, 6, num_layers=2, dropout=0.3, bidirectional=True, batch_first=True)
        out, _ = _on(layer)(_seq(3, 5, 8))
        packed = nn.utils.rnn.pack_padded_sequence(_seq(3, 5, 8), [5, 4, 2], batch_first=True)
        packed_out, _ = layer(packed)
        # pad_packed_sequence copies into a tensor C++ makes: its gradient is not followed yet
        unpacked, _ = nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True)
        cell = {nn.LSTM: nn.LSTMCell, nn.GRU: nn.GRUCell}.get(kind, nn.RNNCell)(8, 6)
        cell = _on(cell)
        state = cell(_seq(3, 8))
        first = state[0] if isinstance(state, tuple) else state
        return out.sum() + packed_out.data.sum() + unpacked.detach().sum() + first.sum()

    return case


def _embeddings() -> Any:
    embedding = _on(nn.Embedding(10, 4, padding_idx=0, max_norm=1.0))
    bag = _on(nn.EmbeddingBag(10, 4, mode="mean"))
    tokens = torch.tensor([1, 2, 0, 4, 5], device=D)
    offsets = torch.tensor([0, 2], device=D)
    return embedding(tokens).sum() + bag(tokens, offsets).sum() + F.one_hot(tokens, 10).sum()


def _normalisation() -> Any:
    image = _seq(4, 3, 6, 6)
    layers = [nn.BatchNorm2d(3), nn.InstanceNorm2d(3, affine=True), nn.GroupNorm(1, 3)]
    layers += [nn.LayerNorm([6, 6]), nn.LocalResponseNorm(2), nn.RMSNorm([6])]
    total = sum(_on(layer)(image).sum() for layer in layers)
    return total + _on(nn.BatchNorm1d(3))(_seq(4, 3)).sum() + F.normalize(image).sum()


def _dropouts() -> Any:
    image = _seq(4, 3, 6, 6)
    layers = [nn.Dropout(0.3), nn.Dropout2d(0.3), nn.AlphaDropout(0.3), nn.FeatureAlphaDropout()]
    dropped = F.dropout1d(_seq(2, 3, 5), 0.5, training=TRAINING[0])
    return sum(_on(layer)(image).sum() for layer in layers) + dropped.sum()


def _convolutions() -> Any:
    image = _seq(2, 3, 8, 8)
    x = _on(nn.Conv2d(3, 4, 3, padding=1))(image)
    x = _on(nn.ConvTranspose2d(4, 4, 2, stride=2))(x)
    x = F.interpolate(F.max_pool2d(x, 2), scale_factor=2, mode="bilinear")
    x = F.adaptive_avg_pool2d(F.pixel_shuffle(x, 2), 3)
    grid = F.affine_grid(torch.eye(2, 3, device=D).expand(2, 2, 3), [2, 4, 5, 5])
    sampled = F.grid_sample(x, grid, align_corners=False)
    folded = F.fold(F.unfold(image, 2), (8, 8), 2)
    return x.sum() + sampled.sum() + folded.sum() + _on(nn.Conv1d(3, 2, 3))(_seq(2, 3, 7)).sum()


def _classification_losses() -> Any:
    logits, labels = _seq(6, 4), torch.tensor([0, 1, 2, 3, 1, -100], device=D)
    weight = torch.rand(4, device=D)
    total = F.cross_entropy(logits, labels, weight=weight, label_smoothing=0.1)
    total = total + F.nll_loss(F.log_softmax(logits, 1), labels.clamp(min=0))
    total = total + F.cross_entropy(logits, torch.rand(6, 4, device=D).softmax(1))
    targets = torch.rand(6, 4, device=D)
    pos_weight = torch.ones(4, device=D)
    total = total + F.binary_cross_entropy_with_logits(logits, targets, pos_weight=pos_weight)
    total = total + F.multilabel_soft_margin_loss(logits, targets.round())
    total = total + F.multi_margin_loss(logits, labels.clamp(min=0))
    total = total + F.kl_div(F.log_softmax(logits, 1), targets.softmax(1), reduction="batchmean")
    return total + F.binary_cross_entropy(logits.sigmoid(), targets)


def _regression_losses() -> Any:
    x, y = _seq(6, 4), torch.randn(6, 4, device=D)
    total = F.mse_loss(x, y) + F.l1_loss(x, y) + F.smooth_l1_loss(x, y) + F.huber_loss(x, y)
    total = total + F.poisson_nll_loss(x, y.abs()) + F.gaussian_nll_loss(x, y, torch.ones_like(y))
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0], device=D)
    total = (
        total + F.cosine_embedding_loss(x, y, sign) + F.margin_ranking_loss(x[:, 0], y[:, 0], sign)
    )
    total = total + F.triplet_margin_loss(x, y, y.flip(0)) + F.hinge_embedding_loss(x, y.sign())
    return total + torch.cdist(x, y).sum() + F.cosine_similarity(x, y).sum() + F.pdist(x).sum()


def _ctc() -> Any:
    log_probs = _seq(7, 2, 5).log_softmax(2)
    targets = torch.tensor([[1, 2, 3], [2, 4, 0]], device=D)
    return F.ctc_loss(log_probs, targets, [7, 6], [3, 2])


def _sampling() -> Any:
    logits = _seq(3, 5)
    probabilities = logits.softmax(1)
    drawn = torch.multinomial(probabilities, 2) + torch.bernoulli(probabilities).long()[:, :2]
    top = torch.topk(logits, 2).values.sum() + torch.sort(logits).values.sum()
    gumbel = F.gumbel_softmax(logits, tau=0.5, hard=True).sum()
    unique = torch.unique(drawn).sum() + torch.nonzero(drawn).sum() + torch.argwhere(drawn).sum()
    counts = torch.bincount(drawn.flatten()).sum() + torch.histc(logits.detach(), 4).sum()
    return top + gumbel + (unique + counts) * 0 + torch.cumsum(logits, 1).sum()


CASES: dict[str, Case] = {
    "scaled_dot_product_attention": _attention,
    "MultiheadAttention": _multihead,
    "TransformerEncoder": _encoder,
    "Transformer": _transformer,
    "RNN": _recurrent(nn.RNN),
    "LSTM": _recurrent(nn.LSTM),
    "GRU": _recurrent(nn.GRU),
    "embeddings": _embeddings,
    "normalisation": _normalisation,
    "dropouts": _dropouts,
    "convolutions": _convolutions,
    "classification losses": _classification_losses,
    "regression losses": _regression_losses,
    "ctc_loss": _ctc,
    "sampling": _sampling,
}


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_composites_raise_no_device_error(gpu: None, name: str, training: bool) -> None:
    TRAINING[0] = training
    try:
        with torch.set_grad_enabled(training):
            total = CASES[name]()
    finally:
        TRAINING[0] = True
    assert isinstance(total, EmulatedTensor) and total.device == torch.device("cuda", 0)
    if training:
        total.backward()


def test_a_host_mask_of_the_users_still_raises(gpu: None) -> None:
    attention = _on(nn.MultiheadAttention(8, 2, batch_first=True))
    x = torch.randn(3, 5, 8, device=D)
    host_padding = torch.zeros(3, 5, dtype=torch.bool)  # forgot .to(device)
    with pytest.raises(EmulatedDeviceError, match=r"cuda:0 and cpu|different from other tensors"):
        attention(x, x, x, key_padding_mask=host_padding)
    host_mask = nn.Transformer.generate_square_subsequent_mask(5)
    with pytest.raises(EmulatedDeviceError):
        attention(x, x, x, attn_mask=host_mask, need_weights=False)
    q = torch.randn(2, 2, 5, 4, device=D)
    with pytest.raises(EmulatedDeviceError):
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(5, 5, dtype=torch.bool))


def test_a_host_input_to_composites_still_raises(gpu: None) -> None:
    lstm = _on(nn.LSTM(4, 3, num_layers=2, dropout=0.2))
    with pytest.raises(RuntimeError, match=r"cuda:0|device"):
        lstm(torch.randn(5, 2, 4))
    with pytest.raises(EmulatedDeviceError):
        F.one_hot(torch.tensor([1, 2]), 3) + torch.ones(2, 3, device=D)
    weight = torch.rand(4)  # a class weight left on the host
    with pytest.raises(EmulatedDeviceError, match="weight is on cpu"):
        F.cross_entropy(torch.randn(2, 4, device=D), torch.tensor([0, 1], device=D), weight=weight)


# -- arguments a GPU takes from the host (issue 13, CTC lengths) ---------------------------------


def _ctc_call(targets_on: str, lengths_on: str, batched: bool, module: bool) -> Any:
    log_probs = _seq(7, 2, 5).log_softmax(2) if batched else _seq(7, 5).log_softmax(1)
    targets = torch.tensor([[1, 2, 3], [2, 4, 0]]) if batched else torch.tensor([1, 2, 3])
    lengths: Any = ([7, 6], [3, 2]) if batched else ([7], [3])
    if lengths_on != "list":  # tensors: 0-dim ones for an unbatched input
        lengths = [torch.tensor(n if batched else n[0], device=lengths_on) for n in lengths]
    input_lengths, target_lengths = lengths
    loss = nn.CTCLoss(zero_infinity=True) if module else F.ctc_loss
    return loss(log_probs, targets.to(targets_on), input_lengths, target_lengths)


def _packed(lengths_on: str) -> Any:
    lengths = torch.tensor([5, 4, 2], device=lengths_on)
    packed = nn.utils.rnn.pack_padded_sequence(_seq(3, 5, 8), lengths, batch_first=True)
    out, _ = _on(nn.GRU(8, 4, batch_first=True))(packed)
    padded, sizes = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    return padded.sum() + sizes.sum()


def _scalars_from_host() -> Any:
    x = _seq(3, 4)
    scalar = torch.tensor(2.0)  # a 0-dim host tensor: a scalar a CUDA kernel accepts
    total = (x * scalar + scalar).sum() + torch.where(x > 0, x, scalar).sum()
    total = total + x.masked_fill(x > 1, scalar).sum() + x.clamp(min=-scalar).sum()
    total = total + x[torch.tensor(1)].sum() + x[torch.tensor([0, 2])].sum()  # host indices
    return total + x[torch.tensor([True, False, True])].sum() + x.lerp(x.detach(), scalar).sum()


HOST_CASES: dict[str, Case] = {
    f"ctc targets={t} lengths={n}{' unbatched' if not b else ''}{' CTCLoss' if m else ''}": (
        lambda t=t, n=n, b=b, m=m: _ctc_call(t, n, b, m)
    )
    for t in ("cpu", D)
    for n in ("cpu", D, "list")
    for b in (True, False)
    for m in (False, True)
}
HOST_CASES.update({f"packed lengths={n}": lambda n=n: _packed(n) for n in ("cpu", D)})
HOST_CASES["0-dim host scalars and host indices"] = _scalars_from_host


@pytest.mark.parametrize("name", sorted(HOST_CASES))
def test_arguments_a_gpu_takes_from_the_host_raise_no_device_error(gpu: None, name: str) -> None:
    total = HOST_CASES[name]()
    assert isinstance(total, EmulatedTensor) and total.device == torch.device("cuda", 0)
    total.backward()


def test_host_tensors_a_gpu_refuses_still_raise(gpu: None) -> None:
    x = torch.randn(3, 4, device=D)
    with pytest.raises(EmulatedDeviceError):
        x * torch.ones(4)  # a 1-dim host tensor is no scalar
    with pytest.raises(EmulatedDeviceError):
        F.embedding(torch.tensor([0, 1]), torch.randn(3, 2, device=D))
    log_probs = torch.randn(7, 2, 5, device=D).log_softmax(2)
    with pytest.raises(EmulatedDeviceError):  # lengths are the host's to read, not the weight
        F.nll_loss(log_probs[0], torch.tensor([1, 2], device=D), weight=torch.ones(5))
