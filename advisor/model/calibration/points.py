"""Calibration points: the rows of the ``calibration`` table, read from CSV files and the database.

Points come from every ``data/calibration/*.csv`` (the research's published figures in
``published.csv``, measured runs in ``h200-*.csv`` and others) and from the database's
``calibration`` table (where ``advisor bench collect`` stores bench points). All have exactly
the columns of that table (:data:`COLUMNS`), so published and measured points are fitted
together without conversion. A bad row is reported with its file, line and field and left out;
the other rows still load.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from advisor.errors import InputError, NotFoundError
from advisor.model import load
from advisor.resources import shipped_data

# The largest values a measurement may hold (also bench run files: harness/results/validate.py):
# well past every lent machine and every run made so far, far below an overflow.
MAX_CORES = 65_536
MAX_GPUS = load.MAX_GPUS  # the most GPUs a load may have (advisor.model.load)
MAX_MS = 7 * 86_400_000.0  # a week: a phase that long is not a TTFT measurement

COLUMNS: tuple[str, ...] = (
    "point_id",
    "source",
    "source_ref",
    "platform",
    "engine",
    "engine_version",
    "model",
    "model_params_b",
    "gpus",
    "workload",
    "load_rps",
    "prompt_tokens",
    "cores",
    "cores_per_gpu",
    "metric",
    "value",
    "unit",
    "measured_on",
    "notes",
)
CALIBRATION_DIR_ENV = "ADVISOR_CALIBRATION_DIR"
SERIES_METRICS = ("ttft_ms", "ttft_p50_ms", "task_time_s")
SPEEDUP_METRICS = ("speedup",)
CENSORED_METRICS = ("timeout",)
# Platforms whose points are kept but never fitted: CPU-only runs (the launcher's tests).
NOT_FITTED_PLATFORMS = ("CPU",)
_FLOATS = ("model_params_b", "load_rps", "cores_per_gpu", "value")
_INTS = ("gpus", "prompt_tokens", "cores")


@dataclass(frozen=True)
class CalibrationPoint:
    """One row of the ``calibration`` table, and where it was read (``file:line`` or ``db``)."""

    point_id: str
    source: str
    source_ref: str | None
    platform: str | None
    engine: str | None
    engine_version: str | None
    model: str | None
    model_params_b: float | None
    gpus: int | None
    workload: str | None
    load_rps: float | None
    prompt_tokens: int | None
    cores: int | None
    cores_per_gpu: float | None
    metric: str
    value: float | None
    unit: str | None
    measured_on: dt.date | None
    notes: str | None
    origin: str = ""

    @property
    def source_kind(self) -> str:
        """``paper``, ``bench`` or what precedes the colon of ``source``."""
        return self.source.split(":", 1)[0].strip().lower()


@dataclass(frozen=True)
class LoadedPoints:
    """Every valid point, and one message per row left out (file:line, field, why)."""

    points: tuple[CalibrationPoint, ...]
    problems: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


def default_calibration_dir() -> Path:
    """``$ADVISOR_CALIBRATION_DIR`` or the shipped ``data/calibration`` (advisor.resources)."""
    env = os.environ.get(CALIBRATION_DIR_ENV)
    if env:
        return Path(env)
    return shipped_data("calibration")


def _text(raw: object) -> str | None:
    if raw is None:
        return None
    s = str(raw).strip()
    return s or None


def parse_row(row: dict[str, Any], source: str, line: int | None) -> CalibrationPoint:
    """Validate one row (strings from a CSV, or typed values from the DB); raise InputError."""

    def bad(fieldname: str, why: str) -> InputError:
        return InputError(why, source=source, line=line, field=fieldname)

    values: dict[str, Any] = {}
    for name in COLUMNS:
        raw = row.get(name)
        text = _text(raw)
        if name in _FLOATS or name in _INTS:
            whole = name in _INTS
            if text is None:
                values[name] = None
                continue
            try:
                num = float(text)
            except ValueError:
                raise bad(name, f"{text!r} is not a {'whole ' if whole else ''}number") from None
            if not math.isfinite(num) or (whole and num != int(num)):
                raise bad(name, f"{text!r} is not a {'whole' if whole else 'finite'} number")
            values[name] = int(num) if whole else num
        elif name == "measured_on":
            if raw is None or isinstance(raw, dt.date):
                values[name] = raw
            elif text is None:
                values[name] = None
            else:
                try:
                    values[name] = dt.date.fromisoformat(text)
                except ValueError:
                    raise bad(name, f"{text!r} is not a date (YYYY-MM-DD)") from None
        else:
            values[name] = text
    for required in ("point_id", "source", "metric"):
        if values[required] is None:
            raise bad(required, "is empty; every point needs it")
    for positive in ("gpus", "cores", "cores_per_gpu", "model_params_b", "prompt_tokens"):
        v = values[positive]
        if v is not None and v <= 0:
            raise bad(positive, f"must be positive, got {v}")
    if values["load_rps"] is not None and values["load_rps"] < 0:
        raise bad("load_rps", f"must be >= 0, got {values['load_rps']}")
    cores, gpus, cpg = values["cores"], values["gpus"], values["cores_per_gpu"]
    if cpg is None and cores is not None and gpus:
        values["cores_per_gpu"] = cores / gpus
    elif cpg is not None and cores is not None and gpus and abs(cpg - cores / gpus) > 0.01 * cpg:
        raise bad("cores_per_gpu", f"{cpg} disagrees with cores/gpus = {cores}/{gpus}")
    metric = values["metric"]
    fitted = metric in SERIES_METRICS + SPEEDUP_METRICS + CENSORED_METRICS
    if fitted:
        if values["cores_per_gpu"] is None:
            raise bad("cores_per_gpu", f"a {metric} point needs cores_per_gpu (or cores and gpus)")
        if values["value"] is None or values["value"] <= 0:
            raise bad("value", f"a {metric} point needs a positive value")
        if values["unit"] == "ms" and values["value"] > MAX_MS:
            raise bad("value", f"{values['value']:g} ms is over a week: not a {metric}")
    for name, most in (("cores", MAX_CORES), ("gpus", MAX_GPUS)):
        if values[name] is not None and values[name] > most:
            raise bad(name, f"{values[name]} is over {most:,}")
    if values["platform"] is not None:
        from advisor.gputypes import canonical_gpu_type

        values["platform"] = canonical_gpu_type(values["platform"])
    origin = source if line is None else f"{source}:{line}"
    return CalibrationPoint(**values, origin=origin)


def read_csv(path: Path) -> tuple[list[CalibrationPoint], list[str]]:
    """Points of one CSV file and the problems of its rows; a bad header fails the whole file."""
    problems: list[str] = []
    points: list[CalibrationPoint] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected {', '.join(extra)}")
            raise InputError(
                "header must have exactly the calibration table's columns ("
                + "; ".join(parts)
                + ")",
                source=str(path),
                line=1,
                field=(missing or extra)[0],
            )
        for row in reader:
            line = reader.line_num
            if None in row:
                problems.append(
                    str(
                        InputError(
                            f"{len(header) + len(row[None])} fields where the header has {len(header)}",
                            source=str(path),
                            line=line,
                        )
                    )
                )
                continue
            try:
                points.append(parse_row(row, str(path), line))
            except InputError as exc:
                problems.append(str(exc))
    return points, problems


def read_db(db: str | os.PathLike[str]) -> tuple[list[CalibrationPoint], list[str]]:
    """Points stored in the database's ``calibration`` table (by ``advisor bench collect``)."""
    from advisor.store import connect, query

    con = connect(db, read_only=True)
    try:
        cur = con.execute(query("model/calibration_points"))
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    points, problems = [], []
    for r in rows:
        rec = dict(zip(names, r, strict=True))
        try:
            points.append(parse_row(rec, f"db calibration point {rec.get('point_id')}", None))
        except InputError as exc:
            problems.append(str(exc))
    return points, problems


