"""Keep the generated parts of README.md and docs/*.md true: ``python -m gpudoc.docgen [--check]``.

A generated part sits between two HTML comments, which Markdown does not show::

    <!-- generated: NAME (python -m gpudoc.docgen) -->
    ...
    <!-- end generated -->

Everything between them is rewritten from the code: the rule table from the rule classes, the
doctor's checks from ``gpudoc info``'s registry, each subcommand's options from its argparse
parser, and the lint sample from a real run of the linter on the tutorial fixture. Text outside
the markers is hand-written; ``tests/test_docs.py`` fails when a part is stale.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/info.md", "docs/smoke.md", "docs/lint.md", "docs/emulate.md")
HELP_WIDTH = 100
_BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[\w-]+) \(python -m gpudoc\.docgen\) -->\n)"
    r"(?P<body>.*?)"
    r"(<!-- end generated -->)",
    re.DOTALL,
)


def rules_table() -> str:
    from gpudoc.lint.docs import rules_table as table

    return table() + "\n"


def info_checks() -> str:
    from gpudoc.info.checks import all_checks

    rows = ["| id | severity | passes when |", "|---|---|---|"]
    rows += [f"| `{c.check_id}` | {c.severities} | {c.title} |" for c in all_checks()]
    return "\n".join(rows) + "\n"


def subcommand_help(name: str) -> str:
    """``gpudoc NAME --help`` at a fixed width, so the text does not depend on the terminal."""
    from gpudoc.cli import build_parser

    parser = build_parser()
    sub = next(
        action.choices[name]
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    formatter = sub.formatter_class
    sub.formatter_class = functools.partial(formatter, width=HELP_WIDTH)
    return f"```text\n{sub.format_help().rstrip()}\n```\n"


def lint_sample() -> str:
    """A real run of the linter on the CIFAR-10 tutorial (no torch, nothing executed)."""
    from gpudoc.cli import main

    out = io.StringIO()
    command = ["lint", "--no-cache", "fixtures/cifar_tutorial.py"]
    before = os.getcwd()  # contextlib.chdir is Python 3.11+
    try:
        os.chdir(REPO)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            main(command)
    finally:
        os.chdir(before)
    return f"```console\n$ gpudoc {' '.join(command[:1] + command[2:])}\n{out.getvalue()}```\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "rules-table": rules_table,
    "info-checks": info_checks,
    "lint-sample": lint_sample,
}
for _name in ("info", "smoke", "lint", "run"):
    GENERATORS[f"help-{_name}"] = functools.partial(subcommand_help, _name)


def blocks(text: str) -> list[str]:
    """The names of the generated parts of a page, in order."""
    return [match["name"] for match in _BLOCK.finditer(text)]


def regenerate(text: str, cache: dict[str, str] | None = None) -> str:
    """The page with every generated part rewritten; an unknown name is an error."""
    cache = {} if cache is None else cache

    def body(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise KeyError(f"no generator for {name!r} (known: {', '.join(GENERATORS)})")
        if name not in cache:
            cache[name] = GENERATORS[name]()
        return match[1] + cache[name] + match[4]

    return _BLOCK.sub(body, text)


def main(argv: list[str]) -> int:
    """Rewrite docs/rules.md and every generated part of the pages (``--check``: only say
    which are stale)."""
    from gpudoc.lint import docs

    check = "--check" in argv
    cache: dict[str, str] = {}
    stale = []
    for target, text in docs.outputs().items():  # docs/rules.md, lint/rule_names.py
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if text != current:
            stale.append(str(target.relative_to(REPO)))
            if not check:
                target.write_text(text, encoding="utf-8")
    for page in PAGES:
        path = REPO / page
        text = path.read_text(encoding="utf-8")
        new = regenerate(text, cache)
        if new != text:
            stale.append(page)
            if not check:
                path.write_text(new, encoding="utf-8")
    if check and stale:
        print(f"stale: {', '.join(stale)}: run python -m gpudoc.docgen", file=sys.stderr)
        return 1
    for page in [] if check else stale:
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
