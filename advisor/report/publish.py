"""Publishing the monthly report: its folder on disk (HTML, report.json, PNG/PDF charts by
vl-convert, the whole page printed by headless Chromium for e-mail), the index of every
report, and :func:`run_reports`, which gathers, renders and writes one month or the backlog.

Layout on disk: ``OUT/<YYYY-MM>/report.html`` (``OUT/<YYYY-MM>--<cluster>/`` for one cluster),
with ``<chart>.png`` / ``<chart>.pdf`` next to it, and ``OUT/index.json`` (and ``index.html``)
listing every report. Writing a month again replaces its folder as a whole (built aside, then
swapped in), so no file of an older run survives next to a newer report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from advisor import store
from advisor.errors import ExternalToolError, NotFoundError, UsageError
from advisor.progress import ProgressFn, no_progress
from advisor.report.gather import build_report
from advisor.report.inputs import load_inputs
from advisor.report.months import (
    Month,
    ReportConfig,
    available_months,
    check_cluster,
    resolve_month,
)
from advisor.report.records import MonthlyReport, ReportResult
from advisor.report.render import render_html, render_index, report_charts

_SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")

# --------------------------------------------------------------------------------------------
# Writing


def report_dir_name(month: str, cluster: str | None) -> str:
    """``2024-10`` for every cluster, ``2024-10--<cluster>`` for one (unsafe characters -> _)."""
    if cluster is None:
        return month
    return f"{month}--{_SAFE_RE.sub('_', cluster)}"


def _replace_dir(built: Path, target: Path) -> None:
    """Swap ``built`` in at ``target``; an older ``target`` is removed only after the swap."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        target.rename(old)
    built.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_report(
    report: MonthlyReport,
    out_dir: Path,
    *,
    png: bool = False,
    pdf: bool = False,
    progress: ProgressFn = no_progress,
) -> ReportResult:
    """Write one report's folder (HTML, and PNG/PDF charts if asked), replacing an older one."""
    import vl_convert

    charts = report_charts(report)
    html = render_html(report, charts)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / report_dir_name(report.month, report.cluster)
    built = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=out_dir))
    try:
        (built / "report.html").write_text(html, encoding="utf-8")
        (built / "report.json").write_text(
            json.dumps(report_as_dict(report), indent=2, default=str), encoding="utf-8"
        )
        images: list[str] = []
        kinds = [k for k, on in (("png", png), ("pdf", pdf)) if on]
        total = len(charts) * len(kinds)
        for i, (chart, kind) in enumerate((c, k) for c in charts for k in kinds):
            name = f"{chart.chart_id}.{kind}"
            if kind == "png":
                (built / name).write_bytes(vl_convert.vegalite_to_png(chart.spec, scale=2))
            else:
                (built / name).write_bytes(vl_convert.vegalite_to_pdf(chart.spec))
            images.append(name)
            progress(f"charts {report.month}", i + 1, total)
        if png or pdf:
            # the whole report for e-mail, printed from the written page as a browser draws it
            print_report(
                built / "report.html",
                pdf=built / "report.pdf" if pdf else None,
                png=built / "report.png" if png else None,
            )
            images += [n for n, on in (("report.png", png), ("report.pdf", pdf)) if on]
        built.chmod(0o755)
        _replace_dir(built, target)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise
    return ReportResult(
        month=report.month,
        cluster=report.cluster,
        html_path=target / "report.html",
        image_paths=tuple(target / n for n in images),
        gpu_jobs=report.quality.gpu_jobs,
        html_sha256=hashlib.sha256(html.encode("utf-8")).hexdigest(),
    )


CHROMIUM_ENV = "ADVISOR_CHROMIUM"
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
REPORT_WIDTH_PX = 1200  # the e-mail copy's width: the page's max-width plus its margins
_MAX_HEIGHT_PX = 16000


