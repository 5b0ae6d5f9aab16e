"""A directory walk skips what git ignores, decided without git: checked against git's answer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpudoc.lint.discover import discover

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

FILES = [
    "top.py", "keep.py", "debug_x.py", "debug_keep.py", "notes.ipynb",
    "build_tools/gen.py", "out/a.py", "out/sub/b.py", "logs/x.py",
    "src/app.py", "src/generated/g.py", "src/generated/keep_me.py", "src/local.py",
    "src/deep/er/local.py", "src/deep/er/other.py", "docs/conf.py", "docs/api/conf.py",
    "data/raw/x.py", "data/keep/y.py", "anchored.py", "src/anchored.py", "#hash.py",
    "space .py", "excluded_by_info.py", "excluded_global.py", "sub/inner/x.py",
    "nested_repo/inside.py", "a/b/c/deep_glob.py", "a/deep_glob.py", "v1.py", "v2.py",
    "vx.py", "w_a.py", "w_b.py", "q1.py", "q12.py", "!bang.py", "trail.py", "star/x/y/z.py",
    "star/keep.py", "cls/A.py", "cls/b.py", "star2/a.py", "star2/d/b.py",
]  # fmt: skip
IGNORES = {
    ".gitignore": "debug_*.py\n!debug_keep.py\nout/\nlogs\n/anchored.py\n\\#hash.py\n"
    "docs/**/conf.py\ndata/*\n!data/keep/\n**/c/deep_glob.py\nv[0-9].py\nw_[!a].py\n"
    "q?.py\n\\!bang.py\ntrail.py   \nstar/**\n!star/keep.py\ncls/[[:upper:]]*.py\nstar2/**/*.py\n",
    "src/.gitignore": "generated/\n!generated/keep_me.py\nlocal.py\n",
    "src/deep/.gitignore": "!local.py\n",
    "sub/.gitignore": "*\n!*/\n!inner/\n",
    "sub/inner/.gitignore": "!x.py\n",
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n")
    for name, text in IGNORES.items():
        (root / name).write_text(text)
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("excluded_global.py\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("excluded_by_info.py\n")
    subprocess.run(["git", "init", "-q", str(root / "nested_repo")], check=True)
    return root


def git_listed(root: Path, where: str) -> set[str]:
    """git's own answer (on this safe repository): the files it does not ignore."""
    result = subprocess.run(
        ["git", "-C", str(root / where), "ls-files", "--others", "--exclude-standard",
         "--full-name", "--", "*.py", "*.ipynb"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {line for line in result.stdout.splitlines() if not line.endswith("/")}


def walked(root: Path, where: str) -> set[str]:
    found = {Path(t.display).resolve() for t in discover([str(root / where)])}
    return {path.relative_to(root.resolve()).as_posix() for path in found}


@pytest.mark.parametrize("where", [".", "src", "sub", "src/deep"])
def test_the_walk_skips_exactly_what_git_ignores(repo: Path, where: str) -> None:
    expected = git_listed(repo, where)
    assert walked(repo, where) == expected
    if where == ".":  # the fixture exercises each kind of pattern
        assert "src/generated/keep_me.py" not in expected  # a parent ignored: no way back
        assert {"debug_keep.py", "src/deep/er/local.py", "sub/inner/x.py"} <= expected
        kept = {"data/keep/y.py", "star/keep.py", "q12.py", "vx.py", "w_a.py", "cls/b.py"}
        assert kept <= expected
        ignored = {"v1.py", "q1.py", "w_b.py", "cls/A.py", "trail.py", "!bang.py", "star2/a.py"}
        assert ignored.isdisjoint(expected) and "star/x/y/z.py" not in expected
        assert {"excluded_by_info.py", "excluded_global.py", "#hash.py"}.isdisjoint(expected)
        assert "nested_repo/inside.py" not in expected and "a/deep_glob.py" in expected


def test_outside_a_repository_gitignore_files_do_not_apply(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("a.py\n")
    assert [t.display for t in discover([str(tmp_path)])] == [str(tmp_path / "a.py")]


def test_a_linked_work_tree_reads_the_common_info_exclude(repo: Path, tmp_path: Path) -> None:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    ident = ["-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "-C", str(repo), "add", "top.py"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-qm", "x"], check=True, env=env)
    linked = tmp_path / "linked"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(linked)], check=True)
    (linked / "excluded_by_info.py").write_text("x = 1\n")
    (linked / "new.py").write_text("x = 1\n")
    names = {Path(t.display).name for t in discover([str(linked)])}
    assert names == {"top.py", "new.py"}
