"""Ingest speed: advisor's ingest against DuckDB's raw materialise and pandas + Python per line.

Generates N synthetic sacct -P allocation records (``advisor synth``: 27 fields, steps off, so
N lines like the research's 4.65M-record export; ``--fields 17`` keeps the 17 fields advisor
uses most, the shape the issue's own figures were measured on: a 17-field, 1.2 GB file), then
measures in this one process, one after the other, each into a fresh DuckDB file:

1. raw:    ``CREATE TABLE AS SELECT * FROM read_csv(file, all_varchar=true)`` (the floor: no parsing),
           in DuckDB's default file format, then again in the one advisor creates (store.py);
2. pandas: the obvious approach: pandas.read_csv in chunks, then a Python loop over the lines
           (itertuples) parsing TRES, times and durations, rows appended to DuckDB;
3. advisor: ``advisor.ingest.ingest_files`` (parse, fold, upsert, rejects, one transaction; on a
           fresh database the bulk path), then the ratio summary tables `advisor ingest` rebuilds after it
           (printed apart: "load" is the file's transaction, the rest the tables).

Prints seconds, rows, the ratios (advisor / raw, pandas / advisor) and the peak RSS of each
phase (sampled every 20 ms).

``--increment SHARE`` then measures a later load into the database that already holds the
rest: the file is cut at an allocation line, the first part loaded and its derived tables built
(the per-month people cube too, as the dashboard's start leaves it), and the last SHARE of its
lines loaded on top, in one copy of that database rebuilding only the changed slices, in another
rebuilding every derived table (what every ingest did before), each against DuckDB's raw
materialise of the increment's file. Targets (DESIGN.md): advisor < 20 s at 4.65M on a 2-core machine,
<= 2x raw, >= 3x faster than pandas, peak < 2 GB. Timings on a shared machine are noisy: the
ratios, measured in one run, are the figures to compare.

    python bench/bench_ingest.py                    # 4.65M records
    python bench/bench_ingest.py --records 500000   # quicker
    python bench/bench_ingest.py --fields 17        # the issue's file shape
    python bench/bench_ingest.py --statements       # then where the load's time goes
    python bench/bench_ingest.py --statements --operators   # and the bulk insert's operators
    python bench/bench_ingest.py --usage            # with the usage fields (issue 23)
    python bench/bench_ingest.py --records 1000000 --increment 0.05   # a later load's refresh
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.derived import refresh_after_load  # noqa: E402
from advisor.derived.cube import rebuild_cubes, refresh_people_months  # noqa: E402
from advisor.ingest import ingest_files  # noqa: E402
from advisor.ingest.synth import SynthConfig, generate  # noqa: E402
from advisor.store import STORAGE_VERSION  # noqa: E402


class PeakRss:
    """Peak resident memory of this process while the block runs (sampled)."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            self._stop.wait(0.02)

    def __enter__(self) -> PeakRss:
        gc.collect()
        self.peak = self.proc.memory_info().rss
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


# The raw baseline's memory: the ceiling for a load on the 24 GiB machine.
RAW_MEMORY_LIMIT = "8GB"
INSERT_STATEMENT = "-- A bulk load's write"
"""The head of the bulk insert's SQL (bulk_insert.sql), the statement --operators profiles."""


def raw_materialise(path: Path | list[Path], db: Path, storage_version: str | None = None) -> int:
    """The issue's floor, in DuckDB's default file format, or with ``storage_version`` in
    the one advisor creates its files in (store.STORAGE_VERSION)."""
    import duckdb

    config = {"storage_compatibility_version": storage_version} if storage_version else {}
    con = duckdb.connect(str(db), config=config)
    con.execute("SET enable_progress_bar = false")
    # DuckDB's default (80% of the machine) let a read of five 6.6 GB files reach 16 GiB
    con.execute("SET memory_limit = ?", [RAW_MEMORY_LIMIT])
    con.execute(
        "CREATE TABLE raw AS SELECT * FROM read_csv(?, all_varchar = true, delim = '|', "
        "header = true, ignore_errors = true)",
        [[str(p) for p in path] if isinstance(path, list) else str(path)],
    )
    row = con.execute("SELECT count(*) FROM raw").fetchone()
    con.close()
    return int(row[0]) if row else 0


_DUR = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


