"""noqa.py: ``# noqa`` comments found by the tokenizer, reading only the statements that say so."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable, Iterator

import pytest

from gpudoc.lint import noqa
from gpudoc.lint.noqa import noqa_directives

TRICKY = (
    "# noqa header\n"
    "import torch\n"
    '"""\n# noqa in a docstring\n"""\n'
    "@decorated  # NOQA: GPD201,gpd103\n"
    "@again\n"
    "def f():\n"
    "    x = 1  # noqa\n"
    "    # noqa: GPD101 on a comment line\n"
    "\n"
    "  # noqa: GPD102 at an odd indent, after the function\n"
    'y = """# noqa"""  # noqa: GPD301\n'
    "a = 1; b = 2  # noqa: GPD302\n"
    "s = '\\\n# noqa'\n"
)


def whole_file(source: str) -> dict[int, tuple[int, tuple[str, ...] | None]]:
    """What tokenizing the whole text finds: line -> (column, codes)."""
    found = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            match = noqa.NOQA.search(token.string) if token.type == tokenize.COMMENT else None
            if match is not None:
                raw = match.group("codes")
                codes = tuple(c.upper() for c in raw.replace(",", " ").split()) if raw else None
                found[token.start[0]] = (token.start[1] + match.start(), codes)
    except (tokenize.TokenError, SyntaxError):
        pass  # what was found before the error counts
    return found


@pytest.mark.parametrize(
    "source",
    [TRICKY, TRICKY.replace("\n", "\r\n"), TRICKY.replace("\n", "\r"), "x = (  # noqa\n"],
)
def test_directives_are_those_of_the_whole_file(source: str) -> None:
    """Per statement or whole (a lone CR, a text ``ast`` cannot parse): the same answer."""
    found = {line: (d.col, d.codes) for line, d in noqa_directives(source).items()}
    assert found == whole_file(source)
    if source == TRICKY:
        assert sorted(found) == [1, 6, 9, 10, 12, 13, 14]
        assert found[6] == (12, ("GPD201", "GPD103"))


def test_only_statements_that_say_noqa_are_tokenized(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    real = tokenize.generate_tokens

    def counted(readline: Callable[[], str]) -> Iterator[tokenize.TokenInfo]:
        for token in real(readline):
            read.append(token.line)
            yield token

    monkeypatch.setattr(tokenize, "generate_tokens", counted)
    source = "import torch\n" + "x = torch.ones(3)\n" * 200 + "y = x.cuda()  # noqa: GPD101\n"
    assert list(noqa_directives(source)) == [202]
    assert read  # the last statement was read
    assert not any("torch.ones" in line for line in read)
