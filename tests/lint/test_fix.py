"""fix.py: edits land exactly, everything else stays byte for byte, broken fixes never land."""

from __future__ import annotations

import shutil
import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import libcst
import pytest
from toy_lint import toy_lint

from gpudoc.lint import fix as fixmod
from gpudoc.lint.fix import (
    apply_edits,
    choose_fixes,
    fix_source,
    keeps_user_code,
    read_source,
    unified_diff,
    write_source,
)
from gpudoc.lint.model import Edit, FileResult, Finding, Fix, LintResult
from gpudoc.lint.parse import parse_module

SCRIPT = """\
import torch  # the framework
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

x = torch.ones(3)
x.to(device)       # keep this comment   (and its spacing)
state = torch.load("ckpt.pt")
print('é', x)
"""


def finding(line: int, col: int, fix: Fix | None, code: str = "GPD999") -> Finding:
    return Finding("f.py", line, col, code, "name", "message", fix=fix)


def insert(line: int, col: int, text: str) -> Edit:
    return Edit(line, col, line, col, text)


def test_safe_fix_changes_only_its_statement() -> None:
    result = fix_source(SCRIPT, toy_lint)
    assert result.fixed == SCRIPT.replace("x.to(device)  ", "x = x.to(device)  ")
    assert [f.code for f in result.remaining] == ["GPD201"]  # unsafe: not applied without asking
    assert result.converged


def test_unsafe_fixes_only_when_asked() -> None:
    result = fix_source(SCRIPT, toy_lint, unsafe=True)
    assert 'torch.load("ckpt.pt", map_location=device)' in result.fixed
    assert result.remaining == ()


def test_second_run_is_a_no_op() -> None:
    once = fix_source(SCRIPT, toy_lint, unsafe=True).fixed
    again = fix_source(once, toy_lint, unsafe=True)
    assert not again.changed
    assert again.applied == ()


def test_line_endings_and_unicode_columns_are_kept() -> None:
    source = "x = 'é'; y = 1\r\nx.to(d)\r\n# tail\r\n"
    result = fix_source(source, toy_lint)
    assert result.fixed == "x = 'é'; y = 1\r\nx = x.to(d)\r\n# tail\r\n"
    # a column counts code points, as libcst does: "é" is one column.
    assert apply_edits(source, [insert(1, 9, "z = 2; ")]) == source.replace("y = 1", "z = 2; y = 1")


def test_overlapping_fix_waits_for_the_next_round() -> None:
    source = "a = 1\n"
    first = Fix((Edit(1, 4, 1, 5, "(1)"),))
    second = Fix((Edit(1, 4, 1, 5, "[1]"),))
    chosen, _ = choose_fixes(source, [finding(1, 4, first), finding(1, 4, second)])
    assert chosen == [first]
    same_point = Fix((insert(1, 0, "b = 2; "),))
    other_point = Fix((insert(1, 0, "c = 3; "),))
    chosen, _ = choose_fixes(source, [finding(1, 0, same_point), finding(1, 0, other_point)])
    assert chosen == [same_point]


def test_identical_edits_from_two_findings_apply_once() -> None:
    one = Fix((insert(1, 7, ".to(device)"),), description="move the model")
    other = Fix((insert(1, 7, ".to(device)"),), description="move it for its input")
    source = "m = M()\n"
    result = fix_source(
        source, lambda text: [finding(1, 4, one), finding(1, 4, other)] if text == source else []
    )
    assert result.fixed == "m = M().to(device)\n"


def test_a_fix_that_deletes_user_code_is_refused() -> None:
    source = "value = compute(x)  # important\n"
    deleting = Fix((Edit(1, 8, 1, 18, "other()"),))
    replaced_comment = Fix((Edit(1, 20, 1, 31, ""),))
    chosen, rejected = choose_fixes(
        source, [finding(1, 8, deleting), finding(1, 20, replaced_comment)]
    )
    assert chosen == []
    assert rejected == [deleting, replaced_comment]
    assert keeps_user_code("t.cuda()", "t.cuda().float()")
    assert not keeps_user_code("t.cuda()", "t.to(device)")


