"""The bulk load (advisor.ingest.bulk) stores exactly what the careful load stores.

Every file here is loaded twice into fresh DuckDB files, once with the bulk path switched off
(``IngestOptions(strategy="careful")``: parse into temp ``parsed``, then upsert) and once with
``strategy="bulk"`` (the bulk way even for files mostly of steps), and the
rows, the rejects and the ingest counts must be equal. Separate tests check that the bulk
path is really the one taken on a fresh database and that it steps aside when stored rows are
near the file's keys or the file holds a key twice.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor import store
from advisor.errors import InputError
from advisor.ingest import IngestOptions, careful, detect, ingest_files, stages, text
from advisor.ingest import bulk as bulk_mod
from advisor.ingest.records import Source
from advisor.ingest.synth import SynthConfig, generate

FIX = Path(__file__).resolve().parent / "fixtures" / "ingest"


def _load(
    db: Path, files: list[Path], bulk: bool, options: IngestOptions | None = None
) -> dict[str, Any]:
    # "bulk": the bulk way even for files mostly of steps: the rules must hold
    chosen = replace(options or IngestOptions(), strategy="bulk" if bulk else "careful")
    error = None
    try:
        summaries = ingest_files(db, files, chosen)
    except InputError as exc:  # nothing usable in a file: both ways must refuse it alike
        summaries, error = [], str(exc)
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            "jobs": con.execute(
                "SELECT * EXCLUDE (ingest_id, updated_at) FROM jobs ORDER BY ALL"
            ).fetchall(),
            # ingest ids by their rank: a bulk attempt that hands over uses up a sequence value
            "rejects": con.execute(
                "SELECT dense_rank() OVER (ORDER BY ingest_id), line_no, field, raw, reason"
                " FROM rejects ORDER BY ALL"
            ).fetchall(),
            "ingests": con.execute(
                "SELECT rows_read, lines_read, inserted, updated, unchanged, rejected,"
                " missing_fields, status FROM ingests ORDER BY ingest_id"
            ).fetchall(),
            "error": error,
            "summaries": [
                {k: v for k, v in s.__dict__.items() if k not in ("seconds", "ingest_id")}
                for s in summaries
            ],
        }
    finally:
        con.close()


def _both(
    tmp: Path, files: list[Path], options: IngestOptions | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    careful = _load(tmp / "careful.duckdb", files, False, options)
    bulk = _load(tmp / "bulk.duckdb", files, True, options)
    return careful, bulk


@pytest.fixture(scope="module")
def synth_with_everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Steps, arrays, het jobs, and 2% odd free text: delimiters, newlines, bytes not UTF-8."""
    path = tmp_path_factory.mktemp("bulk") / "synth.txt"
    generate(SynthConfig(records=6_000, seed=5, step_share=0.5, odd_text_share=0.02), path)
    return path


@pytest.mark.parametrize("name", ["edge.txt", "bad.txt"])
def test_bulk_and_careful_loads_store_the_same_for_the_fixtures(tmp_path: Path, name: str) -> None:
    careful, bulk = _both(tmp_path, [FIX / name])
    assert careful["jobs"], "the fixture loads rows"
    assert bulk == careful


def test_bulk_and_careful_loads_store_the_same_for_odd_synthetic_text(
    tmp_path: Path, synth_with_everything: Path
) -> None:
    careful, bulk = _both(tmp_path, [synth_with_everything])
    [s] = careful["summaries"]
    assert s["inserted"] == 6_000 and s["lines_read"] > 6_000  # steps were read and folded
    assert bulk == careful


def test_bulk_and_careful_agree_with_a_source_time_zone_and_a_cluster_option(
    tmp_path: Path, synth_with_everything: Path
) -> None:
    options = IngestOptions(source_tz="Europe/Berlin", cluster="other")
    careful, bulk = _both(tmp_path, [synth_with_everything], options)
    assert bulk == careful


