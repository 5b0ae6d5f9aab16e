"""Notebooks: real .ipynb files (written by nbformat, or by hand in their real layout)."""

from __future__ import annotations

import json

import libcst
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from toy_lint import toy_lint

from gpudoc.lint.cells import build, fix_notebook, lint_notebook
from gpudoc.lint.notebook import NotebookError, load, with_sources

SETUP = "%matplotlib inline\nimport torch\ndevice = 'cuda'\nx = torch.ones(3)"
TRAIN = "!pip install \\\n    torch\nx.to(device)\nfiles = !ls\nstate = torch.load('c.pt')"


def tutorial_notebook() -> str:
    notebook = new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python", "version": "3.11.7"},
        }
    )
    notebook.cells = [
        new_markdown_cell("# Training on the GPU"),
        new_code_cell(
            SETUP,
            execution_count=1,
            outputs=[new_output("stream", name="stdout", text="loss 0.5 – done ✓\n")],
            metadata={"tags": ["setup"], "collapsed": False},
        ),
        new_code_cell(TRAIN, execution_count=2),
        new_code_cell("%%bash\necho not python"),
        new_code_cell("def broken(:\n    pass"),
        new_code_cell("%%time\nx.to(device)\nif True:\n    %time x.sum()\n    model?"),
    ]
    return nbformat.writes(notebook)


@pytest.mark.parametrize(
    "source",
    [
        # d2l-style: a `%`-formatted print continued on the next line (ShusenTang/Dive-into-DL)
        "print('epoch %d, loss %.4f'\n      % (epoch + 1, loss))",
        'msg = """report:\n% done\n"""',  # inside a triple-quoted string
        "total = 1 + \\\n    2 % 3",  # after a backslash continuation
    ],
)
def test_a_percent_line_inside_open_python_is_python(source: str) -> None:
    notebook = load(nbformat.writes(new_notebook(cells=[new_code_cell(source)])))
    virtual = build(notebook)
    assert virtual.magics == () and virtual.errors == ()
    assert source in virtual.text


def test_a_bang_inside_brackets_is_python_s_syntax_error_not_a_magic() -> None:
    notebook = load(nbformat.writes(new_notebook(cells=[new_code_cell("x = [1,\n     !2]")])))
    virtual = build(notebook)
    assert virtual.magics == ()
    assert virtual.errors == ((1, "syntax error at line 2: invalid syntax"),)


def test_code_cells_are_numbered_as_the_editor_shows_them() -> None:
    notebook = load(tutorial_notebook())
    assert [cell.index for cell in notebook.cells] == [2, 3, 4, 5, 6]
    assert notebook.cells[0].source == SETUP
    assert notebook.language == "python"


def test_magics_are_neutralised_line_for_line() -> None:
    notebook = load(tutorial_notebook())
    virtual = build(notebook)
    libcst.parse_module(virtual.text)
    assert virtual.errors == ((5, "syntax error at line 1: invalid syntax"),)  # 4 is %%bash
    sources = {cell.index: cell.source.splitlines() for cell in notebook.cells}
    neutralised: list[str] = []
    for number, line in enumerate(virtual.text.splitlines(), start=1):
        cell, cell_line = virtual.locate(number)
        if cell_line == 0:
            assert line == f"# %% gpudoc cell {cell}"
        elif "gpudoc: magic" in line:
            neutralised.append(sources[cell][cell_line - 1])
        else:
            assert line == sources[cell][cell_line - 1]
    assert (
        neutralised
        == list(virtual.magics)
        == [
            "%matplotlib inline",
            "!pip install \\",
            "    torch",  # the continuation of the shell line
            "files = !ls",
            "%%time",
            "    %time x.sum()",
            "    model?",
        ]
    )


def test_findings_are_located_by_cell_and_line() -> None:
    notebook = load(tutorial_notebook())
    findings, _virtual = lint_notebook(notebook, "nb.ipynb", toy_lint)
    where = [(f.cell, f.line, f.col, f.code) for f in findings]
    assert where == [(3, 3, 1, "GPD103"), (3, 5, 9, "GPD201"), (6, 2, 1, "GPD103")]
    assert all(f.path == "nb.ipynb" for f in findings)
    raw_lines = notebook.text.splitlines()
    raw = notebook.raw_line(3, 3)
    assert raw is not None and raw_lines[raw - 1].strip() == '"x.to(device)\\n",'


