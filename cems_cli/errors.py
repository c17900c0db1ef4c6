"""Errors every layer may raise and every front end knows how to show."""

from __future__ import annotations


class UserError(ValueError):
    """Bad input from the user: shown as one line, exit code 2, nothing stored."""
