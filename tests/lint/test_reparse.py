"""--fix re-parses only the statements its fixes touch: the tree it builds must be the one the
parser gives for the whole fixed text, and anything it cannot vouch for goes to a whole parse."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from gpudoc.lint import parse, reparse
from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import python_findings
from gpudoc.lint.fix import _span, choose_fixes, fix_source, line_starts

FIXTURES = sorted((Path(__file__).parents[2] / "fixtures").rglob("*.py"))

EDGES = [
    "#!/usr/bin/env python\n# header\n\nimport torch\n\n\n@dec\n# between\n@dec2(\n  1)\n"
    "def f(x):\n  return x\n# after f\n\nclass C:\n\tdef m(self):\n\t\tpass\n    # odd\n\n"
    "x = 1; y = 2\nif x:\n    pass\nelse:\n    y = torch.zeros(3)\n# footer\n",
    "import torch\r\nx = torch.ones(1)\r\n\r\ndef g():\r\n    return x\r\n",
    "import torch\nx = 1",
    "x = 1\n    # indented comment\ny = torch.zeros(2)\nz = (1,\n  2)\n",
]
INSERTS = ["pass\n", "    # c\n", "  # two\n", "# c\n", "x = 1\n", "\n", " ", "\tpass\n"]


def _full(text: str) -> cst.Module:
    return cst.parse_module(text)


def _by_statement(source: str, fixes: list[list[reparse.Span]]) -> str | None:
    parse.parse_module(source)
    return reparse.apply_by_statement(source, fixes)


@pytest.mark.parametrize("index", range(len(EDGES)))
def test_every_line_start_insert_gives_the_parsers_tree(index: int) -> None:
    """Comments, blank lines and statements put at the start of every line (where a fix's
    ``line_before`` goes): the assembled tree equals a whole parse, or a whole parse is asked."""
    source = EDGES[index]
    assembled = 0
    for start in line_starts(source):
        for text in INSERTS:
            fixed = _by_statement(source, [[(start, start, text)]])
            if fixed is None:
                continue
            assembled += 1
            expected = source[:start] + text + source[start:]
            assert fixed == expected
            assert parse.parse_module(fixed).deep_equals(_full(fixed)), (start, text)
    assert assembled > 0


def test_an_indented_comment_in_the_leading_lines_is_parsed_with_the_block_above() -> None:
    """libcst gives ``# after f`` to ``f``'s block once an indented comment follows it."""
    source = EDGES[0]
    start = source.index("\nclass C") + 1
    fixed = _by_statement(source, [[(start, start, "    # c\n")]])
    assert fixed is not None
    assert parse.parse_module(fixed).deep_equals(_full(fixed))


def test_text_that_does_not_parse_goes_to_a_whole_parse() -> None:
    source = EDGES[0]
    start = source.index("x = 1;")
    assert _by_statement(source, [[(start, start, "(")]]) is None


def test_the_real_fixes_give_the_parsers_tree() -> None:
    """Every fixture's fixes of one round, applied by statement: the parser's own tree."""
    checked = 0
    for path in FIXTURES:
        source = path.read_text(encoding="utf-8")
        findings = python_findings(source, str(path), LintConfig())
        chosen, _ = choose_fixes(source, findings, unsafe=True)
        if not chosen:
            continue
        starts = line_starts(source)
        spans = [[(*_span(starts, source, e), e.text) for e in fix.edits] for fix in chosen]
        fixed = _by_statement(source, spans)
        assert fixed is not None, path
        assert parse.parse_module(fixed).deep_equals(_full(fixed)), path
        checked += 1
    assert checked >= 10


def test_a_fix_round_parses_the_whole_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lint of the original parses it; the fixed texts' trees are assembled, not parsed."""
    path = next(p for p in FIXTURES if p.name == "mnist_forgotten_test_move.py")
    source = path.read_text(encoding="utf-8")
    whole: list[int] = []
    real = cst.parse_module

    def counting(text: str, *args: object, **kwargs: object) -> cst.Module:
        if len(text) >= len(source):
            whole.append(len(text))
        return real(text)

    monkeypatch.setattr(parse.cst, "parse_module", counting)
    parse.remember("", real(""))
    lint = lambda text: python_findings(text, str(path), LintConfig())  # noqa: E731
    result = fix_source(source, lint, unsafe=True)
    assert result.changed and result.converged
    assert len(whole) == 1
    assert _full(result.fixed).code == result.fixed
