"""The bulk way to load a sacct text file: the parser reads the file and writes ``jobs`` in one
statement, with no staging copy of millions of records (the careful way, advisor.ingest.careful,
parses into temp ``parsed`` first, then upserts).

It is taken when nothing stored can share a key with the file, which is what a first load or
the next month's file looks like. The same SQL decides every value (parse.sql, fold.sql), so a
bulk load and a careful load of one file store the same rows and the same rejects (tested):

1. prescan.sql reads a few columns of the file: record and step counts, clusters, the submit
   range and the few distinct TRES strings (those with typed GPUs for the GPU type map; all
   of them parsed once into ing_tres_lookup for the insert), keeping the lines DuckDB cannot
   read. Stored rows near that range (stored_near.sql): the careful way instead. Those
   lines are repaired (text.repair); a record a newline split in its last field goes into
   temp ``tail_fix`` so that the insert reads it whole.
2. Into temp ``parsed_steps`` go the step lines as narrow rows (read again, their id and usage
   columns only, when there are any; stages.step_rows); ``parsed`` starts empty. From here a
   file of many step lines runs under a larger memory cap (stages.memory_limit).
3. In the file's transaction: the bulk insert (bulk_insert.sql: fold.sql over parse.sql over
   the file's allocation lines but those with a usage fault, keeping the lines DuckDB cannot
   read), then the repaired records (the repair of step 1 when the insert rejected the same
   lines) replacing the rows of their key. When fewer allocation rows went in than the file
   has, one more read finds the unparsable ones and those with a usage fault for ``rejects``,
   and stores the latter (alloc_usage_faults.sql); if the counts still disagree the load is
   rolled back and runs the careful way, as it does for a key twice, in the file or shared
   with a stored row after all (bulk_overlap.sql). Steps without their allocation are
   rejects.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from advisor.ingest import bookkeeping, detect, stages, text
from advisor.ingest.keys import ORPHAN_REASON
from advisor.ingest.records import CANONICAL_FIELDS, KEY_COLUMNS, USAGE_FIELDS, IngestSummary
from advisor.ingest.stages import Attempt, Loaded, Written, count
from advisor.store import query, quote_ident, render

MAX_STEP_SHARE = 0.75
"""Files whose records are more than this share steps (three step lines a job and more) load
as fast the careful way (one read against several; docs/ingest.md has the measurements).
Compressed files go the careful way too: each of the bulk way's reads decompresses again."""
_ID_FIELDS = ("jobid", "jobidraw", "cluster")
_PRESCAN_FIELDS = (*_ID_FIELDS, "submit", "alloctres", "reqtres", "allocgres")
# Step lines are read with their ids and their usage (fold.sql adds it to an allocation line
# that carries none); absent usage fields read as NULL at no cost.
_STEP_FIELDS = (*_ID_FIELDS, *USAGE_FIELDS)


class _HandOver(Exception):
    """Inside the bulk transaction: roll it back, the careful way loads the file."""


