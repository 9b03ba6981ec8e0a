"""``advisor metrics``: Prometheus text exposition to stdout, a textfile, or served on a port."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli._output import DbOption, emit_json
from advisor.cli._published_options import PublishedFitFileOption, PublishedPricingOption
from advisor.cli.export import ParquetOption


class MetricsFormat(StrEnum):
    prometheus = "prometheus"
    json = "json"


def metrics_cmd(
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write to this file (node_exporter textfile, e.g. *.prom)."),
    ] = None,
    serve: Annotated[
        int | None, typer.Option("--serve", help="Serve /metrics on this port until interrupted.")
    ] = None,
    address: Annotated[
        str, typer.Option("--address", help="Address to serve on (0.0.0.0 for every interface).")
    ] = "127.0.0.1",
    month: Annotated[
        str | None,
        typer.Option(
            "--month", help="YYYY-MM or 'last' (default: the newest month with GPU jobs)."
        ),
    ] = None,
    model: PublishedFitFileOption = None,
    pricing: PublishedPricingOption = None,
    fmt: Annotated[
        MetricsFormat,
        typer.Option("--format", "-f", help="prometheus (text exposition) or json (samples)."),
    ] = MetricsFormat.prometheus,
    db: DbOption = None,
    parquet: ParquetOption = None,
) -> None:
    """Cores per GPU (P25/P50), share below the recommendation, GPU-hours lost and their cost per
    cluster, partition and GPU type; data freshness and ingest rejects, as Prometheus metrics."""
    from advisor import metrics
    from advisor.errors import UsageError

    cfg = metrics.MetricsConfig(
        db=db, parquet=parquet, month=month, model_file=model, pricing_file=pricing
    )
    if out is not None and serve is not None:
        raise UsageError("give --out FILE or --serve PORT, not both")
    if fmt is MetricsFormat.json and (out is not None or serve is not None):
        raise UsageError("--format json prints to stdout; --out and --serve write Prometheus text")
    if serve is not None:
        sys.stderr.write(f"Serving metrics on http://{address}:{serve}/metrics\n")
        metrics.serve(cfg, serve, address)  # Ctrl-C: run_guarded says "Interrupted", exit 130
        return
    if fmt is MetricsFormat.json:
        emit_json(metrics.families_as_rows(metrics.collect_config(cfg)))
        return
    if out is not None:
        metrics.write_textfile(cfg, out)
        return
    sys.stdout.write(metrics.exposition(cfg))


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.command("metrics")(metrics_cmd)