def _tres(s: object) -> tuple[int | None, int, str | None]:
    cpus, gpus, gtype = None, 0, None
    if isinstance(s, str):
        for part in s.split(","):
            key, _, val = part.partition("=")
            if key == "cpu":
                cpus = int(val)
            elif key == "gres/gpu":
                gpus = int(val)
            elif key.startswith("gres/gpu:"):
                gtype = key[9:]
    return cpus, gpus, gtype


def _dur(s: object) -> int | None:
    m = _DUR.match(s) if isinstance(s, str) else None
    if not m:
        return None
    d, h, mi, se = (int(x) if x else 0 for x in m.groups())
    return d * 86400 + h * 3600 + mi * 60 + se


def _int(s: object) -> int | None:
    return int(s) if isinstance(s, str) and s.isdigit() else None


def _ts(s: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None


def pandas_python(path: Path, db: Path) -> int:
    """The obvious approach: pandas reads the text, a Python loop parses each line."""
    import csv

    import duckdb
    import pandas as pd

    con = duckdb.connect(str(db))
    con.execute("SET enable_progress_bar = false")
    total = 0
    reader = pd.read_csv(
        path,
        sep="|",
        dtype=str,
        quoting=csv.QUOTE_NONE,
        on_bad_lines="skip",
        encoding_errors="replace",
        chunksize=500_000,
        keep_default_na=False,
    )
    for chunk in reader:
        rows = []
        for r in chunk.itertuples(index=False):
            if "." in r.JobID:
                continue  # a step: its allocation line carries the numbers
            cpus, gpus, gtype = _tres(r.AllocTRES)
            rows.append(
                (
                    r.Cluster,
                    r.JobID,
                    int(r.JobIDRaw),
                    r.User,
                    r.Account,
                    r.Partition,
                    r.State.split(" ", 1)[0],
                    r.State,
                    _ts(r.Submit),
                    _ts(r.Start),
                    _ts(r.End),
                    _dur(r.Elapsed),
                    _dur(getattr(r, "Timelimit", None)),
                    int(r.NNodes),
                    cpus,
                    gpus,
                    gtype,
                    _int(getattr(r, "ReqCPUS", None)),
                    r.NodeList,
                    getattr(r, "JobName", None),
                    r.SubmitLine,
                )
            )
        out = pd.DataFrame(
            rows,
            columns=[
                "cluster",
                "job_id",
                "job_id_raw",
                "user",
                "account",
                "partition",
                "state",
                "state_raw",
                "submit",
                "start",
                "end",
                "elapsed_s",
                "timelimit_s",
                "nnodes",
                "cpus",
                "gpus",
                "gpu_type_raw",
                "req_cpus",
                "node_list",
                "job_name",
                "submit_line",
            ],
        )
        if total == 0:
            con.execute("CREATE TABLE jobs AS SELECT * FROM out")
        else:
            con.execute("INSERT INTO jobs SELECT * FROM out")
        total += len(out)
    con.close()
    return total


# The 17 fields kept by --fields 17: ids, where, who, when, state, and the CPU/GPU/memory TRES.
FIELDS_17 = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "Partition",
    "Account",
    "User",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "State",
    "NNodes",
    "NCPUS",
    "ReqTRES",
    "AllocTRES",
    "NodeList",
    "SubmitLine",
)


def keep_fields(src: Path, dst: Path, fields: tuple[str, ...]) -> None:
    """Copy an N-field sacct -P file keeping ``fields``; a line that does not split into N
    fields (free text holding the delimiter, or a newline) is copied as it is, so the odd lines
    stay odd."""
    with src.open("rb") as fin, dst.open("wb") as fout:
        header = fin.readline().rstrip(b"\n").split(b"|")
        idx = [header.index(f.encode()) for f in fields]
        fout.write(b"|".join(header[i] for i in idx) + b"\n")
        n = len(header)
        for line in fin:
            parts = line.rstrip(b"\n").split(b"|")
            fout.write(b"|".join(parts[i] for i in idx) + b"\n" if len(parts) == n else line)


LOAD_SECONDS: list[float] = []


def advisor_ingest(path: Path | list[Path], db: Path) -> int:
    done = ingest_files(db, path if isinstance(path, list) else [path])  # a file a transaction
    refresh_after_load(db)  # what `advisor ingest` does after the load
    LOAD_SECONDS.append(sum(s.seconds for s in done))
    return sum(s.inserted for s in done)


