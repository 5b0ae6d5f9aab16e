"""The emulator cites lint rules from a generated, stdlib-only table (issue 15)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

from gpudoc.emulate import rules
from gpudoc.lint.docs import NAMES_TARGET, rule_names_source
from gpudoc.lint.rule_names import RULE_NAMES


def test_rule_names_py_is_current() -> None:
    assert NAMES_TARGET.read_text(encoding="utf-8") == rule_names_source(), (
        "gpudoc/lint/rule_names.py is stale: run python -m gpudoc.docgen"
    )


def test_every_pattern_cites_a_rule_lint_has_or_none() -> None:
    patterns = [value for value in vars(rules).values() if isinstance(value, tuple)]
    codes = {code for pattern in patterns if len(pattern) == 2 for code in pattern[1:]}
    cited = {code for code in codes if code is not None and code in RULE_NAMES}
    assert cited >= {"GPD101", "GPD102", "GPD202", "GPD302"}
    # a code lint does not have (yet) is named by the pattern alone, never with a made-up name
    for code in codes - cited - {None}:
        assert code not in RULE_NAMES


def test_emulation_does_not_import_the_lint_engine() -> None:
    probe = (
        "import sys, gpudoc.emulate.runner, gpudoc.emulate.rules\n"
        "print(sorted(m for m in sys.modules if m.startswith(('gpudoc.lint', 'libcst'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout.strip() == "['gpudoc.lint', 'gpudoc.lint.rule_names']"
