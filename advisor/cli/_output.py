"""Shared output options and error handling for every command.

stdout is data (table, CSV or JSON), stderr is diagnostics. ``--format json`` prints one JSON
array of objects (or one object for single results), so programs can read every command.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from advisor.cli._json import emit_json as emit_json  # moved there; re-exported
from advisor.cli._json import to_plain as to_plain  # moved there; re-exported
from advisor.cli._progress import RichProgress as RichProgress  # moved there; re-exported
from advisor.csvcells import write_csv
from advisor.errors import AdvisorError, ExitCode, describe_os_error


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        "-f",
        metavar="[table|csv|json]",
        help="Output: a table for people, csv or json for programs.",
    ),
]
TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]
StartOption = Annotated[
    dt.datetime | None,
    typer.Option(formats=TIME_FORMATS, help="Jobs that started at or after this time (UTC)."),
]
EndOption = Annotated[
    dt.datetime | None,
    typer.Option(formats=TIME_FORMATS, help="Jobs that started before this time (UTC)."),
]
StarvedPsiOption = Annotated[
    float,
    typer.Option(
        help="Where a job's CPU pressure was measured: the share of its time its tasks stalled "
        "for a CPU (PSI some, 0-1) from which it is starved. Default: --max-wait's 0.15 "
        "through the measured link (advisor pressure link).",
    ),
]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="ADVISOR_DB",
        metavar="FILE",
        help="DuckDB file (default: $ADVISOR_DB, else ./advisor.duckdb).",
        show_envvar=False,
    ),
]

stderr = Console(stderr=True)


# Integer columns that name something rather than count it: no thousands separators.
_NAME_LIKE = re.compile(r"(^|_)(id|raw|no|seed|port|year|pid)$|_id_|^id_")


def _cell(value: Any, column: str = "") -> str:
    """A value as a table shows it: counts with thousands separators (4,650,000), floats to
    4 significant digits below 1,000; CSV and JSON keep the raw numbers."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v, column) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_cell(v, str(k))}" for k, v in value.items())
    if isinstance(value, int) and not _NAME_LIKE.search(column):
        return f"{value:,}"
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
    plain = [to_plain(r) for r in rows]
    if fmt is OutputFormat.json:
        emit_json(plain)
        return
    cols = list(columns) if columns else (list(plain[0].keys()) if plain else [])
    if fmt is OutputFormat.csv:  # cells a spreadsheet would run as formulas are neutralised
        write_csv(sys.stdout, cols, ([r.get(c) for c in cols] for r in plain))
        return
    from rich.table import Table

    widths = {c: _width(c, plain) for c in cols}
    natural = sum(widths.values()) + 3 * len(cols) + 1
    limit = _fit_width()
    if limit is not None and natural > limit and len(plain) == 1:
        # one record wider than the terminal: a key/value block, one field a line
        block = Table(title=title, show_header=False, show_lines=False)
        block.add_column("field", no_wrap=True)
        block.add_column("value", overflow="fold")
        for c in cols:
            block.add_row(c, terminal_text(_cell(plain[0].get(c), c)))
        Console(width=limit).print(block)
        return
    shown, left_out = cols, []
    if limit is not None and natural > limit:
        # the first columns name the rows: keep them whole while they fit, leave out the rest
        used, shown = 1, []
        for c in cols:
            if shown and used + widths[c] + 3 > limit:
                break
            shown.append(c)
            used += widths[c] + 3
        left_out = cols[len(shown) :]
    table = Table(title=title, show_lines=False)
    for c in shown:
        # (never folded where the table fits: "4,645" is not cut into "4,/64/5")
        table.add_column(c, overflow="fold", min_width=min(widths[c], (limit or natural) - 4))
    for r in plain:
        table.add_row(*(terminal_text(_cell(r.get(c), c)) for c in shown))
    width = limit if limit is not None else max(80, natural)
    Console(width=width).print(table)
    if left_out:
        Console(width=width, stderr=True).print(
            f"({len(left_out)} more column{' does' if len(left_out) == 1 else 's do'} not fit "
            f"{width} columns: {', '.join(left_out)};"
            " --format csv or json has every column)",
            markup=False,
            highlight=False,
        )


