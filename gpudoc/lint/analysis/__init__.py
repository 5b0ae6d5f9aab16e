"""The shared analysis: one walk per file whose events the rules listen to (see walker.py)."""

from __future__ import annotations

from gpudoc.lint.analysis.walker import analyze

__all__ = ["analyze"]
