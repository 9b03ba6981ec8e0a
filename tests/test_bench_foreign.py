"""``advisor bench import``: vllm bench serve, GuideLLM and AIPerf result files as calibration
points, on hand-written fixtures (tests/fixtures/bench/, whose README cites the schema source
of each: vllm ``vllm/benchmarks/serve.py``, GuideLLM ``schemas/generative/*.py`` and
``schemas/statistics.py``, AIPerf ``docs/tutorials/working-with-profile-exports.md``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from advisor.errors import InputError
from advisor.harness.results.foreign import ImportContext, detect_tool, file_points, import_results
from advisor.model.calibration import read_csv, training_set

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "bench"
VLLM8, VLLM32 = FIX / "vllm-bench-serve-c8.json", FIX / "vllm-bench-serve-c32.json"
NOMETA = FIX / "vllm-bench-serve-nometa.json"
GUIDE, AIPERF = FIX / "guidellm-benchmarks.json", FIX / "aiperf-profile_export_aiperf.json"


def _by_metric(rows: list[dict]) -> dict[str, dict]:
    return {r["metric"]: r for r in rows}


def test_each_tool_is_recognised_from_its_keys() -> None:
    found = {p.name: detect_tool(json.loads(p.read_text())) for p in (VLLM8, GUIDE, AIPERF)}
    assert found == {VLLM8.name: "vllm", GUIDE.name: "guidellm", AIPERF.name: "aiperf"}
    assert detect_tool({"jobs": []}) is None


def test_vllm_median_mean_and_p99_land_in_their_metrics_with_cores_from_the_metadata() -> None:
    rows = _by_metric(file_points(VLLM8, "auto", ImportContext()))
    assert set(rows) == {"ttft_p50_ms", "ttft_mean_ms", "ttft_p99_ms"}
    assert (rows["ttft_p50_ms"]["value"], rows["ttft_mean_ms"]["value"]) == (431.25, 512.5)
    assert rows["ttft_p99_ms"]["value"] == 1404.0
    p = rows["ttft_p50_ms"]
    assert (p["cores"], p["gpus"], p["cores_per_gpu"], p["platform"]) == (8, 4, 2.0, "H100")
    assert (p["engine"], p["engine_version"], p["model"]) == (
        "vllm",
        "0.11.1",
        "meta-llama/Llama-3.1-8B-Instruct",
    )
    # 409600 input tokens over 200 completed requests; request_rate 8; date 20261120-101500
    assert (p["prompt_tokens"], p["load_rps"], p["measured_on"]) == (2048, 8.0, "2026-11-20")
    assert "median_ttft_ms (numpy median)" in p["notes"] and "cores from the file" in p["notes"]
    assert "p99_ttft_ms" in rows["ttft_p99_ms"]["notes"]
    assert p["source"].startswith("vllm-bench:") and p["source_ref"] == VLLM8.name


def test_guidellm_successful_distribution_maps_median_mean_and_tails_per_benchmark() -> None:
    rows = file_points(GUIDE, "guidellm", ImportContext(cores=16, gpus=2, platform="h200"))
    first = _by_metric([r for r in rows if ":0:" in r["point_id"]])
    second = _by_metric([r for r in rows if ":1:" in r["point_id"]])
    assert {m: r["value"] for m, r in first.items()} == {
        "ttft_p50_ms": 702.5,
        "ttft_mean_ms": 840.0,
        "ttft_p90_ms": 1500.0,
        "ttft_p95_ms": 1810.0,
        "ttft_p99_ms": 2450.0,
    }
    assert second["ttft_p50_ms"]["value"] == 241.0
    p = first["ttft_p50_ms"]
    assert (p["cores"], p["gpus"], p["platform"], p["load_rps"], p["prompt_tokens"]) == (
        16,
        2,
        "H200",
        8.0,
        2048,
    )
    assert p["model"] == "Qwen/Qwen2.5-14B-Instruct"
    assert "successful.median (p50)" in p["notes"] and "cores from --cores" in p["notes"]
    # a concurrent benchmark has no request rate: its load is in the notes, not in load_rps
    assert second["ttft_p50_ms"]["load_rps"] is None
    assert "concurrent 4 streams" in second["ttft_p50_ms"]["notes"]


def test_aiperf_p50_and_avg_and_the_gpu_name_from_telemetry() -> None:
    rows = _by_metric(file_points(AIPERF, "aiperf", ImportContext(cores=12, gpus=2)))
    assert {m: r["value"] for m, r in rows.items()} == {
        "ttft_p50_ms": 575.5,
        "ttft_mean_ms": 640.0,
        "ttft_p90_ms": 1020.0,
        "ttft_p95_ms": 1200.0,
        "ttft_p99_ms": 1650.0,
    }
    p = rows["ttft_p50_ms"]
    assert (p["platform"], p["model"], p["prompt_tokens"], p["load_rps"], p["cores_per_gpu"]) == (
        "H200",
        "meta-llama/Llama-3.1-8B-Instruct",
        4096,
        8.0,
        6.0,
    )
    assert "time_to_first_token.p50" in p["notes"]
    assert "time_to_first_token.avg" in rows["ttft_mean_ms"]["notes"]


def test_a_file_without_a_core_count_names_the_file_and_the_flag() -> None:
    for path, tool in ((NOMETA, "vllm"), (GUIDE, "guidellm"), (AIPERF, "aiperf")):
        with pytest.raises(InputError, match=r"no cores count.*pass --cores N") as exc:
            file_points(path, tool, ImportContext(gpus=4))
        assert str(path) in str(exc.value)
    with pytest.raises(InputError, match="--metadata cores=N"):
        file_points(NOMETA, "vllm", ImportContext(gpus=4))
    with pytest.raises(InputError, match="no gpus count"):
        file_points(GUIDE, "guidellm", ImportContext(cores=8))


def test_cores_given_twice_must_agree() -> None:
    with pytest.raises(InputError, match="the file says 8 cores, --cores says 16"):
        file_points(VLLM8, "vllm", ImportContext(cores=16))
    assert file_points(VLLM8, "vllm", ImportContext(cores=8))[0]["cores"] == 8


def test_bad_metadata_and_unknown_documents_name_the_field_or_the_flag(tmp_path: Path) -> None:
    doc = json.loads(VLLM8.read_text(encoding="utf-8"))
    doc["cores"] = "sixteen"
    bad = tmp_path / "bad-meta.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"bad-meta.json, field cores: 'sixteen' is not"):
        file_points(bad, "auto", ImportContext())
    other = tmp_path / "other.json"
    other.write_text('{"jobs": []}', encoding="utf-8")
    with pytest.raises(InputError, match="give --tool if it is one"):
        file_points(other, "auto", ImportContext(cores=8, gpus=1))


def test_a_tool_named_wrongly_is_refused() -> None:
    with pytest.raises(InputError, match="does not look like a aiperf result"):
        file_points(VLLM8, "aiperf", ImportContext(cores=8, gpus=4))


def test_csv_round_trip_reads_back_the_same_points_and_makes_a_fitted_series(tmp_path: Path):
    out = tmp_path / "imported.csv"
    result = import_results([VLLM8, VLLM32], calibration_csv=out)
    assert (result.files_imported, result.problems, len(result.points)) == (2, (), 6)
    points, problems = read_csv(out)
    assert problems == []
    back = {p.point_id: p for p in points}
    for row in result.points:
        p = back[row["point_id"]]
        assert (p.metric, p.value, p.cores, p.gpus, p.platform) == (
            row["metric"],
            row["value"],
            row["cores"],
            row["gpus"],
            row["platform"],
        )
    ts = training_set(points, max_slowdown=50.0)
    slowdown = {p.cores: y for p, y in zip(ts.points, ts.y, strict=True)}
    # only the medians are fitted: 8 cores are 431.25 / 151.5 slower than 32
    assert {p.metric for p in ts.points} == {"ttft_p50_ms"}
    assert slowdown == pytest.approx({8: 431.25 / 151.5, 32: 1.0})


def test_importing_into_the_database_twice_keeps_one_copy(tmp_path: Path, db_path: Path):
    for _ in range(2):
        r = import_results(
            [AIPERF, GUIDE], ctx=ImportContext(cores=8, gpus=2), db=db_path, to_db=True
        )
        assert r.db_points == 15
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute(
            "SELECT metric, value, cores, unit FROM calibration "
            "WHERE source LIKE 'aiperf:%' ORDER BY metric"
        ).fetchall()
        total = con.execute("SELECT count(*) FROM calibration").fetchone()[0]
    finally:
        con.close()
    assert total == 15
    assert ("ttft_p50_ms", 575.5, 8, "ms") in rows


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    r = import_results([bad, VLLM8])
    assert r.files_imported == 1 and len(r.points) == 3
    assert len(r.problems) == 1 and str(bad) in r.problems[0]


def _advisor(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("advisor")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, check=False)


def test_console_script_exits_3_naming_the_file_without_cores(tmp_path: Path) -> None:
    proc = _advisor("bench", "import", str(GUIDE), "--gpus", "2", "--format", "json")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("Error: ")
    assert str(GUIDE) in proc.stderr and "pass --cores N" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(proc.stdout) == []


def test_console_script_writes_the_calibration_csv(tmp_path: Path) -> None:
    out = tmp_path / "c.csv"
    proc = _advisor(
        "bench",
        "import",
        str(AIPERF),
        "--cores",
        "8",
        "--gpus",
        "2",
        "--calibration-csv",
        str(out),
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["metric"]: r["value"] for r in rows}["ttft_p50_ms"] == 575.5
    header = out.read_text(encoding="utf-8").splitlines()[0]
    from advisor.harness.results.collect import CALIBRATION_COLUMNS

    assert header.split(",") == list(CALIBRATION_COLUMNS)
