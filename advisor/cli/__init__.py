"""The typer app: parses arguments, calls one core function per command, formats the result.

No SQL, duckdb, pandas or scikit-learn here. Core modules are imported inside each command so
that ``advisor recommend --format json`` starts fast (a job-submit path cannot wait).
Each domain registers its commands from its own module (``advisor/cli/<domain>.py``).
"""

from __future__ import annotations

import sys

import typer

from advisor.cli import bench, dashboard, db, ingest, model, ratios, report, usage
from advisor.cli._output import run_guarded

app = typer.Typer(
    name="advisor",
    help="Slurm allocation analytics and CPU-to-GPU ratio advisor.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (db, ingest, ratios, bench, model, report, dashboard, usage):
    _module.register(app)


def main() -> None:
    """Console-script entry point: maps core errors to exit codes (see advisor.errors).

    ``advisor recommend ... --format json`` for one job (the job-submit path) is answered
    without building the typer app, whose option adapters alone cost about 0.1 s.
    """
    fast = model.fast_recommend(sys.argv[1:])
    sys.exit(run_guarded(app) if fast is None else fast)