def test_fix_writes_back_only_the_changed_source_lines() -> None:
    text = tutorial_notebook()
    outcome = fix_notebook(load(text), "nb.ipynb", toy_lint, unsafe=True)
    fixed = outcome.text
    before, after = nbformat.reads(text, 4), nbformat.reads(fixed, 4)
    nbformat.validate(after)
    assert after.metadata == before.metadata
    for old, new in zip(before.cells, after.cells, strict=True):
        assert (old.get("outputs"), old.metadata) == (new.get("outputs"), new.metadata)
    assert after.cells[2].source == (
        "!pip install \\\n    torch\nx = x.to(device)\nfiles = !ls\n"
        "state = torch.load('c.pt', map_location=device)"
    )
    assert (
        after.cells[5].source == "%%time\nx = x.to(device)\nif True:\n    %time x.sum()\n    model?"
    )
    assert after.cells[4].source == before.cells[4].source  # the broken cell is left alone
    changed = [(a, b) for a, b in zip(text.splitlines(), fixed.splitlines(), strict=True) if a != b]
    assert len(changed) == 3 and len(text.splitlines()) == len(fixed.splitlines())
    assert outcome.remaining == () and sorted(outcome.after) == [3, 6]
    assert outcome.before[6] == before.cells[5].source
    again = fix_notebook(load(fixed), "nb.ipynb", toy_lint, unsafe=True)
    assert again.text == fixed and not again.result.changed


def test_hand_written_layout_is_kept() -> None:
    """Source as one string, two-space indent, escaped non-ASCII: the file keeps all three."""
    document = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": "# caf\u00e9\nx.to(device)\n"},
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": ["y = 1\n", "x.to(device)"]},
        ],
        "metadata": {"zzz": 1, "aaa": 2},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    text = json.dumps(document, indent=2)  # ensure_ascii: "caf\u00e9" stays escaped
    fixed = fix_notebook(load(text), "nb.ipynb", toy_lint).text
    expected = text.replace('x.to(device)\\n"', 'x = x.to(device)\\n"').replace(
        '"x.to(device)"', '"x = x.to(device)"'
    )
    assert fixed == expected
    assert "caf\\u00e9" in fixed


def test_a_new_line_in_a_list_source_follows_the_list_layout() -> None:
    text = json.dumps(
        {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": ["a = 1"]}],
         "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
        indent=1,
    )  # fmt: skip
    notebook = load(text)
    new = with_sources(notebook, {1: "a = 1\nb = 'é'\n"})
    assert json.loads(new)["cells"][0]["source"] == ["a = 1\n", "b = 'é'\n"]
    assert '  "a = 1\\n",\n    "b = \'é\'\\n"\n' in new


def test_other_languages_and_broken_files() -> None:
    r_notebook = {"cells": [], "metadata": {"kernelspec": {"language": "R"}}, "nbformat": 4}
    assert load(json.dumps(r_notebook)).language == "r"
    with pytest.raises(NotebookError, match="not valid JSON"):
        load("{ not json")
    with pytest.raises(NotebookError, match="no 'cells' list"):
        load('{"metadata": {}}')


def test_check_notebook_reports_cells_it_could_not_lint() -> None:
    from gpudoc.lint.cells import check_notebook

    findings, error = check_notebook(tutorial_notebook(), "nb.ipynb", toy_lint)
    assert [(f.cell, f.line) for f in findings] == [(3, 3), (3, 5), (6, 2)]
    assert error == "cell 5: syntax error at line 1: invalid syntax"
    assert check_notebook("[]", "x.ipynb", toy_lint) == (
        [],
        "not a Jupyter notebook (no 'cells' list)",
    )
    r_notebook = {"cells": [], "metadata": {"kernelspec": {"language": "R"}}, "nbformat": 4}
    assert check_notebook(json.dumps(r_notebook), "r.ipynb", toy_lint) == ([], None)


def test_windows_line_endings_in_a_cell_survive_a_fix() -> None:
    cell = {
        "cell_type": "code",
        "metadata": {},
        "outputs": [],
        "source": "%time y = 1\r\nx.to(d)\r\n",
    }
    text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    fixed = fix_notebook(load(text), "w.ipynb", toy_lint).text
    assert json.loads(fixed)["cells"][0]["source"] == "%time y = 1\r\nx = x.to(d)\r\n"