@dataclass(frozen=True)
class Bulk:
    """The strategy that writes a sacct text file in one statement, or declines it (None,
    nothing written) for the careful way. ``max_step_share``: the share of step lines in the
    file's head above which it declines (1.0: never, for that reason)."""

    max_step_share: float = MAX_STEP_SHARE
    name: str = "bulk"

    def load(self, attempt: Attempt) -> IngestSummary | None:
        con, source, options = attempt.con, attempt.source, attempt.options
        path, compression, layout = source.path, source.compression, source.layout
        assert layout is not None
        if _step_share(source.head, layout) > self.max_step_share:
            return None
        base: dict[str, object] = {
            "cluster": options.cluster,
            "tz": options.source_tz,
            "atres_known": "alloctres" in layout.columns,
        }
        strict = attempt.strict
        raw_text = text.raw_text_expr(layout)
        skip = text.csv_params(path, compression, layout, strict, keep_rejects=False)
        scan = self._prescan(attempt)
        if scan is None:
            return None
        records, steps = scan.records, scan.steps
        # The lines the prescan could not read, repaired now: a record a newline split in its
        # last field then goes into the bulk insert whole, not as its first half updated
        # afterwards (an update among millions of fresh rows slows the commit).
        early_bad = text.reject_lines(con)
        early = None
        if early_bad:
            early = text.repair(
                con, path, compression, layout, records, attempt.hasher.line_index()
            )
        tails = early is not None and text.store_tail_fix(con, layout, early)
        # (pipeline._attempt sets the connection's own cap again, whatever happens next)
        con.execute("SET memory_limit = ?", [stages.memory_limit(steps)])
        text.drop_reject_tables(con)
        attempt.stage(1)
        _parse_steps(con, layout, {**base, **skip}, steps, raw_text)
        _tres_names(con, scan.typed_tres, scan.alloc_gres)
        stages.gpu_map(con, options, tables=("parsed", "tres_names"))
        lines = text.csv_src_sql(layout)
        if tails:
            lines = text.with_tails_sql(layout, lines)
        insert = _insert_sql(render("ingest/alloc_lines", src=lines), raw_text)
        text.drop_reject_tables(con)
        optimizers = stages.optimizer_setting(con)
        con.execute("BEGIN TRANSACTION")
        try:
            ingest_id = attempt.open_ingest()
            ids_param = attempt.id_param
            # Every join of this statement has its small side on the right (DuckDB would
            # build the tail_fix join's hash table over the file).
            with stages.sides_as_written(con):
                inserted = count(
                    con,
                    insert,
                    {**base, **text.csv_params(path, compression, layout, strict), **ids_param},
                )
            attempt.stage(2)
            if stages.cr_misnumbers_rejects(con, attempt.hasher):  # read by line, carefully
                raise _HandOver
            # lines DuckDB read above but not with every column checked (prescan, steps)
            unread, unread_allocs = _unread_lines(con, layout)
            if early is not None and not unread and text.reject_lines(con) == early_bad:
                fix = early  # the same lines: temp raw_fix holds their repair already
            else:
                fix = text.repair(
                    con, path, compression, layout, records - unread, attempt.hasher.line_index()
                )
            text.drop_reject_tables(con)
            if fix.rows:
                _add_repaired(attempt, raw_text, base)
            allocations = records - steps - unread_allocs
            if inserted < allocations:
                inserted += _insert_faulty(con, layout, {**base, **skip}, raw_text, ids_param)
            bad = count(con, query("ingest/count_bad_allocations"))
            if inserted + bad != allocations:  # the counts disagree
                raise _HandOver
            summary = _finish(
                attempt,
                ingest_id,
                Loaded(
                    source,
                    {c for c in layout.columns if c in CANONICAL_FIELDS},
                    fix.lines_read,
                    fix.rejects,
                    text.allocation_tails(layout, fix),
                ),
                allocations,
            )
        except _HandOver:
            con.execute("ROLLBACK")
            return None
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:  # (an aborted transaction refuses a SET: restored here, after it ended)
            con.execute("SET disabled_optimizers = ?", [optimizers])
        return summary

    def _prescan(self, attempt: Attempt) -> _Prescan | None:
        """The file's counts and TRES strings from a read of a few columns (ing_tres_lookup
        filled for the insert), or None where it is the careful way's: too many steps, or
        stored rows near its submit range."""
        con, source, options = attempt.con, attempt.source, attempt.options
        layout = source.layout
        assert layout is not None
        text.drop_reject_tables(con)
        params = text.csv_params(source.path, source.compression, layout, attempt.strict)
        con.execute(
            render("ingest/prescan", src=text.csv_src_sql(layout, only=_PRESCAN_FIELDS)),
            {"cluster": options.cluster, **params},
        )
        [row] = con.execute(query("ingest/prescan_summary")).fetchall()
        records, steps, clusters, first, last, typed_tres, alloc_gres = row
        # (the careful way, when it takes the file after all, fills its own from a sample)
        stages.tres_lookup(con, "prescan_groups")
        con.execute("DROP TABLE prescan_groups")
        if steps > self.max_step_share * records:
            return None
        if records and _stored_near(con, clusters or [], first, last, options.source_tz):
            return None
        return _Prescan(records, steps, typed_tres or [], alloc_gres or [])


@dataclass(frozen=True)
class _Prescan:
    """What the prescan read: records and step lines, the TRES strings with typed GPUs and
    the GRES strings of the allocations."""

    records: int
    steps: int
    typed_tres: list[str]
    alloc_gres: list[str]


