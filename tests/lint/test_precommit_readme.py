"""The README's pre-commit snippets, pasted as they are, with the real pre-commit framework.

Each snippet is taken from the README's ``## pre-commit`` section, not copied here, so the text a
user pastes is the text under test: the ``language: system`` hook where ``gpudoc`` is on the
PATH, and the ``language: python`` hook whose environment pre-commit builds from a clone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from test_precommit import BUGGY, CLEAN, PRE_COMMIT, SMALL_CORE, _commit_all, _snapshot, git

pytestmark = pytest.mark.slow


def readme_snippets() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)


def snippet(language: str) -> str:
    found = [s for s in readme_snippets() if "repo: local" in s and f"language: {language}" in s]
    assert len(found) == 1, readme_snippets()
    return found[0]


def _project(root: Path, config: str) -> Path:
    root.mkdir()
    (root / "README.md").write_text("a user's project\n")
    _commit_all(root, "start")
    (root / ".pre-commit-config.yaml").write_text(config)
    git(root, "add", ".pre-commit-config.yaml")
    return root


def _run(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PRE_COMMIT, *args], cwd=project, env=env, capture_output=True, text=True, timeout=900
    )


def _env(home: Path, bin_dir: Path, pythonpath: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    env |= {
        "PRE_COMMIT_HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), env.get("PATH", "")]),
    }
    return env


def _lints(project: Path, env: dict[str, str]) -> None:
    """A buggy file fails the hook with its finding; the same file fixed passes."""
    (project / "train.py").write_text(BUGGY)
    refused = _run(project, env, "run", "--files", "train.py")
    output = refused.stdout + refused.stderr
    assert refused.returncode == 1, output
    assert "gpudoc lint" in output and "Failed" in output
    assert "train.py:8:1: GPD103 " in output
    (project / "train.py").write_text(CLEAN)
    passed = _run(project, env, "run", "--files", "train.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_the_system_hook_works_as_pasted(tmp_path: Path) -> None:
    config = snippet("system")
    assert "args: [--fix, --unsafe-fixes]" in config and "--unsafe-fixes" in config
    # `gpudoc` on the PATH: the one installed beside this interpreter, running this checkout.
    env = _env(tmp_path / "home", Path(sys.executable).parent, str(REPO))
    assert (Path(sys.executable).parent / "gpudoc").exists()
    project = _project(tmp_path / "project", config)
    _lints(project, env)


def test_the_python_hook_works_with_the_path_of_a_clone(tmp_path: Path) -> None:
    config = snippet("python")
    assert "additional_dependencies: [/path/to/gpudoc]" in config
    clone = tmp_path / "gpudoc"
    clone.mkdir()
    _snapshot(clone)
    env = _env(tmp_path / "home", Path(sys.executable).parent, None)
    project = _project(tmp_path / "project", config.replace("/path/to/gpudoc", str(clone)))
    _lints(project, env)
    pythons = sorted((tmp_path / "home").glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1, pythons
    listing = subprocess.run(
        [str(pythons[0]), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {line.split("==")[0].lower().replace("_", "-") for line in listing.stdout.split()}
    assert "gpudoc" in installed and not {"torch", "torchvision", "numpy"} & installed
    # pre-commit installs a placeholder package of its own into a local hook's environment.
    extra = installed - SMALL_CORE - {"pre-commit-placeholder-package"}
    assert not extra, extra
