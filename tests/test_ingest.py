"""Ingest of sacct text, sacct JSON and jobcomp logs into a real DuckDB file."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from advisor.errors import InputError, UsageError
from advisor.ingest import IngestOptions, ingest_files, list_ingests, list_rejects

FIX = Path(__file__).resolve().parent / "fixtures" / "ingest"


def _jobs(db: Path, where: str = "TRUE") -> dict[str, dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(f"SELECT * FROM jobs WHERE {where}")
        names = [d[0] for d in cur.description]
        return {r[names.index("job_id")]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    db_path = tmp_path_factory.mktemp("edge") / "advisor.duckdb"
    [summary] = ingest_files(db_path, [FIX / "edge.txt"])
    assert summary.rejected == 0, summary.first_reasons
    return _jobs(db_path)


def test_typed_and_untyped_gpu_keys_are_the_same_gpus_not_a_sum(edge) -> None:
    job = edge["100"]
    assert (job["gpus"], job["cpus"], job["gpu_type"], job["gpu_type_raw"]) == (
        4,
        16,
        "H100",
        "h100",
    )
    assert job["mem_mb"] == 64 * 1024


def test_gpumem_gpuutil_and_a_site_gres_named_cpu_are_not_counted(edge) -> None:
    job = edge["101"]
    assert job["gpus"] == 3  # untyped total, not 1 + 2 + 3, not gpumem/gpuutil
    assert job["cpus"] == 6  # cpu=6, not gres/cpu=9
    assert job["gpu_type"] == "H100"  # the type holding most of the GPUs
    assert job["gpu_types"] == "A100:1,H100:2"
    assert job["mem_mb"] == 2560  # mem=2.50G


def test_allocated_cpus_are_used_when_reqcpus_is_wrong_for_cpus_per_gpu(edge) -> None:
    job = edge["101"]
    assert (job["req_cpus"], job["cpus"], job["req_gpus"]) == (1, 6, 3)


def test_mig_slices_map_to_their_family_and_mem_units_convert(edge) -> None:
    job = edge["102"]
    assert (job["gpu_type"], job["gpu_type_raw"], job["mem_mb"]) == ("A100", "a100_3g.20gb", 374000)


def test_steps_fold_into_their_allocation_and_give_interactive_evidence(edge) -> None:
    assert len(edge) == 14  # 21 data lines: 6 steps folded, the split line glued
    assert edge["100"]["is_interactive"] is False
    assert edge["100"]["interactive_evidence"] == "submit_line"
    assert edge["102"]["is_interactive"] is True  # an .interactive step, no SubmitLine
    assert edge["102"]["interactive_evidence"] == "step"
    assert edge["805"]["is_interactive"] is True  # salloc
    assert edge["805"]["interactive_evidence"] == "submit_line"


def test_arrays_and_het_components_are_their_own_rows_with_ids_kept(edge) -> None:
    task = edge["500_3"]
    assert (task["job_id_raw"], task["array_job_id"], task["array_task_id"]) == (503, 500, 3)
    pending = edge["600_[1-5%2]"]
    assert (pending["job_id_raw"], pending["array_job_id"], pending["array_task_id"]) == (
        600,
        600,
        None,
    )
    het0, het1 = edge["700+0"], edge["700+1"]
    assert (het0["job_id_raw"], het0["het_job_id"], het0["het_job_offset"], het0["gpus"]) == (
        700,
        700,
        0,
        0,
    )
    assert (het1["job_id_raw"], het1["het_job_offset"], het1["gpus"]) == (701, 1, 2)


def test_cancelled_by_uid_and_unknown_none_times(edge) -> None:
    job = edge["800"]
    assert (job["state"], job["state_raw"]) == ("CANCELLED", "CANCELLED by 1234")
    assert job["start"] is None and job["gpus"] == 0 and job["req_gpus"] == 2
    running = edge["801"]
    assert running["end"] is None and running["state"] == "RUNNING"
    assert running["elapsed_s"] == 2 * 86400 + 22 * 3600 + 3 * 60 + 4
    assert running["timelimit_s"] == 3 * 86400
    assert edge["700+0"]["timelimit_s"] is None  # UNLIMITED


def test_exclusive_jobs_are_marked(edge) -> None:
    assert edge["802"]["exclusive"] is True and edge["802"]["cpus"] == 128
    assert edge["100"]["exclusive"] is False


def test_free_text_with_the_delimiter_a_newline_or_non_utf8_bytes_loads(edge) -> None:
    assert edge["803"]["submit_line"] == 'sbatch --wrap="python a.py | tee log|grep x"'
    assert edge["804"]["submit_line"] == 'sbatch --wrap="echo a\necho b"'
    assert edge["806"]["job_name"] == "caf\ufffd"


def test_reloading_the_same_file_changes_nothing(db_path: Path) -> None:
    first = ingest_files(db_path, [FIX / "edge.txt"])[0]
    before = _jobs(db_path)
    again = ingest_files(db_path, [FIX / "edge.txt"])[0]
    after = _jobs(db_path)
    assert (first.inserted, again.inserted, again.updated, again.unchanged) == (14, 0, 0, 14)
    for k in before:
        before[k].pop("updated_at"), after[k].pop("updated_at")
    assert before == after


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


HDR = "JobID|JobIDRaw|Cluster|State|Submit|Start|End|NCPUS|AllocTRES"


def test_a_later_state_updates_the_row_and_an_older_one_does_not(
    db_path: Path, tmp_path: Path
) -> None:
    running = _write(
        tmp_path / "r.txt",
        [HDR, "5|5|c|RUNNING|2024-01-01T00:00:00|2024-01-01T00:00:01|Unknown|4|cpu=4,gres/gpu=1"],
    )
    done = _write(
        tmp_path / "d.txt",
        [
            HDR,
            "5|5|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T02:00:00|4|cpu=4,gres/gpu=1",
        ],
    )
    assert ingest_files(db_path, [running])[0].inserted == 1
    s = ingest_files(db_path, [done])[0]
    assert (s.inserted, s.updated) == (0, 1)
    s = ingest_files(db_path, [running])[0]  # a stale snapshot loaded late
    assert (s.updated, s.unchanged) == (0, 1)
    [job] = _jobs(db_path).values()
    assert job["state"] == "COMPLETED"


def test_a_reused_job_id_with_another_submit_time_is_another_row(
    db_path: Path, tmp_path: Path
) -> None:
    f = _write(
        tmp_path / "r.txt",
        [
            HDR,
            "5|5|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T01:00:00|4|cpu=4",
            "5|5|c|COMPLETED|2024-06-01T00:00:00|2024-06-01T00:00:01|2024-06-01T01:00:00|8|cpu=8",
        ],
    )
    assert ingest_files(db_path, [f])[0].inserted == 2


def test_any_field_order_and_another_delimiter(db_path: Path, tmp_path: Path) -> None:
    f = _write(
        tmp_path / "o.txt",
        ["AllocTRES;Cluster;JobIDRaw;JobID", "cpu=3,gres/gpu:l40s=1,gres/gpu=1;x;9;9"],
    )
    ingest_files(db_path, [f])
    job = _jobs(db_path)["9"]
    assert (job["cluster"], job["cpus"], job["gpus"], job["gpu_type"]) == ("x", 3, 1, "L40S")


def test_a_headerless_file_loads_with_fields_and_a_trailing_delimiter(
    db_path: Path, tmp_path: Path
) -> None:
    f = _write(tmp_path / "n.txt", ["7|cpu=2,gres/gpu=2|", "8|cpu=8,gres/gpu=1|"])
    s = ingest_files(db_path, [f], IngestOptions(fields=("JobID", "AllocTRES"), cluster="zeta"))[0]
    assert s.inserted == 2 and s.rejected == 0
    assert {k: (v["cluster"], v["cpus"]) for k, v in _jobs(db_path).items()} == {
        "7": ("zeta", 2),
        "8": ("zeta", 8),
    }
    assert "Submit" in s.missing_fields
    assert any("GPU-hour" in d for d in s.disabled_analyses)


def test_a_headerless_file_without_fields_is_an_input_error_naming_file_and_fix(
    db_path: Path, tmp_path: Path
) -> None:
    f = _write(tmp_path / "n.txt", ["7|cpu=2,gres/gpu=2"])
    with pytest.raises(InputError, match=r"n\.txt:1: .*--fields"):
        ingest_files(db_path, [f])


def test_source_time_zone_is_converted_to_utc(db_path: Path, tmp_path: Path) -> None:
    f = _write(tmp_path / "tz.txt", ["JobID|Submit|Start", "1|2024-07-01T12:00:00|1719835200"])
    ingest_files(db_path, [f], IngestOptions(source_tz="Europe/Berlin"))
    job = _jobs(db_path)["1"]
    assert job["submit"].isoformat() == "2024-07-01T10:00:00"  # CEST is UTC+2
    assert job["start"].isoformat() == "2024-07-01T12:00:00"  # epoch seconds are UTC already


def test_an_unknown_time_zone_is_a_usage_error(db_path: Path) -> None:
    with pytest.raises(UsageError, match="--tz"):
        ingest_files(db_path, [FIX / "edge.txt"], IngestOptions(source_tz="Mars/Base"))


def test_bad_lines_are_rejected_with_line_field_reason_and_good_lines_load(db_path: Path) -> None:
    s = ingest_files(db_path, [FIX / "bad.txt"])[0]
    assert sorted(_jobs(db_path)) == ["1", "8"]
    assert s.rejected == 6 and s.inserted == 2
    con = duckdb.connect(str(db_path), read_only=True)
    rows = list_rejects(con)
    con.close()
    got = {(r["line_no"], r["field"]) for r in rows}
    assert got == {
        (3, "AllocTRES"),
        (4, "Submit"),
        (5, None),
        (7, "JobID"),
        (8, "Elapsed"),
        (9, "NCPUS"),
    }
    by_line = {r["line_no"]: r for r in rows}
    assert by_line[4]["raw"].startswith("3|3|c|COMPLETED|yesterday")
    assert "expected 11 fields" in by_line[5]["reason"]
    assert s.first_reasons[0].startswith("line 3, field AllocTRES")


def test_the_ingest_log_records_counts_and_missing_fields(db_path: Path) -> None:
    ingest_files(db_path, [FIX / "bad.txt"])
    con = duckdb.connect(str(db_path), read_only=True)
    [row] = list_ingests(con)
    con.close()
    assert (row["status"], row["inserted"], row["rejected"], row["format"]) == (
        "done",
        2,
        6,
        "sacct-text",
    )
    assert "Partition" in row["missing_fields"]
    assert row["content_hash"] and len(row["content_hash"]) == 64


def test_gzip_and_zstd_are_detected_by_magic_bytes_not_name(db_path: Path, tmp_path: Path) -> None:
    import zstandard

    data = (FIX / "edge.txt").read_bytes()
    (tmp_path / "a.log").write_bytes(gzip.compress(data))
    (tmp_path / "b.log").write_bytes(zstandard.ZstdCompressor().compress(data))
    sa, sb = ingest_files(db_path, [tmp_path / "a.log", tmp_path / "b.log"])
    assert (sa.compression, sa.inserted) == ("gzip", 14)
    assert (sb.compression, sb.inserted, sb.unchanged) == ("zstd", 0, 14)


def test_sacct_json_of_21_08_fixes_the_start_time_and_folds_steps(db_path: Path) -> None:
    s = ingest_files(db_path, [FIX / "sacct-v0.0.37.json"])[0]
    assert (s.format, s.inserted, s.rejected) == ("sacct-json", 2, 1)
    jobs = _jobs(db_path)
    a = jobs["9001"]
    assert (a["cluster"], a["cpus"], a["gpus"], a["gpu_type"], a["mem_mb"]) == (
        "old",
        8,
        2,
        "A100",
        32768,
    )
    # 21.08's time.start is the eligible time: start = end - elapsed
    assert a["start"].isoformat() == "2024-03-01T11:00:00"
    assert a["is_interactive"] is False and a["interactive_evidence"] == "step"
    assert jobs["9002"]["is_interactive"] is True


def test_sacct_json_of_23_11_with_banner_lists_and_structs(db_path: Path) -> None:
    s = ingest_files(db_path, [FIX / "sacct-v0.0.40.json"])[0]
    assert (s.format, s.inserted, s.rejected) == ("sacct-json", 2, 0)
    jobs = _jobs(db_path)
    j = jobs["77"]
    assert (j["gpus"], j["gpu_type"], j["nnodes"], j["timelimit_s"], j["state"]) == (
        8,
        "H100",
        2,
        7200,
        "COMPLETED",
    )
    assert j["submit"].isoformat() == "2024-06-01T00:00:00"
    arr = jobs["78_2"]
    assert (arr["job_id_raw"], arr["array_task_id"], arr["end"], arr["timelimit_s"]) == (
        80,
        2,
        None,
        None,
    )


def test_jobcomp_lines_with_spaces_in_values_load_and_garbage_is_rejected(db_path: Path) -> None:
    s = ingest_files(db_path, [FIX / "jobcomp.log"], IngestOptions(source_tz="UTC"))[0]
    assert (s.format, s.inserted, s.rejected) == ("jobcomp", 3, 1)
    jobs = _jobs(db_path)
    j = jobs["42"]
    assert (j["job_name"], j["work_dir"], j["user"], j["uid"]) == (
        "train my model",
        "/home/alice/my dir",
        "alice",
        1001,
    )
    assert (j["cpus"], j["gpus"], j["gpu_type"], j["elapsed_s"]) == (16, 2, "H100", 1800)
    assert jobs["40_3"]["start"] is None
    # old Gres= gpu:tesla:2: Tesla is a brand (K20 to V100, T4), so the type stays unknown
    assert (jobs["44"]["gpus"], jobs["44"]["gpu_type"]) == (2, "tesla")


def test_input_format_override_is_applied(db_path: Path) -> None:
    with pytest.raises(InputError, match="sacct header"):
        ingest_files(db_path, [FIX / "jobcomp.log"], IngestOptions(input_format="sacct-text"))


def test_a_failing_file_leaves_earlier_files_committed(db_path: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"jobs": [', encoding="utf-8")
    with pytest.raises(InputError, match="broken.json"):
        ingest_files(db_path, [FIX / "edge.txt", broken])
    assert len(_jobs(db_path)) == 14
    con = duckdb.connect(str(db_path), read_only=True)
    # the refused file is kept as a failed load with its reason, nothing of it in jobs
    assert [r["status"] for r in list_ingests(con)] == ["failed", "done"]
    [(reason,)] = con.execute("SELECT reason FROM rejects").fetchall()
    assert "broken.json" in reason and "not valid JSON" in reason
    con.close()


def test_ingest_command_prints_a_json_summary_and_accepts_input_formats(cli, db_path: Path) -> None:
    code, out, err = cli("ingest", str(FIX / "edge.txt"), "--db", str(db_path), "--format", "json")
    assert code == 0, err
    [doc] = json.loads(out)
    assert (doc["inserted"], doc["rejected"], doc["format"]) == (14, 0, "sacct-text")
    code, out, err = cli(
        "ingest", str(FIX / "edge.txt"), "--db", str(db_path), "--format", "sacct-text"
    )
    assert code == 0 and "ingest" in out
    code, out, err = cli("ingest", str(FIX / "edge.txt"), "--db", str(db_path), "--format", "yaml")
    assert code == 2 and err.startswith("Error: --format 'yaml'")


def test_ingest_command_reports_a_missing_file_with_its_exit_code(cli, db_path: Path) -> None:
    code, _out, err = cli("ingest", "/nonexistent/x.txt", "--db", str(db_path))
    assert code == 4 and err == "Error: /nonexistent/x.txt: no such file\n"


def test_jobs_command_lists_the_issue_columns_with_utc_iso_times_and_filters(
    cli, db_path: Path
) -> None:
    ingest_files(db_path, [FIX / "edge.txt"])
    code, out, err = cli(
        "jobs",
        "--db",
        str(db_path),
        "--format",
        "json",
        "--gpu-type",
        "h100",
        "--state",
        "completed",
    )
    assert code == 0, err
    rows = json.loads(out)
    assert list(rows[0]) == [
        "cluster",
        "job_id",
        "job_id_raw",
        "user",
        "account",
        "partition",
        "state",
        "submit",
        "start",
        "end",
        "elapsed_s",
        "nnodes",
        "cpus",
        "gpus",
        "gpu_type",
        "gpu_type_raw",
        "mem_mb",
        "cpu_efficiency",
        "gpu_util_mean_pct",
        "gpu_util_max_pct",
    ]
    assert sorted(r["job_id"] for r in rows) == ["100", "101", "700+1", "802"]
    assert {r["job_id"]: r["submit"] for r in rows}["100"] == "2024-03-01T10:00:00Z"
    code, out, _ = cli(
        "jobs", "--db", str(db_path), "--format", "csv", "--since", "2024-03-05", "--user", "fay"
    )
    assert out.splitlines()[0].startswith("cluster,job_id,job_id_raw")
    assert len(out.splitlines()) == 1 + 5


def test_jobs_command_on_a_missing_database_says_how_to_load(cli, tmp_path: Path) -> None:
    code, _out, err = cli("jobs", "--db", str(tmp_path / "none.duckdb"))
    assert code == 4 and "advisor ingest" in err


def test_the_shipped_sample_loads_without_rejects(db_path: Path) -> None:
    sample = Path(__file__).resolve().parent.parent / "data" / "sample" / "sacct-synth.txt.gz"
    copy = db_path.parent / "sample.gz"
    shutil.copy(sample, copy)
    s = ingest_files(db_path, [copy])[0]
    assert (s.inserted, s.rejected) == (20000, 0)


def test_a_bare_carriage_return_line_does_not_stop_the_file(db_path: Path, tmp_path: Path) -> None:
    f = tmp_path / "cr.txt"
    f.write_bytes(b"JobID|JobIDRaw|AllocTRES\n1|1|cpu=2\n\r\n2|2|cpu=4\n")
    [s] = ingest_files(db_path, [f])
    assert sorted(_jobs(db_path)) == ["1", "2"] and s.inserted == 2


def test_a_file_with_carriage_returns_keeps_every_line_and_numbers_rejects_by_newline(
    db_path: Path, tmp_path: Path
) -> None:
    # a CR in a job name makes DuckDB's strict reader give up on the file; its lenient one cut
    # the fields after the last expected one off a line with the delimiter in free text, and a
    # CR-only line shifted its line numbers. advisor reads such a file line by line instead.
    f = tmp_path / "cr.txt"
    f.write_bytes(
        b"JobID|JobIDRaw|AllocTRES|JobName|SubmitLine\n"
        b"1|1|cpu=2|sh\rtail|sbatch a.sh\n"
        b"\r\n"
        b"2|2|cpu=4|x|y|sbatch b.sh\n"  # the delimiter in free text: the submit line is the
        # one that starts with sbatch, so the job name took the extra field
        b"garbage\n"
        b"3|3|cpu=8|z|sbatch c.sh\n"
    )
    [s] = ingest_files(db_path, [f])
    jobs = _jobs(db_path)
    assert sorted(jobs) == ["1", "2", "3"] and (s.inserted, s.rejected) == (3, 1)
    assert jobs["1"]["job_name"] == "sh\rtail"
    assert (jobs["2"]["job_name"], jobs["2"]["submit_line"]) == ("x|y", "sbatch b.sh")
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        assert con.execute("SELECT line_no, raw FROM rejects").fetchall() == [(5, "garbage")]
    finally:
        con.close()


def test_a_failure_of_the_loads_own_sql_is_not_taken_for_the_reader_refusing_the_file(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only DuckDB's CSV reader giving up sends a file to the line-by-line read: an error of
    the load's own SQL (simulated here: none is known) used to load the file again that way,
    silently and many times slower; it now shows, and nothing is stored."""
    from advisor.ingest import careful, text

    f = tmp_path / "plain.txt"
    f.write_bytes(b"JobID|JobIDRaw|AllocTRES\n1|1|cpu=2\n2|2|cpu=4\n")
    real_parse = careful.parse

    def failing_parse(*args: Any, **kwargs: Any) -> None:
        raise duckdb.InvalidInputException("Invalid Input Error: a fault of the load's own SQL")

    monkeypatch.setattr(careful, "parse", failing_parse)
    by_line: list[Path] = []
    real_read_by_line = text.read_by_line
    monkeypatch.setattr(
        text,
        "read_by_line",
        lambda con, path, *a: by_line.append(path) or real_read_by_line(con, path, *a),
    )
    with pytest.raises(InputError, match="a fault of the load's own SQL"):
        ingest_files(db_path, [f], IngestOptions(strategy="careful"))
    assert by_line == []
    monkeypatch.setattr(careful, "parse", real_parse)
    [s] = ingest_files(db_path, [f], IngestOptions(strategy="careful"))
    assert s.inserted == 2 and by_line == []  # a file the reader reads is read by it


