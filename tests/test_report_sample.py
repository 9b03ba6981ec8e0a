"""The report on the shipped sample, end to end through the CLI: ``advisor ingest`` then
``advisor report --all-months``, every month written, its numbers those of ``ratio_summary``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "sacct-synth.txt.gz"


@pytest.mark.skipif(
    not SAMPLE.exists(), reason="SKIPPED LOUDLY: data/sample/sacct-synth.txt.gz missing"
)
def test_all_months_of_the_sample_are_reported_with_ratio_summarys_numbers(cli, db_path, tmp_path):
    from advisor.ratios import RatioQuery, ratio_summary
    from advisor.store import connect

    code, _, err = cli("ingest", str(SAMPLE), "--db", str(db_path))
    assert code == 0, err
    out = tmp_path / "reports"
    code, stdout, err = cli(
        "report", "--all-months", "--out", str(out), "--db", str(db_path), "--format", "json"
    )
    assert code == 0, err
    rows = json.loads(stdout)
    months = [r["month"] for r in rows]
    assert months[:12] == [f"2024-{m:02d}" for m in range(1, 13)]
    assert all(Path(r["html"]).is_file() for r in rows)

    con = connect(db_path, read_only=True)
    direct = ratio_summary(
        con,
        RatioQuery(by=("gpu_type",), start=dt.datetime(2024, 10, 1), end=dt.datetime(2024, 11, 1)),
    )
    con.close()
    written = json.loads((out / "2024-10" / "report.json").read_text())
    shown = {g["gpu_type"]: g for g in written["gpu_types"]}
    assert set(shown) == {g.keys["gpu_type"] for g in direct.groups}
    for g in direct.groups:
        s = shown[g.keys["gpu_type"]]
        assert (s["jobs"], s["p25_cores_per_gpu"], s["p50_cores_per_gpu"]) == (
            g.jobs,
            g.p25_cores_per_gpu,
            g.p50_cores_per_gpu,
        )
        assert s["gpu_hours"] == pytest.approx(g.gpu_hours)
    # October has jobs under the recommendation, so the starvation section is filled
    assert written["starvation"] and written["gpu_hours_lost_total"] > 0
    assert written["quality"]["rejected_lines"] == 0 and written["quality"]["gap_days"] == 0
    assert sum(r["gpu_jobs"] for r in rows) == sum(
        json.loads((out / m / "report.json").read_text())["quality"]["gpu_jobs"] for m in months
    )