def test_lines_repaired_from_the_hashs_line_index_load_as_from_a_scan_of_the_file(
    tmp_path: Path, synth_with_everything: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repair reads unreadable lines back from where the content hash saw them start: both
    ways store what they store when the repair scans the file for them."""
    read_by_index: list[int] = []
    real = text._lines_by_index

    def spy(path: Path, index: text.LineIndex, want: set[int]) -> dict[int, bytes]:
        read_by_index.append(len(want))
        return real(path, index, want)

    monkeypatch.setattr(text, "_lines_by_index", spy)
    monkeypatch.setattr(text, "LINE_STEP", 512)  # small steps: the index pays on this file
    indexed = _both(tmp_path / "indexed", [synth_with_everything])
    assert len(read_by_index) >= 2 and min(read_by_index) > 50  # both ways, every bad line
    monkeypatch.setattr(text.LineIndex, "worth_it", lambda self, lines: False)
    calls = len(read_by_index)
    scanned = _both(tmp_path / "scanned", [synth_with_everything])
    assert len(read_by_index) == calls
    assert indexed == scanned


@pytest.fixture(scope="module")
def synth_few_steps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bulk") / "few-steps.txt"
    generate(SynthConfig(records=6_000, seed=6, step_share=0.05, odd_text_share=0.02), path)
    return path


def test_the_bulk_path_is_taken_on_a_fresh_database_and_not_for_stored_neighbours(
    tmp_path: Path, synth_few_steps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    careful_reads: list[str] = []
    real_read = careful.read

    def spy(*args: Any, **kwargs: Any) -> Any:
        careful_reads.append(str(args[0].source.path))
        return real_read(*args, **kwargs)

    monkeypatch.setattr(careful, "read", spy)
    db = tmp_path / "advisor.duckdb"
    [first] = ingest_files(db, [synth_few_steps])
    assert careful_reads == [] and first.inserted == 6_000
    [again] = ingest_files(db, [synth_few_steps])  # every key stored: an upsert
    assert careful_reads == [str(synth_few_steps)]
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 6_000)


def test_files_mostly_of_steps_and_compressed_files_load_the_careful_way(
    tmp_path: Path, synth_with_everything: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One read beats the bulk path's several there (measured, see bulk.MAX_STEP_SHARE): a file
    of four step lines a job (80%) and a compressed one go the careful way, while half steps
    (the synthetic file) go the bulk way."""
    careful_reads: list[str] = []
    real_read = careful.read
    monkeypatch.setattr(
        careful,
        "read",
        lambda *a, **k: careful_reads.append(str(a[0].source.path)) or real_read(*a, **k),
    )
    many = tmp_path / "many-steps.txt"
    jobs = [_line(i) for i in range(10, 60)]
    steps = [
        job.replace(f"{i}|{i}|", f"{i}.{s}|{i}.{s}|", 1)
        for i, job in zip(range(10, 60), jobs, strict=True)
        for s in ("batch", "extern", "0", "1")
    ]
    many.write_text("\n".join([HEADER, *jobs, *steps]) + "\n")
    packed = tmp_path / "few.txt.gz"
    packed.write_bytes(gzip.compress((FIX / "edge.txt").read_bytes()))
    [half] = ingest_files(tmp_path / "a.duckdb", [synth_with_everything])
    [most] = ingest_files(tmp_path / "b.duckdb", [many])
    ingest_files(tmp_path / "c.duckdb", [packed])
    assert careful_reads == [str(many), str(packed)]
    assert (half.inserted, most.inserted, most.steps_folded) == (6_000, 50, 200)


def test_a_key_twice_in_a_file_hands_the_load_to_the_careful_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    header = "JobID|JobIDRaw|Cluster|State|Submit|Start|End|NCPUS|AllocTRES"
    line = "5|5|c|{state}|2024-01-01T00:00:00|2024-01-01T00:00:01|{end}|4|cpu=4,gres/gpu=1"
    path = tmp_path / "twice.txt"
    path.write_text(
        "\n".join(
            [
                header,
                line.format(state="RUNNING", end="Unknown"),
                line.format(state="COMPLETED", end="2024-01-01T02:00:00"),
            ]
        )
        + "\n"
    )
    careful_reads: list[str] = []
    real_read = careful.read
    monkeypatch.setattr(
        careful, "read", lambda *a, **k: careful_reads.append("x") or real_read(*a, **k)
    )
    [s] = ingest_files(tmp_path / "advisor.duckdb", [path])
    assert careful_reads == ["x"]
    assert s.inserted == 1


def test_a_key_shared_with_stored_rows_rolls_the_bulk_load_back(
    tmp_path: Path, synth_few_steps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check after the bulk insert (bulk_overlap.sql) is what keeps the key unique when
    the range test before it misses: here it is told that nothing is stored nearby."""
    db = tmp_path / "advisor.duckdb"
    ingest_files(db, [synth_few_steps])
    careful_reads: list[str] = []
    real_read = careful.read
    monkeypatch.setattr(
        careful, "read", lambda *a, **k: careful_reads.append("x") or real_read(*a, **k)
    )
    monkeypatch.setattr(bulk_mod, "_stored_near", lambda *a, **k: False)
    [again] = ingest_files(db, [synth_few_steps])
    assert careful_reads == ["x"]  # the bulk transaction was rolled back first
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 6_000)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute(
        "SELECT count(*), count(DISTINCT (cluster, job_id_raw, submit)), count(DISTINCT ingest_id)"
        " FROM jobs"
    ).fetchall() == [(6_000, 6_000, 1)]
    con.close()


HEADER = "JobID|JobIDRaw|Cluster|State|Submit|Start|End|Elapsed|NCPUS|AllocTRES|JobName|SubmitLine"


def _line(i: int, name: str = "job", submit_line: str = "sbatch run.sh") -> str:
    return (
        f"{i}|{i}|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T01:00:01|"
        f"01:00:00|4|cpu=4,gres/gpu:h100=1,gres/gpu=1|{name}|{submit_line}"
    )


def test_a_step_split_in_its_last_field_is_one_record_both_ways(tmp_path: Path) -> None:
    """Its first half reads as a step line of its own and its whole comes back repaired: one
    step, one reject for an orphan (found by the fuzz test below: it was two)."""
    path = tmp_path / "split-steps.txt"
    path.write_bytes(
        "\n".join(
            [
                HEADER,
                _line(10),
                _line(10).replace("10|10|", "10.batch|10.batch|", 1) + "\ntail of 10.batch",
                "90.batch|90.batch|c||||||||caf\xe9|sbatch\ntail of 90.batch",
            ]
        ).encode()
        + b"\n"
    )
    careful, bulk = _both(tmp_path, [path])
    assert bulk == careful
    [s] = careful["summaries"]
    assert (s["rows_read"], s["lines_read"], s["inserted"], s["rejected"]) == (1, 3, 1, 1)
    [reject] = careful["rejects"]
    assert reject[1:3] == (5, "JobID") and "without its allocation" in reject[4]


def test_a_record_split_in_its_last_field_goes_into_the_bulk_insert_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repaired before the insert (text.store_tail_fix), not updated after it: an update among
    the fresh rows slows the commit (docs/ingest.md, Speed)."""
    path = tmp_path / "split.txt"
    path.write_text(
        "\n".join([HEADER, _line(10), _line(11, submit_line="sbatch\n--wrap=x"), _line(12)]) + "\n"
    )
    used: list[str] = []
    real_render = bulk_mod.render
    monkeypatch.setattr(
        bulk_mod, "render", lambda name, **parts: used.append(name) or real_render(name, **parts)
    )
    [s] = ingest_files(tmp_path / "advisor.duckdb", [path])
    assert (s.inserted, s.rejected, s.lines_read, s.rows_read) == (3, 0, 3, 3)
    assert "ingest/bulk_insert" in used  # the bulk path loaded it
    assert "ingest/bulk_replace_repaired" not in used
    con = duckdb.connect(str(tmp_path / "advisor.duckdb"), read_only=True)
    assert con.execute("SELECT job_id_raw, submit_line FROM jobs ORDER BY 1").fetchall() == [
        (10, "sbatch run.sh"),
        (11, "sbatch\n--wrap=x"),
        (12, "sbatch run.sh"),
    ]
    con.close()


def test_a_repaired_record_with_empty_fields_stores_them_as_duckdbs_reader_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty fields of a record read in Python (the repair of a split one) are NULL, as they are
    from DuckDB's reader: empty usage fields are no usage (usage_source NULL, not 'sacct'), and
    the repaired record equals the row the bulk insert wrote for it, so no update replaces it
    (its cost: the commit wrote every row of the load to the WAL)."""
    header = HEADER.replace("|JobName|", "|TotalCPU|TRESUsageInTot|TRESUsageInMax|JobName|")
    path = tmp_path / "split-usage.txt"

    def line(i: int, submit_line: str) -> str:
        return _line(i, submit_line=submit_line).replace("|job|", "||||job|")

    path.write_text("\n".join([header, line(10, "sbatch x"), line(11, "sbatch\nx")]) + "\n")
    used: list[str] = []
    real_render = bulk_mod.render
    monkeypatch.setattr(
        bulk_mod, "render", lambda name, **parts: used.append(name) or real_render(name, **parts)
    )
    careful, bulk = _both(tmp_path, [path])
    assert bulk == careful
    assert "ingest/bulk_insert" in used and "ingest/bulk_replace_repaired" not in used
    con = duckdb.connect(str(tmp_path / "bulk.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT * EXCLUDE (job_id_raw, job_id, submit_line, is_interactive,"
        " interactive_evidence, ingest_id, updated_at) FROM jobs ORDER BY job_id_raw"
    ).fetchall()
    assert len(rows) == 2 and rows[0] == rows[1]  # the split record parses as its twin
    assert con.execute("SELECT DISTINCT usage_source, cpu_used_s FROM jobs").fetchall() == [
        (None, None)
    ]
    con.close()


def test_a_file_of_many_steps_loads_under_a_larger_memory_cap_and_the_connection_gets_its_own_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past stages.LARGE_LOAD_STEPS step lines (lowered here: a file of ten million steps is a
    benchmark, not a test) the bulk load runs under LARGE_LOAD_MEMORY_GB, at most a quarter of
    the machine's memory; the next load on the connection under the usual 1 GB again."""
    path = tmp_path / "steps.txt"
    lines = [HEADER]
    for i in range(10, 14):
        lines += [_line(i), _line(i).replace(f"{i}|{i}|", f"{i}.batch|{i}.batch|", 1)]
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(stages, "LARGE_LOAD_STEPS", 3)
    monkeypatch.setattr(stages, "LARGE_LOAD_MEMORY_GB", 2)
    seen: list[str] = []
    real_commit = stages.commit

    def commit(attempt: stages.Attempt) -> None:
        [(limit,)] = attempt.con.execute("SELECT current_setting('memory_limit')").fetchall()
        seen.append(limit)
        real_commit(attempt)

    monkeypatch.setattr(stages, "commit", commit)
    monkeypatch.setattr(bulk_mod.stages, "commit", commit)
    con = store.connect(tmp_path / "advisor.duckdb")
    from advisor.ingest import pipeline

    pipeline.prepare(con)
    [(usual,)] = con.execute("SELECT current_setting('memory_limit')").fetchall()
    s = pipeline.ingest_path(con, path, IngestOptions(strategy="bulk"))
    assert s.inserted == 4
    [(after,)] = con.execute("SELECT current_setting('memory_limit')").fetchall()
    con.close()
    assert seen == ["1.8 GiB"] and after == usual != seen[0]
    assert stages.memory_limit(3) == stages.MEMORY_LIMIT == "1GB"
    monkeypatch.setattr(stages, "LARGE_LOAD_MEMORY_GB", 10**6)  # capped by the machine
    gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    assert stages.memory_limit(4) == f"{max(1, int(gb / 4))}GB"


def test_a_repaired_record_stored_before_is_updated_not_stored_twice(tmp_path: Path) -> None:
    """Its submit time lies outside the range the prescan read (its line is unreadable), so
    only the key check after the repaired records went in finds it (found in review)."""
    db = tmp_path / "advisor.duckdb"
    first = tmp_path / "january.txt"
    first.write_text(HEADER + "\n" + _line(5, name="plain") + "\n")
    later = tmp_path / "june.txt"
    june = [_line(100 + i).replace("2024-01-01T", "2024-06-01T") for i in range(10)]
    later.write_text("\n".join([HEADER, *june, _line(5, submit_line="sbatch --wrap 'a|b'")]) + "\n")
    ingest_files(db, [first])
    [s] = ingest_files(db, [later])
    assert (s.inserted, s.updated, s.unchanged, s.rejected) == (10, 1, 0, 0)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT job_id_raw) FROM jobs").fetchall() == [
        (11, 11)
    ]
    assert con.execute("SELECT submit_line FROM jobs WHERE job_id_raw = 5").fetchall() == [
        ("sbatch --wrap 'a|b'",)
    ]
    con.close()


