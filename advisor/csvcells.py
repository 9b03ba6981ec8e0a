"""CSV that a spreadsheet opens as data: every CSV advisor writes goes through :func:`write_csv`.

Job names, accounts and partitions come from users. A text cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice and Google Sheets as a
formula (``=HYPERLINK(...)`` in a job name becomes a live link, or worse), so such a cell is
written with a leading single quote, as OWASP's CSV-injection guidance says; the quote shows
in the cell and tells the reader the value was neutralised. Numbers are never touched: a
negative count stays a number (an ``int`` or ``float``, or text that is only a number).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Sequence
from typing import IO, Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Text that a spreadsheet reads as a plain number (-3, +1.5, -2e-3): no formula can hide in it.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell: None is empty, a list or record is its JSON, text that a
    spreadsheet would run as a formula gets a leading ``'``, everything else is unchanged."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple, dict)):
        # a list or record in one cell as JSON, which every reader can parse back
        value = json.dumps(value, default=str)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def write_csv(out: IO[str], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A header line and one line per row, every cell through :func:`csv_cell`."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([csv_cell(c) for c in columns])
    writer.writerows([csv_cell(v) for v in row] for row in rows)