def _parse_steps(
    con: duckdb.DuckDBPyConnection,
    layout: detect.TextLayout,
    params: dict[str, object],
    steps: int,
    raw_text: str,
) -> None:
    """Temp ``parsed_steps`` from the step lines' ids and usage (``parsed`` starts empty); a
    step line that fails to parse is read again, every column, so its reject keeps its text."""
    ids = text.csv_src_sql(layout, keep_rejects=False, only=_STEP_FIELDS)
    no_lines = render("ingest/no_lines", src=ids)
    stages.parse(con, no_lines, "CAST(NULL AS VARCHAR)", params, create=True)
    step_lines = render("ingest/step_lines", src=ids) if steps else no_lines
    stages.step_rows(con, step_lines, params)
    if count(con, query("ingest/count_bad_steps")):
        con.execute(query("ingest/drop_bad_steps"))
        _read_whole(con, "ingest/step_lines", layout, params, raw_text, "bad_field IS NOT NULL")


def _read_whole(
    con: duckdb.DuckDBPyConnection,
    lines: str,
    layout: detect.TextLayout,
    params: dict[str, object],
    raw_text: str,
    where: str,
) -> None:
    """Parse the file's ``lines`` (a statement over its source) again with every column and
    its raw text into ``parsed``, the rows ``where`` selects: a reject keeps its whole line."""
    every = render(lines, src=text.csv_src_sql(layout, keep_rejects=False))
    stages.parse(
        con, every, raw_text, {**params, "delim": layout.delimiter}, create=False, where=where
    )


def _insert_faulty(
    con: duckdb.DuckDBPyConnection,
    layout: detect.TextLayout,
    params: dict[str, object],
    raw_text: str,
    ids_param: dict[str, object],
) -> int:
    """Unparsable allocation lines and those with a usage fault (the insert left both out):
    read for ``rejects``, the latter stored with that value NULL; the rows stored."""
    faults = "step IS NULL AND (bad_field IS NOT NULL OR usage_fault IS NOT NULL)"
    _read_whole(con, "ingest/alloc_lines", layout, params, raw_text, faults)
    lines = "(" + query("ingest/alloc_usage_faults") + ")"
    faulty = stages.fold_sql(lines, steps_of=lines)
    return count(con, render("ingest/bulk_insert", rows=faulty), ids_param)


def _finish(attempt: Attempt, ingest_id: int, loaded: Loaded, allocations: int) -> IngestSummary:
    """Every row of the load is in, the repaired ones too: hand over where a key is there
    twice or an array task is keyed by its JobID, else keep the rejects, finish and commit."""
    con = attempt.con
    ids_param = attempt.id_param
    if count(con, query("ingest/bulk_overlap"), ids_param):  # a key twice
        raise _HandOver
    # array tasks keyed by JobID: the careful way gives them the raw id the file may hold for
    # the same task elsewhere (keys.py)
    if count(con, query("ingest/any_array_key_loaded"), ids_param):
        raise _HandOver
    stages.supersede_stale(con, ingest_id)
    attempt.stage(3)
    rejects = stages.collect_rejects(con, loaded, orphans=("ingest/bulk_orphan_steps", ingest_id))
    layout = attempt.source.layout
    assert layout is not None
    if any(
        _line_is_step(r.raw, layout)
        for r in rejects
        if not r.kept and not r.reason.startswith(ORPHAN_REASON)
    ):
        # the step read took its id and usage columns alone, so it folded a step line the
        # whole line's read refused (an extra field, a bad byte elsewhere): the careful way
        # folds none of it, as the rejects row says
        raise _HandOver
    bookkeeping.store_rejects(con, ingest_id, attempt.source.label, rejects)
    stored = count(con, query("ingest/count_loaded"), ids_param)
    repaired = count(con, query("ingest/count_repaired_allocations"))
    summary = stages.finish(
        attempt, loaded, allocations + repaired, rejects, Written(inserted=stored), bulk=True
    )
    attempt.stage(4)
    stages.commit(attempt)
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


def _insert_sql(alloc_lines: str, raw_text: str) -> str:
    """The bulk insert (bulk_insert.sql) of the allocation lines ``alloc_lines`` (SQL): parsed
    (parse.sql; ing_tres only for strings the lookup lacks, as it holds every string of the
    file), and those that parsed, but those with a usage fault, folded with their steps
    (fold.sql)."""
    parsed = stages.parse_sql(alloc_lines, raw_text, misses_in_case=True)
    lines = "(" + render("ingest/without_usage_faults", parse=parsed) + ")"
    return render("ingest/bulk_insert", rows=stages.fold_sql(lines))


