"""Thresholds and verdicts: pure functions from measured numbers to ``CheckResult``.

Thresholds come from the measurements in the design notes (§2.2, §2.5); each is several times
looser than the worst healthy value measured, and far tighter than what a fault produces.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gpudoc.smoke.model import CheckResult

# IEEE fp32 against a float64 recompute of the same step: measured <= 2.6e-7 (logits) and
# <= 1.1e-5 (gradients, late in training) on CPUs. On a GPU the gradients are looser: with
# deterministic algorithms (which the bitwise checks need) cuDNN computes the 5x5 weight
# gradient with a Winograd algorithm, 2.2e-4 to 3.4e-4 on an H100 (torch 2.11, cuDNN 9.19;
# conv1.weight alone 2e-3), 2e-7 with cuDNN off. TF32 gives 1.5e-4 and more on the logits, so
# the logits bound is the one that tells TF32 from true fp32; the gradient bound catches wrong
# backward maths (a fault is orders of magnitude off) with ~6x room over that Winograd figure.
LOGITS_REL_ERR = 1e-5
GRADS_REL_ERR = 2e-3
# Evaluation at batch 4 against one large batch: different kernels, same maths.
EVAL_REL_ERR = 1e-5


@dataclass(frozen=True)
class LearningThresholds:
    loss_ratio: float
    accuracy: float


SYNTHETIC = LearningThresholds(loss_ratio=0.6, accuracy=0.5)  # measured <= 0.38 and >= 0.74
# Real CIFAR-10 after a few hundred steps: about 0.25-0.35 expected (not calibrated here).
CIFAR = LearningThresholds(loss_ratio=0.95, accuracy=0.2)


def finite(losses: Sequence[float], params_finite: bool) -> CheckResult:
    bad = sum(1 for v in losses if not math.isfinite(v))
    ok = bad == 0 and params_finite
    where = f"{bad} non-finite losses" if bad else "non-finite parameters"
    return CheckResult("finite", "pass" if ok else "fail", bad, 0, None if ok else where)


def tenth_means(losses: Sequence[float]) -> tuple[float, float]:
    """Mean loss of the first and of the last tenth of the steps (one step is too noisy)."""
    tenth = max(1, len(losses) // 10)
    return sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth


def loss_falls(losses: Sequence[float], threshold: float) -> CheckResult:
    """Mean of the last 10 % of steps over the mean of the first 10 %."""
    first, last = tenth_means(losses)
    ratio = last / first if first > 0 else math.inf
    ok = math.isfinite(ratio) and ratio <= threshold
    detail = f"loss {first:.3f} -> {last:.3f}"
    return CheckResult("loss_falls", "pass" if ok else "fail", clean(ratio), threshold, detail)


def heldout_accuracy(value: float, threshold: float) -> CheckResult:
    ok = value >= threshold
    return CheckResult(
        "heldout_accuracy", "pass" if ok else "fail", value, threshold, "chance: 0.10"
    )


def lockstep(check_id: str, errors: Sequence[float], threshold: float) -> CheckResult:
    if not errors:
        return CheckResult(check_id, "skip", None, threshold, "no lockstep step in this run")
    worst = max(errors, key=lambda e: e if math.isfinite(e) else math.inf)
    ok = math.isfinite(worst) and worst <= threshold
    detail = "relative L2 error against float64 on the CPU, same weights and batch"
    return CheckResult(check_id, "pass" if ok else "fail", clean(worst), threshold, detail)


RUNS = "ABC"
"""Run A, run B (the same run again) and C, the automatic re-run when A and B differ."""


def self_consistency(runs: Sequence[str]) -> CheckResult:
    """The fingerprints of runs A, B and, if A and B differ, the re-run C: all bitwise equal
    passes; C equal to A or B is a one-off difference (WARN); three different results FAIL."""
    threshold = "bitwise"
    if len(runs) < 2:
        return CheckResult("self_consistency", "skip", None, threshold, "one run only (--quick)")
    if len(set(runs)) == 1:
        return CheckResult("self_consistency", "pass", True, threshold)
    if len(runs) == 2:  # no re-run to tell a one-off from a device that never repeats itself
        detail = f"two identical runs differ bitwise: {runs[0][:12]} vs {runs[1][:12]}"
        return CheckResult("self_consistency", "fail", False, threshold, detail)
    odd = odd_runs(runs, reproducible(runs))
    if len(odd) == 1:
        kept = "A" if odd == "B" else "B"
        detail = (
            f"runs A and B differ; re-run C matches {kept}: nondeterminism or a transient fault "
            f"(run {odd} {runs[RUNS.index(odd)][:12]}, runs {kept} and C {runs[2][:12]})"
        )
        return CheckResult("self_consistency", "warn", False, threshold, detail)
    short = ", ".join(f"{name} {fp[:12]}" for name, fp in zip(RUNS, runs, strict=False))
    detail = f"runs A, B and re-run C all differ bitwise ({short}): SDC suspect or a "
    detail += "nondeterministic stack"
    return CheckResult("self_consistency", "fail", False, threshold, detail)


def reproducible(runs: Sequence[str]) -> str:
    """The fingerprint the device stands by: the one at least two of its runs gave, else run A's.

    The cross-device vote and --golden compare this one: a one-off odd run is the
    self_consistency check's to judge, and voting with it would cost a healthy peer its majority
    (in a group of two, both members would get "no majority"). The odd run still counts: a
    device whose repeated result agrees with its peers but had an odd run fails the vote
    (run.vote), because then the stack is shown deterministic and the odd run was a fault.
    """
    counts = Counter(runs)
    best, seen = counts.most_common(1)[0]
    return best if seen >= 2 else runs[0]


def odd_runs(runs: Sequence[str], reference: str) -> str:
    """Names of the runs whose fingerprint is not ``reference``: "" (none), "A", "BC", ..."""
    return "".join(name for name, fp in zip(RUNS, runs, strict=False) if fp != reference)


def save_load(max_abs_diff: float) -> CheckResult:
    ok = max_abs_diff == 0.0
    detail = None if ok else f"reloaded model's logits differ by up to {max_abs_diff:.3g}"
    return CheckResult("save_load", "pass" if ok else "fail", clean(max_abs_diff), 0.0, detail)


def eval_on_device(rel_err: float, same_predictions: bool, device: str) -> CheckResult:
    ok = same_predictions and math.isfinite(rel_err) and rel_err <= EVAL_REL_ERR
    detail = f"held-out data on {device}; batch 4 vs one large batch"
    if not same_predictions:
        detail += ": predictions differ"
    return CheckResult(
        "eval_on_device", "pass" if ok else "fail", clean(rel_err), EVAL_REL_ERR, detail
    )


def error(phase: str, message: str) -> CheckResult:
    return CheckResult("completed", "fail", False, True, f"{phase}: {message}")


def clean(value: float) -> float | None:
    """JSON has no NaN or infinity: a non-finite measurement is None (its detail says why)."""
    return value if math.isfinite(value) else None


def cross_device(
    fingerprint: str,
    runs: Sequence[str],
    reference: str,
    whom: str,
    threshold: str = "bitwise equal to the golden run's device",
) -> CheckResult:
    """This device's reproduced result against ``reference``, what ``whom`` computed (the
    majority of its identical peers, or a golden run's device).

    An odd run (one of A/B/C that differs while the others equal the reference) fails too:
    identical peers that agree show the stack deterministic, so the odd run was a fault here.
    """
    if fingerprint != reference:
        return CheckResult(
            "cross_device", "fail", False, threshold, f"SDC suspect: differs from {whom}"
        )
    odd = odd_runs(runs, reference)
    if odd:
        others = "runs " + " and ".join(n for n in RUNS[: len(runs)] if n not in odd)
        detail = (
            f"SDC suspect: run {odd} differs from the bits that {others} and {whom} agree on: "
            "a one-off fault on this device"
        )
        return CheckResult("cross_device", "fail", odd, threshold, detail)
    return CheckResult("cross_device", "pass", True, threshold, f"bitwise equal to {whom}")