def test_a_fix_that_breaks_parsing_is_dropped_and_the_others_land() -> None:
    source = "a = f(x)\nb = g(y)\n"
    broken = Fix((insert(1, 7, ", ("),))  # unbalanced parenthesis
    good = Fix((insert(2, 7, ", z=1"),))
    fixes = {1: broken, 2: good}
    result = fix_source(
        source, lambda text: [finding(n, 0, f) for n, f in fixes.items()] if text == source else []
    )
    assert result.fixed == "a = f(x)\nb = g(y, z=1)\n"
    assert result.rejected == (broken,)


def test_only_the_text_to_lint_next_is_parsed_by_libcst(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which fix breaks the file is Python's parser's to say (a fraction of libcst's cost);
    libcst parses the whole text only where its tree is needed: the text linted next."""
    source = "a = f(x)\nb = g(y)\nc = h(z)\n"
    fixes = {
        1: Fix((insert(1, 7, ", z=1"),)),
        2: Fix((insert(2, 7, ", ("),)),
        3: Fix((insert(3, 7, ", w=2"),)),
    }
    parse_module(source)  # what the lint run that found the fixes did
    whole: list[str] = []
    real = libcst.parse_module

    def counted(text: str) -> libcst.Module:
        if not text.startswith("if 1:"):  # not a few statements parsed alone (reparse.py)
            whole.append(text)
        return real(text)

    monkeypatch.setattr(libcst, "parse_module", counted)
    result = fix_source(
        source, lambda text: [finding(n, 0, f) for n, f in fixes.items()] if text == source else []
    )
    assert result.fixed == "a = f(x, z=1)\nb = g(y)\nc = h(z, w=2)\n"
    assert result.rejected == (fixes[2],)
    assert whole == [result.fixed]


def test_a_fix_that_never_converges_stops() -> None:
    def ever_more(text: str) -> list[Finding]:
        return [finding(1, 0, Fix((insert(1, 0, "pass; "),)))]

    result = fix_source("x = 1\n", ever_more)
    assert not result.converged
    assert result.fixed.count("pass; ") == fixmod.MAX_ROUNDS


def refiring(text: str) -> list[Finding]:
    """A rule whose inserted move does not silence it."""
    line = text.splitlines().index("model = Net()") + 1
    return [finding(line, 0, Fix((insert(line + 1, 0, "model.to(device)\n"),)))]


def test_a_fix_that_does_not_remove_its_finding_is_not_applied_at_all() -> None:
    """A rule whose inserted move does not silence it (the same finding, on the same statement,
    with the same fix) would add its line again in every round and every later run."""
    source = "import torch\nmodel = Net()\nout = model(x)\n"
    first = fix_source(source, refiring)
    assert first.fixed == source and first.applied == ()
    assert first.remaining and first.remaining[0].line == 2  # still reported, never hidden
    assert fix_source(first.fixed, refiring).fixed == first.fixed  # a second run changes nothing


def test_a_finding_whose_fix_was_tried_is_not_called_fixable(tmp_path: Path) -> None:
    """After ``--fix``, what remains of a fix that did not resolve its finding is no longer
    "fixable with --fix": the summary would promise what the run just failed to do."""
    from gpudoc.lint.fixfile import fix_file
    from gpudoc.lint.render import summary

    path = tmp_path / "train.py"
    path.write_text("import torch\nmodel = Net()\nout = model(x)\n")
    outcome = fix_file(path, "train.py", refiring, unsafe=True, write=True)
    assert [f.line for f in outcome.remaining] == [2] and not outcome.remaining[0].fixable
    assert "fixable" not in summary(LintResult([FileResult("train.py", outcome.remaining)]))

    def unsafe_refiring(text: str) -> list[Finding]:
        return [replace(f, fix=replace(f.fix, safe=False)) if f.fix else f for f in refiring(text)]

    held = fix_file(path, "train.py", unsafe_refiring, unsafe=False, write=True)
    assert held.remaining[0].fixable  # not tried without --unsafe-fixes: still offered


def test_diff_applies_with_patch(tmp_path: Path) -> None:
    fixed = fix_source(SCRIPT, toy_lint, unsafe=True).fixed
    diff = unified_diff(SCRIPT, fixed, "train.py")
    assert diff.startswith("--- a/train.py\n+++ b/train.py\n@@ ")
    assert "-x.to(device)       # keep this comment   (and its spacing)\n" in diff
    assert "+x = x.to(device)       # keep this comment   (and its spacing)\n" in diff
    assert unified_diff(SCRIPT, SCRIPT, "train.py") == ""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "fix.diff").write_text(diff)
    subprocess.run([git, "apply", "fix.diff"], cwd=tmp_path, check=True)
    assert (tmp_path / "train.py").read_text() == fixed


def test_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("x.to(d)", "x = x.to(d)", "t.py")
    assert diff.endswith("+x = x.to(d)\n\\ No newline at end of file\n")


def test_write_keeps_mode_and_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(b"x.to(d)\r\n")
    path.chmod(0o751)
    source = read_source(path)
    write_source(path, fix_source(source, toy_lint).fixed)
    assert path.read_bytes() == b"x = x.to(d)\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temporary left behind


def recreated_after_move(text: str) -> list[Finding]:
    """A flow-sensitive toy rule: ``model = Net()`` not followed by its move is reported where
    it is the first model, or where it re-creates one already moved (so the second of two
    identical lines is reported only once the first is fixed, with the very same fix)."""
    lines = text.splitlines()
    found: list[Finding] = []
    moved = False
    for number, line in enumerate(lines, 1):
        followed = lines[number : number + 1] == ["model.to(device)"]
        moved = moved or line == "model.to(device)"
        if line == "model = Net()" and not followed and (moved or not found):
            found.append(finding(number, 0, Fix((insert(number + 1, 0, "model.to(device)\n"),))))
    return found


def test_identical_lines_are_each_fixed_once_in_one_run() -> None:
    """The second ``model = Net()`` is a place of its own, not the first fix coming back: it is
    fixed too, in one run, with one lint pass per round and no start over."""
    passes: list[str] = []

    def counted(text: str) -> list[Finding]:
        passes.append(text)
        return recreated_after_move(text)

    source = "import torch\nmodel = Net()\nout = model(x)\nmodel = Net()\nout = model(x)\n"
    result = fix_source(source, counted)
    assert result.fixed == source.replace("model = Net()\n", "model = Net()\nmodel.to(device)\n")
    assert len(result.applied) == 2 and result.remaining == () and result.converged
    assert len(passes) == 3  # the source, after the first fix, after the second
    assert not fix_source(result.fixed, recreated_after_move).changed


def test_starting_over_reuses_the_tree_of_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a fix came back, fixing starts over from the source: the tree the lint run parsed
    serves again, and only the statements a round edits are parsed (not the whole file)."""
    source = "import torch\nmodel = Net()\nout = model(x)\n" + "y = [1, 2]\n" * 20
    parse_module(source)  # what the lint run that found the fixes did
    parsed: list[str] = []
    real = libcst.parse_module

    def counted(text: str) -> libcst.Module:
        parsed.append(text)
        return real(text)

    def lint(text: str) -> list[Finding]:  # and a fix that works, applied in every start
        lines = text.splitlines()
        line = lines.index("out = model(x)") + 1 if "out = model(x)" in lines else None
        fixed = [finding(line, 0, Fix((insert(line, 14, "  # moved"),)))] if line else []
        return refiring(text) + fixed

    monkeypatch.setattr(libcst, "parse_module", counted)
    result = fix_source(source, lint)
    assert result.fixed == source.replace("model(x)", "model(x)  # moved")
    assert len(result.applied) == 1 and result.converged
    assert source not in parsed and parsed  # statements were parsed, never the whole source
