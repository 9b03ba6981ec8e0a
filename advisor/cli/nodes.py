"""`advisor nodes ingest|list`: the node inventory (CPUs, GPUs and GPU type per node), which
bounds the cores per GPU a partition can give."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_json, emit_rows

nodes_app = typer.Typer(help="Node inventory from `scontrol show node -o`.", no_args_is_help=True)


@nodes_app.command("ingest")
def nodes_ingest(
    file: Annotated[
        str | None,
        # described in the docstring: typer 0.29 prints an argument's Python type in help
        typer.Argument(metavar="FILE", hidden=True, show_default=False),
    ] = None,
    live: Annotated[
        bool, typer.Option("--live", help="Run `scontrol show node -o` on this host.")
    ] = False,
    cluster: Annotated[
        str | None,
        typer.Option(
            metavar="NAME", help="The cluster these nodes belong to (as your jobs name it)."
        ),
    ] = None,
    gpu_types: Annotated[
        str | None,
        typer.Option(metavar="FILE", help="A site GPU type mapping (JSON: raw name -> family)."),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Load a node inventory (CPUs, GPUs and GPU type, partitions) into the database.

    FILE holds `scontrol show node -o` output; --live runs that command on this host instead.
    """
    from advisor import store
    from advisor.cli._output import RichProgress
    from advisor.ingest import nodes

    cfg = nodes.NodeIngestConfig(path=file, live=live, cluster=cluster, gpu_types=gpu_types)
    con = store.connect(db)
    try:
        with RichProgress() as progress:
            result = nodes.ingest_nodes(con, cfg, progress)
    finally:
        con.close()
    for r in result.rejects:
        sys.stderr.write(f"Rejected: {r.message()}\n")
    summary = {
        "source": result.source,
        "clusters": ",".join(result.clusters),
        "lines_read": result.lines_read,
        "nodes": result.nodes_read,
        "inserted": result.inserted,
        "updated": result.updated,
        "rejected": result.rejected,
    }
    if fmt is OutputFormat.json:
        emit_json({**summary, "clusters": list(result.clusters)})
    else:
        emit_rows([summary], fmt)
    if result.rejected and not result.nodes_read:
        from advisor.errors import InputError

        raise InputError(
            f"every node line ({result.rejected}) was rejected, nothing loaded; "
            "give `scontrol show node -o` output (one node per line)",
            source=result.source,
        )


@nodes_app.command("list")
def nodes_list(
    cluster: Annotated[str | None, typer.Option(metavar="NAME", help="Only this cluster.")] = None,
    types: Annotated[
        bool,
        typer.Option(
            "--types", help="One row per GPU node type, with its fair share of cores per GPU."
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """The node inventory, or (--types) its GPU node types and their cores per GPU."""
    from advisor import store
    from advisor.cli._output import to_plain

    con = store.connect(db, read_only=True)
    try:
        if types:
            from advisor.ratios import fair_share

            rows = to_plain(fair_share(con, cluster))
        else:
            from advisor.ingest.nodes import list_nodes

            rows = to_plain(list_nodes(con, cluster))
    finally:
        con.close()
    if fmt is not OutputFormat.json:  # one cell: gpu,debug
        rows = [{**r, "partitions": ",".join(r["partitions"])} for r in rows]
    emit_rows(rows, fmt)


def register(app: typer.Typer) -> None:
    """Add this command group to the app."""
    app.add_typer(nodes_app, name="nodes")
