"""The bulk load of a sacct text file: the parser reads the file and writes ``jobs`` in one
statement, with no staging copy of millions of records (pipeline.py's careful path parses
into temp ``parsed`` first, then upserts).

It is taken when nothing stored can share a key with the file, which is what a first load or
the next month's file looks like. The same SQL decides every value (parse.sql, fold.sql), so a
bulk load and a careful load of one file store the same rows and the same rejects (tested):

1. prescan.sql reads a few columns of the file: record and step counts, clusters, the submit
   range and the few distinct TRES strings (those with typed GPUs for the GPU type map; all
   of them parsed once into ing_tres_lookup for the insert), keeping the lines DuckDB cannot
   read. Stored rows near that range (stored_near.sql): the careful path instead. Those
   lines are repaired (text.repair); a record a newline split in its last field goes into
   temp ``tail_fix`` so that the insert reads it whole.
2. Into temp ``parsed`` go the step lines (read again, their id columns only, when there are any).
3. In the file's transaction: the bulk insert (insert_all.sql over fold.sql over parse.sql over
   the file, keeping the lines DuckDB cannot read), then the repaired records (the repair of
   step 1 when the insert rejected the same lines) replacing the rows of their key; a key
   twice, in the file or shared with a stored row after all (bulk_overlap.sql), rolls it back
   and the careful path runs. When fewer allocation rows went in than the file has, one more
   read finds the unparsable ones for ``rejects``; if the counts still disagree the load is
   rolled back and runs the careful way. Steps without their allocation are rejects.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from advisor.ingest import detect, text
from advisor.ingest import pipeline as pl
from advisor.ingest.records import (
    CANONICAL_FIELDS,
    KEY_COLUMNS,
    USAGE_FIELDS,
    IngestOptions,
    IngestSummary,
)
from advisor.progress import ProgressFn
from advisor.store import query, quote_ident

# A bulk load is not tried when stored rows lie this close to the file's submit range (the
# range is read from the text, before time zones).
_NEAR = dt.timedelta(days=1)
# Files whose records are more than this share steps load faster the careful way (one read;
# measured: 700k jobs in 2.16M lines took about 10% more CPU in bulk, while 4.65M jobs without
# steps took 15% less). Compressed files too: each of the bulk path's reads decompresses again.
_MAX_STEP_SHARE = 1 / 3
_ID_FIELDS = ("jobid", "jobidraw", "cluster")
_PRESCAN_FIELDS = (*_ID_FIELDS, "submit", "alloctres", "reqtres", "allocgres")
# Step lines are read with their ids and their usage (fold.sql adds it to an allocation line
# that carries none); absent usage fields read as NULL at no cost.
_STEP_FIELDS = (*_ID_FIELDS, *USAGE_FIELDS)


def _tres_src() -> str:
    """Parser input holding only the distinct TRES / GRES strings of prescan.sql (parameters
    $typed and $gres), every other field NULL."""
    cols = ", ".join(
        f"CAST(NULL AS VARCHAR) AS {c}"
        for c in CANONICAL_FIELDS
        if c not in ("jobid", "alloctres", "allocgres")
    )
    return (
        "SELECT CAST(NULL AS BIGINT) AS line_no, FALSE AS repaired, '0' AS jobid,"  # noqa: S608
        f" t AS alloctres, g AS allocgres, {cols}"
        " FROM (SELECT unnest($typed) AS t, CAST(NULL AS VARCHAR) AS g"
        " UNION ALL SELECT NULL, unnest($gres))"
    )


class _HandOver(Exception):
    """Inside the bulk transaction: roll it back, the careful path loads the file."""


def load(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    compression: str | None,
    head: bytes,
    options: IngestOptions,
    progress: ProgressFn,
    label: str,
    hasher: pl.Hasher,
    strict: bool,
) -> IngestSummary | None:
    """Load the file in bulk and return its summary, or None (nothing written) when the
    careful path must load it."""
    layout = detect.text_layout(head, options.delimiter, options.fields, label)
    if _step_share(head, layout) > _MAX_STEP_SHARE:
        return None
    base: dict[str, object] = {
        "cluster": options.cluster,
        "tz": options.source_tz,
        "atres_known": "alloctres" in layout.columns,
    }
    raw_text = text.raw_text_expr(layout)
    skip = text.csv_params(path, compression, layout, strict, keep_rejects=False)
    text.drop_reject_tables(con)
    con.execute(
        query("ingest/prescan").replace("{{src}}", text.csv_src_sql(layout, only=_PRESCAN_FIELDS)),
        {"cluster": options.cluster, **text.csv_params(path, compression, layout, strict)},
    )
    [row] = con.execute(query("ingest/prescan_summary")).fetchall()
    records, steps, clusters, first, last, typed_tres, alloc_gres = row
    # (the careful path, when it takes the file after all, fills its own from a sample)
    pl.tres_lookup(con, "prescan_groups")
    con.execute("DROP TABLE prescan_groups")
    if steps > _MAX_STEP_SHARE * records:
        return None
    if records and _stored_near(con, clusters or [], first, last, options.source_tz):
        return None
    # The lines the prescan could not read, repaired now: a record a newline split in its last
    # field then goes into the bulk insert whole, not as its first half updated afterwards (an
    # update among millions of fresh rows made the commit 2.4 s slower).
    early_bad = text.reject_lines(con)
    early = text.repair(con, path, compression, layout, records) if early_bad else None
    tails = early is not None and text.store_tail_fix(con, layout, early)
    text.drop_reject_tables(con)
    progress(label, 1, pl.STAGES)
    ids = text.csv_src_sql(layout, keep_rejects=False, only=_STEP_FIELDS)
    pl.parse(con, _step_src(ids) if steps else f"{ids} LIMIT 0", "CAST(NULL AS VARCHAR)", {**base, **skip},
             create=True)  # fmt: skip
    if pl.count(con, "SELECT count(*) FROM parsed WHERE bad_field IS NOT NULL"):
        # a reject keeps its whole text: read those step lines again, every column
        con.execute("DELETE FROM parsed WHERE bad_field IS NOT NULL")
        pl.parse(con, _step_src(text.csv_src_sql(layout, keep_rejects=False)), raw_text,
                 {**base, **skip, "delim": layout.delimiter}, create=False,
                 where="bad_field IS NOT NULL")  # fmt: skip
    _tres_names(con, typed_tres or [], alloc_gres or [])
    pl.gpu_map(con, options, tables=("parsed", "tres_names"))
    src = text.csv_src_sql(layout)
    src = _alloc_src(text.with_tails_sql(layout, src) if tails else src)
    body = pl.parse_sql(src, raw_text, misses_in_case=True)  # the lookup has every string
    text.drop_reject_tables(con)
    optimizers = pl.optimizer_setting(con)
    con.execute("BEGIN TRANSACTION")
    try:
        ingest_id = pl.start_ingest(
            con, label, "sacct-text", compression, options, hasher.started_at
        )
        ids_param: dict[str, object] = {"ingest_id": ingest_id}
        # Every join of this statement has its small side on the right (DuckDB would build
        # the tail_fix join's hash table over the file: 7.5 s).
        with pl.sides_as_written(con):
            inserted = pl.count(
                con,
                _insert_sql(query("ingest/alloc_bulk").replace("{{parse}}", body)),
                {**base, **text.csv_params(path, compression, layout, strict), **ids_param},
            )
        progress(label, 2, pl.STAGES)
        if pl.cr_misnumbers_rejects(con, hasher):  # the careful path reads such files by line
            raise _HandOver
        # lines DuckDB read above but not with every column checked (prescan, steps)
        unread, unread_allocs = _unread_lines(con, layout)
        if early is not None and not unread and text.reject_lines(con) == early_bad:
            fix = early  # the same lines: temp raw_fix holds their repair already
        else:
            fix = text.repair(con, path, compression, layout, records - unread)
        text.drop_reject_tables(con)
        if fix.rows:
            _add_repaired(con, layout, raw_text, base, options, ingest_id)
        # every row of the load is in now, the repaired ones too
        if pl.count(con, query("ingest/bulk_overlap"), ids_param):  # a key twice
            raise _HandOver
        # array tasks keyed by JobID: the careful path gives them the raw id the file may
        # hold for the same task elsewhere (keys.py)
        if pl.count(con, "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE ingest_id = $ingest_id"
                    " AND job_id_raw < 0 LIMIT 1)", ids_param):  # fmt: skip
            raise _HandOver
        allocations = records - steps - unread_allocs
        if inserted < allocations:  # unparsable allocation lines: find them for `rejects`
            pl.parse(con, _alloc_src(text.csv_src_sql(layout, keep_rejects=False)), raw_text,
                     {**base, **skip, "delim": layout.delimiter}, create=False,
                     where="step IS NULL AND bad_field IS NOT NULL")  # fmt: skip
        bad = pl.count(
            con,
            "SELECT count(*) FROM parsed WHERE step IS NULL AND NOT repaired"
            " AND bad_field IS NOT NULL",
        )
        if inserted + bad != allocations:  # the counts disagree
            raise _HandOver
        pl.supersede_stale(con, ingest_id)
        progress(label, 3, pl.STAGES)
        present = {c for c in layout.columns if c in CANONICAL_FIELDS}
        loaded = pl.Loaded(
            "sacct-text", present, fix.lines_read, fix.rejects,
            text.allocation_tails(layout, fix), layout, path, compression,
        )  # fmt: skip
        rejects = pl.collect_rejects(con, loaded, orphans=("ingest/bulk_orphan_steps", ingest_id))
        pl.store_rejects(con, ingest_id, label, rejects)
        stored = pl.count(con, "SELECT count(*) FROM jobs WHERE ingest_id = ?", [ingest_id])
        repaired = pl.count(con, "SELECT count(*) FROM parsed WHERE repaired AND step IS NULL")
        summary = pl.finish(
            con, ingest_id, label, compression, loaded, allocations + repaired, rejects,
            inserted=stored, updated=0, unchanged=0, bulk=True,
        )  # fmt: skip
        progress(label, 4, pl.STAGES)
        pl.commit(con, ingest_id, hasher)
    except _HandOver:
        con.execute("ROLLBACK")
        return None
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:  # (an aborted transaction refuses a SET: restored here, after it ended)
        con.execute("SET disabled_optimizers = ?", [optimizers])
    return summary


def _line_is_step(line: str, layout: detect.TextLayout) -> bool:
    """Whether a text line is a step record: ing_is_step (macros.sql) on its split fields."""
    fields = dict(zip(layout.columns, line.split(layout.delimiter), strict=False))
    return "." in (fields.get("jobid") or fields.get("jobidraw") or "")


def _step_share(head: bytes, layout: detect.TextLayout) -> float:
    """The share of step lines among the first lines of the file (the head detect read; its
    last line may be cut short)."""
    lines = head.decode("utf-8", errors="replace").splitlines()[1 if layout.has_header else 0 : -1]
    return sum(_line_is_step(line, layout) for line in lines) / len(lines) if lines else 0.0


def _insert_sql(alloc: str) -> str:
    """insert_all.sql for the rows fold.sql makes of the allocation lines ``alloc`` (SQL)."""
    return query("ingest/insert_all").replace("{{stage}}", "(" + pl.fold_sql(alloc) + ")")


def _step_src(src: str) -> str:
    """The step lines of ``src`` (macros.sql: ing_is_step)."""
    return f"SELECT * FROM ({src}) AS s WHERE ing_is_step(jobid, jobidraw)"  # noqa: S608


def _alloc_src(src: str) -> str:
    """Every other line of ``src``: the parser then never spends time on steps (in real sacct
    output two or three lines of every job)."""
    return (
        f"SELECT * FROM ({src}) AS s"  # noqa: S608
        " WHERE coalesce(NOT ing_is_step(jobid, jobidraw), TRUE)"
    )


def _unread_lines(con: duckdb.DuckDBPyConnection, layout: detect.TextLayout) -> tuple[int, int]:
    """Lines the bulk read rejected for bytes that are not UTF-8 alone: the lighter reads
    before it (prescan, steps) checked a few columns and took them. Returns (lines, of which
    allocation lines)."""
    rows = con.execute(
        f"SELECT any_value(csv_line) FROM {text.REJ_ERRORS} GROUP BY line"  # noqa: S608
        " HAVING bool_and(error_type = 'INVALID ENCODING')"
    ).fetchall()
    allocs = sum(not _line_is_step(str(line or ""), layout) for (line,) in rows)
    return len(rows), allocs


def _add_repaired(
    con: duckdb.DuckDBPyConnection,
    layout: detect.TextLayout,
    raw_text: str,
    base: dict[str, object],
    options: IngestOptions,
    ingest_id: int,
) -> None:
    """Parse the repaired records (temp ``raw_fix``) into ``parsed``; their allocations
    replace the rows of their key; repaired steps give their jobs' verdict again."""
    pl.parse(con, text.fix_src_sql(layout), raw_text, {**base, "delim": layout.delimiter},
             create=False)  # fmt: skip
    con.execute("DROP TABLE IF EXISTS raw_fix")
    con.execute(query("ingest/steps_read_twice"))
    pl.gpu_map(con, options, tables=("parsed", "tres_names"))
    ids_param: dict[str, object] = {"ingest_id": ingest_id}
    alloc = query("ingest/alloc_repaired")
    con.execute(
        query("ingest/bulk_fixed").replace(
            "{{rows}}", pl.fold_sql(alloc.replace("{{new_only}}", "FALSE"))
        ),
        ids_param,
    )
    cols = [str(d[0]) for d in con.execute("SELECT * FROM fixed LIMIT 0").description]
    values = [c for c in cols if c not in KEY_COLUMNS]
    # only the columns a repaired line changes (a split record's head lacks its last field):
    # an update of every column would slow every later scan of these row groups
    [changed] = con.execute(
        query("ingest/bulk_repaired_changes").replace(
            "{{changed}}",
            ", ".join(
                f"bool_or(j.{quote_ident(c)} IS DISTINCT FROM s.{quote_ident(c)})" for c in values
            ),
        ),
        ids_param,
    ).fetchall()
    assign = pl.assignments([c for c, ch in zip(values, changed, strict=True) if ch], "s")
    if assign:
        con.execute(
            query("ingest/bulk_replace_repaired")
            .replace("{{set}}", assign)
            .replace("{{rows}}", "fixed"),
            ids_param,
        )
    con.execute("DROP TABLE fixed")
    con.execute(_insert_sql(alloc.replace("{{new_only}}", "TRUE")), ids_param)
    if pl.count(con, "SELECT count(*) FROM parsed WHERE repaired AND step IS NOT NULL"):
        con.execute(
            query("ingest/bulk_step_evidence").replace("{{steps}}", query("ingest/step_flags")),
            ids_param,
        )


