"""The options of ``advisor bench run``, one alias each, so the command reads as the list of
what it takes; each is spelled and explained here once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Cores = Annotated[
    str, typer.Option(metavar="N,...", help="Engine core counts, comma-separated: 2,4,8,16.")
]

Out = Annotated[Path, typer.Option(metavar="DIR", help="Folder for the per-run JSON results.")]

Engine = Annotated[
    str,
    typer.Option(metavar="NAME", help="vllm | sglang | transformers | stub (built-in commands)."),
]

EngineCmd = Annotated[
    str | None,
    typer.Option(
        metavar="TEMPLATE",
        help="Command template for any OpenAI-compatible server: placeholders {model} {port} {host} {tp} {cores} {python}.",
    ),
]

EngineArg = Annotated[
    list[str] | None,
    typer.Option(
        metavar="ARG",
        help="Extra engine argument (repeatable), e.g. --engine-arg=--load-format --engine-arg=dummy.",
    ),
]

EngineEnv = Annotated[
    list[str] | None,
    typer.Option(metavar="KEY=VALUE", help="KEY=VALUE for the engine's environment (repeatable)."),
]

Tp = Annotated[int, typer.Option(metavar="N", help="Tensor-parallel size (GPUs).")]

Workload = Annotated[
    str,
    typer.Option(metavar="NAME,...", help="unique, shared-prefix, or both comma-separated."),
]

AttackerRps = Annotated[
    str,
    typer.Option(metavar="RATE,...", help="Attacker rates (requests/s), comma-separated: 8,16."),
]

AttackerTokens = Annotated[
    str, typer.Option(metavar="MIN:MAX", help="Attacker prompt tokens MIN:MAX.")
]

AttackerOutputTokens = Annotated[int, typer.Option(metavar="N", help="Attacker output tokens.")]

VictimRps = Annotated[float, typer.Option(metavar="RATE", help="Victim rate (requests/s).")]

VictimTokens = Annotated[int, typer.Option(metavar="N", help="Victim prompt tokens.")]

VictimOutputTokens = Annotated[int, typer.Option(metavar="N", help="Victim output tokens.")]

Duration = Annotated[float, typer.Option(metavar="SECONDS", help="Seconds of load per phase.")]

Timeout = Annotated[
    float,
    typer.Option(metavar="SECONDS", help="Seconds after which a request counts as timed out."),
]

Repeats = Annotated[int, typer.Option(metavar="N", help="Repeats of each phase (report medians).")]

ConversationTurns = Annotated[
    int, typer.Option(metavar="N", help="shared-prefix: turns per conversation.")
]

Seed = Annotated[int, typer.Option(metavar="N", help="Seed of arrivals and prompts.")]

Tag = Annotated[str, typer.Option(metavar="TEXT", help="Label prefixed to run ids.")]

ModelName = Annotated[
    str | None,
    typer.Option(metavar="NAME", help="Model name sent in requests (default: --model)."),
]

Port = Annotated[int, typer.Option(metavar="PORT", help="Engine port (0: a free one).")]

TokenizeProbe = Annotated[bool, typer.Option(help="Measure tokenization under the same cores.")]

RetryFailed = Annotated[bool, typer.Option(help="Rerun points whose result is not ok.")]

DryRun = Annotated[bool, typer.Option(help="Print the plan and engine commands; start nothing.")]

TailTokens = Annotated[
    int, typer.Option(help="tokenize-heavy: unique tokens after the shared document.")
]

Repin = Annotated[
    bool,
    typer.Option(help="One engine start serves every core count, re-pinned before each phase."),
]

Starts = Annotated[
    int, typer.Option(help="With --repin: engine starts; repeat r runs in start (r-1) % N.")
]

Order = Annotated[str, typer.Option(help="random | given: the order of core counts.")]

Noload = Annotated[float, typer.Option(help="Seconds of victims alone at each start (0: skip).")]

FindRate = Annotated[
    str,
    typer.Option(
        help="Workloads whose attacker rate is found first at the most cores (ladder), "
        "then run at --rate-fractions of it, e.g. tokenize-heavy."
    ),
]

RateFractions = Annotated[
    str, typer.Option(help="Shares of the found rate to run at, e.g. 0.4,0.8.")
]

RateLadder = Annotated[str, typer.Option(help="Attacker rates the ladder tries, in order.")]

LadderStep = Annotated[float, typer.Option(help="Seconds per ladder step.")]

SaturationFactor = Annotated[
    float, typer.Option(help="Ladder: victim TTFT p50 over no-load that means saturated.")
]

GpuBoundFactor = Annotated[
    float,
    typer.Option(
        help="Flag gpu-bound when victim TTFT p50 at the most cores passes this x no-load."
    ),
]

MaxFailed = Annotated[
    float, typer.Option(help="Flag a run with more than this share of failed requests.")
]

Executor = Annotated[
    str,
    typer.Option(
        metavar="mp|uni",
        help="vLLM's --distributed-executor-backend (mp: one busy-waiting GPU worker "
        "process, as each TP > 1 worker; uni: the engine core drives the GPU). Part of the "
        "series' identity. Default: vLLM's own (uni on one GPU).",
    ),
]

BudgetMinutes = Annotated[
    float,
    typer.Option(
        help="With --repin: add repeats until every curve's knee is resolved or this many "
        "minutes are spent (0: exactly --repeats)."
    ),
]

Levels = Annotated[
    str,
    typer.Option(
        help="Workloads run at demand levels chosen from a ladder's measured CPU at the "
        "most cores (light, medium, heavy), e.g. tokenize-heavy."
    ),
]

LevelNames = Annotated[
    str, typer.Option(help="Which levels to run: light,medium,heavy or a subset.")
]
