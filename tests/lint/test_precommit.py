"""The pre-commit hook, with the real pre-commit framework and a throw-away git repository.

pre-commit builds its own virtual environment and pip-installs this repository into it, exactly
as it does for a user (the package registry must be reachable, as it is for a user). The
snapshot of the working tree is committed to a temporary repository, because pre-commit installs
hooks from a commit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

BUGGY = """\
import torch
import torch.nn as nn

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2)
net.to(device)
x = torch.ones(4)
x.to(device)
print(net(x))
"""

CLEAN = """\
import torch
import torch.nn as nn

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2).to(device)
x = torch.ones(4).to(device)
print(net(x))
"""

# What the hook may install: gpudoc's core and what that pulls in. Never torch.
SMALL_CORE = {
    "gpudoc", "libcst", "pyyaml", "typing-extensions", "rich", "markdown-it-py", "mdurl",
    "pygments", "nvidia-ml-py", "pip", "setuptools", "wheel",
}  # fmt: skip

PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)


@dataclass(frozen=True)
class Hook:
    source: Path
    """A repository whose HEAD is a snapshot of this working tree."""
    rev: str
    env: dict[str, str]
    project: Path
    """The user's throw-away repository."""

    def pre_commit(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [*PRE_COMMIT, *args]
        return subprocess.run(
            command, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=600
        )

    def try_repo(self, *files: str) -> subprocess.CompletedProcess[str]:
        source = str(self.source)
        return self.pre_commit(
            "try-repo", source, "gpudoc-lint", "--ref", self.rev, "--files", *files
        )

    def commit(self, *files: str) -> subprocess.CompletedProcess[str]:
        git(self.project, "add", *files)
        return subprocess.run(
            ["git", "commit", "-m", f"add {' '.join(files)}"],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )


def _snapshot(destination: Path) -> str:
    """Commit the working tree's files (tracked and new, not ignored) to a fresh repository."""
    listed = git(REPO, "ls-files", "-co", "--exclude-standard", "-z").stdout.split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, destination / name)
    return _commit_all(destination, "snapshot")


def _commit_all(repo: Path, message: str) -> str:
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hook]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    source = tmp_path_factory.mktemp("gpudoc-source")
    rev = _snapshot(source)
    project = tmp_path_factory.mktemp("user-project")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the hook must run the gpudoc pre-commit installed, not ours
    env |= {
        "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    }  # fmt: skip
    (project / "README.md").write_text("a user's project\n")
    _commit_all(project, "start")
    config = f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: gpudoc-lint\n"
    (project / ".pre-commit-config.yaml").write_text(config)
    found = Hook(source, rev, env, project)
    for step in ("install", "install-hooks"):  # what a user runs once; builds the environment
        result = found.pre_commit(step)
        assert result.returncode == 0, result.stdout + result.stderr
    yield found


def _installed(hook: Hook) -> set[str]:
    home = Path(hook.env["PRE_COMMIT_HOME"])
    pythons = sorted(home.glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1, pythons
    listing = subprocess.run(
        [str(pythons[0]), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {package["name"].lower().replace("_", "-") for package in json.loads(listing.stdout)}


def test_the_hook_installs_the_small_core_and_never_torch(hook: Hook) -> None:
    installed = _installed(hook)
    assert "gpudoc" in installed and "libcst" in installed
    assert not {"torch", "torchvision", "numpy"} & installed
    assert installed <= SMALL_CORE, installed - SMALL_CORE


def test_a_buggy_commit_is_refused_and_a_clean_one_passes(hook: Hook) -> None:
    (hook.project / "train.py").write_text(BUGGY)
    refused = hook.commit("train.py")
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    assert "gpudoc lint (PyTorch device placement)" in output and "Failed" in output
    assert "train.py:8:1: GPD103 " in output and "train.py:9:" in output
    assert git(hook.project, "log", "--format=%s").stdout.split("\n")[0] == "start"

    (hook.project / "train.py").write_text(CLEAN)
    passed = hook.commit("train.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "gpudoc lint (PyTorch device placement)" in passed.stdout + passed.stderr
    assert git(hook.project, "log", "--format=%s").stdout.split("\n")[0] == "add train.py"


def test_try_repo_shows_the_findings(hook: Hook) -> None:
    (hook.project / "buggy.py").write_text(BUGGY)
    result = hook.try_repo("buggy.py")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "buggy.py:8:1: GPD103 " in output
