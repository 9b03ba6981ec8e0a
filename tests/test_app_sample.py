"""The dashboard over the project's own sample: the shipped synthetic ``sacct -P`` file and node
inventory (data/sample/) loaded by the real ingest into a real DuckDB file, then the pages read
through AppTest. The sample is calibrated to the research, so the Overview must show its
numbers: teaching H100 P25 0.25 / P50 1.00, teaching A100 P25 1.00 / P50 2.00, research H100
P50 8.00, and the node types' fair share."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor import store
from advisor.ingest.synth import expected_percentiles
from advisor.wording import cores_text
from tests.test_app import chart_rows

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
APP = ROOT / "app" / "streamlit_app.py"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory) -> Path:
    from advisor.ingest import ingest_files
    from advisor.ingest.nodes import NodeIngestConfig, ingest_nodes

    sacct = SAMPLE / "sacct-synth.txt.gz"
    nodes = SAMPLE / "scontrol-nodes-synth.txt"
    if not sacct.exists() or not nodes.exists():
        pytest.skip(f"SKIPPED LOUDLY: the shipped sample is missing ({sacct}, {nodes})")
    db = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    ingest_files(str(db), [sacct])
    con = store.connect(db)
    try:
        ingest_nodes(con, NodeIngestConfig(path=nodes))
    finally:
        con.close()
    return db


def _app(monkeypatch, db: Path) -> AppTest:
    monkeypatch.setenv("ADVISOR_DB", str(db))
    monkeypatch.delenv("ADVISOR_HASH_USERS", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("cluster", ["teaching", "research"])
def test_overview_of_the_sample_shows_the_research_percentiles(monkeypatch, sample_db, cluster):
    at = _app(monkeypatch, sample_db)
    at.sidebar.multiselect(key="f_clusters").set_value([cluster]).run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "p50" in d.value.columns).set_index("gpu_type")
    for (c, gpu_type), want in expected_percentiles().items():
        if c != cluster:
            continue
        assert table.loc[gpu_type, "p25"] == pytest.approx(want["p25"])
        assert table.loc[gpu_type, "p50"] == pytest.approx(want["p50"])
        metric = next(m for m in at.metric if m.label.startswith(f"{gpu_type}:"))
        assert metric.value == cores_text(want["p50"])


def test_overview_of_the_sample_draws_the_node_types_fair_share(monkeypatch, sample_db):
    at = _app(monkeypatch, sample_db)
    at.sidebar.multiselect(key="f_clusters").set_value(["teaching"]).run()
    rows = chart_rows(at.get("vega_lite_chart")[0])
    fair = {r["gpu_type"]: r["cores_per_gpu"] for r in rows if r.get("layer") == "fair"}
    table = next(d.value for d in at.dataframe if "p50" in d.value.columns).set_index("gpu_type")
    assert fair and set(fair) <= set(table.index)
    for gpu_type, cores in fair.items():
        assert cores == pytest.approx(table.loc[gpu_type, "fair_share_cores_per_gpu"])


def test_every_page_renders_the_sample_without_an_exception(monkeypatch, sample_db):
    at = _app(monkeypatch, sample_db)
    for page in ("trends", "who", "recommend", "benchmarks", "data"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not at.error, (page, [e.value for e in at.error])
    log = next(d.value for d in at.dataframe if "inserted" in d.value.columns)
    sacct = log[log["source"].str.endswith("sacct-synth.txt.gz")]
    assert sacct["inserted"].tolist() == [20000] and sacct["status"].tolist() == ["done"]


def test_trends_draw_the_loss_its_price_and_the_measured_pressure_by_month(
    monkeypatch, sample_db, tmp_path
):
    """Issue 50 item 13: Trends had no series for lost GPU-hours, dollars or pressure over
    time. On the sample with its pressure records: one loss line per cluster and month whose
    values are the core's (advisor.report.trend.loss_by_month under the page's load), the same
    in dollars, and the measured stall share by month."""
    import shutil

    from advisor.ingest import ingest_files
    from advisor.report.trend import LossTrendQuery, loss_by_month
    from app.assumptions import Assumptions

    db = tmp_path / "pressure.duckdb"
    shutil.copy(sample_db, db)
    ingest_files(str(db), [SAMPLE / "pressure-synth.jsonl.gz"])
    at = _app(monkeypatch, db)
    at.switch_page("app_pages/trends.py").run()
    assert not at.exception, [e.value for e in at.exception]
    subheaders = [s.value for s in at.subheader]
    assert "GPU-hours lost to too few cores, by cluster" in subheaders
    assert "What it cost (USD at the GPU's hourly price), by cluster" in subheaders
    assert "Measured CPU pressure, by cluster" in subheaders
    charts = at.get("vega_lite_chart")
    lost = [r for c in charts for r in chart_rows(c) if "gpu_hours_lost" in r and "usd_lost" in r]
    want = loss_by_month(LossTrendQuery(db=str(db), workload=Assumptions().workload))
    for cluster in ("research", "teaching"):
        for month in sorted({r["month"] for r in want}):
            mine = [r for r in want if r["cluster"] == cluster and r["month"] == month]
            if not mine:
                continue
            (shown,) = [
                r for r in lost if r["cluster"] == cluster and str(r["month"]).startswith(month)
            ][:1]
            assert shown["gpu_hours_lost"] == pytest.approx(sum(r["gpu_hours_lost"] for r in mine))
    stalls = [r for c in charts for r in chart_rows(c) if r.get("what") == "stalled (some)"]
    assert {str(r["month"])[:7] for r in stalls} >= {"2024-01", "2024-12"}
    assert all(0 <= r["share"] <= 1 for r in stalls)
