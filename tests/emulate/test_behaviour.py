"""What must behave as on a GPU (issue 8), checked in-process under emulated_cuda(2 devices)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from gpudoc.emulate.errors import EmulatedDeviceError, NotEmulatedError, NumpyOnDeviceError
from gpudoc.emulate.patches import emulated_cuda
from gpudoc.emulate.state import STATE
from gpudoc.emulate.tensor import EmulatedTensor


@pytest.fixture
def gpus() -> Iterator[None]:
    with emulated_cuda(device_count=2, batch_limit=None):
        yield


def test_torch_sees_the_devices(gpus: None) -> None:
    assert torch.cuda.is_available() and torch.cuda.device_count() == 2
    assert torch.cuda.get_device_name(1) == "NVIDIA A100-SXM4-80GB"
    assert torch.cuda.get_device_capability() == (8, 0)
    assert torch.cuda.get_device_properties(0).total_memory > 79 * 2**30
    with pytest.raises(EmulatedDeviceError, match="invalid device ordinal"):
        torch.zeros(1, device="cuda:2")


def test_the_devices_go_away_afterwards() -> None:
    with emulated_cuda(1):
        assert torch.cuda.is_available()
    assert not torch.cuda.is_available()
    assert torch.zeros(2).to is not None and not hasattr(torch.Tensor.to, "__wrapped__")
    with pytest.raises((AssertionError, RuntimeError)):
        torch.zeros(1, device="cuda")


def test_factories_and_moves(gpus: None) -> None:
    made = torch.ones(2, 3, device="cuda:1")
    moved = torch.ones(2, 3).to("cuda")
    assert made.device == torch.device("cuda:1") and moved.device == torch.device("cuda", 0)
    assert made.is_cuda and made.get_device() == 1 and made.type() == "torch.cuda.FloatTensor"
    assert torch.zeros_like(made).device.index == 1
    assert made.new_zeros(4).device.index == 1 and (made + 1).device.index == 1
    host = made.cpu()
    assert type(host) is torch.Tensor and host.device.type == "cpu"
    assert type(made.to("cpu")) is torch.Tensor
    assert moved.to(torch.float16).dtype == torch.float16 and moved.half().is_cuda
    assert torch.ones(2).cuda(1).device.index == 1


def test_a_move_is_a_copy(gpus: None) -> None:
    host = torch.zeros(3)
    device_copy = host.to("cuda")
    host += 1
    assert device_copy.sum().item() == 0.0


def test_mixing_devices_raises_the_gpu_error(gpus: None) -> None:
    on0, on1, host = torch.ones(3, device="cuda:0"), torch.ones(3, device="cuda:1"), torch.ones(3)
    with pytest.raises(RuntimeError, match=r"found at least two devices, cuda:0 and cuda:1!"):
        on0 + on1
    with pytest.raises(RuntimeError, match=r"found at least two devices, cuda:0 and cpu!"):
        host + on0
    assert (on0 * torch.tensor(2.0)).sum().item() == 6.0  # a CPU scalar is allowed, as on a GPU
    with pytest.raises(RuntimeError, match=r"got index is on cpu, .* wrapper_CUDA__index_select"):
        torch.index_select(on0, 0, torch.tensor([0, 1]))


def test_numpy_item_tolist(gpus: None) -> None:
    values = torch.arange(4, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        values.numpy()
    with pytest.raises(NumpyOnDeviceError):
        import numpy

        numpy.asarray(values)
    assert values.tolist() == [0, 1, 2, 3] and values[2].item() == 2 and int(values[3]) == 3
    assert values.cpu().numpy().tolist() == [0, 1, 2, 3]


class WithState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.register_buffer("scale", torch.ones(2))
        self.plain = torch.zeros(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale + self.plain


def test_module_to_moves_parameters_and_buffers_not_plain_attributes(gpus: None) -> None:
    model = WithState()
    weight = model.linear.weight
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    assert model.to("cuda") is model
    assert model.linear.weight is weight and isinstance(weight, nn.Parameter)
    assert weight.device.type == "cuda" and model.scale.device.type == "cuda"
    assert model.plain.device.type == "cpu"
    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        model(torch.ones(3, 4, device="cuda"))
    model.plain = model.plain.cuda()
    model(torch.ones(3, 4, device="cuda")).sum().backward()
    optimizer.step()
    assert weight.grad is not None and weight.grad.device.type == "cuda"
    assert all(v.device.type == "cuda" for v in optimizer.state[weight].values() if v.dim())
    assert all(v.device.type == "cuda" for v in model.state_dict().values())


def test_training_gives_real_values(gpus: None) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    inputs = torch.randn(64, 8)
    targets = inputs @ torch.linspace(-1, 1, 8).unsqueeze(1)
    reference = [p.detach().clone() for p in model.parameters()]
    model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs.cuda()), targets.cuda())
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8
    # the same step on the plain CPU gives the same numbers
    cpu_model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    with torch.no_grad():
        for param, value in zip(cpu_model.parameters(), reference, strict=True):
            param.copy_(value)
    cpu_loss = nn.functional.mse_loss(cpu_model(inputs), targets).item()
    assert cpu_loss == pytest.approx(losses[0], rel=1e-6)


def test_save_and_load_with_and_without_map_location(gpus: None, tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pth"
    model = nn.Linear(3, 2).to("cuda:1")
    torch.save({"model": model.state_dict(), "step": 3}, path)
    restored = torch.load(path)
    assert restored["step"] == 3 and restored["model"]["weight"].device == torch.device("cuda:1")
    assert torch.equal(restored["model"]["weight"].cpu(), model.weight.detach().cpu())
    on_host = torch.load(path, map_location="cpu")
    assert type(on_host["model"]["weight"]) is torch.Tensor
    moved = torch.load(path, map_location={"cuda:1": "cuda:0"})
    assert moved["model"]["bias"].device == torch.device("cuda:0")
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(restored["model"])  # copies device values into host parameters
    assert fresh.weight.device.type == "cpu" and torch.equal(
        fresh.weight, on_host["model"]["weight"]
    )


def test_a_saved_file_is_a_real_cuda_checkpoint(gpus: None, tmp_path: Path) -> None:
    path = tmp_path / "weights.pth"
    torch.save(torch.ones(2, device="cuda:1"), path)
    import zipfile

    with zipfile.ZipFile(path) as archive:
        pickled = next(name for name in archive.namelist() if name.endswith("data.pkl"))
        assert b"cuda:1" in archive.read(pickled)


def test_device_comparisons(gpus: None) -> None:
    tensor = torch.ones(1, device="cuda")
    assert tensor.device == torch.device("cuda:0") and tensor.device != torch.device("cuda")
    assert tensor.device.type == "cuda" and str(tensor.device) == "cuda:0"
    assert "device='cuda:0'" in repr(tensor)


def test_cuda_queries_streams_events(gpus: None) -> None:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    stream = torch.cuda.Stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record()
        kept = torch.ones(1024, 1024, device="cuda")
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    assert torch.cuda.memory_allocated() >= kept.numel() * 4
    free, total = torch.cuda.mem_get_info()
    assert 0 < free < total
    with torch.cuda.device(1):
        assert torch.cuda.current_device() == 1 and torch.ones(1, device="cuda").device.index == 1
    assert torch.cuda.current_device() == 0


def test_autocast_cuda_in_float32_is_silent_as_on_a_gpu(gpus: None) -> None:
    """CUDA autocast takes dtype=float32 without a word (nanoGPT --dtype=float32); CPU autocast,
    which runs underneath, would warn from gpudoc's frame and disable itself."""
    x = torch.ones(2, 2, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autocast("cuda", dtype=torch.float32):
            assert (x @ x).dtype == torch.float32
        with torch.amp.autocast("cuda", torch.float32, True):
            assert (x @ x).dtype == torch.float32
        with torch.autocast("cuda", dtype=torch.bfloat16):
            assert (x @ x).dtype == torch.bfloat16


def test_autocast_cuda_computes_in_half_precision(gpus: None) -> None:
    layer = nn.Linear(8, 8).cuda()
    with torch.autocast("cuda"):
        out = layer(torch.ones(2, 8, device="cuda"))
    assert out.dtype == torch.float16 and out.is_cuda
    assert torch.ones(1, device="cuda").to("cpu", copy=True).device.type == "cpu"
    assert torch.zeros_like(out, device="cpu").device.type == "cpu"
    scaler = torch.amp.GradScaler("cuda", init_scale=4.0)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    scaler.scale(out.float().sum()).backward()
    scaler.step(optimizer)
    scaler.update()


def test_dataloader_pin_memory_and_batch_cap(tmp_path: Path) -> None:
    data = torch.utils.data.TensorDataset(torch.randn(40, 3), torch.arange(40))
    with emulated_cuda(1, batch_limit=3):
        loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
        assert len(loader) == 3
        batches = [batch for batch in loader]
        assert len(batches) == 3 and batches[0][0].device.type == "cpu"
        assert batches[0][0].pin_memory().device.type == "cpu"
        assert STATE.batches_seen == 3 and STATE.loops_capped == 1


def test_custom_cuda_operator_stops_with_a_clear_message(gpus: None) -> None:
    library = torch.library.Library("gpudoc_test", "DEF")
    library.define("fused(Tensor x) -> Tensor")
    library.impl("fused", lambda x: x, "CUDA")
    with pytest.raises(NotEmulatedError, match=r"gpudoc_test.fused.default .* needs a real GPU"):
        torch.ops.gpudoc_test.fused(torch.ones(2, device="cuda"))


def test_the_wrapper_stays_a_cpu_tensor_underneath(gpus: None) -> None:
    tensor = torch.ones(2, device="cuda")
    assert isinstance(tensor, EmulatedTensor) and tensor._inner.device.type == "cpu"


def test_embedding_reports_the_kernel_that_checks(gpus: None) -> None:
    embedding = nn.Embedding(10, 3).cuda()
    with pytest.raises(RuntimeError) as raised:
        embedding(torch.tensor([1, 2]))
    assert str(raised.value) == (
        "Expected all tensors to be on the same device, but got index is on cpu, different from "
        "other tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)"
    )


def test_torch_compile_runs_eagerly(gpus: None) -> None:
    layer = nn.Linear(2, 2).cuda()
    assert torch.compile(layer) is layer
    assert STATE.phases["torch.compile skipped (eager)"] == 1


def test_indexing_a_device_tensor_with_host_indices_works(gpus: None) -> None:
    values = torch.arange(5, device="cuda")
    assert values[torch.tensor([0, 4])].tolist() == [0, 4]
    with pytest.raises(RuntimeError, match=r"indices should be either on cpu or on the same"):
        torch.arange(5)[torch.tensor([1], device="cuda")]


def test_to_another_tensor_takes_its_device_and_dtype(gpus: None) -> None:
    other = torch.ones(1, dtype=torch.float64, device="cuda:1")
    moved = torch.zeros(2).to(other)
    assert moved.device == torch.device("cuda:1") and moved.dtype == torch.float64


def test_data_parallel_over_two_devices(gpus: None) -> None:
    torch.manual_seed(0)
    model = nn.DataParallel(nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.randn(16, 3).cuda()
    losses = []
    for _ in range(10):
        loss = model(inputs).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert model(inputs).device == torch.device("cuda:0")
    misplaced = nn.DataParallel(nn.Linear(3, 2).to("cuda:1"), device_ids=[0, 1])
    with pytest.raises(RuntimeError, match=r"on device cuda:0 \(device_ids\[0\]\) but found"):
        misplaced(inputs)


def test_convolution_across_two_devices(gpus: None) -> None:
    conv = nn.Conv2d(3, 4, 3).to("cuda:0")
    with pytest.raises(RuntimeError) as raised:
        conv(torch.ones(1, 3, 8, 8, device="cuda:1"))
    assert str(raised.value) == (
        "Expected all tensors to be on the same device, but got weight is on cuda:0, different "
        "from other tensors on cuda:1 (when checking argument in method "
        "wrapper_CUDA__cudnn_convolution)"
    )


def test_legacy_typed_constructors(gpus: None) -> None:
    """``Tensor = torch.cuda.FloatTensor`` idioms of GAN scripts (issue 13, item 3)."""
    import numpy as np

    Tensor, LongTensor = torch.cuda.FloatTensor, torch.cuda.LongTensor
    valid = Tensor(4, 1).fill_(1.0)
    noise = Tensor(np.zeros((2, 3)))
    labels = LongTensor(np.array([1, 2]))
    host = torch.ones(2)
    assert valid.device == torch.device("cuda", 0) and valid.dtype == torch.float32
    assert noise.shape == (2, 3) and labels.dtype == torch.int64 and labels.is_cuda
    assert host.type(Tensor).is_cuda and host.type(Tensor).type() == "torch.cuda.FloatTensor"
    assert isinstance(valid, Tensor) and not isinstance(host, Tensor)
    assert not isinstance(labels, Tensor)
    assert valid.type(torch.FloatTensor).device.type == "cpu"


def test_cuda_generators_draw_and_a_gpus_generator_checks_hold(gpus: None) -> None:
    """``torch.Generator(device="cuda")`` exists (a CPU build refuses it), and a draw with a
    generator of another device type raises what a GPU raises."""
    generator = torch.Generator(device="cuda:1").manual_seed(0)
    assert generator.device == torch.device("cuda", 1) and generator.initial_seed() == 0
    assert isinstance(generator, torch.Generator) and isinstance(torch.Generator(), torch.Generator)
    assert torch.randn(2, device="cuda:1", generator=generator).device.index == 1
    assert torch.randperm(4, generator=torch.Generator()).device.type == "cpu"
    expects_cuda = r"Expected a 'cuda' device type for generator but found 'cpu'"
    with pytest.raises(EmulatedDeviceError, match=expects_cuda):
        torch.randn(2, device="cuda", generator=torch.Generator())
    with pytest.raises(EmulatedDeviceError, match=expects_cuda):
        torch.zeros(3, device="cuda").normal_(generator=torch.Generator())
    with pytest.raises(EmulatedDeviceError, match="Expected a 'cpu' device type for generator"):
        torch.randperm(4, generator=generator)  # what a DataLoader's sampler does


def test_a_cuda_default_device_places_what_torch_places(gpus: None) -> None:
    """``set_default_device("cuda")`` and ``with torch.device(...)``: the constructors torch
    gives the default device to make emulated tensors; ``*_like`` follow their input."""
    host = torch.ones(2)
    torch.set_default_device("cuda:1")
    try:
        assert torch.get_default_device() == torch.device("cuda", 1)
        assert torch.zeros(2).device.index == 1 and torch.tensor([1.0]).device.index == 1
        assert nn.Linear(2, 2).weight.device == torch.device("cuda", 1)
        assert torch.zeros_like(host).device.type == "cpu"
    finally:
        torch.set_default_device(None)
    assert torch.zeros(2).device.type == "cpu"
    with torch.device("cuda"):
        assert torch.ones(1).device == torch.device("cuda", 0)
    assert torch.ones(1).device.type == "cpu"


def test_a_default_device_the_script_left_behind_goes_with_the_emulation() -> None:
    with emulated_cuda(1):
        torch.set_default_device("cuda")
    assert torch.get_default_device().type == "cpu" and torch.zeros(1).device.type == "cpu"


def test_a_whole_rnn_reloads_onto_the_device(gpus: None, tmp_path: Path) -> None:
    """torch.load of a whole model with an LSTM (weak references to its weights), issue 13/2."""
    model = nn.LSTM(3, 4, 2, dropout=0.1).cuda()
    torch.save(model, tmp_path / "lstm.pt")
    loaded = torch.load(tmp_path / "lstm.pt", weights_only=False)
    assert all(p.is_cuda for p in loaded.parameters())
    assert loaded(torch.randn(5, 2, 3, device="cuda"))[0].is_cuda


def test_the_patches_leave_nothing_behind() -> None:
    """Attributes that did not exist (or lived on a base class) are removed again (issue 15)."""
    owners = (torch, torch.cuda, torch.Tensor, torch.nn.Module, torch.utils._device.DeviceContext)
    before = {owner: dict(vars(owner)) for owner in owners}
    with emulated_cuda(2):
        assert torch.cuda.FloatTensor(2).is_cuda
    for owner, attributes in before.items():
        assert set(vars(owner)) == set(attributes), owner
        changed = [name for name, value in vars(owner).items() if attributes[name] is not value]
        assert not changed, (owner, changed)


def test_a_child_narrowed_by_cuda_visible_devices_sees_its_gpus() -> None:
    from gpudoc.emulate.children import visible_devices

    assert visible_devices(None, 2) == [0, 1]
    assert visible_devices("1", 2) == [1]
    assert visible_devices("1,0", 2) == [1, 0]
    assert visible_devices("GPU-00000000-0000-0000-0000-000000000001", 2) == [1]
    assert visible_devices("0,5,1", 2) == [0]  # CUDA stops at the first invalid entry
    assert visible_devices("", 2) == []
