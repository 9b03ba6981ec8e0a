"""The command line: the console script's entry point (:func:`main`) and the typer ``app``.

The app lives in :mod:`advisor.cli._app`, one module per command group beside it. This package
imports neither it nor typer until a command needs them: :func:`main` first offers the command
to the job-submit path (:mod:`advisor.cli._fast`), which answers ``recommend ... --format json``
for one job without them.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def main() -> None:
    """Console-script entry point: maps core errors to exit codes (see advisor.errors).

    ``advisor recommend ... --format json`` for one job (the job-submit path) is answered
    without importing typer and the other commands, whose import is most of the start-up time
    (docs/performance.md).
    """
    try:
        from advisor.cli._fast import fast_recommend

        code = fast_recommend(sys.argv[1:])
        if code is None:
            from advisor.cli._app import run

            code = run()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (`| head`) left: not an error of ours, and no traceback for it. stdout is
        # pointed at /dev/null so that the interpreter's own final flush stays quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1  # what click itself exits with when its reader leaves: one code for both paths
    sys.exit(code)


def __getattr__(name: str) -> Any:
    """``advisor.cli.app``, the typer app, built on first use (PEP 562)."""
    if name == "app":
        from advisor.cli._app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