class _TimedConnection:
    """A connection that times each statement (wall and this process's CPU seconds) and, given
    ``profile`` (text of one statement) and ``out`` (a file), runs DuckDB's profiler over the
    first statement holding that text: its operators' seconds, summed by kind, in
    ``operators``."""

    def __init__(self, con: Any, profile: str | None = None, out: Path | None = None) -> None:
        self._con = con
        self.times: list[tuple[float, float, str]] = []
        self._profile, self._out = profile, out
        self.operators: dict[str, float] = {}

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        profiled = self._profile is not None and self._profile in sql and not self.operators
        if profiled:
            self._con.execute("PRAGMA enable_profiling = 'json'")
            self._con.execute(f"PRAGMA profiling_output = '{self._out}'")
        t0, c0 = time.perf_counter(), time.process_time()
        out = self._con.execute(sql, *args, **kwargs)
        if profiled:  # read before the PRAGMA that ends the profile replaces the answer
            out = _Rows(out.fetchall())
        self.times.append((time.perf_counter() - t0, time.process_time() - c0, sql))
        if profiled:
            self._con.execute("PRAGMA disable_profiling")
            assert self._out is not None
            self.operators = operator_seconds(json.loads(self._out.read_text()))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


class _Rows:
    """A statement's rows, read already (what the load calls on a result)."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows


def operator_seconds(plan: dict[str, Any]) -> dict[str, float]:
    """Seconds of each kind of operator in DuckDB's JSON profile ``plan`` (each operator's
    time summed over the threads that ran it), a scan named by its table."""
    totals: dict[str, float] = {}
    todo = list(plan.get("children", []))
    while todo:
        node = todo.pop()
        kind = str(node.get("operator_name") or node.get("operator_type") or "?").strip()
        table = (node.get("extra_info") or {}).get("Table")
        if table:
            kind = f"{kind} {table}"
        totals[kind] = totals.get(kind, 0.0) + float(node.get("operator_timing") or 0.0)
        todo.extend(node.get("children", []))
    return totals


def statements(path: Path, db: Path, threshold: float = 0.1, operators: bool = False) -> None:
    """Load the file once more, into a fresh file, timing each SQL statement of the load (the
    ratio summary tables are not rebuilt): the statements over ``threshold`` seconds, each
    named by its first comment or words, and the time outside SQL (Python: the repair's
    line reads, building temp tables). ``operators``: the bulk insert's operators too
    (DuckDB's profiler, which slows that statement a little)."""
    from advisor import store
    from advisor.ingest import IngestOptions, pipeline

    con = _TimedConnection(
        store.connect(db),
        profile=INSERT_STATEMENT if operators else None,
        out=db.with_suffix(".profile.json"),
    )
    pipeline.prepare(con)
    t0 = time.perf_counter()
    pipeline.ingest_path(con, path, IngestOptions())
    total = time.perf_counter() - t0
    con.close()
    print(f"\nthe load's statements over {threshold} s (wall, CPU of this process):")
    for wall, cpu, sql in con.times:
        if wall >= threshold:
            name = " ".join(sql.replace("--", " ").split())[:72]
            print(f"  {wall:6.2f} s  {cpu:6.2f} CPU-s  {name}")
    in_sql = sum(w for w, _, _ in con.times)
    print(f"  {total - in_sql:6.2f} s  outside SQL;  {total:.2f} s in all")
    if operators:
        ops = con.operators
        whole = sum(ops.values()) or 1.0
        print("\nthe bulk insert's operators (seconds summed over threads, share of them all):")
        for kind, seconds in sorted(ops.items(), key=lambda kv: -kv[1]):
            if seconds >= 0.01 * whole:
                print(f"  {seconds:8.2f} s  {seconds / whole:5.1%}  {kind}")
        print(f"  {sum(ops.values()):8.2f} s  in all")


def split_at_allocation(path: Path, share: float, tmp: Path) -> tuple[Path, Path]:
    """``path`` cut in two files with its header each: the lines before the first allocation
    line (no step) in the last ``share`` of its lines, and the rest. Streamed: a 46.5M-record
    file does not fit in memory."""
    with path.open("rb") as f:
        lines = sum(1 for _ in f) - 1
    cut = int(lines * (1 - share))
    base, inc = tmp / "base.txt", tmp / "increment.txt"
    with path.open("rb") as f, base.open("wb") as fb, inc.open("wb") as fi:
        header = f.readline()
        fb.write(header)
        fi.write(header)
        out = fb
        for n, line in enumerate(f):
            if out is fb and n >= cut and b"." not in line.split(b"|", 1)[0]:
                out = fi
            out.write(line)
    return base, inc


def increment(
    path: Path,
    share: float,
    tmp: Path,
    tail: Path | None = None,
    loaded: Path | None = None,
    first_load_s: float | None = None,
) -> None:
    """A later load of the last ``share`` of ``path`` into a database holding the rest: load and
    rebuild by changed slices, then the same from a copy rebuilding every derived table. With
    ``tail`` (a file of later allocations, ``synth`` ``generate_with_tail``) and ``loaded`` (a
    database holding ``path`` already) nothing is cut or loaded twice."""
    from advisor.store import connect

    db, whole_db = tmp / "increment.duckdb", tmp / "whole.duckdb"
    if tail is not None and loaded is not None:
        # the loaded file itself takes the whole rebuild and keeps the tail: two copies on disk
        inc, whole_db = tail, loaded
        con = connect(loaded)
    else:
        base, inc = split_at_allocation(path, share, tmp)
        con = connect(db)
        ingest_files(con, [base])
    rebuild_cubes(con)
    refresh_people_months(con)
    con.close()
    if whole_db == loaded:
        shutil.copy(loaded, db)  # the copy that rebuilds changed slices only
    else:
        shutil.copy(db, whole_db)
    what = f"the file {inc.name}" if tail is not None else f"the last {share:.0%} of the lines"
    print(f"\nincrement: {what} ({inc.stat().st_size / 1e6:.0f} MB)")
    raw = measure("raw (inc)", raw_materialise, inc, tmp)
    results = {}
    for name, whole, file in (("slices", False, db), ("whole", True, whole_db)):
        con = connect(file)
        t0 = time.perf_counter()
        [s] = ingest_files(con, [inc])
        t1 = time.perf_counter()
        done = rebuild_cubes(con, whole=whole)
        t2 = time.perf_counter()
        if not done.people_months_kept:  # what the dashboard's start then builds
            refresh_people_months(con)
        t3 = time.perf_counter()
        con.close()
        results[name] = (t1 - t0, t2 - t1, t3 - t2)
        if file != loaded:
            file.unlink()
        print(
            f"{name:>12}: load {t1 - t0:6.2f} s  derived tables {t2 - t1:5.2f} s  per-month "
            f"people cube {t3 - t2:5.2f} s  ({s.inserted:,} new, {s.updated:,} updated jobs; "
            f"{done.slices_rebuilt} of {done.slices_total} slices, "
            f"{done.jobs_in_rebuilt_slices:,} jobs read again)"
        )
    for name, (load, derived, months) in results.items():
        print(
            f"  {name:>6}: (load + derived) / raw {(load + derived) / raw['s']:5.2f}x;  "
            f"with the per-month people cube {(load + derived + months) / raw['s']:5.2f}x"
        )
    s_, w_ = results["slices"], results["whole"]
    if first_load_s:
        print(
            f"  the later load (slices, with the people cube) / the first load of everything: "
            f"{sum(s_) / first_load_s:.1%}  (target < 10%)"
        )
    print(
        f"  derived tables, whole / slices: {w_[1] / s_[1]:.2f}x;  "
        f"with the per-month people cube {(w_[1] + w_[2]) / (s_[1] + s_[2]):.2f}x"
    )


def measure(
    name: str,
    fn: Callable[[Any, Path], int],
    path: Path | list[Path],
    tmp: Path,
    keep: bool = False,
) -> dict[str, Any]:
    """Time ``fn`` loading ``path`` into a fresh file; its size and peak RSS too. The file is
    removed unless ``keep`` (a 46.5M-record load's files would fill the disk)."""
    db = tmp / f"{name.replace(' ', '-')}.duckdb"
    with PeakRss() as rss:
        t0 = time.perf_counter()
        rows = fn(path, db)
        secs = time.perf_counter() - t0
    size = db.stat().st_size if db.exists() else 0
    print(
        f"{name:>12}: {secs:8.2f} s  {rows:>10,} rows  peak RSS {rss.peak / 2**20:8.0f} MB  "
        f"file {size / 1e9:6.2f} GB",
        flush=True,
    )
    if not keep:
        db.unlink(missing_ok=True)
    return {"s": secs, "rows": rows, "rss": rss.peak, "db": db, "bytes": size}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=4_650_000)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--file", type=Path, help="reuse this sacct file instead of generating one")
    ap.add_argument("--skip-pandas", action="store_true")
    ap.add_argument(
        "--statements",
        action="store_true",
        help="then load once more, timing each SQL statement of the load",
    )
    ap.add_argument(
        "--operators",
        action="store_true",
        help="with --statements: the bulk insert's operators too (DuckDB's profiler)",
    )
    ap.add_argument(
        "--fields",
        type=int,
        choices=(17, 27),
        default=27,
        help="27: every field synth writes; 17: the issue's file shape",
    )
    ap.add_argument(
        "--usage",
        action="store_true",
        help="add the usage fields (TotalCPU, CPUTimeRAW, TRESUsageInTot/Max) synth "
        "can write: their cost to the load",
    )
    ap.add_argument(
        "--increment",
        type=float,
        metavar="SHARE",
        help="then load the last SHARE of the lines into a database holding the rest, "
        "rebuilding the changed slices against rebuilding every derived table",
    )
    ap.add_argument(
        "--tail",
        type=Path,
        metavar="FILE",
        help="with --file: the later allocations to load on top (instead of cutting the file)",
    )
    ap.add_argument(
        "--skip-raw13", action="store_true", help="no second raw read in advisor's file format"
    )
    ap.add_argument(
        "--more-files",
        type=Path,
        nargs="+",
        default=[],
        metavar="FILE",
        help="with --file: more files of the first load (e.g. a history as yearly exports)",
    )
    ap.add_argument("--keep-db", type=Path, metavar="PATH", help="keep advisor's loaded database")
    ap.add_argument(
        "--step-share", type=float, default=0.0, help="steps for generated records (synth's)"
    )
    args = ap.parse_args()
    if args.operators and not args.statements:
        ap.error("--operators goes with --statements")
    if args.tail and not args.file:
        ap.error("--tail goes with --file")
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmpdir:
        tmp = Path(tmpdir)
        path = args.file
        if path is None:
            path = tmp / "sacct.txt"
            t0 = time.perf_counter()
            cfg = SynthConfig(
                records=args.records, seed=args.seed, step_share=args.step_share, usage=args.usage
            )
            res = generate(cfg, path)
            if args.fields == 17:
                full, path = path, tmp / "sacct17.txt"
                keep_fields(full, path, FIELDS_17)
                full.unlink()
            print(
                f"generated {res.lines:,} lines, {path.stat().st_size / 1e9:.2f} GB, "
                f"{args.fields} fields{' + usage' if args.usage else ''}, "
                f"in {time.perf_counter() - t0:.1f} s"
            )
        print(
            f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared: noisy)"
        )
        first: Path | list[Path] = [path, *args.more_files] if args.more_files else path
        raw = measure("raw", raw_materialise, first, tmp)
        raw13 = raw
        if not args.skip_raw13:
            raw13 = measure(
                f"raw {STORAGE_VERSION}",
                lambda p, d: raw_materialise(p, d, STORAGE_VERSION),
                first,
                tmp,
            )
        adv = measure("advisor", advisor_ingest, first, tmp, keep=True)
        pdm = None if args.skip_pandas else measure("pandas", pandas_python, path, tmp)
        print()
        print(
            f"advisor / raw materialise : {adv['s'] / raw['s']:.2f}x  "
            "(target <= 1.3x at 4.65M and 46.5M, issue 40; 2x before)"
        )
        if not args.skip_raw13:
            print(
                f"  raw in advisor's format : {adv['s'] / raw13['s']:.2f}x  "
                f"({STORAGE_VERSION} files)"
            )
        if pdm:
            print(f"pandas / advisor          : {pdm['s'] / adv['s']:.2f}x  (target >= 3x)")
        print(f"advisor seconds           : {adv['s']:.1f} s  (target < 20 s at 4.65M)")
        print(f"  of which the load       : {LOAD_SECONDS[-1]:.1f} s  (the file's transaction)")
        print(f"  and the summary tables  : {adv['s'] - LOAD_SECONDS[-1]:.1f} s  (ratio cubes)")
        print(
            f"advisor peak RSS          : {adv['rss'] / 2**20:.0f} MB  "
            "(target < 8 GiB, issue 40; < 2048 MB at 4.65M before)"
        )
        print(f"load average after        : {os.getloadavg()[0]:.1f}")
        if args.statements:
            statements(path, tmp / "statements.duckdb", operators=args.operators)
        if args.increment or args.tail:
            increment(path, args.increment or 0.0, tmp, args.tail, adv["db"], adv["s"])
        if args.keep_db:
            shutil.move(adv["db"], args.keep_db)
            print(f"kept the loaded database as {args.keep_db}")


if __name__ == "__main__":
    main()