def _chromium() -> str:
    """Headless Chromium for the e-mail copies: ``$ADVISOR_CHROMIUM``, else one on PATH."""
    exe = os.environ.get(CHROMIUM_ENV) or next(
        (found for n in _CHROMIUM_NAMES if (found := shutil.which(n))), None
    )
    if not exe:
        raise ExternalToolError(
            "report.pdf and report.png are printed by headless Chromium, and none was found: "
            f"install it (Debian: apt-get install chromium) or set {CHROMIUM_ENV}=/path/to/it"
        )
    return exe


def print_report(html_path: Path, *, pdf: Path | None = None, png: Path | None = None) -> None:
    """Print the written report with headless Chromium: ``pdf`` as a paged PDF, ``png`` as one
    image of the whole page, both after its charts are drawn, for readers of e-mail."""
    exe = _chromium()
    url = html_path.resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="advisor-chromium-") as profile:
        base = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            # the charts are drawn by the page's script: let it run before printing
            "--virtual-time-budget=20000",
            "--run-all-compositor-stages-before-draw",
        ]
        jobs = []
        if pdf is not None:
            jobs.append([*base, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", url])
        if png is not None:
            jobs.append(
                [
                    *base,
                    f"--window-size={REPORT_WIDTH_PX},{_MAX_HEIGHT_PX}",
                    f"--screenshot={png}",
                    url,
                ]
            )
        for cmd in jobs:
            done = _run_chromium(cmd, exe, html_path)
            out = Path(cmd[-2].split("=", 1)[1])
            if done.returncode != 0 or not out.exists():
                tail = (done.stderr or "").strip().splitlines()[-3:]
                raise ExternalToolError(
                    f"{exe} exited with {done.returncode} printing {html_path}: {' '.join(tail)}"
                )
    if png is not None:
        _trim_bottom(png)


_CHROMIUM_TRIES = 2
_CHROMIUM_TIMEOUT_S = 90


def _run_chromium(cmd: list[str], exe: str, html_path: Path) -> subprocess.CompletedProcess[str]:
    """One headless print; a run that hangs (seen once in CI on a loaded 2-core machine) is
    killed with every process it started and tried once more before the report fails."""
    import signal

    last: Exception | None = None
    for _ in range(_CHROMIUM_TRIES):
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise ExternalToolError(f"{exe}: could not print {html_path}: {exc}") from exc
        try:
            stdout, stderr = proc.communicate(timeout=_CHROMIUM_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            last = exc
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            continue
        return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    raise ExternalToolError(
        f"{exe}: could not print {html_path}: no answer in {_CHROMIUM_TIMEOUT_S} s, "
        f"{_CHROMIUM_TRIES} times ({last})"
    )


def _trim_bottom(png: Path, margin_px: int = 40) -> None:
    """Cut the blank window below the page's end (the screenshot window is tall on purpose)."""
    from PIL import Image, ImageChops

    with Image.open(png) as img:
        rgb = img.convert("RGB")
    background = Image.new("RGB", rgb.size, rgb.getpixel((rgb.width - 1, rgb.height - 1)))
    box = ImageChops.difference(rgb, background).getbbox()
    if box is None:
        return
    bottom = min(rgb.height, box[3] + margin_px)
    rgb.crop((0, 0, rgb.width, bottom)).save(png, optimize=True)


def report_as_dict(report: MonthlyReport) -> dict[str, Any]:
    """The report object as plain JSON-ready data (written next to the HTML as report.json)."""
    from dataclasses import asdict

    def plain(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, (dt.date, dt.datetime)):
            return v.isoformat()
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v

    return dict(plain(asdict(report)))


def _write_index(out_dir: Path, results: Iterable[ReportResult]) -> None:
    """Merge these results into ``OUT/index.json`` (one entry per month and cluster)."""
    index_path = out_dir / "index.json"
    entries: dict[str, dict[str, Any]] = {}
    if index_path.exists():
        try:
            for e in json.loads(index_path.read_text(encoding="utf-8")).get("reports", []):
                entries[report_dir_name(e["month"], e.get("cluster"))] = e
        except (json.JSONDecodeError, KeyError, AttributeError, TypeError):
            entries = {}  # a damaged index is rebuilt from what is written now
    for r in results:
        entries[report_dir_name(r.month, r.cluster)] = {
            "month": r.month,
            "cluster": r.cluster,
            "html": str(r.html_path.relative_to(out_dir)),
            "images": [str(p.relative_to(out_dir)) for p in r.image_paths],
            "gpu_jobs": r.gpu_jobs,
            "html_sha256": r.html_sha256,
        }
    data = {"reports": [entries[k] for k in sorted(entries)]}
    tmp = index_path.with_name(".index.json.tmp")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    tmp.replace(index_path)
    # and a page for people: newest month first
    newest = sorted(data["reports"], key=lambda e: (e["month"], e["cluster"] or ""), reverse=True)
    page = render_index(newest)
    tmp = out_dir / ".index.html.tmp"
    tmp.write_text(str(page), encoding="utf-8")
    tmp.replace(out_dir / "index.html")


def _require_data(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    cluster: str | None,
    now: dt.datetime | None,
) -> None:
    """A month with no GPU allocation is refused (a monthly cron job would otherwise mail an
    empty report for ever), naming the months the database holds and how old the newest
    record is (the age every other surface gives)."""
    from advisor.datainfo import STALE_DAYS, freshness
    from advisor.headline import data_age_of
    from advisor.wording import age_words

    held = available_months(con, cluster)
    if any(m.label == month.label for m in held):
        return
    where = f" of cluster {cluster!r}" if cluster else ""
    if not held:
        raise NotFoundError(
            f"no GPU allocations{where} in the database; load some first with `advisor ingest FILE`"
        )
    today = (now or dt.datetime.now(dt.UTC)).replace(tzinfo=None)
    fresh = [f for f in freshness(con, today) if cluster is None or f.cluster == cluster]
    age = data_age_of((t for f in fresh for t in (f.last_submit, f.last_end)), today).age_days
    stale = (
        f"; the newest record is {age_words(age)} (is the ingest still running?)"
        if age is not None and age > STALE_DAYS
        else ""
    )
    span = (
        f"{held[0].label} only"
        if len(held) == 1
        else f"{held[0].label} to {held[-1].label} ({len(held)} months)"
    )
    raise NotFoundError(
        f"no GPU allocations{where} in {month.label}: the database holds {span}{stale}. "
        "Give --month YYYY-MM of one of them, or --all-months"
    )


def run_reports(
    config: ReportConfig,
    db: str | os.PathLike[str] | None = None,
    *,
    progress: ProgressFn = no_progress,
    now: dt.datetime | None = None,
) -> list[ReportResult]:
    """Build and write the month's report (or every month's, with ``all_months``).

    Opens the database read-only, so a report can run while the dashboard has it open.
    """
    if config.all_months == (config.month is not None):
        raise UsageError("give either --month YYYY-MM or --all-months (exactly one)")
    if config.top_n < 1:
        raise UsageError(f"--top {config.top_n}: must be at least 1")
    if config.out_dir.exists() and not config.out_dir.is_dir():
        raise UsageError(f"--out {config.out_dir}: exists and is not a folder")
    store.connect(db, read_only=True).close()  # a clear error first when there is no database
    inputs = load_inputs(config, db)
    con = store.connect(db, read_only=True)
    try:
        if config.all_months:
            months = available_months(con, config.cluster)
            if not months:
                where = f" of cluster {config.cluster!r}" if config.cluster else ""
                raise NotFoundError(
                    f"no GPU allocations{where} in the database; load some first with "
                    "`advisor ingest FILE`"
                )
        else:
            months = [resolve_month(config.month or "", now)]
            if config.cluster is not None:
                check_cluster(con, config.cluster)
            _require_data(con, months[0], config.cluster, now)
        results = []
        for i, month in enumerate(months):
            report = build_report(
                con, month, config.cluster, inputs, top_n=config.top_n, now=now, progress=progress
            )
            results.append(
                write_report(
                    report, config.out_dir, png=config.png, pdf=config.pdf, progress=progress
                )
            )
            progress("months", i + 1, len(months))
        _write_index(config.out_dir, results)
        return results
    finally:
        con.close()