def load_points(
    calibration_dir: str | os.PathLike[str] | None = None,
    db: str | os.PathLike[str] | None = None,
) -> LoadedPoints:
    """Every point of ``calibration_dir/*.csv`` plus, when ``db`` exists, the DB's table.

    A point_id seen twice keeps its first occurrence (files in name order, then the DB) and
    reports the second.
    """
    directory = Path(calibration_dir) if calibration_dir else default_calibration_dir()
    if not directory.is_dir():
        raise NotFoundError(f"{directory}: no calibration directory")
    all_points: list[CalibrationPoint] = []
    problems: list[str] = []
    sources: list[str] = []
    for path in sorted(directory.glob("*.csv")):
        pts, probs = read_csv(path)
        all_points.extend(pts)
        problems.extend(probs)
        sources.append(str(path))
    if db is not None and Path(db).exists():
        pts, probs = read_db(db)
        all_points.extend(pts)
        problems.extend(probs)
        sources.append(f"db:{db}")
    seen: dict[str, str] = {}
    unique: list[CalibrationPoint] = []
    for p in all_points:
        if p.point_id in seen:
            problems.append(
                f"{p.origin}, field point_id: {p.point_id!r} already read at "
                f"{seen[p.point_id]}; this one is left out"
            )
            continue
        seen[p.point_id] = p.origin
        unique.append(p)
    return LoadedPoints(tuple(unique), tuple(problems), tuple(sources))


def point_rows(loaded: LoadedPoints) -> list[dict[str, Any]]:
    """The points as plain rows (the columns of the table, plus where each was read)."""
    names = [f.name for f in fields(CalibrationPoint)]
    return [{n: getattr(p, n) for n in names} for p in loaded.points]
