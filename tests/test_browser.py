"""The served dashboard in a real headless Chromium (Debian's ``chromium``, driven by Playwright).

``streamlit run`` serves the app on a free localhost port over a real DuckDB file; each page
is opened in the browser, must draw its Vega charts (canvas or svg inside ``.vega-embed``) and
show no exception box; a screenshot of each page is saved (to ``$ADVISOR_SCREENSHOT_DIR`` when
set, else the test's temp dir). No browser is downloaded: a missing chromium skips, loudly.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_app_data import make_db

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("ADVISOR_CHROMIUM", "/usr/bin/chromium")
APP = Path(__file__).resolve().parent.parent / "app" / "streamlit_app.py"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
# url path, title shown, charts it must draw on the GPU test database
PAGES = [
    ("", "CPU cores per GPU", 2),
    ("trends", "Trends by month", 2),
    ("who", "Who runs below the recommendation", 1),
    ("recommend", "Recommend cores per GPU", 1),
    ("benchmarks", "Benchmarks", 1),
    ("data", "Data", 1),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"streamlit exited with {proc.returncode}:\n{out}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=1.0).text == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"streamlit did not answer on port {port} within {timeout_s} s")


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[str]:
    if not (Path(CHROMIUM).exists() and shutil.which(CHROMIUM)):
        pytest.skip(f"SKIPPED LOUDLY: no chromium at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="SKIPPED LOUDLY: playwright not installed")
    db = make_db(tmp_path_factory.mktemp("served") / "served.duckdb", "gpu", n_jobs=2000)
    port = _free_port()
    env = {**os.environ, "ADVISOR_DB": str(db)}
    env.pop("ADVISOR_HASH_USERS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(APP),
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--", "--db", str(db)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        _wait_healthy(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield ctx
        finally:
            ctx.close()


def _shots(tmp_path: Path) -> Path:
    out = Path(os.environ.get("ADVISOR_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _wait_for_run(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit has finished running the script (no 'Running...' widget)."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning'
                && document.querySelector('[data-testid="stMain"] h1');
        }""",
        timeout=timeout_ms,
    )
    # widgets still being laid out show skeletons; a screenshot should not catch them
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stSkeleton\"]').length === 0",
        timeout=timeout_ms,
    )


@pytest.mark.parametrize(("path", "title", "charts"), PAGES, ids=[p[1] for p in PAGES])
def test_each_served_page_draws_its_charts_with_no_exception(
    served, browser, tmp_path, path, title, charts
):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{served}/{path}", wait_until="domcontentloaded")
        _wait_for_run(page)
        assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == title
        if charts:
            page.wait_for_function(
                f"""() => document.querySelectorAll(
                    '.vega-embed canvas, .vega-embed svg.marks').length >= {charts}""",
                timeout=30_000,
            )
        drawn = page.locator(".vega-embed canvas, .vega-embed svg.marks").count()
        assert drawn >= charts
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.locator('[data-testid="stAlertContentError"]').count() == 0
        shot = _shots(tmp_path) / f"dashboard-{path or 'overview'}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert not errors, errors
    finally:
        page.close()


def test_a_sidebar_filter_change_redraws_the_overview_in_the_browser(served, browser, tmp_path):
    page = browser.new_page()
    try:
        page.goto(served, wait_until="domcontentloaded")
        _wait_for_run(page)
        before = page.locator('[data-testid="stMetricDelta"]').first.inner_text()
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.locator('[data-testid="stMultiSelect"]').first.click()
        page.get_by_role("option", name="teach").click()
        page.keyboard.press("Escape")
        page.wait_for_function(
            """(before) => {
                const d = document.querySelector('[data-testid="stMetricDelta"]');
                const app = document.querySelector('[data-testid="stApp"]');
                return d && d.innerText !== before
                    && app.getAttribute('data-test-script-state') === 'notRunning';
            }""",
            arg=before,
            timeout=30_000,
        )
        after = page.locator('[data-testid="stMetricDelta"]').first.inner_text()
        assert before != after
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(_shots(tmp_path) / "dashboard-overview-teach.png"), full_page=True)
    finally:
        page.close()
