"""Cold start of ``advisor recommend ... --format json`` (the job-submit path), as a subprocess.

Prints the median wall time of N runs of the recommend command next to the median of
``python -c pass`` measured in the same run (the interpreter's own start), their difference
and ratio, and the target (< 0.5 s); and the same for the job-submit fast path alone
(``advisor.cli._fast.fast_recommend``, which ``advisor.cli.main`` calls before it imports
typer). Also lists the heaviest modules that the command imports (``python -X importtime``),
to find what to make lazy.

    python bench/bench_recommend.py [--runs 15]
    python bench/bench_recommend.py --with-db     # also with a database that holds a node inventory
    python bench/bench_recommend.py --partitions-db BIG.duckdb   # also the partition path

With ``--partitions-db``, also times :func:`advisor.recommend.recommend_partitions` over every
partition of that database (e.g. the 4.65M-job file of bench/bench_dashboard.py) against the
bare DuckDB pass it is built on (a plain GROUP BY of the jobs by partition, GPU type, CPUs and
GPUs) in the same process.

Timings on a shared 2-core machine are noisy: compare the ratio, run it twice.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# The very command that tests/test_recommend.py checks the fields of is the one timed here.
from tests.job_submit import job_submit_args  # noqa: E402

TARGET_S = 0.5
TARGET_WITH_DB_S = 0.3
ARGS = job_submit_args("--prompt-tokens", "32000")
COMMAND = ["-m", "advisor", *ARGS]
# The job-submit path alone (advisor.cli._fast.fast_recommend, which advisor.cli.main calls
# first): the interpreter's start-up of the console script less its module search.
FAST = [
    "-c",
    f"import sys; from advisor.cli._fast import fast_recommend; sys.exit(fast_recommend({ARGS!r}))",
]


def _time(args: list[str], runs: int, cwd: str, env: dict[str, str]) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True)
        out.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {done.stderr.decode()[-2000:]}")
    return out


def _heaviest_imports(
    cwd: str, env: dict[str, str], top: int = 8, command: list[str] = COMMAND
) -> list[tuple[int, str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cum_us, name = line[len("import time:") :].split("|")
        if not name.startswith("  "):  # top-level imports only (nested ones are indented)
            rows.append((int(cum_us), name.strip()))
    return sorted(rows, reverse=True)[:top]


def _imports_module(cwd: str, env: dict[str, str], command: list[str], module: str) -> bool:
    """Whether ``command`` imports ``module`` at any depth (``python -X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command], cwd=cwd, env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    return any(line.split("|")[-1].strip() == module for line in done.stderr.splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--partitions-db", help="DuckDB file to time the partition path on")
    ap.add_argument(
        "--with-db", action="store_true", help="Also time it with a node inventory in --db"
    )
    args = ap.parse_args()
    repo = ROOT
    env = {**os.environ, "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("ADVISOR_DB", None)
    with tempfile.TemporaryDirectory() as cwd:  # no database: the job-submit path
        _time(COMMAND, 2, cwd, env)  # warm the file cache once, as on a submit host
        base: list[float] = []
        rec: list[float] = []
        fast: list[float] = []
        for _ in range(args.runs):  # interleaved, so that load from others hits all three alike
            base += _time(["-c", "pass"], 1, cwd, env)
            rec += _time(COMMAND, 1, cwd, env)
            fast += _time(FAST, 1, cwd, env)
        heavy = _heaviest_imports(cwd, env)
        with_db = _with_db(cwd, env, args.runs, repo) if args.with_db else None
    b, r, f = statistics.median(base), statistics.median(rec), statistics.median(fast)
    result = {
        "runs": args.runs,
        "python_pass_median_s": round(b, 4),
        "recommend_median_s": round(r, 4),
        "recommend_min_s": round(min(rec), 4),
        "advisor_own_s": round(r - b, 4),
        "ratio_vs_python": round(r / b, 2),
        "fast_path_median_s": round(f, 4),
        "fast_path_min_s": round(min(fast), 4),
        "fast_path_ratio_vs_python": round(f / b, 2),
        "target_s": TARGET_S,
        "meets_target": r < TARGET_S,
        "fast_path_meets_target": f < TARGET_S,
        "heaviest_top_level_imports_ms": [(name, round(us / 1000, 1)) for us, name in heavy],
    }
    if with_db is not None:
        result["with_db"] = with_db
    if args.partitions_db:
        result["partitions"] = _partitions(args.partitions_db, max(3, args.runs // 3))
    print(json.dumps(result, indent=2))


def _with_db(cwd: str, env: dict[str, str], runs: int, repo: str) -> dict[str, object]:
    """The job-submit command with a database that holds a node inventory, against the
    interpreter's own start measured alongside it."""
    db = os.path.join(cwd, "nodes.duckdb")
    nodes = os.path.join(repo, "data", "sample", "scontrol-nodes-synth.txt")
    _time(
        ["-m", "advisor", "nodes", "ingest", nodes, "--cluster", "teaching", "--db", db],
        1,
        cwd,
        env,
    )
    command = [*COMMAND, "--db", db]
    no_db = [*COMMAND, "--db", os.path.join(cwd, "absent.duckdb")]
    _time(command, 2, cwd, env)  # warm the file cache (and the node-cap cache), as on a submit host
    base: list[float] = []
    rec: list[float] = []
    bare: list[float] = []
    for _ in range(runs):  # interleaved, so that load from others hits all three alike
        base += _time(["-c", "pass"], 1, cwd, env)
        rec += _time(command, 1, cwd, env)
        bare += _time(no_db, 1, cwd, env)
    b, r, n = statistics.median(base), statistics.median(rec), statistics.median(bare)
    heavy = _heaviest_imports(cwd, env, command=command)
    return {
        "python_pass_median_s": round(b, 4),
        "recommend_median_s": round(r, 4),
        "recommend_min_s": round(min(rec), 4),
        "without_db_median_s": round(n, 4),
        "advisor_own_s": round(r - b, 4),
        "ratio_vs_python": round(r / b, 2),
        "ratio_vs_without_db": round(r / n, 2),
        "target_s": TARGET_WITH_DB_S,
        "meets_target": r < TARGET_WITH_DB_S,
        "target_ratio_vs_without_db": 1.3,
        "meets_ratio_target": r / n <= 1.3,
        "duckdb_imported": _imports_module(cwd, env, command, "duckdb"),
        "heaviest_top_level_imports_ms": [(name, round(us / 1000, 1)) for us, name in heavy],
    }


def _partitions(db: str, runs: int) -> dict[str, object]:
    from advisor.recommend import PartitionQuery, recommend_partitions
    from advisor.store import connect

    con = connect(db, read_only=True)
    jobs = con.execute("SELECT count(*) FROM jobs").fetchone()
    bare, full = [], []
    try:
        for _ in range(runs):  # interleaved
            t0 = time.perf_counter()
            con.execute(
                'SELECT "partition", gpu_type, cpus, gpus, count(*), sum(elapsed_s) FROM jobs '
                "WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 GROUP BY ALL"
            ).fetchall()
            bare.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            rows = recommend_partitions(PartitionQuery(db=db)).rows
            full.append(time.perf_counter() - t0)
    finally:
        con.close()
    b, f = statistics.median(bare), statistics.median(full)
    return {
        "jobs": jobs[0] if jobs else None,
        "groups": len(rows),
        "runs": runs,
        "bare_group_by_median_s": round(b, 4),
        "recommend_partitions_median_s": round(f, 4),
        "ratio_vs_bare": round(f / b, 2),
    }


if __name__ == "__main__":
    main()
