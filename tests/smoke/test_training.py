"""The pieces a worker is made of, in-process on the CPU: data, lockstep, fingerprints, faults."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from gpudoc.console import make_console
from gpudoc.smoke import checks, inject, render
from gpudoc.smoke.data import Data, normalise, synthetic
from gpudoc.smoke.device import configure
from gpudoc.smoke.model import RECIPES
from gpudoc.smoke.net import Net, build_net
from gpudoc.smoke.train import compare_with_float64, fingerprint, round_trip, train


@pytest.fixture(scope="module")
def data() -> Iterator[Data]:
    """A worker's settings for this module only: other areas share this pytest process."""
    threads, precision = torch.get_num_threads(), torch.backends.fp32_precision
    configure(1)
    yield synthetic()
    torch.use_deterministic_algorithms(False)
    torch.backends.fp32_precision = precision
    torch.set_num_threads(threads)


def _nearest_mean_accuracy(data: Data, labels: torch.Tensor) -> float:
    train_x = normalise(data.train_images).flatten(1)
    means = torch.stack([train_x[labels == c].mean(0) for c in range(10)])
    predicted = torch.cdist(normalise(data.test_images).flatten(1), means).argmin(1)
    return float((predicted == data.test_labels).float().mean())


def test_synthetic_data_is_seeded_and_learnable(data: Data) -> None:
    """Unlike FakeData, labels depend on images: class means alone classify the held-out set;
    with the labels shuffled, the same method is at chance."""
    assert synthetic().sha256 == data.sha256
    assert data.train_images.dtype == torch.uint8 and data.train_images.shape[1:] == (3, 32, 32)
    assert _nearest_mean_accuracy(data, data.train_labels) > 0.9
    shuffled = data.train_labels[torch.randperm(len(data.train_labels))]
    assert _nearest_mean_accuracy(data, shuffled) < 0.2


def _tf32(tensor: torch.Tensor) -> torch.Tensor:
    """Round to TF32's 10-bit mantissa, as tensor-core convolutions do with their operands."""
    bits = tensor.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def test_lockstep_threshold_separates_ieee_fp32_from_tf32(data: Data) -> None:
    net = build_net(0)
    images, labels = normalise(data.train_images[:32]), data.train_labels[:32]
    logits = net(images)
    torch.nn.functional.cross_entropy(logits, labels).backward()
    ieee = compare_with_float64(0, net, images, labels, logits)
    assert ieee.logits_rel_err < checks.LOGITS_REL_ERR / 10
    assert ieee.grads_rel_err < checks.GRADS_REL_ERR / 10
    tf32_net = build_net(0)
    with torch.no_grad():
        for param in tf32_net.parameters():
            param.copy_(_tf32(param))
    tf32_logits = tf32_net(_tf32(images))
    reference = build_net(0)  # the float64 recompute sees the unrounded weights and images
    tf32 = compare_with_float64(0, reference, images, labels, tf32_logits.detach())
    assert tf32.logits_rel_err > checks.LOGITS_REL_ERR


def test_fingerprint_sees_one_flipped_bit_and_survives_save_load() -> None:
    net = build_net(0)
    before = fingerprint(net)
    assert fingerprint(round_trip(net, torch.device("cpu"))) == before
    flip = inject.hook(inject.Fault("bitflip", 0), at_step=3, announce=lambda kind, step: None)
    flip(2, net)
    assert fingerprint(net) == before  # not its step
    flip(3, net)
    assert fingerprint(net) != before
    assert torch.isfinite(net.fc1.weight).all()


def test_two_runs_are_bitwise_equal_and_a_nan_is_seen(data: Data) -> None:
    recipe = replace(RECIPES["default"], steps=12, lockstep_steps=(0, 10))
    first = train(data, recipe, 0, torch.device("cpu"))
    second = train(data, recipe, 0, torch.device("cpu"), lockstep=False)
    assert first.fingerprint == second.fingerprint
    assert [s.step for s in first.lockstep] == [0, 10] and second.lockstep == ()
    poison = inject.hook(inject.Fault("nan", 0), at_step=5, announce=lambda kind, step: None)
    poisoned = train(data, recipe, 0, torch.device("cpu"), poison, lockstep=False)
    assert not poisoned.params_finite
    assert checks.finite(poisoned.losses, poisoned.params_finite).verdict == "fail"


