"""Shared output options and error handling for every command.

stdout is data (table, CSV or JSON), stderr is diagnostics. ``--format json`` prints one JSON
array of objects (or one object for single results), so programs can read every command.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from enum import Enum, StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from advisor.errors import AdvisorError, ExitCode


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="Output: a table for people, csv or json for programs."),
]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="ADVISOR_DB",
        help="DuckDB file (default: $ADVISOR_DB, else ./advisor.duckdb).",
        show_envvar=False,
    ),
]

stderr = Console(stderr=True)


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def to_plain(value: Any) -> Any:
    """Dataclasses, dates and numpy scalars turned into JSON-ready values."""
    return _plain(value)


def emit_json(value: Any) -> None:
    json.dump(_plain(value), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


# Characters a terminal acts on instead of showing: C0/C1 controls (ESC starts CSI and OSC
# sequences), DEL, the line and paragraph separators, and the bidirectional overrides that
# reorder what is shown ("Trojan source").
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_VISIBLE = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def terminal_text(value: str) -> Text:
    """A table cell from data: shown literally (Rich markup such as ``[bold]`` or ``[link=...]``
    is not interpreted) with every control character written visibly (``\\n``, ``\\x1b``), so
    a name can neither restyle the terminal nor split a table row."""
    return Text(_UNPRINTABLE.sub(_visible, value))


def _visible(m: re.Match[str]) -> str:
    ch = m.group()
    return _VISIBLE.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def emit_rows(
    rows: Sequence[Mapping[str, Any]] | Iterable[Any],
    fmt: OutputFormat,
    *,
    columns: Sequence[str] | None = None,
    title: str | None = None,
) -> None:
    """Print rows (mappings or dataclasses) as a table, CSV or one JSON array."""
    plain = [_plain(r) for r in rows]
    if fmt is OutputFormat.json:
        emit_json(plain)
        return
    cols = list(columns) if columns else (list(plain[0].keys()) if plain else [])
    if fmt is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(cols)
        for r in plain:
            writer.writerow(["" if r.get(c) is None else r.get(c) for c in cols])
        return
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for c in cols:
        table.add_column(c, overflow="fold")
    for r in plain:
        table.add_row(*(terminal_text(_cell(r.get(c))) for c in cols))
    out = Console()
    if not out.is_terminal:  # piped or redirected: print at natural width, never fold cells
        out = Console(width=max(80, sum(_width(c, plain) for c in cols) + 3 * len(cols) + 1))
    out.print(table)


def _width(col: str, rows: Sequence[Mapping[str, Any]]) -> int:
    return max([len(col), *(terminal_text(_cell(r.get(col))).cell_len for r in rows)])


def fail(message: str, code: ExitCode = ExitCode.ERROR) -> typer.Exit:
    """Print 'Error: message' on stderr; return the Exit to raise."""
    sys.stderr.write(f"Error: {message}\n")
    return typer.Exit(int(code))


# Libraries of the optional extras (pyproject.toml), and the extra that installs each.
OPTIONAL_LIBRARIES = {"tokenizers": "bench", "torch": "serve", "transformers": "serve"}


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """The ``Error:`` text for an optional library that is not installed, else None."""
    top = (exc.name or "").split(".")[0]
    extra = OPTIONAL_LIBRARIES.get(top)
    if extra is None:
        return None
    return (
        f"this command needs the optional library {top!r}, which is not installed; "
        f"install it with: pip install 'advisor[{extra}]'"
    )


def run_guarded(app: typer.Typer) -> int:
    """Run the app; an AdvisorError becomes 'Error: ...' on stderr and its exit code, and so
    does a missing optional library (naming the extra that installs it)."""
    try:
        rv = app(standalone_mode=False)
    except AdvisorError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return int(exc.exit_code)
    except ModuleNotFoundError as exc:
        message = missing_extra_message(exc)
        if message is None:
            raise
        sys.stderr.write(f"Error: {message}\n")
        return int(ExitCode.EXTERNAL)
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        return 130
    except Exception as exc:  # click's own usage errors
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            return int(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            sys.stderr.write("Aborted\n")
            return 1
        raise
    return rv if isinstance(rv, int) else 0


class RichProgress:
    """A rich progress bar on stderr behind the core's ``ProgressFn`` (see advisor.progress)."""

    def __init__(self, enabled: bool = True) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stderr,
            disable=not enabled or not stderr.is_terminal,
            transient=False,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)  # type: ignore[arg-type]

    def __call__(self, label: str, done: int, total: int | None) -> None:
        task = self._tasks.get(label)
        if task is None:
            task = self._tasks[label] = self._progress.add_task(label, total=total)
        self._progress.update(task, completed=done, total=total)
