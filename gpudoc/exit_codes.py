"""The exit codes every subcommand shares (README, "Exit codes")."""

from __future__ import annotations

OK = 0
"""Clean: no findings, every check passed."""
FINDINGS = 1
"""Findings reported, or a check failed."""
USAGE = 2
"""Usage error, or input that could not be read: no verdict."""

INTERRUPTED = 130
"""Ctrl-C (SIGINT): 128 + 2, as shells report a process that SIGINT ended."""
TERMINATED = 143
"""SIGTERM (``kill``, a scheduler's stop): 128 + 15; workers are stopped first."""


class UsageError(Exception):
    """Bad arguments or unreadable input; the CLI prints the message on one line and exits 2."""
