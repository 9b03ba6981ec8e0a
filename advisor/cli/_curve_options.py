"""Options shared by the commands that read the fitted curve and the prices (``fit``,
``recommend``, ``policy export``, ``calibration list``) or the wait threshold (``bench curve``,
``pressure curve``, ``pressure link``), so each is spelled and explained once."""

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


ModelSizeOption = Annotated[
    str | None,
    typer.Option(
        "--model-size",
        metavar="SIZE",
        help="Model size, e.g. 8b, 70b (default: the model's reference, 8b).",
    ),
]
RpsOption = Annotated[
    float | None, typer.Option("--rps", metavar="RATE", help="Requests per second (default 8).")
]
PromptTokensOption = Annotated[
    int | None,
    typer.Option(
        "--prompt-tokens", metavar="N", help="Typical prompt length in tokens (default 16384)."
    ),
]
ExecutorOption = Annotated[
    str | None,
    typer.Option(
        "--executor",
        metavar="mp|uni",
        help="vLLM's executor: uni (in-process, the default for TP=1) or mp (a "
        "busy-waiting worker process per GPU; implied for TP > 1).",
    ),
]
# One definition of enough cores; each command's core function checks the value
# (advisor.model.waitknee.check_max_wait).
MaxWaitOption = Annotated[
    float,
    typer.Option(
        "--max-wait",
        metavar="SHARE",
        help="Enough cores: the engine core and the API server wait for a CPU at most this "
        "share of the time (0-1; the wait model, docs/model.md).",
    ),
]