def test_a_requeued_record_keeps_its_own_last_field_beside_a_split_one(tmp_path: Path) -> None:
    """The whole last field of a split record goes to the record with its id, cluster and
    submit texts, not to another record of the same job id whose field equals its first half."""
    path = tmp_path / "requeued.txt"
    again = _line(7, submit_line="sbatch run.sh").replace(
        "2024-01-01T00:00:00|", "2024-01-02T00:00:00|", 1
    )
    path.write_text(
        "\n".join([HEADER, _line(7, submit_line="sbatch run.sh"), again + "\n--tail"]) + "\n"
    )
    careful, bulk = _both(tmp_path, [path])
    assert bulk == careful
    con = duckdb.connect(str(tmp_path / "bulk.duckdb"), read_only=True)
    assert con.execute("SELECT submit::VARCHAR, submit_line FROM jobs ORDER BY 1").fetchall() == [
        ("2024-01-01 00:00:00", "sbatch run.sh"),
        ("2024-01-02 00:00:00", "sbatch run.sh\n--tail"),
    ]
    con.close()


def test_a_failed_bulk_insert_leaves_the_connections_optimizer_settings_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The insert runs with one optimizer off; an error inside it aborts the transaction,
    which refuses a SET: the setting comes back after the rollback (found in review)."""
    path = tmp_path / "f.txt"
    path.write_text("\n".join([HEADER, _line(10), _line(11)]) + "\n")
    con = store.connect(tmp_path / "advisor.duckdb")
    stages.prepare(con)
    con.execute("SET disabled_optimizers = 'top_n'")
    real_count = bulk_mod.count

    def failing(c: duckdb.DuckDBPyConnection, sql: str, *a: Any) -> int:
        if "INSERT INTO jobs" in sql and "read_csv" in sql:
            c.execute("SELECT error('the insert failed')")
        return real_count(c, sql, *a)

    monkeypatch.setattr(bulk_mod, "count", failing)
    with pytest.raises(duckdb.Error, match="the insert failed"):
        head = path.read_bytes()
        source = Source(
            path,
            "f",
            "sacct-text",
            None,
            head,
            dt.datetime(2024, 1, 1),
            detect.text_layout(head, None, None, "f"),
        )
        bulk_mod.Bulk().load(
            stages.Attempt(con, source, IngestOptions(), lambda *a: None, stages.Hasher(path, None))
        )
    assert con.execute("SELECT current_setting('disabled_optimizers')").fetchall() == [("top_n",)]
    assert con.execute("SELECT count(*) FROM jobs").fetchall() == [(0,)]
    monkeypatch.undo()
    [s] = ingest_files(con, [path])
    assert s.inserted == 2
    assert con.execute("SELECT current_setting('disabled_optimizers')").fetchall() == [("top_n",)]
    con.close()


def test_the_bulk_insert_reads_each_distinct_tres_string_from_the_lookup(tmp_path: Path) -> None:
    """The prescan parses every distinct TRES string of the allocation lines once
    (ing_tres_lookup) and the insert takes its values from there, not from a parse per line."""
    path = tmp_path / "f.txt"
    lines = [_line(i) for i in range(10, 20)]
    lines.append(_line(20).replace("cpu=4,gres/gpu:h100=1,gres/gpu=1", "cpu=8,gres/gpu:a100=2"))
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    con = store.connect(tmp_path / "advisor.duckdb")
    stages.prepare(con)
    # a deliberately wrong entry for one string: the rows of that string must show it
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ing_tres_lookup AS"
        " SELECT 'cpu=8,gres/gpu:a100=2' AS s,"
        " struct_update(ing_tres('cpu=8,gres/gpu:a100=2'), cpu := 99) AS t"
    )
    [s] = ingest_files(con, [path])  # (the bulk path: the lookup is rebuilt from the file)
    assert s.inserted == 11
    assert con.execute("SELECT s FROM ing_tres_lookup ORDER BY s").fetchall() == [
        ("",),
        ("cpu=4,gres/gpu:h100=1,gres/gpu=1",),
        ("cpu=8,gres/gpu:a100=2",),
    ]
    assert con.execute("SELECT cpus, gpus FROM jobs WHERE job_id_raw = 20").fetchall() == [(8, 2)]
    # the same wrong entry before a parse that does not rebuild it: the parser reads the lookup
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ing_tres_lookup AS"
        " SELECT 'cpu=8,gres/gpu:a100=2' AS s,"
        " struct_update(ing_tres('cpu=8,gres/gpu:a100=2'), cpu := 99) AS t"
    )
    stages.parse(
        con,
        bulk_mod.tres_strings_sql(),
        "CAST(NULL AS VARCHAR)",
        {
            "cluster": None,
            "tz": "UTC",
            "atres_known": True,
            "typed": ["cpu=8,gres/gpu:a100=2", "cpu=2,gres/gpu:l40s=3"],
            "gres": [],
        },
        create=True,
        table="x",
    )
    assert con.execute(
        "SELECT alloc_tres, cpus, gpus, gpu_type_raw FROM x WHERE alloc_tres IS NOT NULL"
        " ORDER BY ALL"
    ).fetchall() == [
        ("cpu=2,gres/gpu:l40s=3", 2, 3, "l40s"),
        ("cpu=8,gres/gpu:a100=2", 99, 2, "a100"),
    ]
    con.close()


@pytest.mark.parametrize("name", ["bad.txt", "edge.txt"])
def test_tres_strings_beyond_the_lookups_bound_load_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A file with more distinct TRES strings than the lookup holds: the parser reads the
    others itself, malformed ones included, and stores what the careful path stores."""
    careful = _load(tmp_path / "careful.duckdb", [FIX / name], False)
    monkeypatch.setattr(stages, "MAX_TRES_LOOKUP", 1)
    assert _load(tmp_path / "bulk.duckdb", [FIX / name], True) == careful


