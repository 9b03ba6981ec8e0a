"""Collecting run JSONs into a real DuckDB file, the calibration points derived from them,
and the bench CLI commands that read and write them."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from advisor.errors import InputError
from advisor.harness.results.collect import calibration_points, collect, list_runs, read_result

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "data" / "bench" / "h200-2026-11-29"


def _some_runs(tmp_path: Path, n: int = 3) -> Path:
    src = sorted((H200 / "h200x2-tp2").glob("*unique*.json.gz"))[:n]
    out = tmp_path / "runs"
    out.mkdir()
    for f in src:
        shutil.copy(f, out / f.name)
    return out


def _count(db: Path, table: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


def test_collect_loads_runs_requests_and_calibration_points(tmp_path: Path, db_path: Path):
    runs = _some_runs(tmp_path)
    result = collect([runs], db_path)
    assert (result.files, result.runs_loaded, result.problems) == (3, 3, ())
    n_requests = sum(len(read_result(f)["requests"]) for f in runs.iterdir())
    assert result.requests_loaded == n_requests == _count(db_path, "bench_requests")
    assert _count(db_path, "bench_runs") == 3
    con = duckdb.connect(str(db_path), read_only=True)
    row = con.execute(
        "SELECT platform, engine, engine_version, tp, gpus, env->>'VLLM_USE_FLASHINFER_SAMPLER' "
        "FROM bench_runs LIMIT 1"
    ).fetchone()
    metrics = {r[0] for r in con.execute("SELECT DISTINCT metric FROM calibration").fetchall()}
    con.close()
    assert row == ("H200", "vllm", "0.26.0", 2, 2, "0")
    assert metrics == {
        "ttft_p50_ms",
        "ttft_p90_ms",
        "attacker_ttft_p50_ms",
        "tokenize_share",
        "gpu_busy_share",
    }


def test_collecting_twice_changes_nothing(tmp_path: Path, db_path: Path):
    runs = _some_runs(tmp_path)
    collect([runs], db_path)
    before = [_count(db_path, t) for t in ("bench_runs", "bench_requests", "calibration")]
    collect([runs], db_path)
    assert [_count(db_path, t) for t in ("bench_runs", "bench_requests", "calibration")] == before


def test_a_bad_file_is_named_with_its_field_and_the_others_still_load(
    tmp_path: Path, db_path: Path
):
    runs = _some_runs(tmp_path, 2)
    (runs / "truncated.json").write_text('{"schema": "advisor.bench.run/1", "run": {')
    good = read_result(next(runs.glob("*.gz")))
    good["run"]["status"] = "exploded"
    (runs / "bad-status.json").write_text(json.dumps(good))
    result = collect([runs], db_path)
    assert result.runs_loaded == 2
    assert len(result.problems) == 2
    assert any(
        "bad-status.json, field run.status: 'exploded' is not one of" in p for p in result.problems
    )
    assert any("truncated.json:1: not a readable run JSON" in p for p in result.problems)


def test_a_run_file_without_the_schema_is_refused_by_name(tmp_path: Path):
    f = tmp_path / "other.json"
    f.write_text(json.dumps({"run": {}}))
    with pytest.raises(InputError, match=r"other.json, field schema: not an advisor bench result"):
        read_result(f)


def test_hung_runs_give_censored_timeout_points_and_crashes_give_none():
    run = {
        "run_id": "r",
        "status": "hung",
        "timeout_s": 200.0,
        "cores": 3,
        "engine": "vllm",
        "attacker_tokens_min": 10,
        "attacker_tokens_max": 30,
        "started_at": "2026-11-29T22:00:00",
    }
    [point] = calibration_points(run)
    assert (point["metric"], point["value"], point["unit"]) == ("timeout", 200.0, "s")
    assert point["prompt_tokens"] == 20 and str(point["measured_on"]) == "2026-11-29"
    assert calibration_points({**run, "status": "crashed"}) == []


def test_the_committed_h200_calibration_csv_matches_the_committed_runs(
    tmp_path: Path, db_path: Path
):
    out = tmp_path / "h200.csv"
    result = collect([ROOT / "data" / "bench"], db_path, calibration_csv=out)
    assert result.problems == ()
    committed = ROOT / "data" / "calibration" / "h200-vllm-0.26.0.csv"
    assert out.read_text() == committed.read_text()
    from advisor.model.calibration import read_csv

    points, problems = read_csv(committed)
    assert problems == [] and len(points) == result.calibration_points


def test_runs_lists_collected_runs_filtered_by_status(tmp_path: Path, db_path: Path):
    collect([_some_runs(tmp_path)], db_path)
    assert len(list_runs(db_path, status="ok")) == 3
    assert list_runs(db_path, status="hung") == []
    assert {r["platform"] for r in list_runs(db_path, platform="H200")} == {"H200"}


def test_cli_collect_reports_bad_files_as_an_input_error_after_loading_the_rest(
    tmp_path: Path, db_path: Path, cli
):
    runs = _some_runs(tmp_path, 1)
    (runs / "broken.json.gz").write_bytes(gzip.compress(b"not json"))
    code, out, err = cli("bench", "collect", str(runs), "--db", str(db_path), "--format", "json")
    assert code == 3
    assert json.loads(out)[0]["runs_loaded"] == 1
    assert err.startswith("Error: 1 file(s) not loaded") and "broken.json.gz" in err
    code, out, _ = cli("bench", "runs", "--db", str(db_path), "--format", "csv")
    assert code == 0 and len(out.strip().splitlines()) == 2


def test_cli_collect_of_a_missing_folder_exits_not_found(db_path: Path, cli):
    code, _, err = cli("bench", "collect", "/no/such/folder", "--db", str(db_path))
    assert code == 4 and err == "Error: /no/such/folder: no such file or folder\n"


def test_cli_run_dry_run_prints_the_plan_as_json(tmp_path: Path, cli):
    model = tmp_path / "m"
    model.mkdir()
    code, out, err = cli(
        "bench",
        "run",
        "--model",
        str(model),
        "--cores",
        "1",
        "--engine",
        "stub",
        "--attacker-rps",
        "4,8",
        "--repeats",
        "2",
        "--dry-run",
        "--out",
        str(tmp_path / "o"),
        "--format",
        "json",
    )
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["attacker_rps"], r["repeat"], r["status"]) for r in rows] == [
        (4.0, 1, "planned"),
        (4.0, 2, "planned"),
        (8.0, 1, "planned"),
        (8.0, 2, "planned"),
    ]


def test_cli_run_rejects_a_bad_token_range(tmp_path: Path, cli):
    code, _, err = cli(
        "bench",
        "run",
        "--model",
        str(tmp_path),
        "--cores",
        "1",
        "--attacker-tokens",
        "900:100",
        "--dry-run",
    )
    assert code == 2 and "--attacker-tokens '900:100': need 1 <= MIN <= MAX" in err


def test_cli_sweep_dry_run_prints_the_script(cli):
    code, out, _ = cli(
        "bench", "sweep", "--model", "/m", "--cores", "3,6", "--gpus", "2", "--dry-run"
    )
    assert code == 0
    assert out.startswith("#!/bin/bash") and "#SBATCH --array=0-1" in out
    assert "# sbatch --parsable --array=1 --cpus-per-task=7" in out


def test_points_fold_repeats_into_a_median_with_its_range_and_a_speedup(db_path: Path, cli):
    collect([H200 / "h200x2-tp2"], db_path)
    code, out, _ = cli("bench", "runs", "--db", str(db_path), "--by-point", "--format", "json")
    assert code == 0
    points = {(p["workload"], p["cores"]): p for p in json.loads(out)}
    assert len(points) == 6 and all(p["runs"] == p["runs_ok"] == 2 for p in points.values())
    p3, p30 = points[("unique", 3)], points[("unique", 30)]
    con = duckdb.connect(str(db_path), read_only=True)
    reps = sorted(
        r[0]
        for r in con.execute(
            "SELECT victim_ttft_p50_ms FROM bench_runs WHERE workload = 'unique' AND cores = 3"
        ).fetchall()
    )
    con.close()
    assert (p3["victim_ttft_p50_min_ms"], p3["victim_ttft_p50_max_ms"]) == (reps[0], reps[1])
    assert p3["victim_ttft_p50_ms"] == pytest.approx((reps[0] + reps[1]) / 2)
    assert p3["speedup_vs_fewest_cores"] == pytest.approx(1.0)
    assert p30["speedup_vs_fewest_cores"] == pytest.approx(
        p3["victim_ttft_p50_ms"] / p30["victim_ttft_p50_ms"]
    )


def test_cli_make_model_writes_a_tiny_model_dir(tmp_path: Path, cli):
    code, out, err = cli(
        "bench", "make-model", "--arch", "tiny", "--out", str(tmp_path / "m"), "--format", "json"
    )
    assert code == 0, err
    [made] = json.loads(out)
    assert made["arch"] == "tiny" and made["vocab_size"] == 1280
    assert {p.name for p in (tmp_path / "m").iterdir()} >= {
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "advisor-model.json",
    }


def test_where_a_run_ran_is_stored_and_a_bad_cluster_is_named(tmp_path: Path, db_path: Path):
    runs = _some_runs(tmp_path, 2)
    first, second = sorted(runs.glob("*.gz"))
    data = read_result(first)
    data["run"].update(cluster="research", partition="gpu-h200")
    first.unlink()
    (runs / "in-slurm.json").write_text(json.dumps(data))
    bad = read_result(second)
    bad["run"]["cluster"] = 7
    second.unlink()
    (runs / "bad-cluster.json").write_text(json.dumps(bad))
    result = collect([runs], db_path)
    assert result.runs_loaded == 1
    assert [p for p in result.problems if "bad-cluster.json, field run.cluster" in p]
    assert [(r["cluster"], r["partition"]) for r in list_runs(db_path)] == [
        ("research", "gpu-h200")
    ]
