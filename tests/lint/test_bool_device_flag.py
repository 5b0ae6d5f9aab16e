"""GPD503 on the shapes real scripts write: argparse options whose `type=bool` makes
`--flag False` true. The rule is one module (gpudoc/lint/rules/gpd503_bool_device_flag.py)."""

from __future__ import annotations

import argparse

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def reported(source: str) -> list[tuple[int, str]]:
    result = lint_source(source, "main.py", LintConfig(select=("GPD503",)))
    assert result.error is None, result.error
    return [(f.line, f.message.split("`")[1]) for f in result.findings]


def test_the_trap_is_real_with_the_installed_argparse() -> None:
    """What the rule claims: the flag cannot be turned off from the command line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu_mode", type=bool, default=True)
    assert parser.parse_args(["--gpu_mode", "False"]).gpu_mode is True


def test_device_flags_in_a_parse_function_are_reported_at_their_type_argument() -> None:
    source = """\
import argparse
import torch
def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('--gpu_mode', type=bool, default=True)
    parser.add_argument('--benchmark_mode', type=bool, default=True)
    parser.add_argument(
        '--no-cuda',
        type=bool,
        default=False,
    )
    group = parser.add_argument_group('device')
    group.add_argument('-d', dest='device_ids', type=bool)
    return parser.parse_args()
"""
    assert reported(source) == [(5, "--gpu_mode"), (9, "--no-cuda"), (13, "-d")]


def test_correct_spellings_and_other_booleans_stay_quiet() -> None:
    source = """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--cuda', action='store_true')
parser.add_argument('--use_gpu', action=argparse.BooleanOptionalAction, default=True)
parser.add_argument('--gpu', type=int, default=0)
parser.add_argument('--cpu', type=lambda s: s.lower() == 'true', default=False)
parser.add_argument('--save-best', type=bool, default=True)
mask = parser.add_argument('--device', type=str, default='cuda')
"""
    assert reported(source) == []


def test_a_file_that_places_nothing_is_still_checked() -> None:
    """Options often live in their own options.py, far from any .cuda()."""
    source = (
        "import argparse, torch\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--use_cuda', type=bool)\n"
    )
    assert reported(source) == [(3, "--use_cuda")]
