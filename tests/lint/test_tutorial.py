"""The CIFAR-10 tutorial script, verbatim: exactly the findings the issue names."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO, RunGpudoc

from gpudoc.lint.engine import lint_source

TUTORIAL = REPO / "fixtures" / "cifar_tutorial.py"


def test_tutorial_is_the_seed_verbatim() -> None:
    seed = next((REPO.parent.parent / "shared" / "seeds").glob("000_*.txt"), None)
    if seed is None:  # the seeds live beside the worktrees; CI checks out only the repo
        return
    text = seed.read_text(encoding="utf-8")
    block = text.split("Beispiel für vollständigen Code", 1)[1].split("_**HINWEIS", 1)[0]
    code = "\n".join(line[4:] for line in block.strip("\n").split("\n")).strip("\n") + "\n"
    assert TUTORIAL.read_text(encoding="utf-8") == code


def test_tutorial_findings_are_exactly_the_known_bugs() -> None:
    result = lint_source(TUTORIAL.read_text(encoding="utf-8"), "cifar_tutorial.py")
    lines = TUTORIAL.read_text(encoding="utf-8").split("\n")
    found = [(f.code, lines[f.line - 1].strip()) for f in result.findings]
    assert found == [
        ("GPD102", "net = Net()"),
        ("GPD101", "outputs = net(images)"),
        ("GPD101", "outputs = net(images)"),
    ]
    # the reload is the second `net = Net()`; the training half (lines < 80) draws nothing, and
    # `torch.load(PATH)` reads what this run saved at PATH (GPD201 stays quiet)
    assert [f.line for f in result.findings] == [81, 89, 102]
    assert all(f.fix is not None for f in result.findings)


def test_cli_on_the_tutorial(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    result = run_gpudoc("lint", "--no-cache", str(TUTORIAL))
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[0].startswith(f"{TUTORIAL}:81:1: GPD102 ")
    assert len(result.stdout.splitlines()) == 3
    assert "Found 3 findings" in result.stderr
