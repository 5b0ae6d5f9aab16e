#!/usr/bin/env bash
# The checks to run when a machine with an NVIDIA GPU is lent (no CI machine has one): what
# `gpudoc info` and `gpudoc smoke` say there, the `gpu`-marked tests, the GPU side of the
# benchmarks. Uses the machine's own python3 and torch (whatever version it has), this checkout
# on PYTHONPATH, and nothing from the lint path (libcst need not be installed).
#
#     bash bench/gpu_checks.sh [OUTDIR]     # OUTDIR (default $OUT or /tmp/gpudoc-gpu): JSON reports
#
# Each step has its own time limit and prints its exit status; one failing step does not stop
# the others, so one run shows everything. The tests need gpudoc's test extras there (pytest,
# hypothesis, jsonschema): a machine without network takes them as wheels on PYTHONPATH.
set -u
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/gpudoc-gpu}}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 NO_COLOR=1 COLUMNS=140
py=${PYTHON:-python3}

step() {
    local limit=$1 name=$2
    shift 2
    echo "=== $name"
    local start=$SECONDS
    timeout "$limit" "$@"
    echo "=== $name: exit $? in $((SECONDS - start)) s"
}

step 30 versions "$py" -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__,
    'cuda', torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count())"
step 30 nvidia-smi nvidia-smi -L
step 60 "gpudoc info" "$py" -m gpudoc info
step 60 "gpudoc info --json" bash -c "'$py' -m gpudoc info --json > '$out/info.json'"
step 240 "gpudoc smoke --all-devices" "$py" -m gpudoc smoke --all-devices --json "$out/smoke.json"
step 120 "torchrun smoke --distributed (1 rank, NCCL)" \
    "$py" -m torch.distributed.run --standalone --nproc-per-node=1 -m gpudoc smoke --distributed --quick
step 360 "gpu-marked tests" "$py" -m pytest -p no:cacheprovider -n 0 -q -m gpu \
    tests/smoke/test_gpu.py tests/info/test_info_gpu.py
step 120 "bench/info_speed.py" "$py" bench/info_speed.py --runs 3
step 300 "bench/emulate_fidelity.py" "$py" bench/emulate_fidelity.py --json "$out/fidelity.json"
# The lint corpus's scripts on the GPU and under the emulator side by side, their labels
# checked on hardware (238 s on an H200 with 16 jobs, two threads each: 158 of 183 the same on
# 2026-11-28, which found four correct scripts the emulator failed).
step 300 "bench/emulate_fidelity.py fixtures/lint/realistic" env OMP_NUM_THREADS=2 "$py" \
    bench/emulate_fidelity.py --jobs 16 --timeout 30 --json "$out/corpus.json" \
    fixtures/lint/realistic