def test_the_careful_path_parses_the_tres_strings_of_its_first_records_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synth_with_everything: Path
) -> None:
    """A compressed file loads the careful way, with a lookup of the TRES strings of its first
    records only (TRES_SAMPLE); strings past them are parsed per record: the same rows."""
    packed = tmp_path / "synth.txt.gz"
    packed.write_bytes(gzip.compress(synth_with_everything.read_bytes()))
    whole = _load(tmp_path / "plain.duckdb", [synth_with_everything], False)
    con = store.connect(tmp_path / "gz.duckdb")
    monkeypatch.setattr(careful, "TRES_SAMPLE", 50)
    [s] = ingest_files(con, [packed])
    assert s.inserted == 6_000
    sampled = con.execute("SELECT s FROM ing_tres_lookup WHERE s <> ''").fetchall()
    distinct = con.execute(
        "SELECT count(DISTINCT alloc_tres) + count(DISTINCT req_tres) FROM jobs"
    ).fetchall()[0][0]
    assert 0 < len(sampled) < distinct  # a few strings in the lookup, the rest parsed per row
    jobs = con.execute("SELECT * EXCLUDE (ingest_id, updated_at) FROM jobs ORDER BY ALL").fetchall()
    con.close()
    assert jobs == whole["jobs"]


