"""Issue 50's slips, as an admin meets them: the console script's words on stderr and in -h."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.test_faults_round5 import _sacct


def _adv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args], capture_output=True, text=True, timeout=300
    )


def test_an_unknown_gpu_type_is_answered_with_a_warning_naming_the_known_ones(tmp_path: Path):
    db = str(tmp_path / "none.duckdb")
    for fmt in ("json", "table"):
        done = _adv("recommend", "--gpu-type", "H999", "--gpus", "4", "--db", db, "--format", fmt)
        assert done.returncode == 0, done.stderr
        assert "Warning: --gpu-type 'H999' is no GPU type advisor knows" in done.stderr
        assert "H100" in done.stderr and "extrapolation" in done.stderr
    known = _adv("recommend", "--gpu-type", "h100_80gb", "--gpus", "4", "--db", db, "-f", "json")
    assert known.returncode == 0 and "no GPU type advisor knows" not in known.stderr


def test_a_bad_choice_is_said_without_the_validators_prefix():
    done = _adv("ratios", "--format", "xml")
    assert done.returncode == 2
    assert "'xml' is not one of 'table', 'csv', 'json'" in done.stderr
    assert "Value error" not in done.stderr
    assert "Value error" not in _adv("ratios", "--weight", "x").stderr


def test_usage_help_names_no_command_that_does_not_exist():
    done = _adv("usage", "-h")
    assert done.returncode == 0 and "advisor prices" not in done.stdout
    assert "docs/model.md" in done.stdout


def test_a_report_for_a_month_without_jobs_names_the_one_month_held_without_1_months(
    tmp_path: Path,
):
    db = str(tmp_path / "a.duckdb")
    assert _adv("ingest", str(_sacct(tmp_path, [(1, 1)])), "--db", db).returncode == 0
    done = _adv("report", "--month", "2024-05", "--out", str(tmp_path / "r"), "--db", db)
    assert done.returncode == 4, done.stderr
    assert "the database holds 2024-03 only" in done.stderr and "(1 months)" not in done.stderr


def test_every_command_that_answers_from_old_data_says_how_old_on_stderr(tmp_path: Path):
    db = str(tmp_path / "a.duckdb")
    assert _adv("ingest", str(_sacct(tmp_path, [(1, 1), (2, 4)])), "--db", db).returncode == 0
    for args in (
        ("ratios",),
        ("ratios", "--format", "json"),
        ("policy", "export", "--format", "slurm.conf"),
        ("recommend", "--partition", "*", "--format", "json"),
    ):
        done = _adv(*args, "--db", db)
        assert done.returncode == 0, (args, done.stderr)
        warning = [x for x in done.stderr.splitlines() if "days old" in x]
        assert len(warning) == 1 and warning[0].startswith("Warning: c: the newest record is ")
        assert "(last job ended 2024-03-01)" in warning[0], warning
    # the job-submit answer reads no jobs: it stays quiet
    quiet = _adv("recommend", "--gpu-type", "H100", "--gpus", "4", "--db", db, "-f", "json")
    assert quiet.returncode == 0 and "days old" not in quiet.stderr


def test_one_column_left_out_is_said_in_the_singular(monkeypatch, capsys):
    from advisor.cli._output import OutputFormat, emit_rows

    monkeypatch.setenv("COLUMNS", "40")
    rows = [{"partition": "gpu", "jobs": 12, "a_rather_long_column_name": 1.5}] * 2
    emit_rows(rows, OutputFormat.table)
    err = " ".join(capsys.readouterr().err.split())  # rich wraps it at 40 columns
    assert "(1 more column does not fit 40 columns: a_rather_long_column_name;" in err
    emit_rows([{**r, "another_long_one_too": 2} for r in rows], OutputFormat.table)
    assert "(2 more columns do not fit 40 columns:" in " ".join(capsys.readouterr().err.split())


def test_no_gpu_job_says_to_load_some_and_no_match_names_the_filters(tmp_path: Path):
    db = tmp_path / "cpu-only.duckdb"  # one CPU-only job: data, but no GPU job
    assert _adv("ingest", str(_sacct(tmp_path, [(1, 0)])), "--db", str(db)).returncode == 0
    plain = _adv("ratios", "--db", str(db))
    assert "The data holds no GPU jobs with an allocation: load some" in plain.stderr
    filtered = _adv("ratios", "--db", str(db), "--partition", "nope")
    assert "No GPU jobs with an allocation match these filters." in filtered.stderr


def test_one_data_age_in_one_form_from_one_reference_point(tmp_path: Path):
    """Issue 50 item 6: the stale warning, the headline and the report's refusal give the same
    whole days from now to the newest record (the Data page's sentence and table are the same
    function, the browser test reads them)."""
    import datetime as dt

    from advisor import datainfo, report, store
    from advisor.errors import NotFoundError
    from advisor.headline import data_age_of
    from advisor.wording import age_words

    db = tmp_path / "a.duckdb"
    assert _adv("ingest", str(_sacct(tmp_path, [(1, 1)])), "--db", str(db)).returncode == 0
    now = dt.datetime(2025, 2, 1, 15, 0)  # the newest record ended 2024-03-01 03:00
    con = store.connect(db, read_only=True)
    try:
        fresh = datainfo.freshness(con, now)
        age = data_age_of([fresh[0].last_submit, fresh[0].last_end], now)
        words = age_words(fresh[0].age_days)
        assert words == "338 days old" and age.words() == f"data up to 2024-03-01, {words}"
        assert f"the newest record is {words}" in datainfo.stale_sentences(con, now)[0]
    finally:
        con.close()
    cfg = report.ReportConfig(out_dir=tmp_path / "r", month="2024-05")
    try:
        report.run_reports(cfg, db, now=now)
    except NotFoundError as exc:
        assert f"the newest record is {words} (is the ingest still running?)" in str(exc)
    else:
        raise AssertionError("a month without jobs is refused")
    assert [age_words(d) for d in (0.4, 1.2, 705.49, 705.5, 1500)] == [
        "less than a day old", "1 day old", "705 days old", "706 days old", "1,500 days old",
    ]  # fmt: skip


def test_every_command_that_takes_the_wait_threshold_refuses_it_in_the_same_words(
    tmp_path: Path,
):
    """One definition of enough cores (issue 48 item 1): --max-wait is one option, checked by
    one function, so recommend (a job and partitions), bench curve and pressure link refuse a
    share outside (0, 1) with exit code 2 and the same one line; pressure curve's core function
    refuses it before it reads anything."""
    import duckdb
    import pytest

    from advisor.errors import UsageError
    from advisor.recommend.measured import curve_report

    def adv(*args: str) -> subprocess.CompletedProcess[str]:  # no database here: none named
        cmd = [sys.executable, "-m", "advisor", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)

    said = set()
    for value in ("1.5", "0", "nan"):
        for args in (
            ("recommend", "--gpu-type", "H100", "--gpus", "4"),
            ("recommend", "--partition", "*"),
            ("bench", "curve", str(tmp_path)),
            ("pressure", "link"),
        ):
            done = adv(*args, "--max-wait", value)
            assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)
            said.add(done.stderr.strip())
        why = (
            "not a finite number (nan and inf mean nothing here)"
            if value == "nan"
            else "a share of wall time between 0 and 1 (e.g. 0.15)"
        )
        assert said == {f"Error: --max-wait {float(value):g}: {why}"}
        said.clear()
    with pytest.raises(UsageError, match="--max-wait 1.5: a share of wall time"):
        curve_report(duckdb.connect(), max_wait=1.5)
    with pytest.raises(UsageError, match="--max-wait nan: a share of wall time"):
        curve_report(duckdb.connect(), max_wait=float("nan"))
    assert adv("recommend", "--gpu-type", "H100", "--gpus", "4").returncode == 0
