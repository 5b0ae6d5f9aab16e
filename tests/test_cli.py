"""The CLI skeleton: help, version, exit codes, one-line usage errors."""

from __future__ import annotations

from conftest import RunGpudoc

from gpudoc import __version__
from gpudoc.cli import SUBCOMMANDS, main


def test_version(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"gpudoc {__version__}"


def test_help_lists_every_subcommand_and_exit_codes(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("--help")
    assert result.returncode == 0
    for name, _module in SUBCOMMANDS:
        assert f"gpudoc {name}" in result.stdout
    assert "exit codes: 0 clean, 1 findings" in result.stdout


def test_no_subcommand_is_a_usage_error(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc()
    assert result.returncode == 2
    assert "usage: gpudoc" in result.stderr


def test_unknown_subcommand_is_one_line_exit_2(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("gpudoc: error: ")


def test_main_returns_exit_code_instead_of_exiting_for_help_of_subcommands() -> None:
    for name, _module in SUBCOMMANDS:
        try:
            main([name, "--help"])
        except SystemExit as exc:  # argparse exits after printing help
            assert exc.code == 0
