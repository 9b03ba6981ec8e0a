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
from tests.browser_fixtures import CHROMIUM_ARGS
from tests.test_report_data import build_db

CHROMIUM = Path("/usr/bin/chromium")

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
        b = p.chromium.launch(executable_path=str(exe), args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_report_opens_offline_with_every_chart_drawn_and_no_console_error(
    browser, db_path, tmp_path
):
    build_db(db_path)
    (res,) = report.run_reports(
        report.ReportConfig(out_dir=tmp_path / "out", month="2024-10"),
        db_path,
        now=dt.datetime(2024, 11, 2),
    )
    written = json.loads((res.html_path.parent / "report.json").read_text())
    # the charts of a month with recommendations: percentiles, histogram, below, the predicted
    # wait behind each GPU type's answer, daily starts
    chart_ids = [
        "cores-per-gpu",
        "ratio-histogram",
        "below-accounts",
        "below-partitions",
        *(f"wait-{i}" for i in range(len(written["wait_curves"]))),
        "daily-starts",
    ]
    assert written["below_partitions"], "the fixture month has jobs below the recommendation"
    assert len(written["wait_curves"]) == 2, "the fixture's H100 and A100 answers"

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
    page.on(
        "console",
        lambda m: (
            problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None
        ),
    )
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


def test_the_email_copies_print_the_whole_report_as_the_browser_draws_it(
    browser, db_path, tmp_path
):
    """report.pdf and report.png come from headless Chromium; the PNG must match what a
    browser shows of report.html (same width, same pixels over the summary and first chart)."""
    from PIL import Image, ImageChops, ImageStat

    build_db(db_path)
    (res,) = report.run_reports(
        report.ReportConfig(out_dir=tmp_path / "out", month="2024-10", png=True, pdf=True),
        db_path,
        now=dt.datetime(2024, 11, 2),
    )
    folder = res.html_path.parent
    pdf = (folder / "report.pdf").read_bytes()
    assert (
        pdf.startswith(b"%PDF")
        and pdf.count(b"/Type /Page\n") + pdf.count(b"/Type /Page>") + pdf.count(b"/Type/Page") >= 2
    )
    assert {"report.pdf", "report.png"} <= {p.name for p in res.image_paths}
    printed = Image.open(folder / "report.png").convert("RGB")
    assert printed.width == report.REPORT_WIDTH_PX and printed.height > 1500

    context = browser.new_context(viewport={"width": report.REPORT_WIDTH_PX, "height": 1200})
    page = context.new_page()
    page.goto(res.html_path.as_uri())
    page.wait_for_selector("body[data-charts-drawn]", timeout=30_000)
    shot = tmp_path / "browser.png"
    page.screenshot(path=str(shot), full_page=True)
    chart = page.locator("#chart-ratio-histogram").bounding_box()
    context.close()
    seen = Image.open(shot).convert("RGB")
    # the top of the page (title, summary, settings, the first table and chart), pixel by pixel
    box = (0, 0, report.REPORT_WIDTH_PX, min(1800, seen.height, printed.height))
    diff = ImageChops.difference(printed.crop(box), seen.crop(box))
    assert max(ImageStat.Stat(diff).mean) < 2.0  # mean difference per channel, out of 255
    # and the histogram, drawn by the page's script: printed only after it ran
    assert chart is not None
    cbox = tuple(
        int(v)
        for v in (chart["x"], chart["y"], chart["x"] + chart["width"], chart["y"] + chart["height"])
    )
    assert cbox[3] <= printed.height
    chart_diff = ImageChops.difference(printed.crop(cbox), seen.crop(cbox))
    assert max(ImageStat.Stat(chart_diff).mean) < 2.0, ImageStat.Stat(chart_diff).mean
    blank = Image.new("RGB", (cbox[2] - cbox[0], cbox[3] - cbox[1]), "white")
    assert max(ImageStat.Stat(ImageChops.difference(printed.crop(cbox), blank)).mean) > 5
    assert abs(printed.height - seen.height) < 80  # the whole page, nothing cut or padded
