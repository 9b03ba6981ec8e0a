"""``advisor report`` on the command line: files written, output formats, errors and exit codes."""

from __future__ import annotations

import json

from tests.test_report_data import build_db


def test_report_command_writes_the_month_and_prints_what_it_wrote_as_json(cli, db_path, tmp_path):
    build_db(db_path)
    out = tmp_path / "out"
    code, stdout, stderr = cli(
        "report", "--month", "2024-10", "--out", str(out), "--db", str(db_path), "--format", "json"
    )
    assert code == 0, stderr
    rows = json.loads(stdout)
    assert rows == [
        {
            "month": "2024-10",
            "cluster": "*",
            "gpu_jobs": 113,
            "html": str(out / "2024-10" / "report.html"),
            "images": 0,
        },
    ]
    assert (out / "2024-10" / "report.html").is_file()


def test_all_months_with_png_as_csv(cli, db_path, tmp_path):
    build_db(db_path)
    code, stdout, stderr = cli(
        "report",
        "--all-months",
        "--png",
        "--cluster",
        "c1",
        "--out",
        str(tmp_path),
        "--db",
        str(db_path),
        "-f",
        "csv",
    )
    assert code == 0, stderr
    lines = stdout.strip().splitlines()
    assert lines[0] == "month,cluster,gpu_jobs,html,images"
    assert [ln.split(",")[:2] for ln in lines[1:]] == [["2024-09", "c1"], ["2024-10", "c1"]]
    assert (tmp_path / "2024-10--c1" / "cores-per-gpu.png").is_file()


def test_a_bad_month_exits_2_with_an_error_line_on_stderr(cli, db_path, tmp_path):
    build_db(db_path)
    code, stdout, stderr = cli(
        "report", "--month", "2024-13", "--out", str(tmp_path), "--db", str(db_path)
    )
    assert code == 2 and stdout == ""
    assert stderr.startswith("Error: --month '2024-13'")


def test_a_missing_database_exits_4_and_says_how_to_create_it(cli, tmp_path):
    code, _, stderr = cli(
        "report",
        "--month",
        "2024-10",
        "--out",
        str(tmp_path),
        "--db",
        str(tmp_path / "none.duckdb"),
    )
    assert code == 4
    assert "advisor ingest" in stderr and stderr.startswith("Error: ")


def test_a_bad_policy_file_exits_3_naming_its_line_and_field(cli, db_path, tmp_path):
    build_db(db_path)
    policy = tmp_path / "policy.json"
    policy.write_text('{"version": 1,\n "rules": [{"partition": "gpu"}]}')
    code, _, stderr = cli(
        "report",
        "--month",
        "2024-10",
        "--out",
        str(tmp_path / "out"),
        "--db",
        str(db_path),
        "--policy",
        str(policy),
    )
    assert code == 3
    assert f"{policy}:2, field rules[0].gpu_type" in stderr
    assert not (tmp_path / "out").exists()


def test_every_option_the_docs_use_exists_and_every_option_is_documented():
    import re
    from pathlib import Path

    import typer

    from advisor.cli import app

    command = typer.main.get_command(app).commands["report"]  # type: ignore[attr-defined]
    options = {o for p in command.params for o in p.opts if o.startswith("--")}
    doc = (Path(__file__).resolve().parent.parent / "docs" / "report.md").read_text()
    used = set()
    for line in doc.splitlines():
        if "advisor report" in line:
            used |= set(re.findall(r"(--[a-z][a-z-]*)", line.split("advisor report", 1)[1]))
    assert used and used <= options, used - options
    documented = set(re.findall(r"`(--[a-z][a-z-]*)", doc))
    assert options - {"--help"} <= documented, options - documented


def test_an_out_path_that_is_a_file_exits_2_before_any_work(cli, db_path, tmp_path):
    build_db(db_path)
    target = tmp_path / "taken"
    target.write_text("not a folder")
    code, _, stderr = cli(
        "report", "--month", "2024-10", "--out", str(target), "--db", str(db_path)
    )
    assert code == 2 and "is not a folder" in stderr
    assert target.read_text() == "not a folder"
