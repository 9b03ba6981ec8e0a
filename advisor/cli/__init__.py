"""The typer app: parses arguments, calls one core function per command, formats the result.

No SQL, duckdb, pandas or scikit-learn here. Core modules are imported inside each command so
that ``advisor recommend --format json`` starts fast (a job-submit path cannot wait).
Each domain registers its commands from its own module (``advisor/cli/<domain>.py``).
"""

from __future__ import annotations

import sys

import typer

from advisor.cli import bench, dashboard, db, export, ingest, metrics, model, ratios, report
from advisor.cli._output import run_guarded

app = typer.Typer(
    name="advisor",
    help="Slurm allocation analytics and CPU-to-GPU ratio advisor.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (db, ingest, ratios, bench, model, report, dashboard, export, metrics):
    _module.register(app)


def main() -> None:
    """Console-script entry point: maps core errors to exit codes (see advisor.errors).

    ``advisor recommend ... --format json`` for one job (the job-submit path) is answered
    without building the typer app, whose option adapters alone cost about 0.1 s.
    """
    try:
        fast = model.fast_recommend(sys.argv[1:])
        code = run_guarded(app) if fast is None else fast
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (`| head`) left: not an error of ours, and no traceback for it. stdout is
        # pointed at /dev/null so that the interpreter's own final flush stays quiet too.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141  # 128 + SIGPIPE, as a shell reports a reader that closed the pipe
    sys.exit(code)
