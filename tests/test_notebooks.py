"""The notebooks run top to bottom on the shipped data (nbclient, the venv's own kernel), and
are kept in git without outputs. Each ends with one ``SUMMARY {json}`` line; the tests check
those numbers against direct calls of the same core functions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _run(path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None):
    nbformat = pytest.importorskip("nbformat", reason="SKIPPED LOUDLY: nbformat is missing")
    nbclient = pytest.importorskip("nbclient", reason="SKIPPED LOUDLY: nbclient is missing")
    pytest.importorskip("ipykernel", reason="SKIPPED LOUDLY: ipykernel is missing")
    for name in ("ADVISOR_DB", "ADVISOR_MODEL", "ADVISOR_CALIBRATION_DIR"):
        monkeypatch.delenv(name, raising=False)
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError naming the cell when any cell fails
    return nb


def _summary(nb) -> dict:
    for cell in reversed(nb.cells):
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            for line in text.splitlines():
                if line.startswith("SUMMARY "):
                    return json.loads(line[len("SUMMARY ") :])
    raise AssertionError("the notebook printed no SUMMARY line")


def _svg_charts(nb) -> int:
    return sum(
        "image/svg+xml" in out.get("data", {}) for c in nb.cells for out in c.get("outputs", [])
    )


def test_there_are_notebooks_to_check():
    names = {p.name for p in NOTEBOOKS}
    assert {"ttft-model-vs-published.ipynb", "ratio-distributions.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_committed_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{path.name} cell {i} has outputs"
            assert cell.get("execution_count") is None, f"{path.name} cell {i} was executed"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_ttft_notebook_runs_and_its_numbers_are_the_calibration_modules(monkeypatch):
    from advisor.model import calibration, slowdown

    nb = _run(ROOT / "notebooks" / "ttft-model-vs-published.ipynb", monkeypatch)
    s = _summary(nb)
    assert _svg_charts(nb) == 1 + (s["bench_points"] > 0)  # the curve, and the bench series
    loaded = calibration.load_points(ROOT / "data" / "calibration")
    params = slowdown.load_params()
    ts = calibration.training_set(loaded.points, params.max_slowdown)
    assert s["points_loaded"] == len(loaded.points)
    assert s["points_fitted"] == len(ts.y)
    assert s["points_censored"] == sum(ts.censored)
    assert s["bench_points"] == sum(p.source_kind == "bench" for p in ts.points)
    # the notebook's two columns are the shipped model's and a fresh fit's own predictions
    import numpy as np

    from advisor.model.estimator import CoreSlowdownRegressor

    X, y = np.asarray(ts.X), np.asarray(ts.y)
    shipped = CoreSlowdownRegressor.from_params(params).predict(X)
    # the refit's bootstrap would not change its predictions (the notebook draws no interval
    # from it), so neither fits one
    refit = (
        CoreSlowdownRegressor(n_bootstrap=0)
        .fit(X, y, sample_weight=np.asarray(ts.weights))
        .predict(X)
    )
    assert s["shipped_predictions"] == pytest.approx(list(shipped), rel=1e-9)
    assert s["refit_predictions"] == pytest.approx(list(refit), rel=1e-6)
    seen = ~np.asarray(ts.censored) & np.asarray([p.source_kind == "paper" for p in ts.points])
    mape = float(np.mean(np.abs(shipped[seen] - y[seen]) / y[seen]))
    assert s["mape_shipped_paper"] == pytest.approx(mape)


def test_ratio_notebook_reproduces_the_research_table_as_ratio_summary_computes_it(
    monkeypatch, tmp_path
):
    from advisor.ingest import ingest_files
    from advisor.ingest.synth import expected_percentiles
    from advisor.ratios import RatioQuery, ratio_summary
    from advisor.store import connect

    nb = _run(ROOT / "notebooks" / "ratio-distributions.ipynb", monkeypatch)
    s = _summary(nb)
    assert _svg_charts(nb) == 2  # histograms and ECDF, drawn

    db = tmp_path / "sample.duckdb"
    ingest_files(db, [ROOT / "data" / "sample" / "sacct-synth.txt.gz"])
    con = connect(db, read_only=True)
    report = ratio_summary(
        con, RatioQuery(by=("cluster", "gpu_type"), thresholds_cores_per_gpu=(8.000001,))
    )
    con.close()
    groups = {(g.keys["cluster"], g.keys["gpu_type"]): g for g in report.groups}
    assert s["jobs"] == report.jobs
    for (cluster, gpu_type), expected in expected_percentiles().items():
        g = groups[(cluster, gpu_type)]
        prefix = f"{cluster}_{gpu_type.lower()}"
        assert s[f"{prefix}_p50"] == g.p50_cores_per_gpu == expected["p50"]
        if f"{prefix}_p25" in s:
            assert s[f"{prefix}_p25"] == g.p25_cores_per_gpu == expected["p25"]
    research = groups[("research", "H100")]
    assert s["research_h100_share_at_or_below_8"] == research.share_jobs_below[8.000001]
    assert s["research_h100_share_at_or_below_8"] == pytest.approx(0.60, abs=0.01)
