"""The tutorial-shaped fixture scripts, run through the real CLI.

The fixture scripts, and the small scripts the tests write, run in one interpreter
(batch_runner.py: one torch import instead of two dozen); one of them also runs in a process of
its own, and its report must be the same. Only what one interpreter cannot share runs alone:
spawned and forked workers, a module run from its own folder, a script's own failing load.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO, RunGpudoc, emulate_batch, stretch

FIXTURES = REPO / "fixtures" / "emulate"
Emulated = dict[tuple[str, ...], tuple[int, str, str]]


def _line_of(script: str, text: str) -> int:
    """The last line of the script that is exactly this statement (docstrings quote some)."""
    lines = (FIXTURES / script).read_text().splitlines()
    return [number for number, line in enumerate(lines, 1) if line.strip() == text][-1]


BUGS = [
    (
        "discarded_to.py",
        (),
        "Expected all tensors to be on the same device, but got mat1 is on cpu, different "
        "from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
        "outputs = net(inputs)",
        "lint     GPD103 discarded-tensor-move",
    ),
    (
        "numpy_on_device.py",
        (),
        "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to "
        "copy the tensor to host memory first.",
        "all_predictions.append(predicted.numpy())",
        "lint     GPD202 numpy-on-device-tensor",
    ),
    (
        "buffer_attribute.py",
        (),
        "Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!",
        "x = (x - self.mean) / self.std",
        "lint     GPD105 tensor-attribute-not-buffer",
    ),
    (
        "loss_weight.py",
        (),
        "Expected all tensors to be on the same device, but got weight is on cpu, different "
        "from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA_nll_loss_forward)",
        "loss = criterion(outputs, labels)",
        "lint     GPD107 loss-weight-on-host",
    ),
    (
        "factory_in_forward.py",
        (),
        "Expected all tensors to be on the same device, but got mat1 is on cpu, different "
        "from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
        "h = torch.tanh(self.input_to_hidden(sequence[:, step]) + self.hidden_to_hidden(h))",
        "lint     GPD106 factory-without-device",
    ),
    (
        "modules_in_list.py",
        (),
        "Expected all tensors to be on the same device, but got mat1 is on cuda:0, different "
        "from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)",
        "x = torch.relu(layer(x))",
        "lint     GPD104 modules-in-plain-container",
    ),
    (
        "resumed_optimizer.py",
        (),
        "Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!",
        "optimizer.step()",
        "lint     GPD302 optimizer-state-before-placement",
    ),
    (
        "two_devices.py",
        ("--devices", "2"),
        "Expected all tensors to be on the same device, but got target is on cuda:1, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA_nll_loss_forward)",
        "loss = criterion(outputs, labels)",
        "pattern  tensors on two different GPUs meet in one operation",
    ),
]
TUTORIALS = (
    ("--batches", "2", "fixtures/emulate/tutorial_buggy.py"),
    ("--batches", "3", "fixtures/emulate/tutorial_fixed.py"),
    ("--batches", "2", "fixtures/emulate/tutorial_as_printed.py"),
    ("--batches", "2", "fixtures/emulate/tutorial_reloaded_net.py"),
)
CORRECT_REAL_SHAPED = (
    "transformer_causal.py",
    "lstm_lm_reload.py",
    "gan_legacy_tensor.py",
    "lbfgs_closure.py",
    "default_device_loader.py",
)
BUGGY_REAL_SHAPED = [
    (
        "transformer_mask_on_host.py",
        "found at least two devices, cuda:0 and cpu!",
        "x = self.encoder(self.embed(tokens), mask=mask, src_key_padding_mask=padding)",
        "pattern  ",
    ),
    (
        "lbfgs_closure_target_on_host.py",
        "found at least two devices, cuda:0 and cpu!",
        "loss = criterion(model(inputs), target)",
        "pattern  a tensor created on the host (no device=)",
    ),
    (
        "head_replaced.py",
        "but got mat1 is on cuda:0, different from other tensors on cpu",
        "return self.fc(torch.flatten(self.features(x), 1))",
        "pattern  a submodule assigned after model.to()",
    ),
    (
        "default_device_shuffle.py",
        "Expected a 'cuda' device type for generator but found 'cpu'",
        "for inputs, labels in loader:",
        "pattern  DataLoader(shuffle=True) under a CUDA default device",
    ),
    (
        "generator_on_device.py",
        "Expected a 'cpu' device type for generator but found 'cuda'",
        "for inputs, labels in loader:",
        "pattern  a random generator on another device than the tensors it draws",
    ),
]
BATCH = (
    TUTORIALS
    + tuple((*args, "--batches", "2", f"fixtures/emulate/{script}") for script, args, *_ in BUGS)
    + tuple(
        (f"fixtures/emulate/{script}",)
        for script in (*CORRECT_REAL_SHAPED, *(script for script, *_ in BUGGY_REAL_SHAPED))
    )
)


WRITTEN = {
    "interrupted.py": (
        "import torch\n"
        "x = torch.ones(3, device='cuda')\n"
        "try:\n"
        "    y = x + torch.ones(3)\n"
        "except KeyboardInterrupt:\n"
        "    print('stopped')\n"
    ),
    "mps.py": "import torch\n\nx = torch.ones(3, device='mps')\n",
    "broken.py": "import torch\n\ndef f():\n    raise ValueError('boom')\n\nf()\n",
    "exits.py": (
        "import sys, torch\n"
        "print('args', sys.argv[1:], torch.cuda.device_count())\n"
        "sys.exit(int(sys.argv[1]))\n"
    ),
    "used_copy.py": (
        "import torch\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "net = torch.nn.Linear(4, 3).to('cuda')\n"
        "data = TensorDataset(torch.randn(2, 4), torch.tensor([0, 1]))\n"
        "for images, labels in DataLoader(data, batch_size=2):\n"
        "    outputs = net(images.to('cuda'))\n"
        "    loss = torch.nn.functional.cross_entropy(outputs, labels.to('cuda'))\n"
        "    correct = (outputs.argmax(1) == labels).sum()\n"
    ),
    "ddp.py": (
        "import os, torch.distributed as dist\n"
        "os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='29533')\n"
        "dist.init_process_group('nccl', rank=0, world_size=1)\n"
    ),
}
"""Scripts of the tests below, written to a folder of their own: they run in the batch too, after
the fixture scripts, so what one leaves in the interpreter (ddp.py's environment variables, last)
reaches no fixture script's run."""


def _written(folder: Path, name: str) -> tuple[str, ...]:
    """The command line that runs the written script ``name``."""
    if name == "exits.py":
        return ("--devices", "3", "--", str(folder / name), "7", "x")
    return (str(folder / name),)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("written")
    for name, text in WRITTEN.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def emulated(written: Path) -> Emulated:
    """Every command line of BATCH and of the WRITTEN scripts, run once in one interpreter:
    (exit status, stdout, stderr)."""
    batch = BATCH + tuple(_written(written, name) for name in WRITTEN)
    return dict(zip(batch, emulate_batch(batch, REPO), strict=True))


def _emulate(emulated: Emulated, *args: str) -> tuple[int, str, str]:
    return emulated[args]


@pytest.mark.slow
def test_a_run_in_its_own_process_reports_what_the_batch_reports(
    run_gpudoc: RunGpudoc, emulated: Emulated
) -> None:
    args = TUTORIALS[0]
    alone = run_gpudoc("run", "--emulate-cuda", *args, cwd=REPO)
    code, out, err = emulated[args]
    assert (alone.returncode, alone.stderr) == (code, err)
    assert alone.stdout == out == "Finished Training\n"


@pytest.mark.slow
def test_buggy_tutorial_fails_at_the_evaluation_line_with_the_gpu_error(
    emulated: Emulated,
) -> None:
    code, out, err = _emulate(emulated, "--batches", "2", "fixtures/emulate/tutorial_buggy.py")
    assert code == 1, err
    assert "Finished Training" in out  # the script's own output passes through, up to the bug
    assert (
        "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) "
        "should be the same or input should be a MKLDNN tensor and weight is a dense tensor"
    ) in err
    line = _line_of("tutorial_buggy.py", "outputs = net(images)")
    assert f"called from fixtures/emulate/tutorial_buggy.py:{line} in <module>" in err
    loop = _line_of("tutorial_buggy.py", "for data in testloader:")
    assert (
        f"loaded by a DataLoader (on the host) at fixtures/emulate/tutorial_buggy.py:{loop}" in err
    )
    moved = _line_of("tutorial_buggy.py", "net.to(device)")
    assert f"moved to cuda:0 at fixtures/emulate/tutorial_buggy.py:{moved} `net.to(device)`" in err
    assert "net.conv1.weight = self.conv1.weight" in err
    assert "lint     GPD101 unmoved-input" in err


@pytest.mark.slow
def test_fixed_tutorial_passes_every_phase(emulated: Emulated) -> None:
    code, out, err = _emulate(emulated, "--batches", "3", "fixtures/emulate/tutorial_fixed.py")
    assert code == 0, err
    assert "device: cuda:0" in out and "Accuracy of the network" in out
    assert "no device errors" in err
    for phase in ("forward (training)", "backward", "optimizer step", "checkpoint saved"):
        assert phase in err
    assert "checkpoint loaded" in err
    evaluation = next(line for line in err.splitlines() if "forward (evaluation)" in line)
    assert "on cuda:0" in evaluation
    # 2 epochs x 3 batches of training, then 2 evaluation loops of 3 batches each
    assert "12 batches from DataLoaders (capped at 3 batches; 4 loops cut short)" in err


@pytest.mark.slow
def test_tutorial_as_printed_runs_but_evaluates_on_the_cpu(emulated: Emulated) -> None:
    code, _out, err = _emulate(
        emulated, "--batches", "2", "fixtures/emulate/tutorial_as_printed.py"
    )
    assert code == 0, err
    training = next(line for line in err.splitlines() if "forward (training)" in line)
    evaluation = next(line for line in err.splitlines() if "forward (evaluation)" in line)
    assert "on cuda:0" in training and "on cpu" in evaluation
    assert "note: forward (evaluation) ran on cpu while other passes ran on cuda:0" in err


@pytest.mark.slow
def test_reloaded_net_never_moved(emulated: Emulated) -> None:
    code, _out, err = _emulate(
        emulated, "--batches", "2", "fixtures/emulate/tutorial_reloaded_net.py"
    )
    assert code == 1
    # The whole line, as an H200 printed it (bench/emulate_fidelity.py): a device input meets
    # cuDNN's check, which says nothing of MKLDNN.
    assert (
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) "
        "should be the same\n"
    ) in err
    created = _line_of("tutorial_reloaded_net.py", "net = Net()")
    assert f"created on the host at fixtures/emulate/tutorial_reloaded_net.py:{created}" in err
    assert "(net was never moved to a device)" in err
    assert "lint     GPD102 unmoved-module" in err


