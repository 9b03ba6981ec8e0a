"""Options shared by the commands that read the fitted curve and the prices (``fit``,
``recommend``, ``policy export``, ``calibration list``), so each is spelled and explained once."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

PricingOption = Annotated[
    str | None,
    typer.Option(
        "--pricing",
        metavar="FILE",
        help="CSV of the site's own prices (columns: "
        "docs/model.md); its rows win over the built-in AWS table.",
    ),
]
# Named --fit-file, not --model: in `bench run`, --model is the served model's directory.
FitFileOption = Annotated[
    str | None,
    typer.Option(
        "--fit-file",
        metavar="FILE",
        envvar="ADVISOR_MODEL",
        show_envvar=False,
        help="Fitted model JSON from `advisor fit --output` (default: $ADVISOR_MODEL, "
        "else the shipped one).",
    ),
]
TpOption = Annotated[
    int | None,
    typer.Option(
        "--tp",
        metavar="N",
        help="Tensor-parallel size (default: --gpus); with TP > 1 each GPU "
        "worker busy-waits on a core.",
    ),
]
PrefixHitOption = Annotated[
    float | None,
    typer.Option(
        "--prefix-hit",
        metavar="SHARE",
        help="Share of prompt tokens served from the prefix cache, "
        "0..1 (default: from --workload, else 0).",
    ),
]
GpuBusyOption = Annotated[
    float | None,
    typer.Option(
        "--gpu-busy",
        metavar="SHARE",
        help="Share of the time the GPUs compute at this load, 0..1 (nvidia-smi or DCGM "
        "utilisation of the serving jobs): the mp engine core's CPU follows it (default: 1, "
        "a busy GPU, as a serving job is sized).",
    ),
]
WorkloadOption = Annotated[
    str | None,
    typer.Option(
        "--workload",
        metavar="NAME",
        help="tokenize-heavy (a shared long document: ~0.95 prefix "
        "hits), unique (no hits: GPU-heavy) or shared-prefix (a conversation).",
    ),
]
RendererOption = Annotated[
    int | None,
    typer.Option(
        "--renderer-workers",
        metavar="N",
        help="The API server's tokenizer workers (vLLM renderer_num_workers; default 1).",
    ),
]
EngineVersionOption = Annotated[
    str | None,
    typer.Option(
        "--engine-version",
        metavar="VERSION",
        help="Engine version, e.g. 0.26.0 (to pick the nearest measured series).",
    ),
]
CalibrationDirOption = Annotated[
    str | None,
    typer.Option(
        "--calibration-dir",
        metavar="DIR",
        help="Folder of calibration CSVs "
        "(default: $ADVISOR_CALIBRATION_DIR, else data/calibration).",
    ),
]


def _warn(messages: Any) -> None:
    for m in messages:
        sys.stderr.write(f"Warning: {m}\n")
