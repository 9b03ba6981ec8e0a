"""The frozen test split: which calibration series are test-only (``test-split.txt``).

Series in the split are never used to choose the model's design (its form, the utilisation
target, the decision rule); ``advisor fit`` scores them once, with a model fitted on the other
series. The file lives beside the calibration CSVs; its rules are ``measured-on-from
YYYY-MM-DD`` and ``series SERIES_ID``, one per line, ``#`` comments (see the shipped file).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError

SPLIT_FILE = "test-split.txt"


@dataclass(frozen=True)
class SplitRules:
    """The rules of the test split (none: every series is a training series)."""

    measured_on_from: dt.date | None = None
    series: frozenset[str] = frozenset()
    source: str | None = None

    def is_test(self, series_id: str, measured_on: dt.date | None) -> bool:
        if series_id in self.series:
            return True
        return (
            self.measured_on_from is not None
            and measured_on is not None
            and measured_on >= self.measured_on_from
        )

    def describe(self) -> str:
        parts = []
        if self.measured_on_from is not None:
            parts.append(f"every series measured from {self.measured_on_from.isoformat()} on")
        if self.series:
            parts.append(f"{len(self.series)} series by name")
        return " and ".join(parts) or "none"


def load_split(directory: Path) -> SplitRules:
    """The split of the calibration directory (an empty split when it has no file)."""
    path = directory / SPLIT_FILE
    if not path.is_file():
        return SplitRules()
    since: dt.date | None = None
    names: set[str] = set()
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        rule, _, value = line.partition(" ")
        value = value.strip()
        if rule == "measured-on-from":
            try:
                since = dt.date.fromisoformat(value)
            except ValueError:
                raise InputError(
                    f"{value!r} is not a date (YYYY-MM-DD)", source=str(path), line=n, field=rule
                ) from None
        elif rule == "series" and value:
            names.add(value)
        else:
            raise InputError(
                f"unknown rule {rule!r}; use measured-on-from DATE or series ID",
                source=str(path),
                line=n,
            )
    return SplitRules(since, frozenset(names), str(path))