@pytest.mark.slow
@pytest.mark.parametrize(("script", "args", "message", "line_text", "rule"), BUGS)
def test_bug_scripts_fail_at_their_line(
    emulated: Emulated,
    script: str,
    args: tuple[str, ...],
    message: str,
    line_text: str,
    rule: str,
) -> None:
    code, _out, err = _emulate(emulated, *args, "--batches", "2", f"fixtures/emulate/{script}")
    assert code == 1, err
    assert message in err
    line = _line_of(script, line_text)
    assert f"fixtures/emulate/{script}:{line} in " in err
    assert line_text in err
    assert rule in err


@pytest.mark.slow
def test_cuda_in_a_dataloader_worker(run_gpudoc: RunGpudoc) -> None:
    # A process of its own: its DataLoader workers fork the interpreter.
    done = run_gpudoc("run", "--emulate-cuda", "fixtures/emulate/cuda_in_worker.py", cwd=REPO)
    code, err = done.returncode, done.stderr
    assert code == 1
    assert "RuntimeError: Caught RuntimeError in DataLoader worker process" in err
    assert (
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
        "multiprocessing, you must use the 'spawn' start method"
    ) in err
    line = _line_of("cuda_in_worker.py", "return self.samples[index].to(device)")
    assert f"at fixtures/emulate/cuda_in_worker.py:{line} in __getitem__" in err
    assert "gpudoc/emulate" not in err
    assert "lint     GPD204 cuda-in-dataset-worker" in err