def test_reference_net_is_the_tutorials() -> None:
    shapes = {name: tuple(p.shape) for name, p in Net().named_parameters()}
    assert shapes == {
        "conv1.weight": (6, 3, 5, 5), "conv1.bias": (6,),
        "conv2.weight": (16, 6, 5, 5), "conv2.bias": (16,),
        "fc1.weight": (120, 400), "fc1.bias": (120,),
        "fc2.weight": (84, 120), "fc2.bias": (84,),
        "fc3.weight": (10, 84), "fc3.bias": (10,),
    }  # fmt: skip
    assert fingerprint(build_net(0)) == fingerprint(build_net(0)) != fingerprint(build_net(1))


def test_injection_spec_parsing() -> None:
    assert inject.parse("crash:0, nan:2") == (inject.Fault("crash", 0), inject.Fault("nan", 2))
    assert inject.fault_for(2, {inject.ENV: "crash:0,nan:2"}) == inject.Fault("nan", 2)
    assert inject.fault_for(1, {inject.ENV: "crash:0"}) is None
    for bad in ("melt:0", "nan", "nan:x", "nan:-1"):
        with pytest.raises(ValueError, match="expected <fault>:<worker-index>"):
            inject.parse(bad)


def test_live_progress_follows_worker_events() -> None:
    console = make_console(file=io.StringIO(), width=100, color=False)
    with render.LiveProgress(console, enabled=True) as live:
        live.on_event(0, {"event": "progress", "phase": "train B", "done": 150, "total": 300})
        live.on_event(1, {"event": "inject", "fault": "hang", "device": "cpu"})
        (first, second) = live.progress.tasks
        assert first.fields["phase"] == "train B 150/300"
        assert first.completed == pytest.approx(100 * 2.5 / 6)  # data, A, B, C, eval, speed
        assert second.fields["phase"] == "injecting hang" and second.fields["label"] == "1 cpu"
        live.on_event(1, {"event": "progress", "phase": "train C", "done": 30, "total": 300})
        assert second.fields["phase"] == "A≠B: re-run C 30/300"  # the re-run is visible
        assert second.completed == pytest.approx(100 * 3.1 / 6)
        live.on_event(0, {"event": "done", "status": "PASS"})
        assert first.completed == 100 and first.fields["phase"] == "PASS"


def test_a_device_error_is_a_failed_row_naming_its_phase(data: Data, tmp_path: Path) -> None:
    from gpudoc.smoke.model import SmokeConfig
    from gpudoc.smoke.worker import run_device

    missing = run_device(SmokeConfig(), "cuda:0")
    assert missing.status == "FAIL"
    assert (
        missing.reason
        == "error in start: RuntimeError: device cuda:0 not found (0 CUDA devices visible)"
    )
    broken = run_device(SmokeConfig(data_root=str(tmp_path)), "cpu")
    assert broken.status == "FAIL" and broken.reason is not None
    assert broken.reason.startswith("error in data: CifarError: no CIFAR-10 at")
    assert broken.info is not None and broken.info.kind == "cpu"


def test_functional_sgd_is_bitwise_torch_optim_sgd(data: Data) -> None:
    from gpudoc.smoke.train import SGD

    nets = [build_net(0), build_net(0)]
    optimizers = [
        torch.optim.SGD(nets[0].parameters(), lr=0.01, momentum=0.9),
        SGD(nets[1].parameters(), lr=0.01, momentum=0.9),
    ]
    for step in range(20):
        index = torch.arange(step * 32, (step + 1) * 32)
        images, labels = normalise(data.train_images[index]), data.train_labels[index]
        for net, optimizer in zip(nets, optimizers, strict=True):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(net(images), labels).backward()
            optimizer.step()
    assert fingerprint(nets[0]) == fingerprint(nets[1]) != fingerprint(build_net(0))
