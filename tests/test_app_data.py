"""Real DuckDB files for the dashboard tests, and what advisor.datainfo reads from them.

``make_db(path, kind)`` builds a database through ``advisor.store.connect`` (every migration)
and inserts rows with plain SQL: ``gpu`` (two clusters, H100/A100 jobs over six months,
an ingest log and rejected lines), ``empty``, ``cpu_only``, ``unknown_gpu`` (a GPU type no
pattern knows) and ``one_job`` (one H100 job of 1 GPU and 1 CPU for 1 hour). The dashboard and browser tests import it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from advisor import datainfo, store
from advisor.errors import NotFoundError, UsageError

KINDS = ("gpu", "empty", "cpu_only", "unknown_gpu", "one_job")

_JOBS_SQL = """
INSERT INTO jobs (cluster, job_id_raw, submit, job_id, "user", account, "partition", state,
                  start, "end", elapsed_s, nnodes, cpus, gpus, gpu_type, gpu_type_raw, ingest_id)
SELECT cluster, i, submit, CAST(i AS VARCHAR), 'user' || (i % 7), 'acct' || (i % 3),
       part, 'COMPLETED', submit + INTERVAL 1 MINUTE,
       submit + INTERVAL 1 MINUTE + to_seconds(elapsed), elapsed, 1,
       greatest(gpus, 1) * ratio, gpus, gpu_type, gpu_type_raw, 1
