"""The written report opens in real headless Chromium, offline, without errors, charts drawn.

Needs Debian's ``chromium`` (never a downloaded browser) and the venv's Playwright package; the
test skips, saying which is missing, when either is absent.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from advisor import report
from tests.test_report_data import build_db

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="SKIPPED LOUDLY: the Playwright Python package is missing"
    )
    exe = CHROMIUM if CHROMIUM.exists() else Path(shutil.which("chromium") or "/nonexistent")
    if not exe.exists():
        pytest.skip("SKIPPED LOUDLY: Debian's chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(exe), args=ARGS)
        yield b
        b.close()


def test_report_opens_offline_with_every_chart_drawn_and_no_console_error(
    browser, db_path, tmp_path
):
    build_db(db_path)
    (res,) = report.run_reports(
        report.ReportConfig(out_dir=tmp_path / "out", month="2024-10"), db_path,
        now=dt.datetime(2024, 11, 2),
    )  # fmt: skip
    written = json.loads((res.html_path.parent / "report.json").read_text())
    # the charts of a month with recommendations: percentiles, histogram, below, daily starts
    chart_ids = ["cores-per-gpu", "ratio-histogram", "below-accounts", "below-partitions",
                 "daily-starts"]
    assert written["below_partitions"], "the fixture month has jobs below the recommendation"

    context = browser.new_context(offline=True)
    requested: list[str] = []

    def only_the_file(route):
        requested.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    context.route("**/*", only_the_file)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in
            ("error", "warning") else None)  # fmt: skip
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.goto(res.html_path.as_uri())
    assert page.locator("[data-chart]").count() == len(chart_ids)
    page.wait_for_selector(f'body[data-charts-drawn="{len(chart_ids)}"]', timeout=30_000)

    for chart_id in chart_ids:
        holder = page.locator(f"#chart-{chart_id}")
        assert holder.locator("svg").count() >= 1, chart_id
        # a drawn chart has marks in it, not an empty frame
        assert holder.locator("svg .mark-rect path, svg .mark-rect rect, svg path").count() > 0
    # Vega warns about an empty layer: advisor.charts.ratio_histogram always draws its
    # fair-share layer, which has no rows when the database holds no node inventory.
    known = 'WARN Infinite extent for field "cores_per_gpu"'
    assert [p for p in problems if known not in p] == []
    assert requested == [res.html_path.as_uri()]  # nothing but the file itself was fetched
    assert page.title().startswith("CPU cores per GPU, 2024-10")
    context.close()


def test_the_daily_chart_reads_the_same_days_in_every_browser_time_zone(browser, db_path, tmp_path):
    build_db(db_path)
    (res,) = report.run_reports(
        report.ReportConfig(out_dir=tmp_path / "out", month="2024-10"), db_path
    )
    seen = {}
    for tz in ("UTC", "America/Los_Angeles", "Asia/Tokyo"):
        context = browser.new_context(offline=True, timezone_id=tz)
        page = context.new_page()
        page.goto(res.html_path.as_uri())
        page.wait_for_selector("body[data-charts-drawn]", timeout=30_000)
        seen[tz] = page.locator("#chart-daily-starts svg text").all_text_contents()
        context.close()
    assert any("Oct" in t for t in seen["UTC"])
    assert seen["America/Los_Angeles"] == seen["UTC"] == seen["Asia/Tokyo"]
