"""The multi-rank checks themselves, in one process: a gloo group of one rank is a real group."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from conftest import gpudoc_env

from gpudoc.smoke import collectives, inject, job_report
from gpudoc.smoke.data import load, normalise
from gpudoc.smoke.model import RECIPES
from gpudoc.smoke.net import build_net

RECIPE = RECIPES["default"]


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """As torchrun sets it per rank; two threads on a busy 2-core machine run 40x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture
def group_of_one() -> Iterator[None]:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_payloads_are_exact_in_any_summation_order() -> None:
    """Sums of the patterns of many ranks, in two orders, are bitwise the integer sums."""
    parts = [collectives.pattern(r, 4096, torch.device("cpu")) for r in range(300)]
    forward, backward = sum(parts), sum(reversed(parts))
    exact = sum(p.to(torch.int64) for p in parts)
    assert torch.equal(forward, backward) and torch.equal(forward.to(torch.int64), exact)


def test_a_spoiled_result_is_counted_element_by_element(group_of_one: None) -> None:
    clean = collectives.check_collectives(0, 1, torch.device("cpu"))
    assert (clean.all_reduce_wrong, clean.all_gather_wrong, clean.broadcast_wrong) == (0, 0, 0)
    flipped = collectives.check_collectives(
        0, 1, torch.device("cpu"), lambda t: inject.spoil("bitflip", t)
    )
    assert (flipped.all_reduce_wrong, flipped.all_gather_wrong, flipped.broadcast_wrong) == (
        1,
        1,
        1,
    )
    assert flipped.all_gather_wrong_from == {"0": 1}


def test_momentum_sgd_is_bitwise_torch_sgd() -> None:
    data = load(None)
    batches = collectives.global_batches(data, RECIPE, 0, 2, 5)

    def train(make: object) -> torch.Tensor:
        net = build_net(0)
        optimizer = make(net)  # type: ignore[operator]
        for batch in batches:
            optimizer.zero_grad()
            images = normalise(data.train_images[batch])
            F.cross_entropy(net(images), data.train_labels[batch]).backward()
            optimizer.step()
        return torch.cat([p.detach().reshape(-1) for p in net.parameters()])

    ours = train(lambda n: collectives.MomentumSGD(list(n.parameters()), RECIPE))
    torchs = train(lambda n: torch.optim.SGD(n.parameters(), lr=RECIPE.lr, momentum=0.9))
    assert torch.equal(ours, torchs)


def test_ddp_of_one_rank_matches_the_single_process_reference(group_of_one: None) -> None:
    data = load(None)
    net, losses = collectives.ddp_steps(data, RECIPE, 0, 0, 1, torch.device("cpu"))
    found = collectives.outcome(net, losses, collectives.reference(data, RECIPE, 0, 1))
    assert found.finite and found.rel_err_vs_reference is not None
    assert found.rel_err_vs_reference < 1e-6
    inject.spoil("bitflip", next(net.parameters()).data)
    spoiled = collectives.outcome(net, losses, collectives.reference(data, RECIPE, 0, 1))
    assert spoiled.fingerprint != found.fingerprint
    # bit 22 of one conv1 weight: 5.5e-5 measured, 5x the threshold; healthy runs give ~1e-8
    assert spoiled.rel_err_vs_reference is not None
    assert spoiled.rel_err_vs_reference > job_report.DDP_REL_ERR


@pytest.mark.slow
def test_a_stopped_rank_takes_its_device_smoke_down_with_it() -> None:
    """What a rank stopped by the launcher does to the child running its device smoke."""
    code = (
        "import subprocess, sys\n"
        "from gpudoc.smoke.liveness import kill_children as _kill_children\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "_kill_children()\n"
        "print(child.wait(timeout=10))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=gpudoc_env(), capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "-9", done.stderr
