"""GPD902: a `# noqa: GPD...` comment that suppresses nothing (off by default)."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.rule import Context, Invalid, Report, Rule


class UnusedNoqa(Rule):
    """A `# noqa: GPD...` comment whose code no finding on that line carries.

    ## What it does
    Finds the GPD codes of `# noqa:` comments that silence nothing: the bug was fixed, the rule
    grew more precise, or the code names the wrong rule. Only real comments count (Python's
    tokenizer finds them); codes of other tools (`# noqa: E501`) are left alone. Off by default:
    enable it with `--select GPD902` (ruff's RUF100).

    ## Why is this bad?
    A stale suppression hides the next real finding on that line, and tells the reader that
    something is wrong where nothing is.

    ## Example
    ```python
    state = torch.load("model.pt")  # noqa: GPD201
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt")
    ```

    ## Known problems
    The check runs on every rule's findings, selected or not: a code silenced by a rule you
    deselected with `--ignore` still counts as used. Codes are matched exactly, as the
    suppression itself matches them (`# noqa: GPD2` silences nothing).
    """

    CODE = "GPD902"
    NAME = "unused-noqa"
    SUMMARY = "a # noqa: GPD... comment that suppresses nothing"
    DEFAULT = False
    PLACEMENT = False
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
state = torch.load(args.checkpoint)  # noqa: GPD201
""",
        """\
import torch
x = torch.randn(3)  # noqa: E501
""",
        """\
import torch
text = "# noqa: GPD201"
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
x = torch.randn(3)  # noqa: GPD201
""",
            line=2,
            col=21,
        ),
    )

    def check(self, context: Context) -> Iterator[Report]:
        """The checker finds these (it alone sees which findings each comment silenced)."""
        return iter(())