def test_a_key_twice_in_one_file_keeps_the_finished_record(db_path: Path, tmp_path: Path) -> None:
    f = _write(
        tmp_path / "twice.txt",
        [
            HDR,
            "5|5|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T02:00:00|4|cpu=4",
            "5|5|c|RUNNING|2024-01-01T00:00:00|2024-01-01T00:00:01|Unknown|4|cpu=4",
        ],
    )
    [s] = ingest_files(db_path, [f])
    assert (s.rows_read, s.inserted) == (2, 1)
    assert _jobs(db_path)["5"]["state"] == "COMPLETED"


def test_advisor_ingest_leaves_the_ratio_cube_fresh_and_equal_to_the_jobs(
    cli, db_path: Path, tmp_path: Path
) -> None:
    from advisor import ratios
    from advisor.ratios import RatioQuery, Weight

    sample = Path(__file__).resolve().parents[1] / "data" / "sample" / "sacct-synth.txt.gz"
    code, _, err = cli("ingest", str(sample), str(FIX / "edge.txt"), "--db", str(db_path))
    assert code == 0, err
    con = duckdb.connect(str(db_path), read_only=True)  # as the dashboard reads it
    try:
        assert ratios.cube_is_fresh(con)
        cube_rows = con.execute("SELECT count(*) FROM ratio_cube").fetchone()
        assert cube_rows is not None and cube_rows[0] > 0
        for q in (
            RatioQuery(by=("cluster", "gpu_type")),
            RatioQuery(by=("gpu_type", "month"), weight=Weight.gpu_hours),
            RatioQuery(by=("account",)),
        ):
            assert ratios.cube_answers(q) or ratios.people_cube_answers(q)
            from_cube = ratios.ratio_summary(con, q, use_cube=True)
            from_jobs = ratios.ratio_summary(con, q, use_cube=False)
            assert from_cube.groups and from_cube == from_jobs, q
        # read-only: nothing was rebuilt on the way, the stored cube answered
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone() == (
            0,
        )
    finally:
        con.close()
    # a later load through the API (one new job), then the refresh its callers run: fresh too,
    # with that job counted
    extra = tmp_path / "one.txt"
    lines = (FIX / "edge.txt").read_text(encoding="utf-8", errors="replace").splitlines()
    extra.write_text(
        lines[0] + "\n" + lines[1].replace("100|100|", "9100|9100|", 1) + "\n", encoding="utf-8"
    )
    [s] = ingest_files(db_path, [extra])
    assert s.inserted == 1
    from advisor.derived import refresh_after_load

    refresh_after_load(db_path)  # what the API's callers (the CLI) do after a load
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        assert ratios.cube_is_fresh(con)
        q = RatioQuery(by=("cluster", "gpu_type"))
        assert ratios.ratio_summary(con, q, use_cube=True) == ratios.ratio_summary(
            con, q, use_cube=False
        )
    finally:
        con.close()


def test_a_narrower_source_updates_only_the_columns_it_has(db_path: Path, tmp_path: Path) -> None:
    ingest_files(db_path, [FIX / "edge.txt"])
    before = _jobs(db_path)
    narrow = tmp_path / "narrow.txt"
    lines = ["JobID|JobIDRaw|Cluster|State|Submit"]
    for job_id, r in sorted(before.items()):
        state = "FAILED" if job_id == "100" else r["state_raw"]
        lines.append(f"{job_id}|{r['job_id_raw']}|{r['cluster']}|{state}|{r['submit'].isoformat()}")
    narrow.write_text("\n".join(lines) + "\n", encoding="utf-8")
    [s] = ingest_files(db_path, [narrow])
    assert (s.inserted, s.updated, s.unchanged, s.rejected) == (0, 1, len(before) - 1, 0)
    after = _jobs(db_path)
    assert after["100"]["state"] == "FAILED" and before["100"]["state"] != "FAILED"
    skip = {"state", "state_raw", "ingest_id", "updated_at"}
    for job_id, r in before.items():
        lost = {
            k: (v, after[job_id][k])
            for k, v in r.items()
            if k not in skip and after[job_id][k] != v
        }
        assert not lost, (job_id, lost)
