"""`advisor policy export`: the CPU-per-GPU rules for Slurm's Lua plugins or slurm.conf."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from advisor.cli._curve_options import (
    FitFileOption,
    ModelSizeOption,
    PrefixHitOption,
    PricingOption,
    PromptTokensOption,
    RpsOption,
    WorkloadOption,
)
from advisor.cli._output import DbOption

policy_app = typer.Typer(
    help="The CPU-per-GPU policy for Slurm's Lua plugins.", no_args_is_help=True
)


class PolicyFormat(StrEnum):
    lua = "lua"
    json = "json"
    slurm_conf = "slurm.conf"


class PolicyMode(StrEnum):
    advise = "advise"
    set_default_when_unset = "set-default-when-unset"
    enforce_minimum = "enforce-minimum"


@policy_app.command("export")
def policy_export_cmd(
    fmt: Annotated[
        PolicyFormat,
        typer.Option(
            "--format",
            "-f",
            metavar="[lua|json|slurm.conf]",
            help="lua (for the plugins), json, or slurm.conf lines.",
        ),
    ] = PolicyFormat.lua,
    mode: Annotated[
        PolicyMode,
        typer.Option(
            "--mode",
            metavar="[advise|set-default-when-unset|enforce-minimum]",
            help="What the plugins do with the rules.",
        ),
    ] = PolicyMode.set_default_when_unset,
    tolerance: Annotated[
        float,
        typer.Option(
            "--tolerance",
            metavar="FRACTION",
            help="Default cores: TTFT within this of ample cores.",
        ),
    ] = 0.10,
    min_tolerance: Annotated[
        float,
        typer.Option(
            "--min-tolerance",
            metavar="FRACTION",
            help="Minimum cores: TTFT within this of ample cores.",
        ),
    ] = 0.50,
    model_size: ModelSizeOption = None,
    rps: RpsOption = None,
    prompt_tokens: PromptTokensOption = None,
    prefix_hit: PrefixHitOption = None,
    workload_name: WorkloadOption = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write here instead of stdout (written whole, then renamed into place).",
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="NAME",
            help="That cluster's partitions only (slurm.conf without it: one block a cluster).",
        ),
    ] = None,
    db: DbOption = None,
    pricing: PricingOption = None,
    fit_file: FitFileOption = None,
) -> None:
    """Export min/default cores per GPU per partition and GPU type for the Lua plugins."""
    from advisor.cli._output import RichProgress
    from advisor.cli._parse import warn_missing_db, warn_stale_data

    warn_missing_db(db, "rules for every GPU family, none for a partition")
    from advisor.policy import (
        Mode,
        PolicyConfig,
        build_policies,
        build_policy,
        check_cluster,
        clusters_of,
        slurm_conf_unwritable,
        to_json,
        to_lua,
        to_slurm_conf,
    )
    from advisor.recommend import RecommendContext, Workload, parse_model_size

    config = PolicyConfig(
        mode=Mode(mode.value),
        tolerance=tolerance,
        min_tolerance=min_tolerance,
        workload=Workload(
            parse_model_size(model_size), rps, prompt_tokens, prefix_hit, workload_name
        ),
        db=db,
        cluster=cluster,
    )
    with (
        RecommendContext.open(db=db, fit_file=fit_file, pricing_file=pricing) as ctx,
        RichProgress() as progress,
    ):
        if fmt is PolicyFormat.slurm_conf:  # slurm.conf is per cluster: a block for each
            policies = build_policies(config, progress, ctx)
        else:
            check_cluster(ctx, cluster)
            policies = [(cluster, build_policy(config, progress, ctx))]
            held = clusters_of(ctx)
            if cluster is None and len(held) > 1:
                sys.stderr.write(
                    f"Warning: the database holds {len(held)} clusters ({', '.join(held)}); "
                    "these rules merge their partitions: export each cluster's plugin policy "
                    "with --cluster NAME\n"
                )
    if fmt is PolicyFormat.slurm_conf:
        text = "\n".join(to_slurm_conf(p, c) for c, p in policies)
        for _, p in policies:  # ascii(): a name is data, not terminal codes
            for name in slurm_conf_unwritable(p):
                sys.stderr.write(
                    f"Warning: partition {ascii(name)} skipped: slurm.conf cannot carry "
                    "its name (letters, digits, _ . - only; not DEFAULT)\n"
                )
    else:
        text = (to_lua if fmt is PolicyFormat.lua else to_json)(policies[0][1])
    warn_stale_data(db)  # once the policy is built: an error stays one line
    if output is None:
        sys.stdout.write(text)
        return
    import os
    from pathlib import Path

    target = Path(output)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)  # the plugins never read a half-written file
    rules = sum(len(p.rules) for _, p in policies)
    sys.stderr.write(f"wrote {rules} rules to {target}\n")


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.add_typer(policy_app, name="policy")