FROM (
  SELECT i,
         CASE WHEN i % 2 = 0 THEN 'teach' ELSE 'research' END AS cluster,
         CASE WHEN i % 5 = 0 THEN 'debug' ELSE 'gpu' END AS part,
         TIMESTAMP '2024-01-01' + to_seconds(((i * 104729) % 180) * 86400 + (i * 7919) % 86400) AS submit,
         600 + (i * 37) % 7200 AS elapsed,
         CASE WHEN $gpus THEN [1, 2, 4, 8][1 + i % 4] ELSE 0 END AS gpus,
         -- ratios: many at 1 core per GPU (teaching default), some at 2, 4, 8, 16
         CASE WHEN i % 2 = 0 THEN [1, 1, 1, 2, 4][1 + (i // 2) % 5]
              ELSE [2, 4, 8, 8, 16][1 + (i // 2) % 5] END AS ratio,
         CASE WHEN NOT $gpus THEN NULL
              WHEN i % 3 = 0 THEN 'A100' ELSE $type END AS gpu_type,
         CASE WHEN NOT $gpus THEN NULL
              WHEN i % 3 = 0 THEN 'a100_40gb' ELSE lower($type) END AS gpu_type_raw
  FROM range(1, $n + 1) t(i)
)
"""


def make_db(path: Path, kind: str = "gpu", n_jobs: int = 600) -> Path:
    """Build a real DuckDB file of the given kind (see the module docstring); return its path."""
    if kind not in KINDS:
        raise ValueError(kind)
    con = store.connect(path)
    try:
        if kind == "one_job":
            con.execute(
                'INSERT INTO jobs (cluster, job_id_raw, submit, job_id, "user", account,'
                ' "partition", state, start, "end", elapsed_s, nnodes, cpus, gpus, gpu_type,'
                " gpu_type_raw) VALUES ('research', '1', TIMESTAMP '2024-03-01 10:00:00', '1',"
                " 'user1', 'acct1', 'gpu', 'COMPLETED', TIMESTAMP '2024-03-01 10:00:00',"
                " TIMESTAMP '2024-03-01 11:00:00', 3600, 1, 1, 1, 'H100', 'h100')"
            )
        elif kind != "empty":
            con.execute(
                "INSERT INTO ingests (source, format, cluster, started_at, finished_at, status,"
                " rows_read, lines_read, inserted, rejected) VALUES"
                " ('sacct-2024H1.txt', 'sacct-text', NULL, TIMESTAMP '2024-07-01 00:00:00',"
                "  TIMESTAMP '2024-07-01 00:00:09', 'done', ?, ?, ?, 3)",
                [n_jobs, n_jobs + 3, n_jobs],
            )
            gpu_type = "Zorblax9" if kind == "unknown_gpu" else "H100"
            con.execute(_JOBS_SQL, {"n": n_jobs, "gpus": kind != "cpu_only", "type": gpu_type})
            con.executemany(
                "INSERT INTO rejects (ingest_id, source, line_no, field, raw, reason)"
                " VALUES (1, 'sacct-2024H1.txt', ?, ?, ?, ?)",
                [
                    [17, "AllocTRES", "17|x|cpu=abc", "not a TRES list: 'cpu=abc'"],
                    [42, "AllocTRES", "42|x|cpu=", "not a TRES list: 'cpu='"],
                    [99, "Submit", "99|notadate", "not a timestamp: 'notadate'"],
                ],
            )
            if kind == "gpu":
                _insert_bench_runs(con)
    finally:
        con.close()
    return path


def _insert_bench_runs(con) -> None:
    """A 4-GPU H100 series at 8 rps over 2..16 cores per GPU, two repeats, and one hung run:
    repeat 0 ran in May 2024 in Slurm (cluster research, partition gpu), repeat 1 in June
    outside Slurm (no cluster or partition)."""
    rows = []
    for cores_per_gpu, ttft in ((2, 900.0), (4, 400.0), (8, 260.0), (16, 240.0)):
        for repeat in (0, 1):
            where = ("research", "gpu", "2024-05-10") if repeat == 0 else (None, None, "2024-06-02")
            rows.append(
                [
                    f"h100-c{cores_per_gpu}-r{repeat}",
                    "ok",
                    cores_per_gpu * 4,
                    float(cores_per_gpu),
                    repeat,
                    ttft + 20.0 * repeat,
                    *where,
                ]
            )
    rows.append(["h100-c1-r0", "hung", 4, 1.0, 0, None, "research", "gpu", "2024-05-10"])
    con.executemany(
        "INSERT INTO bench_runs (run_id, status, engine, model, model_params_b, platform, gpus,"
        " tp, cores, cores_per_gpu, workload, attacker_rps, repeat, victim_ttft_p50_ms,"
        ' cluster, "partition", started_at)'
        " VALUES (?, ?, 'vllm', 'Llama-3.1-8B', 8.0, 'H100', 4, 4, ?, ?, 'unique', 8.0, ?, ?,"
        " ?, ?, CAST(? AS TIMESTAMP))",
        rows,
    )
    # what each ok run's engine core and API server waited for a CPU, as `bench collect` stores it
    waits = {2: (0.30, 0.12), 4: (0.10, 0.04), 8: (0.02, 0.01), 16: (0.0, 0.0)}
    con.executemany(
        "INSERT INTO calibration (point_id, source, platform, engine, model, gpus, workload,"
        " load_rps, cores, cores_per_gpu, metric, value, unit)"
        " VALUES (?, ?, 'H100', 'vllm', 'Llama-3.1-8B', 4, 'unique', 8.0, ?, ?, ?, ?, 'fraction')",
        [
            [f"bench:{r[0]}:{metric}", f"bench:{r[0]}", r[2], r[3], metric, value + 0.02 * r[4]]
            for r in rows
            if r[1] == "ok"
            for metric, value in zip(
                ("wait_engine_core_share", "wait_api_server_share"), waits[int(r[3])], strict=True
            )
        ],
    )


@pytest.fixture
def gpu_db(tmp_path: Path) -> Path:
    return make_db(tmp_path / "gpu.duckdb", "gpu")


def _ro(path: Path):
    return store.connect(path, read_only=True)


def test_freshness_counts_jobs_per_cluster_and_ages_from_the_newest_record(gpu_db):
    con = _ro(gpu_db)
    rows = datainfo.freshness(con, now=dt.datetime(2024, 7, 31))
    con.close()
    assert [r.cluster for r in rows] == ["research", "teach"]
    assert sum(r.jobs for r in rows) == 600
    assert all(r.gpu_jobs == r.jobs for r in rows)
    newest = max(r.last_end for r in rows if r.last_end)
    assert newest < dt.datetime(2024, 7, 1)
    for r in rows:
        assert r.age_days == pytest.approx(
            (dt.datetime(2024, 7, 31) - max(r.last_submit, r.last_end)).total_seconds() / 86400
        )
        assert r.last_ingest == dt.datetime(2024, 7, 1, 0, 0, 9)


def test_a_load_recorded_under_another_cluster_name_counts_for_the_clusters_it_loaded(tmp_path):
    path = make_db(tmp_path / "default.duckdb", "gpu", n_jobs=40)
    con = store.connect(path)
    con.execute("UPDATE ingests SET cluster = 'default'")
    # a later load of another cluster's file only: it must not count for these clusters
    con.execute(
        "INSERT INTO ingests (source, format, cluster, started_at, finished_at, status,"
        " rows_read, lines_read, inserted, rejected) VALUES ('other.txt', 'sacct-text', 'other',"
        " TIMESTAMP '2024-08-01 00:00:00', TIMESTAMP '2024-08-01 00:00:05', 'done', 0, 0, 0, 0)"
    )
    con.close()
    con = _ro(path)
    rows = datainfo.freshness(con)
    con.close()
    assert {r.cluster: r.last_ingest for r in rows} == {
        "research": dt.datetime(2024, 7, 1, 0, 0, 9),
        "teach": dt.datetime(2024, 7, 1, 0, 0, 9),
    }


def test_reject_reasons_group_lines_by_reason_and_field_with_an_example(gpu_db):
    con = _ro(gpu_db)
    reasons = datainfo.reject_reasons(con)
    rejects = datainfo.recent_rejects(con, limit=2)
    con.close()
    assert len(reasons) == 3  # three distinct reason texts
    assert {(r.field, r.records) for r in reasons} == {("AllocTRES", 1), ("Submit", 1)}
    submit = next(r for r in reasons if r.field == "Submit")
    assert (submit.example_source, submit.example_line_no) == ("sacct-2024H1.txt", 99)
    assert [r.line_no for r in rejects] == [17, 42]


def test_ingest_log_lists_loads_newest_first_with_their_duration(gpu_db):
    con = _ro(gpu_db)
    log = datainfo.ingest_log(con)
    con.close()
    assert len(log) == 1
    assert (log[0].status, log[0].inserted, log[0].rejected) == ("done", 600, 3)
    assert log[0].duration_s == pytest.approx(9.0)


def test_filter_options_offer_only_values_present_and_the_start_time_span(gpu_db):
    con = _ro(gpu_db)
    opts = datainfo.filter_options(con)
    con.close()
    assert opts.clusters == ("research", "teach")
    assert opts.partitions == ("debug", "gpu")
    assert opts.gpu_types == ("A100", "H100")
    assert (opts.jobs, opts.gpu_jobs) == (600, 600)
    assert opts.first_time is not None and opts.first_time >= dt.datetime(2024, 1, 1, 0, 1)
    assert opts.last_time is not None and opts.last_time < dt.datetime(2024, 6, 30)


def test_unknown_gpu_types_are_named_and_known_ones_are_not(tmp_path):
    path = make_db(tmp_path / "u.duckdb", "unknown_gpu")
    con = _ro(path)
    status = datainfo.data_status(con)
    extra = datainfo.gpu_type_counts(con, extra_known=["Zorblax9"])
    con.close()
    assert status.unknown_gpu_types == ("Zorblax9",)
    assert {t.gpu_type: t.known for t in status.gpu_types} == {"Zorblax9": False, "A100": True}
    assert all(t.known for t in extra)


def test_cpu_only_and_empty_databases_report_zero_gpu_jobs(tmp_path):
    for kind, jobs in (("cpu_only", 600), ("empty", 0)):
        con = _ro(make_db(tmp_path / f"{kind}.duckdb", kind))
        status = datainfo.data_status(con)
        opts = datainfo.filter_options(con)
        con.close()
        assert (status.jobs, status.gpu_jobs, opts.gpu_jobs) == (jobs, 0, 0)
        assert status.gpu_types == () and opts.gpu_types == ()


def test_pseudonyms_are_stable_salted_and_hide_the_name():
    a = datainfo.pseudonym("alice")
    assert a == datainfo.pseudonym("alice") and a is not None
    assert a.startswith("u-") and "alice" not in a and len(a) == 12
    assert datainfo.pseudonym("alice", salt="s") != a
    assert datainfo.pseudonym("bob") != a
    assert datainfo.pseudonym(None) is None


def test_private_rejects_withhold_the_line_and_hash_the_names_a_reason_quotes():
    rows = [
        datainfo.RejectRecord(1, "f.txt", 3, "User", 'not a user: "o\'brien"', "3|o'brien|x"),
        datainfo.RejectRecord(1, "f.txt", 4, "Submit", "not a timestamp: 'alice'", "4|alice|x"),
        datainfo.RejectRecord(1, "f.txt", 5, "", "job #5 of the document: unusable ('bob')", ""),
    ]
    user, submit, doc = datainfo.private_rejects(rows, salt="s")
    obrien, bob = datainfo.pseudonym("o'brien", "s"), datainfo.pseudonym("bob", "s")
    assert user.reason == f"not a user: '{obrien}'"
    assert submit.reason == "not a timestamp: 'alice'"  # a Submit value is not a name
    assert doc.reason == f"job #5 of the document: unusable ('{bob}')"
    assert user.raw == submit.raw == datainfo.RAW_WITHHELD and doc.raw == ""
    assert (user.source, user.line_no, user.field) == ("f.txt", 3, "User")


def test_hash_users_setting_reads_the_environment():
    assert datainfo.hash_users_setting({"ADVISOR_HASH_USERS": "yes"})
    assert datainfo.hash_users_setting({"ADVISOR_HASH_USERS": "1"})
    assert not datainfo.hash_users_setting({"ADVISOR_HASH_USERS": "0"})
    assert not datainfo.hash_users_setting({})


def test_dashboard_command_runs_streamlit_on_the_app_with_the_database(gpu_db):
    argv, env = datainfo.dashboard_command(
        datainfo.DashboardConfig(db_path=gpu_db, port=8600, hash_users=True)
    )
    assert argv[1:4] == ["-m", "streamlit", "run"]
    assert Path(argv[4]).name == "streamlit_app.py" and Path(argv[4]).is_file()
    assert argv[argv.index("--server.port") + 1] == "8600"
    assert argv[-3:] == ["--", "--db", str(gpu_db.resolve())]
    assert env["ADVISOR_DB"] == str(gpu_db.resolve())
    assert env["ADVISOR_HASH_USERS"] == "1"


def test_dashboard_command_passes_the_settings_of_the_checkouts_streamlit_config(gpu_db):
    import tomllib

    argv, _ = datainfo.dashboard_command(datainfo.DashboardConfig(db_path=gpu_db, port=8600))
    config = tomllib.loads((Path(__file__).parent.parent / ".streamlit/config.toml").read_text())
    # no Deploy button, even from an installed wheel, which carries no .streamlit/ folder
    assert argv[argv.index("--client.toolbarMode") + 1] in ("minimal", "viewer")
    for section in ("server", "client", "theme"):
        for name, value in config[section].items():
            if name == "headless":
                continue  # the command's own --server.headless option
            want = str(value).lower() if isinstance(value, bool) else str(value)
            assert argv[argv.index(f"--{section}.{name}") + 1] == want, name


def test_dashboard_command_refuses_a_missing_database_and_a_bad_port(tmp_path, gpu_db):
    with pytest.raises(NotFoundError, match="advisor ingest"):
        datainfo.dashboard_command(datainfo.DashboardConfig(db_path=tmp_path / "nope.duckdb"))
    with pytest.raises(UsageError, match="--port 70000"):
        datainfo.dashboard_command(datainfo.DashboardConfig(db_path=gpu_db, port=70000))


def test_data_status_command_prints_json_a_program_can_read(cli, gpu_db):
    code, out, err = cli("data", "status", "--db", str(gpu_db), "--format", "json")
    assert code == 0, err
    status = json.loads(out)
    assert status["jobs"] == 600 and status["rejected_records"] == 3
    assert [c["cluster"] for c in status["clusters"]] == ["research", "teach"]
    assert status["unknown_gpu_types"] == []


def test_data_status_command_csv_has_one_row_per_cluster_and_missing_db_fails(
    cli, gpu_db, tmp_path
):
    import csv
    import io

    code, out, err = cli("data", "status", "--db", str(gpu_db), "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["cluster"], r["jobs"]) for r in rows] == [("research", "300"), ("teach", "300")]
    code, out, err = cli("data", "status", "--db", str(tmp_path / "none.duckdb"))
    assert code == 4
    assert err.startswith("Error:") and "no such database" in err


def test_dashboard_command_with_a_missing_database_fails_before_starting(cli, tmp_path):
    code, out, err = cli("dashboard", "--db", str(tmp_path / "none.duckdb"), "--port", "8999")
    assert code == 4
    assert "Error:" in err and "no such database" in err


def test_bench_runs_are_listed_by_series_then_cores_and_filtered_by_platform(gpu_db):
    con = _ro(gpu_db)
    runs = datainfo.bench_runs(con)
    none = datainfo.bench_runs(con, platforms=("B200",))
    con.close()
    assert len(runs) == 9 and none == []
    assert [r.cores_per_gpu for r in runs][:3] == [1.0, 2.0, 2.0]
    assert {r.status for r in runs} == {"ok", "hung"}
    assert runs[0].victim_ttft_p50_ms is None
    # each ok run carries its processes' measured wait; the hung run has none
    assert runs[0].wait_engine_core is None
    by_id = {r.run_id: r for r in runs}
    assert by_id["h100-c2-r1"].wait_engine_core == pytest.approx(0.32)
    assert by_id["h100-c2-r1"].wait_api_server == pytest.approx(0.14)


def test_bench_runs_follow_the_cluster_partition_and_month_filters(gpu_db):
    con = _ro(gpu_db)

    def ids(**kw) -> set[str]:
        return {r.run_id for r in datainfo.bench_runs(con, **kw)}

    in_slurm = {f"h100-c{c}-r0" for c in (2, 4, 8, 16)} | {"h100-c1-r0"}
    outside = {f"h100-c{c}-r1" for c in (2, 4, 8, 16)}
    try:
        assert ids() == in_slurm | outside
        assert ids(clusters=("research",)) == in_slurm
        assert ids(partitions=("gpu",), platforms=("H100",)) == in_slurm
        assert ids(clusters=("teach",)) == set()  # runs outside Slurm match no cluster
        assert ids(start=dt.datetime(2024, 6, 1)) == outside
        assert ids(start=dt.datetime(2024, 5, 1), end=dt.datetime(2024, 6, 1)) == in_slurm
        run = next(r for r in datainfo.bench_runs(con, clusters=("research",)))
        assert (run.cluster, run.partition) == ("research", "gpu")
    finally:
        con.close()
