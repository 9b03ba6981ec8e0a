"""Calibration series: what makes points one measured curve, its configuration family, its knee.

A *series* is one curve over core counts measured in one campaign: the points of one source
kind, platform, engine and version, model, GPUs, **TP, executor, renderer workers and engine
arguments**, workload, load, prompt tokens, metric and measurement day. A published speedup or
a timeout is a series of its own.

The configuration beyond the table's columns rides in the ``workload`` label as ``/`` tags
(data/calibration/README.md): ``rwN`` renderer workers, ``mp`` or ``uni`` the executor,
``tpN`` the tensor-parallel size (default: the GPUs), any other tag an engine argument that
changes CPU use (e.g. ``tokenize-heavy/rw4/mp``); or, for points ``advisor bench collect``
wrote, in the ``series=ID tp=N executor=X renderer_workers=N`` head of their notes
(:func:`identity_of_notes`), which fills what the tags do not say.

A series' *configuration family* is what a recommendation's evidence is matched on: the
engine, GPUs, TP and executor (:func:`family`). Platform, model, workload, load and prompt
length vary within a family: they are the demand model's inputs, not its identity.

The measured knee of a series is :func:`advisor.model.knee.measure_knee` on its phases: the value of
each (engine start, repeat) block at each core count.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from advisor.model.calibration.points import (
    CENSORED_METRICS,
    SPEEDUP_METRICS,
    CalibrationPoint,
)
from advisor.model.demand import family


@dataclass(frozen=True)
class WorkloadTags:
    """A workload label split into its base name and the configuration its tags carry."""

    base: str | None
    renderer_workers: int | None
    executor: str | None  # "mp", "uni" or None (vLLM's default for the TP)
    tp: int | None
    engine_tags: tuple[str, ...]


def parse_workload(label: str | None) -> WorkloadTags:
    """``tokenize-heavy/rw4/mp`` -> base ``tokenize-heavy``, 4 renderer workers, executor mp."""
    if not label:
        return WorkloadTags(None, None, None, None, ())
    base, *tags = [t.strip() for t in label.split("/")]
    rw = tp = None
    executor = None
    other = []
    for t in tags:
        low = t.lower()
        if low.startswith("rw") and low[2:].isdigit() and int(low[2:]) > 0:
            rw = int(low[2:])
        elif low.startswith("tp") and low[2:].isdigit() and int(low[2:]) > 0:
            tp = int(low[2:])
        elif low in ("mp", "uni"):
            executor = low
        elif low:
            other.append(low)
    return WorkloadTags(base or None, rw, executor, tp, tuple(sorted(other)))


def identity_of_notes(notes: str | None) -> dict[str, str]:
    """The ``key=value`` identity fields at the start of a calibration point's notes (empty
    when the point has none, e.g. points from other tools)."""
    head = (notes or "").split(";", 1)[0]
    if not head.startswith("series="):
        return {}
    out = {}
    for word in head.split(" "):
        key, sep, value = word.partition("=")
        if sep:
            out[key] = value
    return out


def executor_of(tp: int, executor: str | None) -> str:
    """The executor a server ran: given, else vLLM's default (multiprocess when TP > 1)."""
    if tp > 1:
        return "mp"
    return executor or "uni"


@dataclass(frozen=True)
class SeriesConfig:
    """The configuration a point measured (its series, whatever the metric)."""

    source_kind: str
    platform: str | None
    engine: str | None
    engine_version: str | None
    model: str | None
    gpus: int
    tp: int
    executor: str
    renderer_workers: int
    engine_tags: tuple[str, ...]
    workload: str | None  # the full label, tags included
    load_rps: float | None
    prompt_tokens: int | None
    measured_on: dt.date | None

    @property
    def family(self) -> str:
        return family(self.engine, self.gpus, self.tp, self.executor)


def _positive_int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() and int(text) > 0 else None


