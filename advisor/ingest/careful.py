"""The careful way to load a source: parse it whole into temp ``parsed``, keep its rejects, fold
steps and drop lines that repeat a key (the view ``stage``), then upsert into ``jobs`` (a plain
insert when no stored key can collide) and record the ``ingests`` row, in one transaction.

It loads every source: JSON, jobcomp, compressed text, text the bulk way hands over.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from advisor.errors import InputError
from advisor.ingest import bookkeeping, detect, keys, stages, text
from advisor.ingest.records import (
    CANONICAL_FIELDS,
    EVIDENCE_COLUMNS,
    JOB_COLUMN_SOURCES,
    KEY_COLUMNS,
    REQUEST_ONLY_COLUMNS,
    TRES_COLUMNS,
    IngestOptions,
    IngestSummary,
)
from advisor.ingest.stages import Attempt, Loaded, Written, count, parse
from advisor.store import query, quote_ident, render

_TRES_FIELDS = ("jobid", "jobidraw", "alloctres", "reqtres")
TRES_SAMPLE = 200_000
"""Records whose TRES strings are parsed once each before a text load (the bulk way takes
every record's, from its prescan)."""
_LITERAL_LOSERS = 100_000  # up to this many, the lines that lose their key are a literal list


@dataclass(frozen=True)
class Careful:
    """The strategy that loads any source (see the module docstring)."""

    name: str = "careful"

    def load(self, attempt: Attempt) -> IngestSummary:
        con, options = attempt.con, attempt.options
        loaded = read(attempt)
        attempt.stage(1)
        rejects = stages.collect_rejects(con, loaded)
        allocations = count(con, query("ingest/count_allocations"))
        keys.rekey_source(con)
        _stage(con, options)
        duplicates, differ = keys.duplicates(con, loaded.source)
        rejects = stages.by_line([*rejects, *stages.numbered(loaded.source, differ)])
        attempt.stage(2)
        con.execute("BEGIN TRANSACTION")
        try:
            ingest_id = attempt.open_ingest()
            bookkeeping.store_rejects(con, ingest_id, loaded.source.label, rejects)
            rekeyed = keys.rekey_stored(con)
            attempt.stage(3)
            written = _write(attempt, loaded, rekeyed, duplicates)
            stages.supersede_stale(con, ingest_id)
            attempt.stage(4)
            summary = stages.finish(attempt, loaded, allocations, rejects, written)
            stages.commit(attempt)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return summary


def read(attempt: Attempt) -> Loaded:
    """Read and parse the source into temp table ``parsed`` (and the view step_rows: stages)."""
    con, source, options = attempt.con, attempt.source, attempt.options
    base: dict[str, object] = {"cluster": options.cluster, "tz": options.source_tz}
    if source.fmt == "sacct-text":
        return _read_text(attempt, base)
    if source.fmt == "sacct-json":
        from advisor.ingest import jsonfmt

        with detect.open_decompressed(source.path, source.compression) as fh:
            data = fh.read()
        records, rejects, present = jsonfmt.records(data, source.label)
    elif source.fmt == "jobcomp":
        from advisor.ingest import jobcomp

        with detect.open_decompressed(source.path, source.compression) as fh:
            records, rejects, present, _physical = jobcomp.records(fh)
    else:
        raise InputError(f"unknown input format {source.fmt!r}", source=source.label)
    base["atres_known"] = "alloctres" in present
    lines = len(records) + len(rejects)
    _fill_raw(con, records)
    parse(con, query("ingest/raw_records"), "_raw", base, create=True)
    con.execute("DROP TABLE raw")
    stages.step_rows(con)  # (the steps are in `parsed`)
    return Loaded(source, present, lines, rejects)


def _read_text(attempt: Attempt, base: dict[str, object]) -> Loaded:
    """sacct text: DuckDB's read_csv, the lines it cannot read repaired in Python (or, when
    the strict reader gave up on the file, every line read in Python)."""
    con, source = attempt.con, attempt.source
    path, compression, layout = source.path, source.compression, source.layout
    assert layout is not None
    base["atres_known"] = "alloctres" in layout.columns
    raw_text = text.raw_text_expr(layout)
    text.drop_reject_tables(con)
    by_line = not attempt.strict  # a carriage return DuckDB's reader cannot take
    if attempt.strict:
        # the TRES strings of the first records, parsed once each (a light read: archives
        # are compressed, and a full prescan would decompress the file twice)
        sample = text.csv_src_sql(layout, keep_rejects=False, only=_TRES_FIELDS)
        rare_misses = stages.tres_lookup(
            con,
            render("ingest/first_records", src=sample),
            {
                **text.csv_params(path, compression, layout, keep_rejects=False),
                "sample": TRES_SAMPLE,
            },
        )
        parse(
            con,
            text.csv_src_sql(layout),
            raw_text,
            {**base, **text.csv_params(path, compression, layout, strict=True)},
            create=True,
            misses_in_case=rare_misses,
        )
        by_line = stages.cr_misnumbers_rejects(con, attempt.hasher)
        if not by_line:
            accepted = count(con, query("ingest/count_parsed"))
            fix = text.repair(con, path, compression, layout, accepted, attempt.hasher.line_index())
    if by_line:  # read the lines in Python

        def take(first: bool) -> None:
            parse(
                con,
                text.good_src_sql(layout),
                raw_text,
                {**base, "delim": layout.delimiter},
                create=first,
            )

        text.drop_reject_tables(con)
        fix = text.read_by_line(con, path, compression, layout, take)
    stages.step_rows(con)  # (the steps are in `parsed`)
    if fix.rows:
        parse(
            con,
            text.fix_src_sql(layout),
            raw_text,
            {**base, "delim": layout.delimiter},
            create=False,
        )
        if fix.tails:
            con.execute(query("ingest/steps_read_twice"))
    con.execute("DROP TABLE IF EXISTS raw_fix")
    text.drop_reject_tables(con)
    present = {c for c in layout.columns if c in CANONICAL_FIELDS}
    return Loaded(source, present, fix.lines_read, fix.rejects, text.allocation_tails(layout, fix))


def _fill_raw(con: duckdb.DuckDBPyConnection, records: list[dict[str, str | int | None]]) -> None:
    """Temp table ``raw`` from parsed records (canonical fields as text, line_no, _raw)."""
    con.execute("DROP TABLE IF EXISTS raw")
    cols = {c: pa.array([r.get(c) for r in records], pa.string()) for c in CANONICAL_FIELDS}
    cols["_raw"] = pa.array([r.get("_raw") for r in records], pa.string())
    cols["line_no"] = pa.array([r.get("line_no") for r in records], pa.int64())
    con.register("ing_records", pa.table(cols))
    con.execute("CREATE TEMP TABLE raw AS SELECT * FROM ing_records")
    con.unregister("ing_records")


def _stage(con: duckdb.DuckDBPyConnection, options: IngestOptions) -> None:
    """The view ``stage``: allocations of ``parsed``, steps folded, one row per key."""
    stages.gpu_map(con, options)
    con.execute(query("ingest/superseded"))  # dupkeys
    lines = "parsed"
    if count(con, query("ingest/count_dupkeys")):
        losers = [int(r[0]) for r in con.execute(query("ingest/losers")).fetchall()]
        if len(losers) <= _LITERAL_LOSERS:
            literal = "[" + ",".join(str(x) for x in losers) + "]::BIGINT[]"
            lines = "(" + render("ingest/parsed_except", losers=literal) + ")"
        else:
            lines = "(" + query("ingest/alloc_dedupe") + ")"
    con.execute(render("ingest/stage", rows=stages.fold_sql(lines)))


def _write(
    attempt: Attempt, loaded: Loaded, rekeyed: list[tuple[str, int, object]], duplicates: int
) -> Written:
    """Upsert the view ``stage`` into ``jobs``: a plain insert when no stored key can collide,
    else the changed rows replaced and the new ones inserted."""
    con, ids = attempt.con, attempt.id_param
    if not count(con, query("ingest/overlap")):  # nothing stored can collide
        inserted = count(con, query("ingest/insert_all"), ids)
        return Written(inserted=inserted, duplicates=duplicates)
    staged = count(con, query("ingest/count_stage"))
    row, new, old, assign = _merge_parts(
        con, loaded.present, REQUEST_ONLY_COLUMNS.get(loaded.source.fmt, frozenset())
    )
    replace_sql = render("ingest/replace_changed", row=row, new=new, old=old, set=assign)
    updated = count(con, replace_sql, ids)
    inserted = count(con, query("ingest/insert_new"), ids)
    # a stored task that only took its real raw id changed too
    assert attempt.ingest_id is not None
    updated += keys.settle_rekeyed(con, attempt.ingest_id, rekeyed)
    return Written(
        inserted=inserted,
        updated=updated,
        unchanged=staged - updated - inserted,
        duplicates=duplicates,
    )


def _merge_parts(
    con: duckdb.DuckDBPyConnection, present: set[str], request_only: frozenset[str] = frozenset()
) -> tuple[str, str, str, str]:
    """The pieces of replace_changed.sql for a source with the fields ``present``: the row
    written (``s.*``, with stored values for the columns the source lacks, for a stored
    interactive verdict on stronger evidence, for a stored allocation where the source has
    only the request (``request_only``), and for a stored state's detail, "CANCELLED by 1001",
    where the source writes the same state barer), the compared columns, new and stored (TRES
    strings as sets), and the assignment of every column but the key from that row (``r``)."""
    cols = [str(d[0]) for d in con.execute(query("ingest/stage_columns")).description]
    replaced: list[str] = []
    new: list[str] = []
    old: list[str] = []
    for c in cols:
        if c in KEY_COLUMNS:
            continue
        q = quote_ident(c)
        sources = JOB_COLUMN_SOURCES.get(c)
        if c in EVIDENCE_COLUMNS:
            expr = (
                "CASE WHEN ing_evidence_rank(s.interactive_evidence)"
                f" >= ing_evidence_rank(j.interactive_evidence) THEN s.{q} ELSE j.{q} END"
            )
            replaced.append(f"{expr} AS {q}")
        elif sources is not None and not any(f in present for f in sources):
            replaced.append(f"j.{q} AS {q}")
            continue  # the stored value, unchanged by definition
        elif c in request_only:
            expr = f"coalesce(j.{q}, s.{q})"
            replaced.append(f"{expr} AS {q}")
        elif c == "state_raw":
            expr = (
                "CASE WHEN s.state IS NOT DISTINCT FROM j.state"
                " AND starts_with(j.state_raw, s.state_raw) THEN j.state_raw ELSE s.state_raw END"
            )
            replaced.append(f"{expr} AS {q}")
        else:
            expr = f"s.{q}"
        if c in TRES_COLUMNS:  # the same items in another order are no change
            new_items = f"list_sort(string_split({expr}, ','))"
            old_items = f"list_sort(string_split(j.{q}, ','))"
            new.append(new_items)
            old.append(old_items)
            # and a row updated for another column keeps the stored spelling of equal TRES
            replaced = [r for r in replaced if not r.endswith(f" AS {q}")]
            replaced.append(
                f"CASE WHEN {new_items} IS NOT DISTINCT FROM {old_items} THEN j.{q}"
                f" ELSE {expr} END AS {q}"
            )
            continue
        new.append(expr)
        old.append(f"j.{q}")
    row = "s.*" + (f" REPLACE ({', '.join(replaced)})" if replaced else "")
    assign = stages.assignments([c for c in cols if c not in KEY_COLUMNS], "r")
    return row, ", ".join(new), ", ".join(old), assign
