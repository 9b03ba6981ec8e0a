"""Fault injection on the serving side (issue 20, items 4, 9 and 10): lock contention between the
dashboard, ingest and other writers; hostile names through ingest, the terminal table, the HTML
report in a real headless Chromium and the dashboard; hostile policy files in the Lua plugin and
names slurm.conf cannot carry.

Everything is real: DuckDB files in a temp dir, the installed ``advisor`` console script and
other processes, Debian's chromium (driven by Playwright, as tests/test_browser.py does) and the
lua5.1 interpreter Debian's slurmctld links. Each probe is one test named after what must hold.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.browser_fixtures import chromium_context, chromium_or_skip

pytestmark = pytest.mark.fault("serving faults (round 3)")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
ADVISOR = shutil.which("advisor")
LUA = shutil.which("lua5.1")

# Names an account, user or partition can hold, each aimed at one interpreter on the way out.
HOSTILE = {
    "html_comment": "<!--<script>",
    "script_close": "</script><script>window.__pwned=1</script>",
    "img": '<img src=x onerror="window.__pwned=1">',
    "rich_markup": "[bold red]boom[/bold red]",
    "rich_link": "[link=https://evil.example]click[/link]",
    "csi": "\x1b[31mred\x1b[0m",
    "osc": "\x1b]8;;https://evil.example\x07osc\x1b]8;;\x07",
    "line_sep": "line\u2028sep",
    "bidi": "abc\u202edcba",
}
NEWLINE_NAME = "two\nlines"  # only sacct --json can carry it
# GRES types that markdown would read as a link, emphasis or code (no family matches them, so
# the dashboard names them in a warning and in its metric labels)
HOSTILE_GPU_TYPES = ("[x](https://evil.example)", "**bold**`tick")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("ADVISOR_DB", None)
    return env


def advisor(
    *args: str, timeout: float = 120, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed console script (with this checkout's code on PYTHONPATH)."""
    assert ADVISOR, "the advisor console script is not on PATH (pip install -e .)"
    env = {**_env(), **(env_extra or {})}
    return subprocess.run(
        [ADVISOR, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


# Hostile names through ingest ------------------------------------------------------------------


def _hostile_sacct_text(path: Path, accounts: list[str] | None = None) -> None:
    """A sacct -P text file: one 4-GPU job with one core per account name above (or ``accounts``,
    each also the job's name), plus ordinary jobs, all in January 2024 (a GPU job at 0.25 cores
    per GPU is below every target)."""
    header = (
        "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
        "Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|"
        "WorkDir|JobName|SubmitLine"
    )
    lines = [header]
    names = accounts is not None
    accounts = accounts or [*HOSTILE.values(), "plain-a", "plain-b"]
    for i, account in enumerate(accounts):
        job = 3_000_000 + i
        day = 2 + i
        lines.append(
            f"{job}|{job}|research|gpu|normal|{account}|g|{account}|{10000 + i}|"
            f"2024-01-{day:02d}T01:00:00|2024-01-{day:02d}T01:00:00|2024-01-{day:02d}T01:00:10|"
            f"2024-01-{day:02d}T05:00:10|04:00:00|0:0|COMPLETED|1|1|1|4G|"
            "billing=1,cpu=1,gres/gpu=4,mem=4G,node=1|"
            "billing=1,cpu=1,gres/gpu:h100=4,gres/gpu=4,mem=4G,node=1|1-00:00:00|n1|/tmp|"
            f"{account if names else 'job'}|sbatch --gpus=4 job.sh"
        )
    for i, gres in enumerate(HOSTILE_GPU_TYPES):
        job = 3_100_000 + i
        lines.append(
            f"{job}|{job}|research|gpu|normal|plain-a|g|plain-a|20000|2024-01-20T01:00:00|"
            "2024-01-20T01:00:00|2024-01-20T01:00:10|2024-01-20T05:00:10|04:00:00|0:0|COMPLETED|"
            "1|1|1|4G|billing=1,cpu=1,gres/gpu=4,mem=4G,node=1|"
            f"billing=1,cpu=1,gres/gpu:{gres}=4,gres/gpu=4,mem=4G,node=1|1-00:00:00|n1|/tmp|job|"
            "sbatch --gpus=4 job.sh"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _newline_sacct_json(path: Path) -> None:
    """The real Slurm 22.05 sacct --json sample with one GPU job's account renamed to a name
    holding a newline (JSON can carry one; sacct -P text cannot)."""
    data = json.loads((SAMPLE / "slurm" / "sacct.json").read_text(encoding="utf-8"))
    gpu_jobs = [j for j in data["jobs"] if "gres" in json.dumps(j.get("tres", j.get("steps")))]
    job = copy.deepcopy(gpu_jobs[0])
    job["account"] = NEWLINE_NAME
    job["association"]["account"] = NEWLINE_NAME
    data["jobs"] = [job]
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    db = tmp / "hostile.duckdb"
    text, js = tmp / "hostile.txt", tmp / "newline.json"
    _hostile_sacct_text(text)
    _newline_sacct_json(js)
    cp = advisor("ingest", str(text), str(js), "--db", str(db), "--format", "json")
    assert cp.returncode == 0, cp.stderr
    return db


def test_hostile_names_are_stored_verbatim_by_ingest(hostile_db: Path):
    cp = advisor("jobs", "--db", str(hostile_db), "--format", "json", "--limit", "100")
    assert cp.returncode == 0, cp.stderr
    accounts = {j["account"] for j in json.loads(cp.stdout)}
    assert set(HOSTILE.values()) | {NEWLINE_NAME} <= accounts


def test_terminal_table_shows_markup_and_control_characters_literally(hostile_db: Path):
    cp = advisor("ratios", "--by", "account", "--db", str(hostile_db))
    assert cp.returncode == 0, cp.stderr
    out = cp.stdout
    # nothing a terminal would act on: no ESC, BEL, separator or bidi override reaches it
    for ch in ("\x1b", "\x07", "\u2028", "\u202e"):
        assert ch not in out, repr(ch)
    # Rich markup in data is printed as written, not interpreted (nor dropped)
    assert "[bold red]boom[/bold red]" in out
    assert "[link=https://evil.example]click[/link]" in out
    # control characters are shown visibly
    assert "\\x1b[31mred\\x1b[0m" in out
    assert "\\x1b]8;;https://evil.example\\x07osc" in out
    assert "line\\u2028sep" in out
    assert "abc\\u202edcba" in out
    # a newline in a name stays on its row: the row with "two\nlines" also holds its numbers
    row = [ln for ln in out.splitlines() if "two\\nlines" in ln]
    assert len(row) == 1, out
    assert "lines" not in "".join(ln for ln in out.splitlines() if ln not in row and "two" in ln)
    # every account is one row: as many data rows as accounts
    rows = [ln for ln in out.splitlines() if ln.startswith("│")]  # the header row has "┃"
    assert len(rows) == len(HOSTILE) + 3  # + plain-a, plain-b, the newline name


def test_terminal_text_escapes_what_a_terminal_would_act_on():
    from advisor.cli._output import terminal_text

    assert terminal_text("[bold]x[/bold]").plain == "[bold]x[/bold]"
    assert terminal_text("a\nb\tc\r").plain == "a\\nb\\tc\\r"
    assert terminal_text("\x1b[2J\x9b1m\x7f").plain == "\\x1b[2J\\x9b1m\\x7f"
    assert terminal_text("é ü 中文").plain == "é ü 中文"  # printable text is left alone


def test_json_and_csv_output_keep_hostile_names_exactly(hostile_db: Path):
    cp = advisor("ratios", "--by", "account", "--db", str(hostile_db), "--format", "json")
    assert cp.returncode == 0, cp.stderr
    names = {r["account"] for r in json.loads(cp.stdout)}
    assert set(HOSTILE.values()) | {NEWLINE_NAME} <= names


# Names a spreadsheet would run (OWASP CSV injection): job names and accounts starting =, +, -, @,
# a tab ("|" and a carriage return cannot stand in sacct -P text); "-3" is a number and stays one.
FORMULAS = (
    '=HYPERLINK("https://evil.example","x")',
    "+1+cmd('/C calc')",
    "-2+3+cmd('/C calc')",
    "@SUM(1+1)*cmd('/C calc')",
    "\t=1+1",
    "-3",
)


def test_csv_output_neutralises_cells_a_spreadsheet_would_run(tmp_path: Path):
    import csv
    import io

    text, db = tmp_path / "formulas.txt", tmp_path / "formulas.duckdb"
    _hostile_sacct_text(text, [*FORMULAS, "plain-a"])
    cp = advisor("ingest", str(text), "--db", str(db))
    assert cp.returncode == 0, cp.stderr
    jobs = advisor("jobs", "--db", str(db), "--format", "csv", "--limit", "100")
    ratios = advisor("ratios", "--by", "account", "--db", str(db), "--format", "csv")
    for cp, column in ((jobs, "user"), (jobs, "account"), (ratios, "account")):
        assert cp.returncode == 0, cp.stderr
        rows = list(csv.DictReader(io.StringIO(cp.stdout)))
        cells = {r[column] for r in rows}
        assert {"'" + f for f in FORMULAS[:-1]} | {"-3", "plain-a"} <= cells, (column, cells)
        # nothing else starts a formula, and numbers (negative ones too) are written as numbers
        assert not [c for c in cells if c[:1] in "=+@\t\r" or (c[:1] == "-" and c != "-3")]
    assert "p50" in ratios.stdout.splitlines()[0]


def test_csv_cells_are_neutralised_only_where_a_spreadsheet_would_run_them():
    from advisor.csvcells import csv_cell

    assert csv_cell("=1+1") == "'=1+1" and csv_cell("@x") == "'@x" and csv_cell("\rx") == "'\rx"
    assert csv_cell("+1") == "+1" and csv_cell("-2.5e3") == "-2.5e3"  # text that is a number
    assert csv_cell("-1+1") == "'-1+1"
    assert csv_cell(-3) == -3 and csv_cell(-0.5) == -0.5 and csv_cell(None) == ""
    assert csv_cell("plain") == "plain" and csv_cell("a=b") == "a=b"


# The HTML report in a real Chromium ----------------------------------------------------------


def test_inline_json_escapes_what_ends_or_reparses_a_script_element():
    from advisor.report import inline_json

    value = {"name": "<!--<script></script>&\u2028\u2029"}
    text = inline_json(value)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == value


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    chromium_or_skip()
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as ctx:
        yield ctx


@pytest.mark.browser
@pytest.mark.slow
def test_report_with_hostile_names_draws_every_chart_in_chromium(hostile_db, browser, tmp_path):
    out = tmp_path / "reports"
    cp = advisor(
        "report", "--month", "2024-01", "--out", str(out), "--db", str(hostile_db), timeout=300
    )
    assert cp.returncode == 0, cp.stderr
    html = next(p for p in out.rglob("*.html") if p.name != "index.html")
    text = html.read_text(encoding="utf-8")
    specs = text.split('id="advisor-chart-specs">', 1)[1].split("</script>", 1)[0]
    assert "<" not in specs and "&" not in specs  # the names sit in it as \u003c etc.
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(html.as_uri(), wait_until="load")
        page.wait_for_function(
            "() => document.body.dataset.chartsDrawn !== undefined", timeout=60_000
        )
        charts = page.locator("div.chart[data-chart]").count()
        assert charts >= 2
        assert int(page.evaluate("document.body.dataset.chartsDrawn")) == charts
        assert page.locator("div.chart[data-chart] svg.marks").count() == charts
        assert page.evaluate("window.__pwned") is None  # no payload ran
        # the names are shown as text in the below-target table, exactly
        shown = page.eval_on_selector_all(
            "#below-accounts th[scope=row]", "els => els.map(e => e.dataset.value)"
        )
        assert HOSTILE["html_comment"] in shown and HOSTILE["img"] in shown
        assert not errors, errors
    finally:
        page.close()


# The dashboard with hostile names -------------------------------------------------------------


def test_dashboard_pages_show_hostile_names_verbatim_and_raise_nothing(hostile_db, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ADVISOR_DB", str(hostile_db))
    monkeypatch.delenv("ADVISOR_HASH_USERS", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    for page in ("overview", "trends", "who", "recommend", "benchmarks", "data"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        if page == "who":
            shown = set(at.dataframe[0].value["account"])
            assert set(HOSTILE.values()) <= shown  # every one listed, as written


@pytest.mark.browser
@pytest.mark.slow
def test_served_dashboard_with_hostile_names_draws_its_charts_and_runs_no_payload(
    hostile_db, browser
):
    from tests.test_browser import _wait_for_run, _wait_healthy, start_dashboard

    proc, port = start_dashboard(hostile_db, _env())
    page = None
    try:
        _wait_healthy(port, proc)
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        for path in ("who", ""):
            page.goto(f"http://127.0.0.1:{port}/{path}", wait_until="domcontentloaded")
            _wait_for_run(page)
            page.wait_for_function(
                "() => document.querySelectorAll('.vega-embed svg.marks, .vega-embed canvas')"
                ".length >= 1",
                timeout=60_000,
            )
            assert page.locator('[data-testid="stException"]').count() == 0
            assert page.evaluate("window.__pwned") is None
            assert page.locator("img[src=x]").count() == 0  # a name was not parsed as HTML
            # a GPU type written as a markdown link stays text: no link to it anywhere
            links = page.eval_on_selector_all(
                "a[href*='evil.example']",
                "els => els.map(e => e.outerHTML + ' IN ' + "
                "e.closest('[data-testid=stMarkdownContainer]').innerText)",
            )
            assert not links, links
        main = page.locator('[data-testid="stMain"]').inner_text()
        for gres in HOSTILE_GPU_TYPES:  # in the warning and the metric labels, as written
            assert gres in main, gres
        assert page.locator('[data-testid="stMain"] strong:text-is("bold")').count() == 0
        assert not errors, errors
    finally:
        if page is not None:
            page.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# Hostile policy files and names in the policy export ------------------------------------------


@pytest.mark.skipif(
    LUA is None, reason="LUA 5.1 MISSING: the Lua budget was NOT tested (apt install lua5.1)"
)
def test_lua_plugin_survives_looping_memory_hog_and_out_of_range_policies(tmp_path):
    cp = subprocess.run(
        [
            LUA,
            str(ROOT / "tests" / "slurm" / "lua" / "test_policy_faults.lua"),
            str(ROOT),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = cp.stdout.splitlines()
    failed = [ln for ln in lines if ln.startswith("not ok")]
    assert cp.returncode == 0 and not failed, "\n".join(failed) or cp.stderr or cp.stdout
    assert lines[-1] == "1..16"
    assert len([ln for ln in lines if ln.startswith("ok ")]) == 16
    # every hostile policy refused as promised (issue 30 items 23-25 added bytecode, versions
    # such as 1.9, a capped loop, a 2 MB file and 120,000 bad rules)
    tally = next(ln for ln in lines if ln.startswith("# fault matrix (lua policy):"))
    assert tally == (
        "# fault matrix (lua policy): tried 18, refused 18, loaded 0, crashed 0, wrong 0"
    ), tally


def _partition_db(db: Path, partitions: list[str]) -> None:
    import datetime as dt

    from advisor.store import connect

    con = connect(db)
    start = dt.datetime(2026, 11, 1)
    for i, part in enumerate(partitions):
        con.execute(
            'INSERT INTO jobs (cluster, job_id_raw, submit, job_id, "partition", start, "end",'
            " elapsed_s, cpus, gpus, gpu_type, gpu_type_raw) VALUES"
            " ('c', ?, ?, ?, ?, ?, ?, 3600, 1, 4, 'H100', 'h100')",
            [i, start, str(i), part, start, start + dt.timedelta(hours=1)],
        )
    con.close()


def test_slurm_conf_export_skips_names_slurm_cannot_take_and_writes_the_rest(tmp_path):
    db = tmp_path / "parts.duckdb"
    bad = ["h100#x", "gpu MaxTime=1", "a,b", "DEFAULT", "evil\nPartitionName=x"]
    _partition_db(db, ["gpu", "h100-long", *bad])
    cp = advisor("policy", "export", "--format", "slurm.conf", "--db", str(db), timeout=300)
    assert cp.returncode == 0, cp.stderr
    settings = [ln for ln in cp.stdout.splitlines() if not ln.startswith("#")]
    assert [ln.split()[0] for ln in settings] == ["PartitionName=gpu", "PartitionName=h100-long"]
    for name in bad:
        assert ascii(name) in cp.stderr, (name, cp.stderr)  # the warning names each one
        assert f"# skipped partition {ascii(name)}" in cp.stdout
    assert len(cp.stdout.splitlines()) == 3 + 2 + len(bad)  # the newline stayed escaped


def test_exported_lua_policy_with_hostile_partition_names_loads_in_the_plugin(tmp_path):
    if LUA is None:
        pytest.skip("LUA 5.1 MISSING: the exported policy was NOT loaded (apt install lua5.1)")
    db = tmp_path / "parts.duckdb"
    _partition_db(db, ["gpu", "h100#x", "]]..os.exit(3)--"])
    policy = tmp_path / "advisor-policy.lua"
    cp = advisor(
        "policy", "export", "--format", "lua", "--db", str(db), "--output", str(policy), timeout=300
    )
    assert cp.returncode == 0, cp.stderr
    script = textwrap.dedent(f"""
        slurm = {{ log_error = function() end, log_info = function() end }}
        local M = dofile({json.dumps(str(ROOT / "slurm" / "job_submit.lua"))})
        local p, _, err = M.read_policy({json.dumps(str(policy))})
        assert(p, err)
        local names = {{}}
        for _, r in ipairs(p.rules) do names[r.partition] = true end
        assert(names["h100#x"] and names["]]..os.exit(3)--"], "names kept verbatim")
        print("loaded " .. #p.rules)
    """)
    cp = subprocess.run([LUA, "-"], input=script, capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("loaded ")


# Lock contention: the dashboard, ingest and other writers ------------------------------------

APP = ROOT / "app" / "streamlit_app.py"

# A second process serving the app the way the Streamlit server does (AppTest runs the same
# script, the same app.db, in that process): it answers a page, then waits for the parent.
_SERVE_TWICE = textwrap.dedent("""
    import sys
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(sys.argv[1], default_timeout=300)
    for _ in range(2):
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        jobs = [c.value for c in at.sidebar.caption if "jobs" in c.value]
        print("served", jobs[0] if jobs else [m.value for m in at.main.info], flush=True)
        sys.stdin.readline()
""")


def _count_jobs(db: Path) -> int:
    from advisor.store import connect

    con = connect(db, read_only=True, wait_s=30)
    try:
        row = con.execute("SELECT count(*) FROM jobs").fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


@pytest.fixture
def served_db(tmp_path: Path) -> Path:
    from tests.test_app_data import make_db

    return make_db(tmp_path / "served.duckdb", "gpu", n_jobs=300)


def test_ingest_succeeds_while_a_second_process_serves_the_dashboard(served_db, tmp_path):
    env = {**_env(), "ADVISOR_DB": str(served_db)}
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVE_TWICE, str(APP)],
        env=env,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        first = child.stdout.readline()
        assert first.startswith("served") and "300 jobs" in first, first + child.stderr.read()
        before = _count_jobs(served_db)
        # the dashboard process is alive and has served a page: an ingest gets the file within
        # its wait, although the dashboard keeps it warm for longer (KEEP_WARM_S)
        from app.db import KEEP_WARM_S

        wait_s = 3
        assert wait_s < KEEP_WARM_S
        cp = advisor(
            "ingest",
            str(SAMPLE / "sacct-synth.txt.gz"),
            "--db",
            str(served_db),
            env_extra={"ADVISOR_LOCK_WAIT_S": str(wait_s)},
        )
        assert cp.returncode == 0, cp.stderr
        after = _count_jobs(served_db)
        assert after > before
        child.stdin.write("again\n")
        child.stdin.flush()
        second = child.stdout.readline()
        assert f"{after:,} jobs" in second, second  # the same process shows the new data
        child.stdin.write("done\n")
        child.stdin.flush()
        assert child.wait(timeout=120) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _hold_write_lock(db: Path) -> subprocess.Popen[str]:
    """Another process that opens the file for writing and keeps it until a line on its stdin."""
    code = textwrap.dedent(f"""
        import sys, duckdb
        con = duckdb.connect({str(db)!r})
        print("locked", flush=True)
        sys.stdin.readline()
        con.close()
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_ingest_waits_for_a_writer_then_exits_with_the_locked_code(served_db):
    from advisor.errors import ExitCode

    before = _count_jobs(served_db)
    holder = _hold_write_lock(served_db)
    try:
        cp = advisor(
            "ingest",
            str(SAMPLE / "sacct-synth.txt.gz"),
            "--db",
            str(served_db),
            env_extra={"ADVISOR_LOCK_WAIT_S": "2"},
        )
    finally:
        holder.kill()
        holder.wait()
    assert cp.returncode == ExitCode.LOCKED == 6, cp.stderr
    assert f"database is in use by PID {holder.pid} (" in cp.stderr
    assert "waiting up to 2 s" in cp.stderr
    assert "Error: " in cp.stderr and "still locked after 2 s" in cp.stderr
    assert "ADVISOR_LOCK_WAIT_S" in cp.stderr
    assert "Traceback" not in cp.stderr
    assert _count_jobs(served_db) == before  # nothing was loaded
    from advisor.store import writer_waiting_path

    assert not writer_waiting_path(served_db).exists()  # its marker went with it


def test_ingest_waits_for_a_short_writer_and_then_loads(served_db):
    before = _count_jobs(served_db)
    holder = _hold_write_lock(served_db)
    ingest = subprocess.Popen(
        [
            ADVISOR or "advisor",
            "ingest",
            str(SAMPLE / "sacct-synth.txt.gz"),
            "--db",
            str(served_db),
        ],
        env={**_env(), "ADVISOR_LOCK_WAIT_S": "120"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert ingest.stderr is not None and holder.stdin is not None
        waiting = ingest.stderr.readline()  # it says so, then waits
        assert f"database is in use by PID {holder.pid}" in waiting
        assert "waiting up to 120 s" in waiting
        assert ingest.poll() is None  # still waiting, not failed
        holder.stdin.write("release\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
        _, err = ingest.communicate(timeout=300)
    finally:
        for proc in (holder, ingest):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert ingest.returncode == 0, err
    assert _count_jobs(served_db) > before
    from advisor.store import writer_waiting, writer_waiting_path

    assert not writer_waiting_path(served_db).exists() and not writer_waiting(served_db)


def test_a_waiting_writer_is_seen_only_while_its_process_lives(tmp_path):
    from advisor.store import writer_waiting, writer_waiting_path

    db = tmp_path / "x.duckdb"
    marker = writer_waiting_path(db)
    assert marker.name == "x.duckdb.writer-waiting" and not writer_waiting(db)
    marker.write_text(f"{os.getpid()}\n")
    assert writer_waiting(db)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    marker.write_text(gone.stdout)  # a writer killed while it waited left its marker
    assert not writer_waiting(db)
    marker.write_text("garbage")
    assert not writer_waiting(db)


def test_a_reader_waits_for_a_writer_then_exits_with_the_locked_code(served_db):
    holder = _hold_write_lock(served_db)
    try:
        cp = advisor(
            "ratios",
            "--by",
            "gpu_type",
            "--db",
            str(served_db),
            env_extra={"ADVISOR_LOCK_WAIT_S": "1"},
        )
    finally:
        holder.kill()
        holder.wait()
    assert cp.returncode == 6, cp.stderr
    assert f"in use by PID {holder.pid}" in cp.stderr and "Traceback" not in cp.stderr


def test_a_dashboard_request_during_a_write_says_who_is_writing(served_db, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app import db

    monkeypatch.setenv("ADVISOR_DB", str(served_db))
    monkeypatch.setattr(db, "READ_WAIT_S", 1.0)
    holder = _hold_write_lock(served_db)
    try:
        at = AppTest.from_file(str(APP), default_timeout=120).run()
    finally:
        holder.kill()
        holder.wait()
    assert not at.exception and not at.error
    infos = [i.value for i in at.info]
    assert infos and "being written by another process" in infos[0]
    assert f"PID {holder.pid}" in infos[0]
    at.run()  # the writer has gone: the next interaction answers
    assert not at.exception
    assert not any("being written" in i.value for i in at.info)  # (other notes may remain)
    assert any("300 jobs" in c.value for c in at.sidebar.caption)


@pytest.mark.browser
@pytest.mark.slow
def test_ingest_succeeds_while_chromium_shows_the_served_dashboard(served_db, browser):
    from tests.test_browser import _wait_for_run, _wait_healthy, start_dashboard

    proc, port = start_dashboard(served_db, _env())
    page = None
    try:
        _wait_healthy(port, proc)
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
        _wait_for_run(page)
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert "300 jobs" in sidebar.inner_text()
        cp = advisor(
            "ingest",
            str(SAMPLE / "sacct-synth.txt.gz"),
            "--db",
            str(served_db),
            env_extra={"ADVISOR_LOCK_WAIT_S": "5"},
        )
        assert cp.returncode == 0, cp.stderr
        after = _count_jobs(served_db)
        page.reload(wait_until="domcontentloaded")
        _wait_for_run(page)
        page.wait_for_function(
            "(n) => document.querySelector('[data-testid=\"stSidebar\"]').innerText.includes(n)",
            arg=f"{after:,} jobs",
            timeout=60_000,
        )
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        if page is not None:
            page.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _old_schema(db: Path) -> None:
    """Make ``db`` look like a file written by an older advisor (one migration not applied)."""
    import duckdb

    con = duckdb.connect(str(db))
    newest = con.execute("SELECT max(version) FROM schema_version").fetchone()
    con.execute("DELETE FROM schema_version WHERE version = ?", [newest[0] if newest else 0])
    con.close()


def _pending(db: Path) -> list[int]:
    import duckdb

    from advisor import store

    con = duckdb.connect(str(db), read_only=True)
    try:
        return store.pending(con)
    finally:
        con.close()


def test_dashboard_start_never_migrates_an_old_schema_and_the_page_names_the_command(served_db):
    from streamlit.testing.v1 import AppTest

    from advisor import ratios

    _old_schema(served_db)
    missing = _pending(served_db)
    assert len(missing) == 1
    # what `advisor dashboard` runs before serving: it must leave the old file as it is
    assert ratios.store_fresh_cubes(served_db) is False
    assert _pending(served_db) == missing
    os.environ["ADVISOR_DB"] = str(served_db)
    try:
        at = AppTest.from_file(str(APP), default_timeout=120).run()
    finally:
        os.environ.pop("ADVISOR_DB", None)
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors and "advisor db migrate" in errors[0] and str(served_db) in errors[0]
    assert _pending(served_db) == missing  # still not migrated after serving the page


@pytest.mark.slow
def test_advisor_dashboard_process_leaves_an_old_schema_unmigrated(served_db):
    import signal

    from tests.test_browser import _free_port, _wait_healthy

    _old_schema(served_db)
    missing = _pending(served_db)
    port = _free_port()
    proc = subprocess.Popen(
        [
            ADVISOR or "advisor",
            "dashboard",
            "--db",
            str(served_db),
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
        ],
        env={
            **_env(),
            "STREAMLIT_SERVER_HEADLESS": "true",
            "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_healthy(port, proc)
        assert _pending(served_db) == missing
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the group this test started: advisor + streamlit
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