def tres_strings_sql() -> str:
    """Parser input holding only the distinct TRES / GRES strings of prescan.sql (parameters
    $typed and $gres), every other field NULL."""
    nulls = ", ".join(
        f"CAST(NULL AS VARCHAR) AS {quote_ident(c)}"
        for c in CANONICAL_FIELDS
        if c not in ("jobid", "alloctres", "allocgres")
    )
    return render("ingest/tres_strings", nulls=nulls)


def _unread_lines(con: duckdb.DuckDBPyConnection, layout: detect.TextLayout) -> tuple[int, int]:
    """Lines the bulk read rejected for bytes that are not UTF-8 alone: the lighter reads
    before it (prescan, steps) checked a few columns and took them. Returns (lines, of which
    allocation lines)."""
    rows = con.execute(query("ingest/unread_lines")).fetchall()
    allocs = sum(not _line_is_step(str(line or ""), layout) for (line,) in rows)
    return len(rows), allocs


def _add_repaired(attempt: Attempt, raw_text: str, base: dict[str, object]) -> None:
    """Parse the repaired records (temp ``raw_fix``) into ``parsed``; their allocations
    replace the rows of their key; repaired steps give their jobs' verdict again."""
    con, layout = attempt.con, attempt.source.layout
    assert layout is not None
    stages.parse(
        con, text.fix_src_sql(layout), raw_text, {**base, "delim": layout.delimiter}, create=False
    )
    con.execute("DROP TABLE IF EXISTS raw_fix")
    # (both deletes match only repaired step lines; without one, no scan of every step line)
    repaired_steps = count(con, query("ingest/any_repaired_step"))
    if repaired_steps:
        con.execute(query("ingest/steps_read_twice"))
    stages.gpu_map(con, attempt.options, tables=("parsed", "tres_names"))
    ids = attempt.id_param
    repaired = "(" + query("ingest/alloc_repaired") + ")"
    con.execute(render("ingest/bulk_fixed", rows=stages.fold_sql(repaired, repaired)))
    cols = [str(d[0]) for d in con.execute(query("ingest/fixed_columns")).description]
    values = [c for c in cols if c not in KEY_COLUMNS]
    # only the columns a repaired line changes (a split record's head lacks its last field):
    # an update of every column would slow every later scan of these row groups
    changed_sql = ", ".join(
        f"bool_or(j.{quote_ident(c)} IS DISTINCT FROM s.{quote_ident(c)})" for c in values
    )
    [changed] = con.execute(
        render("ingest/bulk_repaired_changes", changed=changed_sql), ids
    ).fetchall()
    assign = stages.assignments([c for c, ch in zip(values, changed, strict=True) if ch], "s")
    if assign:
        con.execute(render("ingest/bulk_replace_repaired", set=assign), ids)
    con.execute(render("ingest/bulk_insert", rows=query("ingest/fixed_new")), ids)
    con.execute("DROP TABLE fixed")
    if repaired_steps:
        their_steps = stages.step_flags_sql("(" + query("ingest/repaired_step_jobs") + ")")
        con.execute(render("ingest/bulk_step_evidence", steps=their_steps), ids)


def _stored_near(
    con: duckdb.DuckDBPyConnection,
    clusters: list[str],
    first: str | None,
    last: str | None,
    tz: str,
) -> bool:
    """Whether stored rows of these clusters lie within a day of the file's submit range
    (texts; stored_near.sql widens it, in SQL)."""
    row = con.execute(
        query("ingest/stored_near"),
        {"clusters": clusters, "first": first, "last": last, "tz": tz},
    ).fetchone()
    near = row[0] if row is not None else None
    if near is None:
        return bool(count(con, query("ingest/any_job")))
    return bool(near)


def _tres_names(
    con: duckdb.DuckDBPyConnection, typed_tres: list[str], alloc_gres: list[str]
) -> None:
    """Temp table ``tres_names``: the distinct TRES strings with typed GPUs, parsed by parse.sql
    itself, so that the GPU type map holds the names the bulk insert meets."""
    stages.parse(
        con,
        tres_strings_sql(),
        "CAST(NULL AS VARCHAR)",
        {
            "cluster": None,
            "tz": "UTC",
            "atres_known": True,
            "typed": typed_tres,
            "gres": alloc_gres,
        },
        create=True,
        table="tres_names",
    )
