"""The store: database location, migrations, read-only opening, the SQL loader."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from advisor import store
from advisor.errors import NotFoundError, StoreError


def test_db_path_comes_from_argument_then_env_then_default(monkeypatch, tmp_path):
    monkeypatch.setenv("ADVISOR_DB", str(tmp_path / "env.duckdb"))
    assert store.resolve_db_path(tmp_path / "arg.duckdb") == tmp_path / "arg.duckdb"
    assert store.resolve_db_path(None) == tmp_path / "env.duckdb"
    monkeypatch.delenv("ADVISOR_DB")
    assert store.resolve_db_path(None) == Path("advisor.duckdb")


def test_connect_creates_a_real_file_with_every_migration(db_path):
    con = store.connect(db_path)
    latest = store.migrations()[-1][0]
    assert store.schema_version(con) == latest
    tables = {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert {
        "jobs",
        "ingests",
        "rejects",
        "nodes",
        "bench_runs",
        "bench_requests",
        "calibration",
    } <= tables
    con.close()
    assert db_path.exists()


def _storage_version(con: duckdb.DuckDBPyConnection) -> str:
    [(tags,)] = con.execute(
        "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return str(tags["storage_version"])


def test_a_new_file_gets_the_newer_storage_format_and_an_old_file_keeps_its_own(tmp_path):
    new = tmp_path / "new.duckdb"
    store.connect(new).close()
    store.migrate_db(tmp_path / "migrated.duckdb")
    for path in (new, tmp_path / "migrated.duckdb"):
        con = duckdb.connect(str(path), read_only=True)
        # DICT_FSST (faster string writes) needs the v1.3 format; DuckDB's default is older
        assert _storage_version(con) >= "v1.3.0", path
        con.close()
    old = tmp_path / "old.duckdb"
    duckdb.connect(str(old)).close()  # DuckDB's default format
    default = duckdb.connect(str(old), read_only=True)
    before = _storage_version(default)
    default.close()
    assert before < "v1.3.0"
    con = store.connect(old)
    con.execute("CREATE TABLE t AS SELECT 'x' || range AS s FROM range(10)")
    con.close()
    con = duckdb.connect(str(old), read_only=True)
    assert _storage_version(con) == before
    con.close()


def test_migrating_twice_applies_nothing_the_second_time(db_path):
    con = store.connect(db_path)
    assert store.migrate(con) == []
    con.close()


def test_read_only_open_of_a_missing_file_says_how_to_create_it(db_path):
    with pytest.raises(NotFoundError, match="advisor ingest"):
        store.connect(db_path, read_only=True)
    assert not db_path.exists()


def test_read_only_open_of_an_old_schema_names_the_migrate_command(db_path):
    duckdb.connect(str(db_path)).close()
    with pytest.raises(StoreError, match="advisor db migrate"):
        store.connect(db_path, read_only=True)


def test_jobs_has_no_key_index_but_its_key_columns_are_required(db_path):
    """The ingest keeps (cluster, job_id_raw, submit) unique (test_ingest*.py); migration 011
    dropped the constraint, whose index doubled the file."""
    con = store.connect(db_path)
    constraints = con.execute(
        "SELECT constraint_type, constraint_column_names FROM duckdb_constraints()"
        " WHERE table_name = 'jobs' ORDER BY constraint_index"
    ).fetchall()
    assert constraints == [
        ("NOT NULL", ["cluster"]),
        ("NOT NULL", ["job_id_raw"]),
        ("NOT NULL", ["submit"]),
        ("NOT NULL", ["job_id"]),
        ("NOT NULL", ["gpus"]),
    ]
    con.execute(
        "INSERT INTO jobs (cluster, job_id_raw, submit, job_id) VALUES ('c', 7, '2024-01-01', '7')"
    )
    assert con.execute("SELECT gpus FROM jobs").fetchall() == [(0,)]  # the default survived
    with pytest.raises(duckdb.ConstraintException):
        con.execute("INSERT INTO jobs (cluster, job_id_raw, job_id) VALUES ('c', 8, '8')")
    con.close()


def test_the_newest_migration_missing_is_pending_and_names_the_migrate_command(db_path):
    store.connect(db_path).close()
    newest = store.migrations()[-1][0]
    con = duckdb.connect(str(db_path))
    con.execute("DELETE FROM schema_version WHERE version = ?", [newest])
    con.close()
    with pytest.raises(StoreError, match=rf"lacks migrations \[{newest}\].*advisor db migrate"):
        store.connect(db_path, read_only=True)
    con = duckdb.connect(str(db_path), read_only=True)
    assert store.pending(con) == [newest]
    con.close()


def test_a_gap_below_the_newest_migration_is_an_error_not_a_migration_to_apply(db_path):
    """Migrations apply strictly in order: a lower one missing means an unknown schema."""
    store.connect(db_path).close()
    con = duckdb.connect(str(db_path))
    con.execute("DELETE FROM schema_version WHERE version = 3")
    con.close()
    with pytest.raises(StoreError, match=r"\[3\] missing below"):
        store.connect(db_path, read_only=True)
    with pytest.raises(StoreError, match=r"\[3\] missing below"):
        store.migrate_db(db_path)


def test_migrations_are_numbered_one_two_three_in_one_line():
    assert [v for v, _, _ in store.migrations()] == list(range(1, len(store.migrations()) + 1))


def test_unknown_query_name_is_a_clear_error():
    with pytest.raises(NotFoundError, match="no SQL query named 'nope/nothing'"):
        store.query("nope/nothing")


def test_quote_ident_doubles_quotes():
    assert store.quote_ident('we"ird') == '"we""ird"'


def test_db_info_and_migrate_commands_report_json(cli, db_path):
    code, out, err = cli("db", "migrate", "--db", str(db_path), "--format", "json")
    assert code == 0, err
    info = json.loads(out)[0]
    assert info["schema_version"] == store.migrations()[-1][0]
    assert info["jobs"] == 0
    code, out, err = cli("db", "info", "--db", str(db_path / "missing.duckdb"))
    assert code == 4
    assert "Error:" in err and "no such database" in err


def test_render_fills_every_placeholder_and_refuses_a_missing_or_extra_part():
    sql = store.render("ingest/tres_lookup", groups="SELECT 1")
    assert "{{" not in sql and "SELECT 1" in sql
    with pytest.raises(
        StoreError, match=r"tres_lookup\.sql: placeholders not filled: \['groups'\]"
    ):
        store.render("ingest/tres_lookup")
    with pytest.raises(StoreError, match=r"parts that fill nothing: \['grops'\]"):
        store.render("ingest/tres_lookup", groups="SELECT 1", grops="x")


def test_every_statement_with_placeholders_is_rendered_and_never_read_raw():
    """A statement with ``{{part}}`` placeholders is only reachable through store.render."""
    import re

    root = Path(store.__file__).parent
    templated = {
        str(p.relative_to(root / "sql").with_suffix(""))
        for p in (root / "sql").rglob("*.sql")
        if store.placeholders(p.read_text(encoding="utf-8"))
    }
    code = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py"))
    raw = {
        n
        for n in templated
        if re.search(r"(?<![\w])query\(\s*f?[\"']" + re.escape(n) + "[\"']", code)
    }
    assert raw == set()
    assert '.replace("{{' not in code


def test_a_placeholder_named_in_a_comment_is_neither_wanted_nor_filled(monkeypatch):
    sql = "-- fills {{rows}} below\nSELECT {{rows}} FROM t -- not {{this}}\n"
    monkeypatch.setattr(store, "query", lambda name: sql)
    assert store.placeholders(sql) == {"rows"}
    assert (
        store.render("x", rows="1") == "-- fills {{rows}} below\nSELECT 1 FROM t -- not {{this}}\n"
    )
    with pytest.raises(StoreError, match=r"parts that fill nothing: \['this'\]"):
        store.render("x", rows="1", this="2")