def _stored_near(
    con: duckdb.DuckDBPyConnection,
    clusters: list[str],
    first: str | None,
    last: str | None,
    tz: str,
) -> bool:
    """Whether stored rows of these clusters lie near the file's submit range (texts)."""
    row = con.execute("SELECT ing_ts(?, ?), ing_ts(?, ?)", [first, tz, last, tz]).fetchone()
    lo, hi = row if row is not None else (None, None)
    if lo is None or hi is None:
        return bool(pl.count(con, "SELECT count(*) FROM (SELECT 1 FROM jobs LIMIT 1)"))
    return bool(
        pl.count(
            con,
            query("ingest/stored_near"),
            {"clusters": clusters, "first": lo - _NEAR, "last": hi + _NEAR},
        )
    )


def _tres_names(
    con: duckdb.DuckDBPyConnection, typed_tres: list[str], alloc_gres: list[str]
) -> None:
    """Temp table ``tres_names``: the distinct TRES strings with typed GPUs, parsed by parse.sql
    itself, so that the GPU type map holds the names the bulk insert meets."""
    pl.parse(
        con,
        _tres_src(),
        "CAST(NULL AS VARCHAR)",
        {"cluster": None, "tz": "UTC", "atres_known": True, "typed": typed_tres,
         "gres": alloc_gres},
        create=True,
        table="tres_names",
    )  # fmt: skip
