"""JSON output of every command: dataclasses, dates and numpy scalars as JSON values.

Apart from :mod:`advisor.cli._output` so that the job-submit path (:mod:`advisor.cli._fast`)
prints its JSON without importing rich or typer.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from enum import Enum
from typing import Any


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
