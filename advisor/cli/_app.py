"""The typer app: parses arguments, calls one core function per command, formats the result.

No SQL, duckdb, pandas or scikit-learn here. Core modules are imported inside each command so
that every command starts without the others' libraries. Each domain registers its commands
from its own module (``advisor/cli/<domain>.py``). The console script's entry point,
:func:`advisor.cli.main`, imports this module only when the job-submit path
(:mod:`advisor.cli._fast`) leaves the command to typer.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from advisor.cli import (
    bench,
    calibration,
    dashboard,
    data,
    db,
    export,
    fit,
    ingest,
    jobs,
    metrics,
    nodes,
    policy,
    pressure,
    ratios,
    recommend,
    report,
    synth,
    usage,
)
from advisor.cli._output import run_guarded
from advisor.cli._parse import finite_float


def _metavars_from_names(command: Any) -> None:
    """Give every option that takes a value and has no metavar one made of its name (MODEL for
    --model): typer 0.29 would print its Python type (``<str>``) in help instead."""
    for param in command.params:
        if (
            param.param_type_name == "option"
            and param.metavar is None
            and not getattr(param, "is_flag", False)
        ):
            param.metavar = (param.name or "value").upper()
    for sub in getattr(command, "commands", {}).values():
        _metavars_from_names(sub)


def _finite_float_options(command: Any) -> None:
    """Refuse nan and inf for every float option of every command (exit 2, one line): the
    framework's float conversion accepts them, and no option of advisor means them."""
    for param in command.params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or descriptor.annotation is not float:
            continue
        if getattr(param.callback, "finite_checked", False):
            continue
        param.callback = _finite_callback(param.callback, param.opts[0])
    for sub in getattr(command, "commands", {}).values():
        _finite_float_options(sub)


def _finite_callback(inner: Any, flag: str) -> Any:
    def check(ctx: Any, param: Any, value: Any) -> Any:
        if value is not None:
            value = finite_float(value, flag)
        return value if inner is None else inner(ctx, param, value)

    check.finite_checked = True  # type: ignore[attr-defined]
    return check


class _RootGroup(TyperGroup):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        _metavars_from_names(self)
        _finite_float_options(self)
        return super().main(*args, **kwargs)


app = typer.Typer(
    name="advisor",
    cls=_RootGroup,
    help="Slurm allocation analytics and CPU-to-GPU ratio advisor.",
    add_completion=False,
    pretty_exceptions_enable=False,
    # -h everywhere (click's context settings reach every subcommand); plain help text, which
    # names an option's value by its metavar and shows nothing after a flag.
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("advisor")
    except PackageNotFoundError:  # run from a source tree that was never installed
        text = "unknown (not installed)"
    sys.stdout.write(f"advisor {text}\n")
    raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version of advisor and exit.",
        ),
    ] = False,
) -> None:
    """Slurm allocation analytics and CPU-to-GPU ratio advisor."""
    if ctx.invoked_subcommand is None:  # `advisor` alone: the help, as a usage error (exit 2)
        sys.stderr.write(ctx.get_help() + "\n")
        raise typer.Exit(2)


for _module in (
    db,
    ingest,
    jobs,
    synth,
    ratios,
    nodes,
    bench,
    fit,
    recommend,
    policy,
    calibration,
    report,
    dashboard,
    data,
    export,
    metrics,
    usage,
    pressure,
):
    _module.register(app)


def run() -> int:
    """The exit code of the command in ``sys.argv``, run by the typer app."""
    return run_guarded(app)