def test_lint_names_the_same_rule_without_running(run_gpudoc: RunGpudoc) -> None:
    """gpudoc lint and the emulated run agree on each bug fixture that has a lint rule."""
    expected = {
        "tutorial_buggy.py": ("GPD101", "outputs = net(images)"),
        "tutorial_reloaded_net.py": ("GPD102", "net = Net()"),
        "discarded_to.py": ("GPD103", "inputs.to(device)"),
        "modules_in_list.py": (
            "GPD104",
            "self.layers = [nn.Linear(width, width) for _ in range(depth)]",
        ),
        "buffer_attribute.py": (
            "GPD105",
            "self.mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(3, 1, 1)",
        ),
        "factory_in_forward.py": ("GPD106", "h = torch.zeros(sequence.size(0), self.hidden)"),
        "loss_weight.py": ("GPD107", "criterion = nn.CrossEntropyLoss(weight=class_weights)"),
        "numpy_on_device.py": ("GPD202", "all_predictions.append(predicted.numpy())"),
        "cuda_in_worker.py": ("GPD204", "return self.samples[index].to(device)"),
        "resumed_optimizer.py": ("GPD302", 'optimizer.load_state_dict(state["optimizer"])'),
    }
    result = run_gpudoc("lint", *(f"fixtures/emulate/{name}" for name in expected), cwd=REPO)
    for name, (code, line) in expected.items():
        number = _line_of(name, line)
        assert re.search(rf"fixtures/emulate/{name}:{number}:\d+: {code} ", result.stdout), name


