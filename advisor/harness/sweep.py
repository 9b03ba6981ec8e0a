"""``advisor bench sweep --slurm``: calibrating on a cluster's own GPU nodes through Slurm.

One batch script holds the core counts as an array; each array task runs ``advisor bench run``
for its core count inside its own allocation (the runner pins the engine to cores of that
allocation and the load generator to the extra ``client_cores``). Slurm cannot give tasks of
one array different ``--cpus-per-task``, so the script is submitted once per core count, each
time as a one-task array (``--array=I``) with that task's ``--cpus-per-task`` on the sbatch
command line, which overrides the script's ``#SBATCH`` default. Submission uses an argument
list (never a shell), and every value written into the script is shell-quoted.
``advisor bench collect OUT/results`` gathers what the tasks wrote.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import ExternalToolError, UsageError


@dataclass(frozen=True)
class SweepConfig:
    model: str
    cores: tuple[int, ...]
    out_dir: Path
    gpus: int = 1
    client_cores: int = 1
    partition: str | None = None
    account: str | None = None
    gpu_type: str | None = None
    time_limit: str = "02:00:00"
    mem: str | None = None
    run_args: str = ""
    advisor_cmd: str = "advisor"
    submit: bool = False
    dry_run: bool = False
    job_name: str = "advisor-bench"


@dataclass(frozen=True)
class SweepResult:
    script: str
    script_path: str | None
    sbatch_commands: tuple[tuple[str, ...], ...]
    job_ids: tuple[str, ...]

    def summary(self) -> dict[str, object]:
        return {
            "script": self.script_path,
            "tasks": len(self.sbatch_commands),
            "submitted": ", ".join(self.job_ids) if self.job_ids else "",
            "sbatch": "; ".join(shlex.join(c) for c in self.sbatch_commands),
        }


def _check(cfg: SweepConfig) -> None:
    if not cfg.cores or any(c < 1 for c in cfg.cores):
        raise UsageError("--cores: give positive core counts, e.g. 2,4,8,16")
    if cfg.gpus < 1:
        raise UsageError(f"--gpus {cfg.gpus}: a benchmark task needs at least one GPU")
    if cfg.client_cores < 0:
        raise UsageError(f"--client-cores {cfg.client_cores}: cannot be negative")
    try:
        shlex.split(cfg.run_args)
        shlex.split(cfg.advisor_cmd)
    except ValueError as exc:
        raise UsageError(f"--run-args / --advisor-cmd: {exc}") from exc


def render_script(cfg: SweepConfig) -> str:
    """The batch script (bash) for the whole sweep."""
    _check(cfg)
    q = shlex.quote
    out = cfg.out_dir
    gres = f"{cfg.gpu_type}:{cfg.gpus}" if cfg.gpu_type else str(cfg.gpus)
    lines = [
        "#!/bin/bash",
        "# advisor bench sweep: one array task per engine core count (advisor bench run inside).",
        f"#SBATCH --job-name={cfg.job_name}",
        f"#SBATCH --array=0-{len(cfg.cores) - 1}",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        f"#SBATCH --cpus-per-task={max(cfg.cores) + cfg.client_cores}",
        f"#SBATCH --gpus={gres}",
        f"#SBATCH --time={cfg.time_limit}",
        f"#SBATCH --output={out}/logs/%x-%A_%a.out",
    ]
    if cfg.partition:
        lines.append(f"#SBATCH --partition={cfg.partition}")
    if cfg.account:
        lines.append(f"#SBATCH --account={cfg.account}")
    if cfg.mem:
        lines.append(f"#SBATCH --mem={cfg.mem}")
    cores = " ".join(str(c) for c in cfg.cores)
    advisor = " ".join(q(a) for a in shlex.split(cfg.advisor_cmd))
    extra = " ".join(q(a) for a in shlex.split(cfg.run_args))
    lines += [
        "set -euo pipefail",
        f"CORES=({cores})",
        "C=${CORES[$SLURM_ARRAY_TASK_ID]}",
        'echo "task $SLURM_ARRAY_TASK_ID: $C engine cores of ${SLURM_CPUS_PER_TASK:-?} allocated'
        ' on $(hostname)"',
        f"mkdir -p {q(str(out / 'results'))}",
        f'exec {advisor} bench run --model {q(cfg.model)} --tp {cfg.gpus} --cores "$C" '
        f"--client-cores {cfg.client_cores} --out {q(str(out / 'results'))} --format json"
        + (f" {extra}" if extra else ""),
        "",
    ]
    return "\n".join(lines)


def sbatch_commands(cfg: SweepConfig, script_path: Path) -> list[tuple[str, ...]]:
    """One sbatch argument list per core count: its array index and its --cpus-per-task."""
    return [
        (
            "sbatch",
            "--parsable",
            f"--array={i}",
            f"--cpus-per-task={c + cfg.client_cores}",
            str(script_path),
        )
        for i, c in enumerate(cfg.cores)
    ]


def make_sweep(cfg: SweepConfig) -> SweepResult:
    """Render the script; unless ``dry_run``, write it under ``out_dir``; submit if asked."""
    script = render_script(cfg)
    path = Path(cfg.out_dir) / f"{cfg.job_name}.sbatch"
    cmds = sbatch_commands(cfg, path)
    if cfg.dry_run:
        text = script + "\n# submit with:\n" + "".join(f"# {shlex.join(c)}\n" for c in cmds)
        return SweepResult(text, None, tuple(cmds), ())
    (Path(cfg.out_dir) / "logs").mkdir(parents=True, exist_ok=True)
    (Path(cfg.out_dir) / "results").mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)
    job_ids: list[str] = []
    if cfg.submit:
        if shutil.which("sbatch") is None:
            raise ExternalToolError("sbatch not found on PATH: submit from a Slurm login node")
        for c in cmds:
            proc = subprocess.run(list(c), capture_output=True, text=True, timeout=60)
            if proc.returncode != 0:
                raise ExternalToolError(
                    f"{shlex.join(c)} failed ({proc.returncode}): {proc.stderr.strip()[:500]}"
                    + (f"; submitted before it: {', '.join(job_ids)}" if job_ids else "")
                )
            job_ids.append(proc.stdout.strip().split(";")[0])
    return SweepResult(script, str(path), tuple(cmds), tuple(job_ids))
