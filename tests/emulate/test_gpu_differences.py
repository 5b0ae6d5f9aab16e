"""What an H200 did differently from the emulator on the lint corpus (2026-11-28: 158 of 183
scripts the same; bench/emulate_fidelity.py on fixtures/lint/realistic), checked in-process
under emulated_cuda: correct scripts that failed only under emulation, and a store the GPU took
that the emulator refused."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
import torch
import torch.nn as nn

from gpudoc.emulate.errors import needs_real_gpu
from gpudoc.emulate.patches import emulated_cuda


@pytest.fixture
def gpus() -> Iterator[None]:
    with emulated_cuda(device_count=2, batch_limit=None):
        yield


def test_a_meta_device_skeleton_is_built_and_placed_with_to_empty(gpus: None) -> None:
    # ok_device_context_loader.py: `with torch.device("meta"):`, then to_empty(device="cuda")
    with torch.device("meta"):
        skeleton = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    assert skeleton[0].weight.device.type == "meta"
    assert torch.zeros(2, device="meta").is_meta and torch.ones(2).to("meta").is_meta
    model = skeleton.to_empty(device="cuda")
    for parameter in model.parameters():
        nn.init.normal_(parameter, std=0.02)
    assert model(torch.randn(4, 8, device="cuda")).device == torch.device("cuda", 0)


@pytest.mark.parametrize("kind", ["torch.cuda.FloatTensor", "class"])
def test_a_cuda_default_tensor_type_makes_cuda_tensors(gpus: None, kind: str) -> None:
    # ok_default_device_after_loader.py: `torch.set_default_tensor_type("torch.cuda.FloatTensor")`
    chosen = kind if kind != "class" else torch.cuda.FloatTensor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # deprecated since PyTorch 2.1, still used
        torch.set_default_tensor_type(chosen)
        try:
            made = torch.ones(2, 3)
            assert made.device == torch.device("cuda", 0) and made.dtype == torch.float32
        finally:
            torch.set_default_tensor_type(torch.FloatTensor)
    assert torch.ones(2).device.type == "cpu"


def test_a_host_tensor_takes_a_store_at_device_indices(gpus: None) -> None:
    # bug_store_device_index.py: index_put_ moves its indices to the tensor's device, as ATen's
    # make_info does; the H200 ran `onehot[rows, labels] = 0.9` and failed only later
    labels = torch.randint(0, 10, (16,)).to("cuda")
    onehot = torch.full((16, 10), 0.01)
    onehot[torch.arange(16), labels] = 0.9
    assert onehot.device.type == "cpu" and int((onehot == 0.9).sum()) == 16
    # reading at device indices is refused, and so is a device value stored
    with pytest.raises(RuntimeError, match="indices should be either on cpu"):
        onehot[labels]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        onehot.index_put_((labels, labels), torch.ones(16, device="cuda"), accumulate=True)


def test_data_parallel_scatters_host_inputs(gpus: None) -> None:
    # ok_dataparallel_host_inputs.py: the batch stays on the host, DataParallel scatters it
    model = nn.DataParallel(nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))).cuda()
    output = model(torch.randn(16, 3))
    assert output.device == torch.device("cuda", 0) and output.shape == (16, 2)
    nn.functional.cross_entropy(output, torch.zeros(16, dtype=torch.long).cuda()).backward()


def test_an_nccl_group_without_a_backend_for_emulated_tensors_needs_a_real_gpu() -> None:
    # a CUDA build with NCCL joins the group; the first collective on emulated tensors fails so
    child = RuntimeError("No backend type associated with device type cpu")
    assert needs_real_gpu(child) == "NCCL collectives (torch.distributed with the nccl backend)"
    assert needs_real_gpu(RuntimeError("Expected all tensors to be on the same device")) is None


def test_type_as_lands_on_the_other_tensors_device(gpus: None) -> None:
    # ok_lightning_module.py: `prior = torch.randn(8, z).type_as(x)` in a LightningModule's step
    batch = torch.ones(8, 4, device="cuda:1")
    prior = torch.randn(8, 4).type_as(batch)
    assert prior.device == torch.device("cuda", 1) and prior.dtype == torch.float32
    assert (prior + batch).device == torch.device("cuda", 1)
    back = batch.type_as(torch.zeros(1, dtype=torch.float64))
    assert back.device.type == "cpu" and back.dtype == torch.float64
    same = torch.ones(2).type_as(torch.zeros(2, dtype=torch.int64))
    assert same.device.type == "cpu" and same.dtype == torch.int64


def test_recurrent_layers_check_their_hidden_state_and_weights_as_aten_does(gpus: None) -> None:
    # bug_loop_hidden_state.py, bug_discarded_move.py: the H200's messages, at the layer's call
    lstm, gru = nn.LSTM(4, 8).cuda(), nn.GRU(4, 8).cuda()
    batch = torch.randn(5, 2, 4, device="cuda")
    host_state = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
    with pytest.raises(RuntimeError) as raised:
        lstm(batch, host_state)
    assert str(raised.value) == (
        "Input and hidden tensors are not at the same device, found input tensor at cuda:0 "
        "and hidden tensor at cpu"
    )
    with pytest.raises(RuntimeError) as raised:
        gru(torch.randn(5, 2, 4))
    assert str(raised.value) == (
        "Input and parameter tensors are not at the same device, found input tensor at cpu "
        "and parameter tensor at cuda:0"
    )
    output, _ = lstm(batch)  # its own zero state, on the input's device
    assert output.device == torch.device("cuda", 0)


def test_the_cuda_kernels_own_checks_name_themselves(gpus: None) -> None:
    # bug_zeros_in_helper_forward.py (masked_fill) and bug_module_in_forward.py (batch norm)
    scores = torch.randn(4, device="cuda")
    with pytest.raises(RuntimeError) as raised:
        scores.masked_fill(torch.tensor([True, False, True, False]), 0.0)
    assert str(raised.value) == (
        "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0"
    )
    with pytest.raises(RuntimeError, match=r"in method wrapper_CUDA__cudnn_batch_norm\)$"):
        nn.BatchNorm2d(3)(torch.randn(2, 3, 4, 4, device="cuda"))


def test_each_device_has_a_default_generator_whose_state_round_trips(gpus: None) -> None:
    # ok_lightning_module.py on an H200 (2026-11-28 rerun): Lightning's isolate_rng saves
    # torch.cuda.get_rng_state_all() before its sanity check; torch's own function read an empty
    # torch.cuda.default_generators there and raised "tuple index out of range"
    torch.manual_seed(7)  # seeds every CUDA device too, as on a GPU
    states = torch.cuda.get_rng_state_all()
    assert [s.dtype for s in states] == [torch.uint8] * 2 and [s.numel() for s in states] == [
        16
    ] * 2
    assert int.from_bytes(bytes(states[1][:8].tolist()), "little") == 7
    assert torch.cuda.initial_seed() == 7
    assert [g.device for g in torch.cuda.default_generators] == [
        torch.device("cuda", 0),
        torch.device("cuda", 1),
    ]
    resumed = torch.tensor(list((11).to_bytes(8, "little") + (4096).to_bytes(8, "little")))
    torch.cuda.set_rng_state(resumed.to(torch.uint8), device=1)  # a checkpoint's saved state
    assert torch.equal(torch.cuda.random.get_rng_state(1), resumed.to(torch.uint8))
    assert torch.equal(torch.cuda.get_rng_state(0), states[0])  # the other device kept its own
    torch.cuda.set_rng_state_all(states)
    assert all(
        torch.equal(a, b) for a, b in zip(torch.cuda.get_rng_state_all(), states, strict=True)
    )
    with torch.random.fork_rng(devices=[0, 1], device_type="cuda"):
        torch.cuda.manual_seed_all(3)
        assert torch.cuda.initial_seed() == 3
    assert torch.cuda.initial_seed() == 7


def test_a_state_a_gpu_refuses_is_refused(gpus: None) -> None:
    # CUDAGeneratorImpl::set_state: a CPU ByteTensor of 16 (or 8) bytes, nothing else
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        torch.cuda.set_rng_state(torch.get_rng_state())  # the CPU generator's state
    with pytest.raises(TypeError, match=r"RNG state must be a torch\.ByteTensor"):
        torch.cuda.set_rng_state(torch.cuda.get_rng_state().to("cuda"))
    with pytest.raises(IndexError):
        torch.cuda.get_rng_state(2)


def test_the_default_generators_go_with_the_emulation() -> None:
    real = torch.cuda.default_generators
    with emulated_cuda(device_count=3, batch_limit=None):
        assert len(torch.cuda.default_generators) == 3
    assert torch.cuda.default_generators is real


def test_an_lstm_cell_with_a_host_state_fails_as_the_gpu_says(gpus: None) -> None:
    # bug_factory_in_forward.py on an H200: the cell's CUDA path runs mm(h, w_hh.t()), whose
    # check names w_hh as mat2; the CPU build runs addmm and named the host state mat1
    cell = nn.LSTMCell(4, 8).cuda()
    x = torch.randn(3, 4, device="cuda")
    on_device, on_host = torch.zeros(3, 8, device="cuda"), torch.zeros(3, 8)
    expected = (
        "but got mat2 is on cuda:0, different from other tensors on cpu "
        r"\(when checking argument in method wrapper_CUDA_mm\)"
    )
    with pytest.raises(RuntimeError, match=expected):
        cell(x, (on_host, on_device))
    # the cell state meets the fused kernel's own check
    with pytest.raises(
        RuntimeError, match=r"got cx is on cpu.*wrapper_CUDA___thnn_fused_lstm_cell"
    ):
        cell(x, (on_device, on_host))
    assert cell(x, (on_device, on_device))[0].device == torch.device("cuda", 0)
    assert cell(x)[1].device == torch.device("cuda", 0)  # no state: made on the input's device


def test_a_gru_cell_with_a_host_state_fails_as_the_gpu_says(gpus: None) -> None:
    cell = nn.GRUCell(4, 8).cuda()
    x = torch.randn(3, 4, device="cuda")
    with pytest.raises(RuntimeError, match="but got mat2 is on cuda:0, different from other"):
        cell(x, torch.zeros(3, 8))
    assert cell(x, torch.zeros(3, 8, device="cuda")).device == torch.device("cuda", 0)
