"""`gpudoc lint --fix / --unsafe-fixes / --diff / --format sarif|github`, as a user runs them."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import jsonschema
import libcst
import nbformat
import pytest
from conftest import REPO, RunGpudoc
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from gpudoc.lint.fix import keeps_user_code

TUTORIAL = REPO / "fixtures" / "cifar_tutorial.py"
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
NO_CACHE = {"GPUDOC_CACHE_DIR": ""}
# What --fix --unsafe-fixes adds to the tutorial: nothing else of the file changes.
ADDED = [
    "net.to(device)",
    "        images, labels = images.to(device), labels.to(device)",
    "        images, labels = images.to(device), labels.to(device)",
]


def changes(before: str, after: str) -> tuple[list[str], list[str]]:
    """(removed lines, added lines) between two texts."""
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))
    removed = [line[1:] for line in diff[2:] if line.startswith("-")]
    return removed, [line[1:] for line in diff[2:] if line.startswith("+")]


@pytest.fixture
def tutorial(tmp_path: Path) -> Path:
    path = tmp_path / "cifar_tutorial.py"
    shutil.copy(TUTORIAL, path)
    return path


def lint(run_gpudoc: RunGpudoc, *args: str, cwd: Path) -> tuple[int, str, str]:
    result = run_gpudoc("lint", "--no-cache", *args, cwd=cwd)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout, result.stderr


def test_fix_unsafe_repairs_the_tutorial(run_gpudoc: RunGpudoc, tutorial: Path) -> None:
    before = tutorial.read_text()
    code, out, err = lint(run_gpudoc, "--fix", "--unsafe-fixes", tutorial.name, cwd=tutorial.parent)
    assert (code, out) == (0, "")
    assert "Fixed 3 findings in 1 file." in err and "No findings (1 file checked)." in err
    after = tutorial.read_text()
    libcst.parse_module(after)
    assert keeps_user_code(before, after)
    assert changes(before, after) == ([], ADDED)
    assert lint(run_gpudoc, tutorial.name, cwd=tutorial.parent)[0] == 0
    again = lint(run_gpudoc, "--fix", "--unsafe-fixes", tutorial.name, cwd=tutorial.parent)
    assert again[0] == 0 and "Fixed" not in again[2]
    assert tutorial.read_text() == after


def test_safe_fix_leaves_behaviour_changes_alone(run_gpudoc: RunGpudoc, tutorial: Path) -> None:
    before = tutorial.read_text()
    code, out, err = lint(run_gpudoc, "--fix", tutorial.name, cwd=tutorial.parent)
    assert code == 1 and tutorial.read_text() == before
    assert len(out.splitlines()) == 3  # the remaining findings, as a plain run prints them
    assert "3 fixable with --fix --unsafe-fixes" in err
    code, out, err = lint(run_gpudoc, "--diff", tutorial.name, cwd=tutorial.parent)
    assert (code, out) == (1, "")
    assert (
        "Would fix 0 findings in 0 files; 3 findings would remain. 3 more with --unsafe-fixes."
        in err
    )


def test_diff_prints_and_writes_nothing(run_gpudoc: RunGpudoc, tutorial: Path) -> None:
    before = tutorial.read_text()
    code, out, err = lint(
        run_gpudoc, "--diff", "--unsafe-fixes", tutorial.name, cwd=tutorial.parent
    )
    assert code == 1 and tutorial.read_text() == before
    assert out.startswith("--- a/cifar_tutorial.py\n+++ b/cifar_tutorial.py\n@@ -79,6 +79,7 @@")
    assert [line[1:] for line in out.splitlines() if line.startswith("+")][1:] == ADDED
    assert "Would fix 3 findings in 1 file; 0 findings would remain." in err


def test_a_safe_fix_through_the_cli(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    script = tmp_path / "prep.py"
    script.write_text(
        "import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = torch.nn.Linear(3, 1).to(device)\nx = torch.randn(3)\n"
        "x.to(device)  # keep me\nprint(model(x))\n"
    )
    code, _out, err = lint(run_gpudoc, "--fix", "prep.py", cwd=tmp_path)
    assert code == 0, err
    assert "x = x.to(device)  # keep me\n" in script.read_text()


def test_fix_needs_files(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    result = run_gpudoc("lint", "--fix", "-", cwd=tmp_path, input="import torch\n")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "gpudoc lint: error: --fix and --diff work on files, not on standard input"
    )


def tutorial_notebook() -> nbformat.NotebookNode:
    """The tutorial as people run it in Jupyter: one cell per step, with magics and outputs."""
    chunks = TUTORIAL.read_text().split("\n\n\n")
    notebook = new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        }
    )
    notebook.cells = [
        new_markdown_cell("# CIFAR-10 on the GPU"),
        new_code_cell("%matplotlib inline\n!nvidia-smi"),
    ]
    for number, chunk in enumerate(chunks, start=1):
        output = new_output("stream", name="stdout", text=f"step {number} ✓\n")
        notebook.cells.append(
            new_code_cell(chunk.strip("\n"), execution_count=number, outputs=[output])
        )
    return notebook


def test_notebook_lint_and_fix(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    path = tmp_path / "tutorial.ipynb"
    nbformat.write(tutorial_notebook(), path)
    original = nbformat.read(path, as_version=4)
    code, out, _err = lint(run_gpudoc, ".", cwd=tmp_path)  # found by the directory walk
    assert code == 1
    locations = [line.split(": ")[0] for line in out.splitlines()]
    assert locations == [
        "tutorial.ipynb:cell 4:35:1",
        "tutorial.ipynb:cell 4:43:23",
        "tutorial.ipynb:cell 4:56:23",
    ]
    cell = original.cells[3].source.splitlines()
    assert (cell[34], cell[55].strip()) == ("net = Net()", "outputs = net(images)")
    code, out, err = lint(run_gpudoc, "--fix", "--unsafe-fixes", path.name, cwd=tmp_path)
    assert code == 0, out + err
    fixed = nbformat.read(path, as_version=4)
    nbformat.validate(fixed)
    assert fixed.metadata == original.metadata
    for old, new in zip(original.cells, fixed.cells, strict=True):
        assert (old.get("outputs"), old.metadata) == (new.get("outputs"), new.metadata)
    assert fixed.cells[1].source == "%matplotlib inline\n!nvidia-smi"
    assert changes(original.cells[3].source, fixed.cells[3].source)[1] == ADDED
    assert lint(run_gpudoc, path.name, cwd=tmp_path)[0] == 0


def test_sarif_output_is_valid(run_gpudoc: RunGpudoc, tutorial: Path) -> None:
    nbformat.write(tutorial_notebook(), tutorial.parent / "tutorial.ipynb")
    code, out, _err = lint(run_gpudoc, "--format", "sarif", ".", cwd=tutorial.parent)
    assert code == 1
    document = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)
    run = document["runs"][0]
    assert len(run["results"]) == 6
    rules = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {"GPD101", "GPD102"} <= rules
    notebook_result = next(r for r in run["results"] if "properties" in r)
    raw_line = notebook_result["locations"][0]["physicalLocation"]["region"]["startLine"]
    notebook_text = (tutorial.parent / "tutorial.ipynb").read_text().splitlines()
    assert notebook_text[raw_line - 1].strip() == '"net = Net()\\n",'


def test_github_annotations(run_gpudoc: RunGpudoc, tutorial: Path) -> None:
    code, out, _err = lint(run_gpudoc, "--format", "github", tutorial.name, cwd=tutorial.parent)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(
        "::error title=gpudoc (GPD102),file=cifar_tutorial.py,line=81,col=1,endLine=81,"
        "endColumn=12::cifar_tutorial.py:81:1: GPD102 "
    )
