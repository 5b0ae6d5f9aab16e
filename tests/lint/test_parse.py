"""gpudoc's libcst parse: the parser's own nodes are not validated again, gpudoc's are."""

from __future__ import annotations

import libcst as cst
import pytest

from gpudoc.lint.checker import check_source
from gpudoc.lint.parse import parse_text

# valid Python whose parse libcst's node validation refuses (LibCST#1061)
REFUSED_BY_VALIDATION = "x = () if 0 else(lambda:())\n"


def test_valid_python_that_libcst_validation_refuses_is_linted() -> None:
    with pytest.raises(TypeError):
        cst.parse_module(REFUSED_BY_VALIDATION)  # libcst itself, validating
    source = (
        "import torch\n"
        + REFUSED_BY_VALIDATION
        + "model = torch.nn.Linear(2, 2).cuda()\nmodel(torch.zeros(2))\n"
    )
    assert [finding.code for finding in check_source(source)] == ["GPD101"]


def test_the_tree_is_the_parsers_and_nodes_built_later_are_validated() -> None:
    source = "if  x :\n\tpass  # keep\nwhile(True):\n    del(y)\n"
    assert parse_text(source).code == source
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # validation is back once the parse is over