def config_of(p: CalibrationPoint) -> SeriesConfig:
    tags = parse_workload(p.workload)
    noted = identity_of_notes(p.notes)
    gpus = p.gpus or 1
    tp = min(tags.tp or _positive_int(noted.get("tp")) or gpus, gpus)
    executor = tags.executor or (
        noted.get("executor") if noted.get("executor") in ("mp", "uni") else None
    )
    return SeriesConfig(
        p.source_kind,
        p.platform,
        p.engine,
        p.engine_version,
        p.model,
        gpus,
        tp,
        executor_of(tp, executor),
        tags.renderer_workers or _positive_int(noted.get("renderer_workers")) or 1,
        tags.engine_tags,
        p.workload,
        p.load_rps,
        p.prompt_tokens,
        p.measured_on,
    )


def series_key(p: CalibrationPoint) -> tuple[Any, ...]:
    """What makes points one series: the configuration and the metric."""
    return (config_of(p), p.metric)


def series_id(p: CalibrationPoint) -> str:
    """A series' readable id (a published speedup or timeout: its point id)."""
    if p.metric in SPEEDUP_METRICS + CENSORED_METRICS:
        return p.point_id
    c = config_of(p)
    parts = [
        c.source_kind,
        c.platform or "?",
        c.engine_version or "?",
        c.model or "?",
        f"{c.gpus}gpu",
        f"tp{c.tp}",
        c.executor,
        c.workload or "?",
        f"{c.load_rps if c.load_rps is not None else '?'}rps",
        f"{c.prompt_tokens or '?'}tok",
    ]
    if c.measured_on is not None:
        parts.append(c.measured_on.isoformat())
    return "|".join(str(x) for x in parts)


_REPEAT = re.compile(r"_r(\d+)$")
_START = re.compile(r"\bstart (\d+)\b")


def block_of(p: CalibrationPoint) -> tuple[str, str]:
    """(engine start, repeat) of a bench point: the repeat from its run id's ``_rN``, the start
    from ``start N`` in its notes (1 when not recorded); a point without either (a published
    figure) is one block with the rest of its series: no repeats, no interval."""
    m = _REPEAT.search(p.source or "")
    s = _START.search(p.notes or "")
    if m is None:
        return ("1", "1")
    return (s.group(1) if s else "1", m.group(1))


@dataclass(frozen=True)
class SeriesInfo:
    """One measured series: its configuration, what it measured, and its knee.

    ``slowdowns`` are the geometric means over repeats at each core count, against the
    series' reference (its largest core count; a published speedup: 8 cores per GPU).
    ``knee_status`` is :mod:`advisor.model.knee`'s (``resolved``, ``no effect``, ``not resolved``).
    """

    series_id: str
    config: SeriesConfig
    model_params_b: float | None
    prefix_hit: float
    ref_cores: float | None
    cores: tuple[float, ...]  # total cores measured (ascending)
    slowdowns: tuple[float, ...]
    censored: bool = False
    knee_status: str = "not resolved"
    knee_cores: int | None = None
    knee_reason: str = ""
    test: bool = False  # in the frozen test split

    # the fields older code read directly
    @property
    def source_kind(self) -> str:
        return self.config.source_kind

    @property
    def platform(self) -> str | None:
        return self.config.platform

    @property
    def gpus(self) -> int:
        return self.config.gpus

    @property
    def load_rps(self) -> float | None:
        return self.config.load_rps

    @property
    def prompt_tokens(self) -> int | None:
        return self.config.prompt_tokens

    @property
    def resolved(self) -> bool:
        """Whether the data say where the knee is (an effect resolved, or none at all)."""
        return self.knee_cores is not None and self.knee_status in ("resolved", "no effect")

    def as_evidence(self) -> dict[str, Any]:
        c = self.config
        return {
            "series": self.series_id,
            "family": c.family,
            "source_kind": c.source_kind,
            "platform": c.platform,
            "engine_version": c.engine_version,
            "model_params_b": self.model_params_b,
            "gpus": c.gpus,
            "tp": c.tp,
            "executor": c.executor,
            "renderer_workers": c.renderer_workers,
            "workload": c.workload,
            "load_rps": c.load_rps,
            "prompt_tokens": c.prompt_tokens,
            "measured_on": c.measured_on.isoformat() if c.measured_on else None,
            "prefix_hit": round(self.prefix_hit, 3),
            "cores": list(self.cores),
            "slowdowns": [round(s, 3) for s in self.slowdowns],
            "knee_status": self.knee_status,
            "knee_cores": self.knee_cores,
            "test_split": self.test,
        }
