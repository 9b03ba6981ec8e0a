"""Options shared by the commands that publish a month's figures (``report``, ``metrics``):
the fitted curve and the prices they judge jobs against, read as paths, so each is spelled and
explained once. (``fit``/``recommend`` take theirs from ``_curve_options``, with the
``$ADVISOR_MODEL`` fallback these two do not have.)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

PublishedFitFileOption = Annotated[
    Path | None,
    typer.Option(
        "--fit-file",
        metavar="FILE",
        help="Fitted model JSON from `advisor fit --output` (default: the shipped one).",
    ),
]
PublishedPricingOption = Annotated[
    Path | None,
    typer.Option("--pricing", metavar="FILE", help="Site prices CSV over the built-in AWS ones."),
]
