"""JSON Schemas of the reports, generated from their dataclasses (stdlib only).

    python -m gpudoc.schemagen      # rewrites every schema; a test fails when one is stale

Types come from the annotations (`X | None`, `tuple[X, ...]`, `Literal[...]`, nested
dataclasses as `$defs`), descriptions from the model's source: a class's docstring, a field's
docstring (a string on the line after it) or else its trailing comment or the comment above it.
Every field is required and no other key is allowed: the JSON is `dataclasses.asdict`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import sys
import tokenize
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True)
class Target:
    """One schema file: the dataclass at its root and the text around it."""

    path: Path
    root: type
    title: str
    description: str
    head: dict[str, Any]  # properties written before the dataclass's own (no field of it)


def schema(target: Target) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    root = _object(target.root, defs)
    root["properties"] = {**target.head, **root["properties"]}
    root["required"] = [*target.head, *root["required"]]
    defs.pop(target.root.__name__, None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": target.title,
        "description": target.description,
        **root,
        "$defs": dict(sorted(defs.items())),
    }


def render(target: Target) -> str:
    return json.dumps(schema(target), indent=2, ensure_ascii=False) + "\n"


def _object(cls: Any, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    properties: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        described = {"description": docs[field.name]} if field.name in docs else {}
        if field.name == "schema_version":  # a version the writer sets, never another value
            properties[field.name] = {**described, "const": field.default}
        else:
            properties[field.name] = {**described, **_type(hints[field.name], defs)}
    doc = class_doc(cls)
    return {
        "type": "object",
        **({"description": doc} if doc else {}),
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _type(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        name = hint.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: a class may refer to itself
            defs[name] = _object(hint, defs)
        return {"$ref": f"#/$defs/{name}"}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        return _union([_type(a, defs) for a in args])
    if origin in (tuple, list) and (origin is list or args[-1] is Ellipsis):
        return {"type": "array", "items": _type(args[0], defs)}
    if origin is tuple:
        items = [_type(a, defs) for a in args]
        return {"type": "array", "prefixItems": items, "minItems": len(args), "maxItems": len(args)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(args[1], defs)}
    raise TypeError(f"no JSON schema for {hint!r}")


def _union(options: list[dict[str, Any]]) -> dict[str, Any]:
    if all(set(o) == {"type"} for o in options):  # str | None -> {"type": ["string", "null"]}
        return {"type": [o["type"] for o in options]}
    if all(set(o) == {"enum"} or o == {"type": "null"} for o in options):
        return {"enum": [v for o in options for v in o.get("enum", [None])]}
    return {"anyOf": options}


def class_doc(cls: type) -> str | None:
    """The class's own docstring (a dataclass without one gets a generated `__doc__`)."""
    node = _class_node(cls)
    doc = ast.get_docstring(node) if node else None
    return " ".join(doc.split()) if doc else None


def field_docs(cls: type) -> dict[str, str]:
    node, source = _class_node(cls), inspect.getsource(cls)
    if node is None:
        return {}
    comments = _comments(source)
    docs: dict[str, str] = {}
    body = node.body
    for index, statement in enumerate(body):
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        following = body[index + 1] if index + 1 < len(body) else None
        text = _string(following) or comments.get(statement.end_lineno or statement.lineno)
        above = statement.lineno - 1
        if text is None and above in comments and _own_line(source, above):
            text = comments[above]
        if text:
            docs[statement.target.id] = " ".join(text.split())
    return docs


def _class_node(cls: type) -> ast.ClassDef | None:
    tree = ast.parse(inspect.getsource(cls))
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.ClassDef) else None


def _string(statement: ast.stmt | None) -> str | None:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return statement.value.value if isinstance(statement.value.value, str) else None
    return None


def _comments(source: str) -> dict[int, str]:
    """Line number -> comment text; consecutive own-line comments join onto the last line."""
    found: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            line, text = token.start[0], token.string.lstrip("#").strip()
            if line - 1 in found and _own_line(source, line - 1) and _own_line(source, line):
                text = f"{found.pop(line - 1)} {text}"
            found[line] = text
    return found


def _own_line(source: str, line: int) -> bool:
    return source.splitlines()[line - 1].lstrip().startswith("#")


def targets() -> tuple[Target, ...]:
    from gpudoc.info import model as info
    from gpudoc.smoke import model as smoke

    package = Path(__file__).resolve().parent
    version = {"description": "Version of gpudoc that wrote the report.", "type": "string"}
    return (
        Target(
            package / "info" / "schema.json",
            info.InfoReport,
            "gpudoc info --json",
            "The report of `gpudoc info --json`. Keys are stable within a schema_version; units "
            "are in key names (_bytes, _mw, _c, _percent, _seconds); a value that could not be "
            "read is null, never a guess.",
            {
                "schema_version": {
                    "description": "Bumped when a key is renamed or removed or its meaning "
                    "changes; keys added within a version are added to this file too.",
                    "const": info.SCHEMA_VERSION,
                },
                "gpudoc_version": version,
            },
        ),
        Target(
            package / "smoke" / "schema.json",
            smoke.SmokeReport,
            "gpudoc smoke --json",
            "The report of `gpudoc smoke --json`: every device's run and the overall verdict.",
            {},
        ),
        Target(
            package / "smoke" / "schema_distributed.json",
            smoke.DistributedReport,
            "gpudoc smoke --distributed --json",
            "The report of a `gpudoc smoke --distributed` job, as rank 0 saw it.",
            {},
        ),
    )


def main() -> int:
    for target in targets():
        target.path.write_text(render(target), encoding="utf-8")
        print(f"wrote {target.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