def emit_text(text: str) -> None:
    """A sentence for people under a table, wrapped to the width the table fits."""
    Console(width=_fit_width() or 100).print(text, markup=False, highlight=False)


def _fit_width() -> int | None:
    """The width a person's table must fit: the terminal's, else ``COLUMNS`` where output is
    piped with it set; None (piped, no COLUMNS): the table's natural width."""
    out = Console()
    if out.is_terminal:
        return out.width
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() and int(cols) >= 20 else None


def _width(col: str, rows: Sequence[Mapping[str, Any]]) -> int:
    return max([len(col), *(terminal_text(_cell(r.get(col), col)).cell_len for r in rows)])


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


def _framework_exceptions() -> tuple[tuple[type[BaseException], ...], ...]:
    """(usage errors, aborts, exits) of the command-line framework, whichever it is.

    typer before 0.26 raises click's exceptions; later releases raise those of their own copy
    of click (``typer._click``), which are not click's classes. Both are caught so that a typo
    never reaches the user as a traceback, whichever typer the pin in pyproject.toml installs.
    Only modules already imported are looked at: one that is not cannot have raised.
    """
    usage: list[type[BaseException]] = []
    aborts: list[type[BaseException]] = [typer.Abort]
    exits: list[type[BaseException]] = [typer.Exit]
    for name in ("typer._click.exceptions", "click.exceptions"):
        module = sys.modules.get(name)
        for found, attr in ((usage, "ClickException"), (aborts, "Abort"), (exits, "Exit")):
            cls = getattr(module, attr, None)
            if isinstance(cls, type) and issubclass(cls, BaseException):
                found.append(cls)
    return tuple(usage), tuple(aborts), tuple(exits)


def _interrupted() -> int:
    sys.stderr.write("Interrupted\n")
    return 130


def run_guarded(app: typer.Typer, args: Sequence[str] | None = None) -> int:
    """Run the app and return its exit code. An AdvisorError becomes 'Error: ...' on stderr
    and its exit code; a usage error (unknown command or option, a bad value, a missing
    option) the framework's short usage message and exit 2; a missing optional library names
    the extra that installs it; never a traceback."""
    try:
        rv = app(args=args, prog_name="advisor", standalone_mode=False)
    except AdvisorError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return int(exc.exit_code)
    except ModuleNotFoundError as exc:
        message = missing_extra_message(exc)
        if message is None:
            raise
        sys.stderr.write(f"Error: {message}\n")
        return int(ExitCode.EXTERNAL)
    except KeyboardInterrupt:
        return _interrupted()
    except OSError as exc:
        message, code = describe_os_error(exc)
        sys.stderr.write(f"Error: {message}\n")
        return int(code)
    except Exception as exc:
        usage, aborts, exits = _framework_exceptions()
        if isinstance(exc, usage):
            # typer's validation (pydantic) starts a bad value's message with "Value error, "
            message = getattr(exc, "message", None)
            if isinstance(message, str) and "Value error, " in message:
                exc.message = message.replace("Value error, ", "")  # type: ignore[attr-defined]
            exc.show()  # type: ignore[attr-defined]
            return int(exc.exit_code)  # type: ignore[attr-defined]
        if isinstance(exc, aborts):
            if isinstance(exc.__context__, KeyboardInterrupt):  # click < 8.2 turns Ctrl-C into this
                return _interrupted()
            sys.stderr.write("Aborted\n")
            return 1
        if isinstance(exc, exits):
            return int(exc.exit_code or 0)  # type: ignore[attr-defined]
        raise
    if rv == 130:  # click >= 8.2 and typer >= 0.26 return Ctrl-C as exit code 130, silently
        return _interrupted()
    return rv if isinstance(rv, int) else 0
