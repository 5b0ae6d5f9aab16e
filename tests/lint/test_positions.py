"""Positions of reported nodes, computed per statement, equal libcst's whole-module ones."""

from __future__ import annotations

import warnings
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from gpudoc.lint.positions import _ids, positions

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TRICKY = {
    "semicolons": "import torch\na = 1; b = (2,\n 3); c = 4\nx = torch.zeros(1)\n",
    "decorators": "# top\n\n@dec(\n  1)\n@other\ndef f(x):\n    return x.cuda()\n\n\nclass A: 1\n",
    "crlf": "import torch\r\nx = torch.ones(2)\r\n\r\nif x:\r\n    y = x.cuda()\r\n",
    "continuation": "import torch\nx = 1 + \\\n    2\ns = '''a\nb'''\ny = torch.ones(x)\n",
    "comments": "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n'''doc'''\nimport torch  # c\n",
    "no_newline": "import torch\nx = torch.ones(1)",
    "blank_tail": "import torch\n\n\n# trailing comment\n\n",
    "async": "import torch\nasync def f():\n    async with a as b:\n        await b.cuda()\n",
}


def sources() -> list[tuple[str, str]]:
    found = [(name, text) for name, text in TRICKY.items()]
    found += [(p.name, p.read_text()) for p in sorted(FIXTURES.rglob("*.py"))]
    return found


@pytest.mark.parametrize(("name", "source"), sources(), ids=[n for n, _ in sources()])
def test_every_node_has_the_whole_module_position(name: str, source: str) -> None:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [node for statement in module.body for node in _nodes(statement)]
    found = positions(module, source, nodes)
    assert {n: found[n] for n in nodes} == {n: expected[n] for n in nodes}


def test_ast_says_nothing_about_the_linted_code() -> None:
    source = "import re, torch\npattern = re.compile('\\d+')\nx = torch.ones(1).cuda()\n"
    module = cst.parse_module(source)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        positions(module, source, [module.body[-1]])
    assert caught == []  # python would warn "invalid escape sequence '\d'" compiling it


def test_when_ast_cannot_parse_the_whole_module_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    source = TRICKY["decorators"] + "type Alias = int\n"  # PEP 695: libcst reads it, 3.11 not
    module = cst.parse_module(source)

    def refuse(text: str) -> None:
        raise SyntaxError("newer than this Python")

    monkeypatch.setattr("gpudoc.lint.positions.ast.parse", refuse)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = _nodes(module.body[-1]) + _nodes(module.body[0])
    found = positions(module, source, nodes)
    assert {n: found[n] for n in nodes} == {n: expected[n] for n in nodes}


def _nodes(root: cst.CSTNode) -> list[cst.CSTNode]:
    wanted = set(_ids(root))
    out: list[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in wanted:
            out.append(node)
            stack.extend(node.children)
    return out


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_without_libcst_internals_the_public_way_gives_the_same_positions(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A libcst whose code generation state moved: positions still come, the public way."""
    import gpudoc.lint.positions as module_positions

    source = TRICKY[name]
    module = cst.parse_module(source)
    nodes = [node for statement in module.body for node in _nodes(statement)]
    fast = positions(module, source, nodes)
    monkeypatch.setattr(module_positions, "PositionProvidingCodegenState", None)
    assert positions(module, source, nodes) == {n: fast[n] for n in nodes}
