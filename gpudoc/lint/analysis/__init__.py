"""The shared analysis: one walk per file that every rule reads (see walker.py)."""

from __future__ import annotations

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.analysis.walker import analyze

__all__ = ["Facts", "analyze"]
