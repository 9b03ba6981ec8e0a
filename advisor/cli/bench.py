"""CLI commands of the bench domain (filled in by its issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