@pytest.mark.slow
def test_a_script_that_needs_nccl_stops_with_a_clear_message(
    emulated: Emulated, written: Path
) -> None:
    code, _out, err = emulated[_written(written, "ddp.py")]
    assert code == 2
    assert "stopped: cannot emulate NCCL collectives" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_scripts_exit_status_and_arguments_pass_through(
    emulated: Emulated, written: Path
) -> None:
    code, out, err = emulated[_written(written, "exits.py")]
    assert code == 7
    assert "args ['7', 'x'] 3" in out
    assert "the script exited with 7" in err


@pytest.mark.slow
def test_a_module_runs_with_dash_m(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(
        "import torch\nx = torch.ones(2, device='cuda')\nprint('on', x.device, x.is_cuda)\n"
    )
    result = run_gpudoc("run", "--emulate-cuda", "-m", "pkg.train", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "on cuda:0 True" in result.stdout
    missing = run_gpudoc("run", "--emulate-cuda", "-m", "pkg.nothing", cwd=tmp_path)
    assert missing.returncode == 2
    assert "cannot find module 'pkg.nothing'" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_an_ordinary_exception_keeps_its_traceback(emulated: Emulated, written: Path) -> None:
    code, _out, err = emulated[_written(written, "broken.py")]
    assert code == 1
    assert 'broken.py", line 4, in f' in err and "ValueError: boom" in err
    assert "gpudoc/emulate" not in err.split("ValueError")[0]


@pytest.mark.slow
def test_a_copy_used_inline_is_no_discarded_move(emulated: Emulated, written: Path) -> None:
    """Flower's evaluation: `labels.to(DEVICE)` written inside the loss call, then `labels`
    compared with the predictions: the labels were left on the host (GPD101), nothing was
    discarded (GPD103 is for `labels.to(DEVICE)` as a statement of its own)."""
    code, _out, err = emulated[_written(written, "used_copy.py")]
    assert code == 1
    assert "used_copy.py:8" in err
    assert "lint     GPD101" in err and "GPD103" not in err
    assert "used_copy.py:7 was used there" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "x.py"), "needs --emulate-cuda"),
        (("run", "--emulate-cuda", "missing.py"), "cannot open script 'missing.py'"),
        (("run", "--emulate-cuda", "--devices", "0", "x.py"), "--devices must be at least 1"),
        (("run", "--emulate-cuda"), "give a script to run"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    run_gpudoc: RunGpudoc, args: tuple[str, ...], message: str
) -> None:
    result = run_gpudoc(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_readme_sample_is_what_the_emulator_prints(emulated: Emulated) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = "$ gpudoc run --emulate-cuda --batches 2 tutorial_buggy.py\n"
    sample = readme.split(command, 1)[1].split("```", 1)[0]
    code, out, err = emulated[TUTORIALS[0]]  # run from the repository, so paths differ
    assert code == 1
    assert sample == (out + err).replace("fixtures/emulate/", "")


def _emulate_alone(run_gpudoc: RunGpudoc, *args: str) -> tuple[int, str, str]:
    """One script in its own gpudoc process (what the batch runner cannot share: spawned
    workers, a script's own failing load)."""
    # A generous limit: these train small models on a CPU that other jobs share (load 10+).
    result = run_gpudoc("run", "--emulate-cuda", *args, cwd=REPO, timeout=stretch(450))
    return result.returncode, result.stdout, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("script", CORRECT_REAL_SHAPED)
def test_correct_real_shaped_scripts_run_clean(emulated: Emulated, script: str) -> None:
    """Causal masks and dropout in composites, an LSTM reloaded whole, legacy constructors,
    LBFGS closures: correct on a GPU, so clean here (issue 13, items 1 to 3)."""
    code, _out, err = _emulate(emulated, f"fixtures/emulate/{script}")
    assert code == 0, err
    assert "no device errors" in err and "Traceback" not in err
    assert "cuDNN" not in err  # the CPU build's warning on an RNN's CUDA weights is not shown
    counts = {
        name: int(count)
        for name, count in re.findall(r"^    (forward \(training\)|backward)\s+(\d+)", err, re.M)
    }
    assert 0 < counts["backward"] <= counts["forward (training)"]  # each backward() counted once


@pytest.mark.slow
@pytest.mark.parametrize(("script", "message", "line_text", "pattern"), BUGGY_REAL_SHAPED)
def test_buggy_real_shaped_scripts_fail_at_their_line(
    emulated: Emulated, script: str, message: str, line_text: str, pattern: str
) -> None:
    code, _out, err = _emulate(emulated, f"fixtures/emulate/{script}")
    assert code == 1, err
    assert message in err and pattern in err
    assert f"at fixtures/emulate/{script}:{_line_of(script, line_text)} in " in err
    assert "GPD302" not in err and "was never moved" not in err


@pytest.mark.slow  # reads the batch
def test_the_users_line_in_a_try_block_is_the_failing_one(
    emulated: Emulated, written: Path
) -> None:
    code, _out, err = emulated[_written(written, "interrupted.py")]
    assert code == 1
    assert "interrupted.py:4 in <module>" in err
    assert "y = x + torch.ones(3)" in err


@pytest.mark.slow  # reads the batch
def test_what_cannot_be_emulated_is_named_with_the_users_line(
    emulated: Emulated, written: Path
) -> None:
    code, _out, err = emulated[_written(written, "mps.py")]
    assert code == 2
    assert "cannot emulate device 'mps'" in err
    assert f"called at {written / 'mps.py'}:3: x = torch.ones(3, device='mps')" in err


@pytest.mark.slow
def test_spawned_workers_and_subprocesses_inherit_the_devices(run_gpudoc: RunGpudoc) -> None:
    """mp.spawn workers and a Python subprocess see the same 2 GPUs (issue 13, item 7)."""
    code, out, err = _emulate_alone(
        run_gpudoc, "--devices", "2", "fixtures/emulate/spawn_workers.py"
    )
    assert code == 0, err
    assert "rank 0/2 on cuda:0: NVIDIA A100-SXM4-80GB" in out
    assert "rank 1/2 on cuda:1: NVIDIA A100-SXM4-80GB" in out
    assert "child sees 2 GPUs" in out


@pytest.mark.slow
def test_a_device_error_in_a_spawned_worker_is_found_at_its_line(run_gpudoc: RunGpudoc) -> None:
    script = "spawn_workers_wrong_device.py"
    code, _out, err = _emulate_alone(run_gpudoc, "--devices", "2", f"fixtures/emulate/{script}")
    assert code == 1, err
    assert "device error" in err and "-- Process 1 terminated with the following error" in err
    assert "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on " in err
    line = _line_of(script, "loss = model(inputs).pow(2).mean()")
    assert f"at fixtures/emulate/{script}:{line} in worker" in err
    assert "gpudoc.emulate" not in err


def test_the_scripts_own_failing_load_shows_no_gpudoc_frame(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    script = tmp_path / "reload.py"
    script.write_text(
        "import torch\n"
        "class Box:\n"
        "    pass\n"
        "torch.save(Box(), 'odd.pt')\n"
        "state = torch.load('odd.pt')\n"
    )
    result = run_gpudoc("run", "--emulate-cuda", str(script), cwd=tmp_path, timeout=900)
    assert result.returncode == 1
    assert "Weights only load failed" in result.stderr
    assert 'reload.py", line 5, in <module>' in result.stderr
    assert "gpudoc" not in result.stderr.split("gpudoc run --emulate-cuda:")[0]
    assert "checkpoint loaded" not in result.stderr and "checkpoint saved" in result.stderr
