"""SARIF 2.1.0 (validated against the official OASIS schema) and GitHub workflow annotations."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from gpudoc import __version__
from gpudoc.lint.model import Edit, Finding, Fix
from gpudoc.lint.sarif import SCHEMA_URI, github_annotation, github_annotations, to_sarif

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


class DiscardedTensorTo:
    """Finds a tensor's ``.to()`` whose result is thrown away.

    Tensors do not move in place: ``t.to(device)`` returns a new tensor.
    """

    CODE = "GPD103"
    NAME = "discarded-tensor-to"
    SUMMARY = "the result of Tensor.to() is discarded; tensors do not move in place"
    DEFAULT = True


# Finding positions are 1-based as printed; Edit columns are 0-based (model.py).
FINDINGS = [
    Finding(
        "src/train.py", 12, 5, "GPD103", "discarded-tensor-to", "the result is discarded",
        end_line=12, end_col=17, fix=Fix((Edit(12, 4, 12, 4, "x = "),), True, "assign it"),
    ),
    Finding("src/train.py", 3, 9, "GPD201", "load-without-map-location", "no map_location",
            end_line=3, end_col=30, fix=Fix((Edit(3, 28, 3, 28, ", map_location=device"),), False)),
    Finding("notebooks/eval one.ipynb", 2, 1, "GPD101", "unmoved-input", "images stay on the host",
            end_line=2, end_col=13, cell=4),
    Finding("/abs/path/perf.py", 1, 1, "GPD901", "host-factory-then-transfer", "a, b: 100%\nnext"),
]  # fmt: skip


def validate(document: dict[str, object]) -> None:
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)


def test_sarif_is_valid_against_the_official_schema() -> None:
    document = to_sarif(FINDINGS, [DiscardedTensorTo], locate=lambda f: 57, root="/repo")
    validate(document)
    assert document["$schema"] == SCHEMA_URI and document["version"] == "2.1.0"
    json.dumps(document)  # serialisable as is


def test_the_schema_rejects_what_is_not_sarif() -> None:
    document = to_sarif(FINDINGS, root="/repo")
    document["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validate(document)


def test_results_rules_and_regions() -> None:
    run = to_sarif(FINDINGS, [DiscardedTensorTo], locate=lambda f: 57, root="/repo")["runs"][0]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("gpudoc", __version__)
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == ["GPD101", "GPD103", "GPD201", "GPD901"]
    gpd103 = driver["rules"][1]
    assert gpd103["shortDescription"]["text"] == DiscardedTensorTo.SUMMARY
    assert (
        gpd103["fullDescription"]["text"]
        == "Finds a tensor's ``.to()`` whose result is thrown away."
    )
    assert "Tensors do not move in place" in gpd103["help"]["markdown"]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["GPD901", "GPD101", "GPD201", "GPD103"]  # by path
    for result in results:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
    perf, notebook, _load, discarded = results
    assert perf["level"] == "warning" and discarded["level"] == "error"
    location = discarded["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 12, "startColumn": 5, "endLine": 12, "endColumn": 17}
    assert perf["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///abs/path/perf.py"
    }
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///repo/"
    nb_location = notebook["locations"][0]["physicalLocation"]
    assert nb_location["artifactLocation"]["uri"] == "notebooks/eval%20one.ipynb"
    assert nb_location["region"] == {"startLine": 57}
    assert notebook["properties"] == {"cell": 4, "cellLine": 2, "cellColumn": 1}
    assert "fixes" not in notebook


def test_fixes_are_carried_with_their_safety() -> None:
    results = to_sarif(FINDINGS, root="/repo")["runs"][0]["results"]
    load = next(r for r in results if r["ruleId"] == "GPD201")
    (fix,) = load["fixes"]
    assert fix["description"]["text"].endswith("[unsafe (--unsafe-fixes)]")
    (replacement,) = fix["artifactChanges"][0]["replacements"]
    assert replacement == {
        "deletedRegion": {"startLine": 3, "startColumn": 29, "endLine": 3, "endColumn": 29},
        "insertedContent": {"text": ", map_location=device"},
    }


def test_output_is_stable_whatever_the_input_order() -> None:
    forward = to_sarif(FINDINGS, root="/repo")
    backward = to_sarif(list(reversed(FINDINGS)), root="/repo")
    assert json.dumps(forward) == json.dumps(backward)


def test_github_annotations() -> None:
    assert github_annotation(FINDINGS[0]) == (
        "::error title=gpudoc (GPD103),file=src/train.py,line=12,col=5,endLine=12,endColumn=17"
        "::src/train.py:12:5: GPD103 the result is discarded"
    )
    # Workflow-command escaping: % CR LF in the message, and also : , in properties.
    assert github_annotation(FINDINGS[3]) == (
        "::warning title=gpudoc (GPD901),file=/abs/path/perf.py,line=1,col=1"
        "::/abs/path/perf.py:1:1: GPD901 a, b: 100%25%0Anext"
    )
    assert github_annotation(FINDINGS[2], locate=lambda f: 57) == (
        "::error title=gpudoc (GPD101),file=notebooks/eval one.ipynb,line=57"
        "::notebooks/eval one.ipynb:cell 4:2:1: GPD101 images stay on the host"
    )
    lines = github_annotations(FINDINGS).splitlines()
    assert len(lines) == 4 and lines[0].startswith("::warning title=gpudoc (GPD901)")


def test_errors_become_notifications_and_stay_valid() -> None:
    document = to_sarif(FINDINGS[:1], errors=["bad.py: syntax error at 3:1"], root="/repo")
    validate(document)
    (invocation,) = document["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"].startswith("bad.py")
    clean = to_sarif([], root="/repo")
    validate(clean)
    assert clean["runs"][0]["invocations"] == [{"executionSuccessful": True}]
    assert clean["runs"][0]["results"] == []


def test_notebook_findings_point_at_the_line_of_the_ipynb_file(tmp_path: Path) -> None:
    from test_notebook import tutorial_notebook

    from gpudoc.lint.sarif import notebook_locator

    path = tmp_path / "eval.ipynb"
    path.write_text(tutorial_notebook())
    finding = Finding(str(path), 3, 1, "GPD103", "n", "m", cell=3)
    raw = notebook_locator()(finding)
    assert raw is not None
    assert path.read_text().splitlines()[raw - 1].strip() == '"x.to(device)\\n",'
    missing = Finding(str(tmp_path / "gone.ipynb"), 1, 1, "GPD103", "n", "m", cell=1)
    assert notebook_locator()(missing) is None
