"""Where a rank sits: torchrun's variables, Slurm's in their place, and the rank-fault grammar."""

from __future__ import annotations

import pytest
from conftest import RunGpudoc

from gpudoc.smoke import inject
from gpudoc.smoke.launch import LaunchError, first_host, from_environ

# What torchrun 2.13 set in a worker of `torchrun --standalone --nproc-per-node 2` (recorded).
TORCHRUN = {
    "RANK": "1",
    "LOCAL_RANK": "1",
    "WORLD_SIZE": "2",
    "GROUP_RANK": "0",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "none",
    "TORCHELASTIC_RESTART_COUNT": "0",
    "TORCHELASTIC_USE_AGENT_STORE": "True",
}
# Task 5 of `srun --nodes=2 --ntasks-per-node=4` (Slurm's documented output variables).
SRUN = {
    "SLURM_PROCID": "5",
    "SLURM_LOCALID": "1",
    "SLURM_NTASKS": "8",
    "SLURM_NODEID": "1",
    "SLURM_JOB_ID": "4242",
    "SLURM_STEP_NODELIST": "gpu[07-08]",
    "SLURM_JOB_NODELIST": "gpu[07-08]",
    "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.7",
}


def test_torchrun_variables_are_taken_as_they_are() -> None:
    env = from_environ(TORCHRUN)
    assert (env.rank, env.local_rank, env.world_size) == (1, 1, 2)
    assert (env.master_addr, env.master_port, env.launcher) == ("127.0.0.1", 29500, "torchrun")


def test_srun_maps_procid_localid_ntasks_and_the_first_node() -> None:
    env = from_environ(SRUN)
    assert (env.rank, env.local_rank, env.world_size, env.launcher) == (5, 1, 8, "srun")
    assert env.master_addr == "gpu07"
    assert env.master_port == 15000 + 4242  # derived from the job id: no clash between jobs
    assert env.variables()["RANK"] == "5" and env.variables()["MASTER_ADDR"] == "gpu07"


def test_torchrun_inside_srun_wins_and_user_settings_beat_slurm() -> None:
    assert from_environ({**SRUN, **TORCHRUN}).launcher == "torchrun"
    env = from_environ({**SRUN, "MASTER_ADDR": "head", "MASTER_PORT": "6000"})
    assert (env.master_addr, env.master_port) == ("head", 6000)


def test_srun_without_a_node_list_uses_the_launch_node() -> None:
    environ = {k: v for k, v in SRUN.items() if "NODELIST" not in k}
    assert from_environ(environ).master_addr == "10.0.0.7"


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [
        ("gpu07", "gpu07"),
        ("gpu07,gpu09", "gpu07"),
        ("gpu[07-12,20],cpu01", "gpu07"),
        ("gpu[3,5]", "gpu3"),
        ("rack[2-3]-node[001-004]", "rack2-node001"),
    ],
)
def test_first_host_of_a_slurm_host_list(nodelist: str, first: str) -> None:
    assert first_host(nodelist) == first


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "needs a launcher"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x'"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "outside a job of 2"),
    ],
)
def test_no_launcher_or_nonsense_is_a_usage_error(environ: dict[str, str], message: str) -> None:
    with pytest.raises(LaunchError, match=message):
        from_environ(environ)


def test_rank_faults_parse_with_an_optional_phase() -> None:
    faults = inject.parse("bitflip:rank=1@collectives,hang:rank=3,nan:2,crash:rank=2@start")
    assert faults == (
        inject.Fault("bitflip", 1, rank=True, phase="collectives"),
        inject.Fault("hang", 3, rank=True, phase="smoke"),
        inject.Fault("nan", 2),
        inject.Fault("crash", 2, rank=True, phase="start"),
    )
    environ = {inject.ENV: "bitflip:rank=1@collectives,nan:1"}
    assert inject.faults_for_rank(1, environ) == (faults[0],)
    assert inject.fault_for(1, environ) == inject.Fault("nan", 1)  # worker faults stay apart


@pytest.mark.parametrize(
    "spec", ["crash:rank=x", "crash:1@ddp", "crash:rank=1@train", "boom:rank=1"]
)
def test_bad_rank_faults_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=inject.ENV):
        inject.parse(spec)


@pytest.mark.parametrize(
    ("args", "inject_spec", "message"),
    [
        (["--distributed"], "", "--distributed needs a launcher: torchrun"),
        (["--distributed", "--device", "cuda:1"], "", "--device is cpu or cuda"),
        (["--distributed"], "crash:1", "with --distributed, name a fault as <fault>:rank=<r>"),
        (["--device", "cpu"], "crash:rank=1", "without --distributed, name a fault as"),
    ],
)
def test_distributed_usage_errors_exit_2_with_one_line(
    run_gpudoc: RunGpudoc, args: list[str], inject_spec: str, message: str
) -> None:
    done = run_gpudoc("smoke", *args, env={inject.ENV: inject_spec})
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""
