"""The usage block of the dashboard's Overview and Who pages (Streamlit's AppTest, real DuckDB
files loaded by the real ingest from tests/fixtures/usage/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.ingest import ingest_files

ROOT = Path(__file__).resolve().parent
APP = ROOT.parent / "app" / "streamlit_app.py"


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("usage-app")
    with_usage, without = root / "usage.duckdb", root / "plain.duckdb"
    ingest_files(with_usage, [ROOT / "fixtures" / "usage" / "sacct-usage.txt"])
    ingest_files(without, [ROOT / "fixtures" / "ingest" / "edge.txt"])
    return {"usage": with_usage, "plain": without}


def _page(monkeypatch: pytest.MonkeyPatch, db: Path, page: str) -> AppTest:
    monkeypatch.setenv("ADVISOR_DB", str(db))
    monkeypatch.delenv("ADVISOR_HASH_USERS", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_overview_says_trust_usage_and_shows_the_starved_share(monkeypatch, dbs) -> None:
    at = _page(monkeypatch, dbs["usage"], "overview")
    [ok] = [s for s in at.success if "usage-based" in s.value]
    assert "91% of GPU-hours carry CPU and GPU usage" in ok.value
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["GPU-hours with usage"] == "91%"
    assert metrics["GPU-hours likely CPU-starved"] == "60%"  # 6 of the 10 GPU-hours with a verdict


def test_who_ranks_accounts_by_likely_starved_gpu_hours(monkeypatch, dbs) -> None:
    at = _page(monkeypatch, dbs["usage"], "who")
    usage_tables = [d.value for d in at.dataframe if "starved GPU-hours" in d.value.columns]
    [table] = usage_tables
    assert list(table["account"])[:2] == ["bio", "chem"]  # 4 and 2 starved GPU-hours
    assert list(table["starved GPU-hours"])[:2] == [4.0, 2.0]


def test_without_usage_data_the_block_points_to_the_allocation_estimate(monkeypatch, dbs) -> None:
    at = _page(monkeypatch, dbs["plain"], "overview")
    [info] = [i for i in at.info if "allocation-based" in i.value]
    assert "no usage fields loaded" in info.value
    assert not [m for m in at.metric if m.label == "CPU efficiency"]