@pytest.mark.parametrize("name", ["bad.txt", "edge.txt", "synth"])
def test_the_careful_path_stores_the_same_whether_lookup_misses_look_rare_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synth_with_everything: Path, name: str
) -> None:
    """Where its sample says lookup misses are rare, the careful path splits TRES strings for
    the misses alone (inside parse.sql's CASE), else for every record: the same rows and
    rejects either way, malformed strings and strings past the sample included."""
    path = synth_with_everything if name == "synth" else FIX / name
    monkeypatch.setattr(careful, "TRES_SAMPLE", 50)  # most strings miss the lookup
    monkeypatch.setattr(stages, "RARE_MISSES", 2.0)  # every estimate counts as rare
    rare = _load(tmp_path / "rare.duckdb", [path], False)
    monkeypatch.setattr(stages, "RARE_MISSES", -1.0)  # none does
    common = _load(tmp_path / "common.duckdb", [path], False)
    assert rare["jobs"] or rare["rejects"]
    assert rare == common


def test_odd_gpu_keys_read_the_same_both_ways_and_huge_counts_are_rejected(tmp_path: Path) -> None:
    """Found in review of the TRES lookup: a GPU count too large even for BIGINT read as no
    count (the job kept its AllocGRES GPUs or none) instead of a reject, and typed keys that
    name no type must leave the type unknown, not take AllocGRES's."""
    path = tmp_path / "f.txt"
    rows: list[tuple[Any, ...]] = [
        (1, "cpu=4,gres/gpu:h100,gres/gpu:l40s", "gpu:a100:2"),  # typed keys, no counts
        (2, "cpu=4,gres/gpu:=1,gres/gpu:=1", "gpu:a100:2"),  # empty type names: a reject
        (3, "cpu=4,gres/gpu=9223372036854775808", "gpu:a100:2"),  # past BIGINT
        (4, "cpu=4,gres/gpu:h100=99999999999999999999", ""),
        (5, "cpu=4,gres/gpu:h100=2147483648", ""),  # past INTEGER
        (6, "cpu=4,gres/gpu:h100=2", "gpu:a100:2"),
        (7, "cpu=4,gres/gpu=1", "", "gres/gpu=3000000000"),  # requested past INTEGER
    ]
    path.write_text(
        "JobID|JobIDRaw|Cluster|Submit|AllocTRES|AllocGRES|ReqTRES\n"
        + "".join(
            f"{r[0]}|{r[0]}|c|2024-01-01T00:00:00|{r[1]}|{r[2]}|{r[3] if len(r) > 3 else ''}\n"
            for r in rows
        )
    )
    careful, bulk = _both(tmp_path, [path])
    assert bulk == careful
    con = duckdb.connect(str(tmp_path / "bulk.duckdb"), read_only=True)
    got = con.execute("SELECT job_id_raw, gpus, gpu_type_raw FROM jobs ORDER BY 1").fetchall()
    rejected = con.execute("SELECT line_no, field FROM rejects ORDER BY 1").fetchall()
    con.close()
    assert got == [(1, 2, None), (6, 2, "h100")]
    assert rejected == [
        (3, "AllocTRES"),
        (4, "AllocTRES"),
        (5, "AllocTRES"),
        (6, "AllocTRES"),
        (8, "ReqTRES"),
    ]


