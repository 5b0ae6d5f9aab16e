"""git's ignore patterns (gitignore(5), wildmatch.c) for one entry of a top-down walk.

A walk asks about each file and directory once, its parents already known not to be ignored, so
a pattern matches an entry exactly (never through a parent): ``*`` then ``!*/`` keeps every
directory and ignores every file, as git does. Full-path matchers such as pathspec's have to guess
from parents and get that idiom wrong for directories, so the translation is done here, and
tests/lint/test_discover_gitignore.py checks it against git itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "digit": "0-9", "lower": "a-z",
    "upper": "A-Z", "space": " \\t\\n\\r\\f\\v", "xdigit": "0-9a-fA-F",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
}  # fmt: skip
NEVER = "(?!)"


@dataclass(frozen=True)
class IgnorePattern:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    anchored: bool
    """The pattern has a slash: it matches the path from the ignore file's directory."""

    def matches(self, relative: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        target = relative if self.anchored else relative.rpartition("/")[2]
        return self.regex.fullmatch(target) is not None


def parse_ignore_lines(lines: Iterable[str]) -> tuple[IgnorePattern, ...]:
    patterns = []
    for line in lines:
        pattern = _parse(line)
        if pattern is not None:
            patterns.append(pattern)
    return tuple(patterns)


def _parse(line: str) -> IgnorePattern | None:
    if not line or line.startswith("#"):
        return None
    while line.endswith(" ") and not line.endswith("\\ "):  # trailing blanks, unless escaped
        line = line[:-1]
    negated = line.startswith("!")
    body = line[1:] if negated else line
    dir_only = body.endswith("/")
    body = body[:-1] if dir_only else body
    anchored = "/" in body
    body = body.removeprefix("/")
    if not body:
        return None
    return IgnorePattern(re.compile(_translate(body), re.DOTALL), negated, dir_only, anchored)


def _translate(body: str) -> str:
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == "*":
            i = _stars(body, i, out)
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            i, part = _bracket(body, i)
            out.append(part)
            continue
        elif char == "\\":
            if i + 1 == n:
                return NEVER  # a trailing backslash: git's pattern matches nothing
            out.append(re.escape(body[i + 1]))
            i += 1
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _stars(body: str, i: int, out: list[str]) -> int:
    end = i
    while end < len(body) and body[end] == "*":
        end += 1
    whole_component = (i == 0 or body[i - 1] == "/") and (end == len(body) or body[end] == "/")
    if end - i < 2 or not whole_component:
        out.append("[^/]*")
        return end
    if end == len(body):  # "a/**": everything inside; "**" alone: anything
        out.append(".*")
        return end
    out.append("(?:.*/)?")  # "**/" and "/**/": zero or more directories
    return end + 1


def _bracket(body: str, start: int) -> tuple[int, str]:
    """``[...]`` from ``start``: (index after it, regex); an unclosed ``[`` is a literal."""
    i = start + 1
    negate = i < len(body) and body[i] in "!^"
    i += negate
    items: list[str] = []
    first = True
    while i < len(body) and (body[i] != "]" or first):
        first = False
        if body.startswith("[:", i) and (close := body.find(":]", i + 2)) != -1:
            name = body[i + 2 : close]
            if name not in POSIX_CLASSES:
                return len(body), NEVER
            items.append(POSIX_CLASSES[name])
            i = close + 2
            continue
        if body[i] == "\\" and i + 1 < len(body):
            i += 1
        char = body[i]
        if i + 2 < len(body) and body[i + 1] == "-" and body[i + 2] != "]":
            items.append(f"{re.escape(char)}-{re.escape(body[i + 2])}")
            i += 3
            continue
        items.append(re.escape(char))
        i += 1
    if i >= len(body):
        return start + 1, re.escape("[")
    inside = "".join(items)
    regex = f"[^/{inside}]" if negate else f"(?:(?!/)[{inside}])"
    return i + 1, regex
