"""`gpudoc lint`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gpudoc.exit_codes import FINDINGS, OK, USAGE, UsageError

FORMAT_CHOICES = ["text", "json", "sarif", "github"]
"""Output formats; gpudoc.lint.render.FORMATS holds their renderers."""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="find device-placement bugs without running the script",
        description="Read PyTorch scripts with libcst, never run them, and report "
        "device-placement bugs. Exit 0 clean, 1 findings, 2 usage error or unreadable file.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", help="files or directories; - reads standard input")
    parser.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=FORMAT_CHOICES,
        default="text",
        help="output format (--format is an alias)",
    )
    parser.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="only these codes or prefixes (GPD1,GPD201)",
    )
    parser.add_argument("--ignore", action="append", metavar="CODES", help="skip these codes")
    parser.add_argument("--explain", metavar="CODE", help="print the documentation of one rule")
    parser.add_argument(
        "--jobs", "-j", type=int, metavar="N", help="parallel processes (default: all cores)"
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.add_argument("--stdin-filename", metavar="PATH", help="the path to report for -")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix or --diff, also apply fixes that change behaviour (placement)",
    )
    parser.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff; write nothing"
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when there are findings (2 still means a usage error or bad file)",
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings per rule instead of the findings",
    )


def run(args: argparse.Namespace) -> int:
    if args.explain:
        return explain(args.explain)
    if not args.paths:
        raise UsageError("give files or directories to lint, or - for standard input")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if (args.fix or args.diff) and "-" in args.paths:
        raise UsageError("--fix and --diff work on files, not on standard input")
    if args.unsafe_fixes and not (args.fix or args.diff):
        raise UsageError("--unsafe-fixes needs --fix (apply them) or --diff (show them)")
    if args.statistics and (args.fix or args.diff):
        raise UsageError("--statistics reports findings; it does not combine with --fix or --diff")
    from gpudoc.lint.config import load_config
    from gpudoc.lint.render import FORMATS

    config = load_config(Path.cwd()).with_cli(args.select, args.ignore)
    result = lint(args, config)
    if not result.files:
        sys.stderr.write(
            "gpudoc lint: warning: no Python files (*.py, *.ipynb) found in "
            f"{', '.join(args.paths)}\n"
        )
    if args.fix or args.diff:
        return _zero(args, fix(args, config, result))
    if args.statistics:
        from gpudoc.lint.render import render_statistics

        render_statistics(result, args.format, sys.stdout, sys.stderr)
    else:
        FORMATS[args.format](result, sys.stdout, sys.stderr)
    return _zero(args, exit_code(result))


def _zero(args: argparse.Namespace, code: int) -> int:
    """--exit-zero: findings do not fail the run; usage errors and unreadable files still do."""
    return OK if args.exit_zero and code == FINDINGS else code


def fix(args: argparse.Namespace, config: Any, result: Any) -> int:
    """--fix writes the fixes and reports what remains; --diff prints them and writes nothing."""
    from gpudoc.lint.fixfile import fix_result
    from gpudoc.lint.render import FORMATS, render_diff, render_fixes

    fixed, outcomes = fix_result(result, config, unsafe=args.unsafe_fixes, write=not args.diff)
    if args.diff:
        render_diff(fixed, outcomes, sys.stdout, sys.stderr)
        changed = any(outcome.changed for outcome in outcomes)
        return USAGE if fixed.errors else FINDINGS if changed or fixed.findings else OK
    render_fixes(outcomes, sys.stderr)
    FORMATS[args.format](fixed, sys.stdout, sys.stderr)
    return exit_code(fixed)


def lint(args: argparse.Namespace, config: Any) -> Any:
    """The engine: the LintResult of this invocation."""
    from gpudoc.lint.engine import lint_paths

    paths = [args.stdin_filename if p == "-" and args.stdin_filename else p for p in args.paths]
    stdin = sys.stdin.read() if "-" in args.paths else None
    if args.stdin_filename and stdin is not None:
        from gpudoc.lint.engine import lint_source
        from gpudoc.lint.model import LintResult

        rest = [p for p in args.paths if p != "-"]
        others = lint_paths(rest, config, args.jobs, not args.no_cache).files if rest else ()
        return LintResult((*others, lint_source(stdin, args.stdin_filename, config)))
    return lint_paths(paths, config, args.jobs, not args.no_cache, stdin=stdin)


def exit_code(result: Any) -> int:
    if result.errors:
        return USAGE
    return FINDINGS if result.findings else OK


def explain(code: str) -> int:
    from gpudoc.lint.render import render_explain
    from gpudoc.lint.rule import rule_by_code

    rule = rule_by_code(code)
    if rule is None:
        raise UsageError(f"unknown rule {code!r}; codes look like GPD101")
    render_explain(rule.CODE, rule.NAME, rule.doc(), rule.DEFAULT, sys.stdout)
    return OK