_odd = st.sampled_from(["a|b", "a\nb", "x\n", "|", "\n|\n", "caf\xe9", "--exclusive"])


# Each example loads a file twice (bulk and careful): six a run, a new draw every run.
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.tuples(
            st.sampled_from(["alloc", "batch", "interactive", "orphan", "bad"]),
            _odd,
            st.binary(max_size=3),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_fuzzed_files_load_the_same_in_bulk_and_carefully(
    lines: list[tuple[str, str, bytes]],
) -> None:
    out = [HEADER.encode()]
    for i, (kind, odd, junk) in enumerate(lines):
        if kind == "alloc":
            rec = _line(10 + i, submit_line="sbatch " + odd).encode() + junk
        elif kind in ("batch", "interactive"):
            rec = (
                _line(10 + i).encode()
                + b"\n"
                + _line(10 + i)
                .replace(f"{10 + i}|{10 + i}|", f"{10 + i}.{kind}|{10 + i}.{kind}|", 1)
                .encode()
                + junk
            )
        elif kind == "orphan":
            rec = f"{90 + i}.batch|{90 + i}.batch|c||||||||{odd}|".encode() + junk
        else:
            rec = _line(10 + i).replace("cpu=4,", "cpu=x,").encode() + junk
        out.append(rec)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.txt"
        path.write_bytes(b"\n".join(out) + b"\n")
        careful, bulk = _both(Path(tmp), [path])
    assert bulk == careful


def test_a_step_line_with_an_extra_field_is_rejected_and_not_folded_either_way(tmp_path: Path):
    """Found by the fuzz test above on CI: the bulk step read takes the id and usage columns
    alone, so it folded a step line whose whole-line read refused it (an extra field and a
    non-UTF-8 byte after its last one): steps_folded 1 against the careful way's 0."""
    step = _line(10).replace("10|10|", "10.batch|10.batch|", 1).encode() + b"\x80|"
    path = tmp_path / "fuzz.txt"
    path.write_bytes(b"\n".join([HEADER.encode(), _line(10).encode(), step]) + b"\n")
    careful, bulk = _both(tmp_path, [path])
    assert bulk == careful
    (summary,) = bulk["summaries"]
    assert (summary["steps_folded"], summary["rejected"]) == (0, 1)


def test_the_strategy_option_picks_the_way_and_an_unknown_one_is_refused(
    tmp_path: Path, synth_few_steps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """auto (the default) takes the bulk way on a fresh database; careful never does; bulk
    takes it even for a file of many step lines, which auto leaves to the careful way."""
    from advisor.errors import UsageError

    careful_reads: list[str] = []
    real_read = careful.read

    def spy(attempt: stages.Attempt) -> stages.Loaded:
        careful_reads.append(attempt.source.label)
        return real_read(attempt)

    monkeypatch.setattr(careful, "read", spy)
    steps = tmp_path / "steps.txt"
    generate(SynthConfig(records=400, seed=8, step_share=1.0), steps)
    ingest_files(tmp_path / "auto.duckdb", [synth_few_steps, steps])
    assert careful_reads == [str(steps)]
    careful_reads.clear()
    ingest_files(tmp_path / "careful.duckdb", [synth_few_steps], IngestOptions(strategy="careful"))
    assert careful_reads == [str(synth_few_steps)]
    careful_reads.clear()
    ingest_files(tmp_path / "bulk.duckdb", [steps], IngestOptions(strategy="bulk"))
    assert careful_reads == []
    with pytest.raises(UsageError, match="strategy 'fast'"):
        ingest_files(tmp_path / "x.duckdb", [steps], IngestOptions(strategy="fast"))
