"""How long-running core functions report progress without knowing about any UI.

A ``ProgressFn`` is called as ``progress(label, done, total)``: ``label`` names the unit of work
(a file, a core count), ``done`` and ``total`` count its steps (``total`` None when unknown).
The CLI passes a rich progress bar; tests and the dashboard pass nothing.
"""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[str, int, "int | None"], None]


def no_progress(label: str, done: int, total: int | None) -> None:
    """The default: report nothing."""
