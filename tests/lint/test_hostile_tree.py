"""The linter never starts a program the linted tree can configure, nor runs any of its code.

A hostile repository configures git to run a marker-writing command (fsmonitor, hooks, filters,
ssh, pager...) and carries code that writes a marker when imported or executed (the linted
scripts, conftest, sitecustomize, .pth, a build backend, notebook cells, modules named like the
ones gpudoc imports). After every way of linting it, no marker exists.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RunGpudoc, gpudoc_env

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

BUGGY = (  # offers the CPU, then hard-codes CUDA (GPD203, no fix) and drops a move (GPD103)
    "import torch\n"
    "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    "x = torch.randn(3).cuda()\n"
    "x.cpu()\n"
)
GIT_PAYLOADS = {
    "core.fsmonitor": "fsmonitor",
    "core.sshCommand": "ssh",
    "core.pager": "pager",
    "core.editor": "editor",
    "core.hooksPath": None,  # a directory: every hook in it writes its marker
    "core.alternateRefsCommand": "alternate-refs",
    "diff.external": "diff-external",
    "credential.helper": "credential",
    "gpg.program": "gpg",
    "filter.evil.clean": "filter-clean",
    "filter.evil.smudge": "filter-smudge",
    "filter.evil.process": "filter-process",
    "uploadpack.packObjectsHook": "pack-objects-hook",
}
HOOKS = ("pre-commit", "post-checkout", "post-index-change", "fsmonitor-watchman", "pre-push")


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=False
    )


def payload(markers: Path, name: str) -> str:
    """Python source that records ``name`` in the markers directory when it runs."""
    return f"open({str(markers / name)!r}, 'w').close()\n"


def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    script = tmp_path / "mark.sh"
    script.write_text(f'#!/bin/sh\ntouch "{markers}/$1"\ncat >/dev/null 2>&1\n')
    script.chmod(0o755)
    (repo / "train.py").write_text(BUGGY)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "model.py").write_text(BUGGY)
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    assert git(repo, "init", "-q").returncode == 0
    git(repo, "add", ".")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in HOOKS:
        (hooks / hook).write_text(f'#!/bin/sh\ntouch "{markers}/hook-{hook}"\n')
        (hooks / hook).chmod(0o755)
    for key, name in GIT_PAYLOADS.items():
        value = str(hooks) if name is None else f"{script} {name}"
        assert git(repo, "config", key, value).returncode == 0
    (repo / "train.py").write_text(BUGGY + "# changed since the commit: git would refresh it\n")
    return repo, markers


def test_the_hostile_repository_does_run_its_command_under_git(tmp_path: Path) -> None:
    """The control: git ls-files (what gpudoc used to run) starts the repository's command."""
    repo, markers = hostile_repo(tmp_path)
    git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.py")
    assert "fsmonitor" in {p.name for p in markers.iterdir()}


@pytest.mark.parametrize(
    "args",
    [
        ("lint", "--no-cache", "."),
        ("lint", "--no-cache", "--fix", "--unsafe-fixes", "."),
        ("lint", "--no-cache", "--diff", "--unsafe-fixes", "pkg"),
        ("lint", "train.py", "pkg/model.py"),  # what pre-commit passes: the staged files
    ],
    ids=["dir", "fix", "diff-subdir", "pre-commit-files"],
)
def test_linting_a_hostile_repository_starts_nothing(
    run_gpudoc: RunGpudoc, tmp_path: Path, args: tuple[str, ...]
) -> None:
    repo, markers = hostile_repo(tmp_path)
    result = run_gpudoc(*args, cwd=repo)
    assert "Traceback" not in result.stderr
    assert "model.py" in result.stdout + result.stderr  # the tree was read
    assert sorted(p.name for p in markers.iterdir()) == []


def hostile_code_tree(tmp_path: Path) -> tuple[Path, Path]:
    """Code that writes a marker wherever Python could be tricked into running it."""
    tree, markers = tmp_path / "tree", tmp_path / "markers"
    (tree / "pkg").mkdir(parents=True)
    markers.mkdir()
    files = {
        "train.py": payload(markers, "script") + "import helper\nimport pkg\n" + BUGGY,
        "helper.py": payload(markers, "import"),
        "pkg/__init__.py": payload(markers, "package-init"),
        "conftest.py": payload(markers, "conftest"),
        "sitecustomize.py": payload(markers, "sitecustomize"),
        "usercustomize.py": payload(markers, "usercustomize"),
        "evil.pth": "import os; " + payload(markers, "pth"),
        "setup.py": payload(markers, "setup-py"),
        "backend.py": payload(markers, "build-backend"),
        # Modules named like those gpudoc imports: found first only if the tree is on sys.path.
        "libcst.py": payload(markers, "shadow-libcst"),
        "pathspec.py": payload(markers, "shadow-pathspec"),
        "json.py": payload(markers, "shadow-json"),
        "tokenize.py": payload(markers, "shadow-tokenize"),
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n\n[tool.gpudoc.lint]\nselect = ["GPD"]\n',
    }
    for name, text in files.items():
        (tree / name).write_text(text)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {
        "cells": [dict(cell, source=payload(markers, "notebook") + BUGGY)],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tree / "notebook.ipynb").write_text(json.dumps(notebook))
    return tree, markers


def console_script(tmp_path: Path) -> Path:
    """What pip's ``gpudoc`` entry point does: sys.path[0] is its own directory, not the cwd."""
    launcher = tmp_path / "bin" / "gpudoc_launcher.py"
    launcher.parent.mkdir()
    launcher.write_text("import sys\nfrom gpudoc.cli import main\nsys.exit(main())\n")
    return launcher


@pytest.mark.parametrize("fix", [False, True], ids=["lint", "fix"])
def test_no_code_from_the_linted_tree_runs(tmp_path: Path, fix: bool) -> None:
    tree, markers = hostile_code_tree(tmp_path)
    launcher = console_script(tmp_path)
    extra = ["--fix", "--unsafe-fixes"] if fix else []
    result = subprocess.run(
        [sys.executable, str(launcher), "lint", "--no-cache", *extra, "."],
        cwd=tree,
        env=gpudoc_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    linted = result.stdout + result.stderr
    assert "train.py" in linted and "notebook.ipynb" in linted
    assert sorted(p.name for p in markers.iterdir()) == []


def test_no_code_from_the_linted_tree_runs_under_python_m(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    """``python -m gpudoc`` puts the cwd on sys.path: still nothing of the tree's is imported."""
    tree, markers = hostile_code_tree(tmp_path)
    for shadow in ("libcst.py", "pathspec.py", "json.py", "tokenize.py"):
        (tree / shadow).unlink()  # Python's own -m rule, not gpudoc's: see the console-script test
    result = run_gpudoc("lint", "--no-cache", ".", "train.py", cwd=tree)
    assert "Traceback" not in result.stderr, result.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
