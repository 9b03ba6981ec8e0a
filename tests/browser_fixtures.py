"""What the browser test modules share: Debian's ``chromium`` (never a downloaded browser), the
arguments it runs headless with, the loud skip when it or Playwright is missing, and one
persistent headless browser context (a profile folder of its own, a 1400 x 1000 window).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("ADVISOR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_or_skip() -> None:
    """Skip the test, loudly, when ``CHROMIUM`` or the Playwright package is missing."""
    if not (Path(CHROMIUM).exists() and shutil.which(CHROMIUM)):
        pytest.skip(f"SKIPPED LOUDLY: no chromium at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="SKIPPED LOUDLY: playwright not installed")


@contextmanager
def chromium_context(profile: Path) -> Iterator[Any]:
    """A persistent headless Chromium context with its profile in ``profile``, closed on exit."""
    from playwright.sync_api import sync_playwright

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
