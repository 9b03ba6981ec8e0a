"""``advisor bench export --format llm-d``: the H200 runs as llm-d benchmark reports.

The checks below are the facts of llm-d-benchmark's report schema v0.1
(llm-d/llm-d-benchmark ``workload/report/schema.py`` and ``workload/report/README.md``):
required ``version`` "0.1", ``scenario.model.name``, ``scenario.load.name`` from its list of
harnesses, ``metrics.time.duration``, ``metrics.requests.total`` with count-unit input and
output lengths, ``metrics.latency.time_to_first_token`` in ms or s, and
``metrics.throughput.total_tokens_per_sec``; Statistics objects need ``units`` and ``mean``;
host.accelerator and platform.engine lists have equal lengths; host.type is replica or
prefill/decode.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from advisor.harness.results.collect import read_result
from advisor.harness.results.llmd import export_runs, run_report

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "data" / "bench" / "h200-2026-11-29" / "h200x2-tp2"
STAT_KEYS = {
    "units",
    "mean",
    "mode",
    "stddev",
    "min",
    "p0p1",
    "p1",
    "p5",
    "p10",
    "p25",
    "p50",
    "p75",
    "p90",
    "p95",
    "p99",
    "p99p9",
    "max",
}
LOAD_NAMES = {"fmperf", "guidellm", "inference-perf", "vllm-benchmark", "nop"}


def _stats(obj: Any, units: set[str]) -> None:
    assert isinstance(obj, dict) and set(obj) <= STAT_KEYS, obj
    assert obj["units"] in units and isinstance(obj["mean"], float)


def check_llmd_v01(rep: dict[str, Any]) -> None:
    assert rep["version"] == "0.1"
    sc, m = rep["scenario"], rep["metrics"]
    assert isinstance(sc["model"]["name"], str) and sc["load"]["name"] in LOAD_NAMES
    assert sc["host"]["type"] == ["replica"]
    assert len(sc["host"]["accelerator"]) == len(sc["platform"]["engine"]) == 1
    acc = sc["host"]["accelerator"][0]
    assert isinstance(acc["model"], str) and isinstance(acc["count"], int)
    assert set(acc["parallelism"]) == {"dp", "tp", "pp", "ep"}
    assert isinstance(m["time"]["duration"], float)
    assert isinstance(m["requests"]["total"], int)
    _stats(m["requests"]["input_length"], {"count"})
    _stats(m["requests"]["output_length"], {"count"})
    _stats(m["latency"]["time_to_first_token"], {"ms", "s"})
    _stats(m["latency"]["request_latency"], {"ms", "s"})
    assert isinstance(m["throughput"]["total_tokens_per_sec"], float)


def test_every_h200_run_exports_a_valid_report_carrying_cores_and_the_split(tmp_path: Path):
    result = export_runs([RUNS], tmp_path / "out")
    assert result.problems == () and result.skipped == ()
    assert len(result.written) == len(list(RUNS.glob("*.json.gz"))) > 0
    for written in result.written:
        rep = json.loads(Path(written).read_text(encoding="utf-8"))
        check_llmd_v01(rep)
        run_id = rep["scenario"]["metadata"]["run_id"]
        run = read_result(RUNS / f"{run_id}.json.gz")["run"]
        host = rep["scenario"]["host"]["metadata"]
        assert (host["cores"], host["core_list"], host["cores_per_gpu"]) == (
            run["cores"],
            run["core_list"],
            run["cores_per_gpu"],
        )
        assert host["pinning"] == run["extra"]["pinning"]
        meta = rep["metrics"]["metadata"]
        # the report's TTFT is the victims'; each kind's median is the run's own figure
        ttft = rep["metrics"]["latency"]["time_to_first_token"]
        assert ttft["p50"] == pytest.approx(run["victim_ttft_p50_ms"])
        assert ttft["p90"] == pytest.approx(run["victim_ttft_p90_ms"])
        assert meta["victim"]["time_to_first_token"]["p50"] == pytest.approx(
            run["victim_ttft_p50_ms"]
        )
        assert meta["attacker"]["time_to_first_token"]["p50"] == pytest.approx(
            run["attacker_ttft_p50_ms"]
        )
        assert meta["victim"]["ok"] + meta["attacker"]["ok"] == run["requests_ok"]
        load = rep["scenario"]["load"]["metadata"]
        assert (load["attacker_rps"], load["victim_rps"]) == (
            run["attacker_rps"],
            run["victim_rps"],
        )
        acc = rep["scenario"]["host"]["accelerator"][0]
        assert (acc["model"], acc["count"], acc["parallelism"]["tp"]) == ("NVIDIA H200", 2, 2)


def test_a_crashed_run_is_skipped_with_its_reason(tmp_path: Path) -> None:
    src = sorted(RUNS.glob("*.json.gz"))[0]
    data = json.loads(gzip.decompress(src.read_bytes()))
    data["run"]["status"] = "crashed"
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "crashed.json").write_text(json.dumps(data), encoding="utf-8")
    shutil.copy(src, runs / src.name)
    result = export_runs([runs], tmp_path / "out")
    assert len(result.written) == 1
    assert len(result.skipped) == 1 and "crashed.json" in result.skipped[0]
    assert "'crashed'" in result.skipped[0]
    with pytest.raises(ValueError, match="no latency"):
        run_report(data)


def test_export_command_writes_reports_and_reports_bad_files(cli, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    src = sorted(RUNS.glob("*.json.gz"))[0]
    shutil.copy(src, runs / src.name)
    (runs / "bad.json").write_text('{"schema": "other"}', encoding="utf-8")
    code, out, err = cli(
        "bench", "export", "--format", "llm-d", str(runs), "--out", str(tmp_path / "o")
    )
    assert code == 3 and "bad.json" in err and err.startswith("Error: ")
    assert len(list((tmp_path / "o").glob("*.json"))) == 1
    code, out, err = cli(
        "bench", "export", str(runs / src.name), "--out", str(tmp_path / "p"), "--format", "json"
    )
    assert code == 0, err
    [row] = json.loads(out)
    check_llmd_v01(json.loads(Path(row["report"]).read_text(encoding="utf-8")))
    code, _, err = cli(
        "bench", "export", str(runs), "--out", str(tmp_path / "q"), "--format", "xml"
    )
    assert code == 2 and "llm-d" in err
