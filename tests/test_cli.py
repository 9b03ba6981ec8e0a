"""What a person meets first on the command line: usage errors, -h, --version, help text,
and stopping ``advisor dashboard``.

The edges are run through the installed console script (``advisor`` next to this Python) as a
subprocess, the way a user runs it, with this checkout first on PYTHONPATH; the in-process
``cli`` fixture covers the guard's own branches.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "advisor"
FIX = ROOT / "tests" / "fixtures" / "ingest"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ADVISOR_DB", "ADVISOR_MODEL")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["COLUMNS"] = "100"
    return env


def advisor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.exists(), f"no console script {SCRIPT}: install the project (pip install -e .)"
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=_env(), cwd=cwd, timeout=120
    )


USAGE_ERRORS = [
    (["ratio"], "No such command 'ratio'"),
    (["ratios", "--bogus"], "--bogus"),
    (["ratios", "--weight", "bytes"], "'--weight'"),
    (["report"], "Missing option '--out'"),
    (["jobs", "--limit", "abc"], "'--limit'"),
    (["jobs", "--format", "xml"], "'--format'"),
    (["ratios", "--start", "jan"], "--start 'jan': not a date"),
    (["ingest", "--format", "yaml", "x.txt"], "--format 'yaml'"),
    (["ingest", "--input-format", "sacct-text", "--format", "jobcomp", "x.txt"], "contradicts"),
    (["ingest", "--input-format", "yaml", "x.txt"], "--input-format 'yaml'"),
    # the fast recommend path hands what it cannot convert to typer
    (["recommend", "--gpu-type", "H100", "--gpus", "two", "--format", "json"], "'--gpus'"),
    # nan and inf are numbers to Python, never to advisor: the fast path and typer's both refuse
    (["recommend", "--gpu-type", "H100", "--gpus", "1", "--rps", "nan", "-f", "json"], "--rps nan"),
    (["recommend", "--gpu-type", "H100", "--gpus", "1", "--rps", "inf"], "--rps inf: not a finite"),
    (["ratios", "--thresholds", "1,-inf"], "--thresholds -inf: not a finite"),
    (
        ["bench", "run", "--model", "m", "--cores", "4", "--attacker-rps", "1,nan"],
        "--attacker-rps nan: not a finite",
    ),
]


@pytest.mark.parametrize(
    ("args", "message"), USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS]
)
def test_a_usage_error_is_a_short_message_and_exit_2_never_a_traceback(args, message, tmp_path):
    run = advisor(*args, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    assert "Error:" in run.stderr and message in run.stderr, run.stderr
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) <= 6, run.stderr
    assert not (tmp_path / "advisor.duckdb").exists()


def test_a_missing_database_is_exit_4_with_the_command_that_makes_one(tmp_path):
    run = advisor("jobs", "--db", str(tmp_path / "none.duckdb"), cwd=tmp_path)
    assert run.returncode == 4 and "Traceback" not in run.stderr
    assert run.stderr.startswith("Error: ") and "advisor ingest" in run.stderr


UNREADABLE_PATHS = {
    "recommend fast path": [
        "recommend",
        "--gpu-type",
        "H100",
        "--gpus",
        "2",
        "-f",
        "json",
        "--pricing",
        "{dir}",
    ],
    "recommend": ["recommend", "--gpu-type", "H100", "--gpus", "2", "--pricing", "{dir}"],
    "ingest": ["ingest", str(FIX / "edge.txt"), "--gpu-types", "{dir}", "--db", "{dir}/d.duckdb"],
}


@pytest.mark.parametrize("args", UNREADABLE_PATHS.values(), ids=UNREADABLE_PATHS.keys())
def test_a_folder_given_for_a_file_is_an_error_line_not_a_traceback(args, tmp_path):
    run = advisor(*(a.replace("{dir}", str(tmp_path)) for a in args), cwd=tmp_path)
    assert run.returncode == 3 and "Traceback" not in run.stderr
    assert run.stderr == f"Error: {tmp_path}: Is a directory\n"


PIPED = {
    "fast path": ["recommend", "--gpu-type", "H100", "--gpus", "4", "--format", "json"],
    "typer": ["ratios", "-h"],
}


@pytest.mark.parametrize("args", PIPED.values(), ids=PIPED.keys())
def test_a_reader_that_leaves_early_ends_the_command_quietly(args, tmp_path):
    """`advisor ... | head -1`: the pipe is closed before advisor writes."""
    proc = subprocess.Popen(
        [str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=tmp_path,
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert err == ""


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_h_and_help_print_the_usage_and_the_commands_on_stdout(flag, tmp_path):
    run = advisor(flag, cwd=tmp_path)
    assert run.returncode == 0 and "Traceback" not in run.stderr
    assert run.stdout.startswith("Usage: advisor") and "ratios" in run.stdout
    sub = advisor("ratios", flag, cwd=tmp_path)
    assert sub.returncode == 0 and "Usage: advisor ratios" in sub.stdout
    assert "--weight [jobs|gpu-hours]" in sub.stdout


def test_no_arguments_prints_the_help_and_exits_2(tmp_path):
    run = advisor(cwd=tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr + run.stdout
    assert "Usage: advisor" in run.stderr and "ingest" in run.stderr


def test_version_prints_the_installed_package_version(tmp_path):
    run = advisor("--version", cwd=tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, f"advisor {version('advisor')}\n", "")


def _commands(command, path=()):
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def test_every_help_names_values_as_a_person_types_them(cli):
    from advisor.cli import app

    root = typer.main.get_command(app)
    paths = list(_commands(root))
    assert len(paths) > 20 and ("bench", "run") in paths
    type_name = re.compile(r"<[A-Za-z_][\w\[\], |.]*>")  # <bool>, <list[Path]>, <int range>
    for path in paths:
        code, out, err = cli(*path, "-h")
        assert code == 0, (path, err)
        assert out.startswith("Usage: advisor"), (path, out)
        assert not type_name.search(out), (path, type_name.findall(out))
        assert "%Y" not in out and "%H" not in out, path  # strptime formats
        command = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        flags = {"--help", "--version"} | {
            o for p in command.params if getattr(p, "is_flag", False) for o in p.opts
        }
        options = out.split("\nOptions:\n", 1)[1].split("\n\n")[0]
        for line in options.splitlines():  # every option that takes a value names it
            m = re.match(r"  (?:-\w, )?(--[\w-]+)(?: (\S+))?(?:\s|$)", line)
            if m and m.group(2) is None:
                assert m.group(1) in flags, f"advisor {' '.join(path)} {m.group(1)}: no value name"


def _float_options(command, path=()):
    for param in command.params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is not None and descriptor.annotation is float:
            yield (*path, param.opts[0])
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _float_options(sub, (*path, name))


def test_every_float_option_of_every_command_refuses_nan_and_inf_in_one_line(cli):
    from advisor.cli import app

    found = list(_float_options(typer.main.get_command(app)))
    assert len(found) >= 27 and ("recommend", "--rps") in found and ("fit", "--alpha") in found
    values = ("nan", "inf", "-inf", "1e999")  # each option gets one, in turn (one run each)
    for i, (*path, flag) in enumerate(found):
        code, out, err = cli(*path, flag, values[i % len(values)])
        assert code == 2, (path, flag, err)
        assert err.splitlines() == [err.strip()] and "not a finite number" in err, (path, err)
        assert err.startswith(f"Error: {flag} "), err
        assert out == ""


def test_ingest_input_format_has_its_own_option_and_the_old_spelling_still_works(cli, db_path):
    code, out, err = cli(
        "ingest",
        str(FIX / "edge.txt"),
        "--db",
        str(db_path),
        "--input-format",
        "sacct-text",
        "-f",
        "json",
    )
    assert code == 0 and err == "", err
    assert '"format": "sacct-text"' in out
    code, out, err = cli("ingest", str(FIX / "edge.txt"), "--db", str(db_path), "-f", "sacct-text")
    assert code == 0
    assert err.startswith(
        "note: --format sacct-text names the input format; write --input-format sacct-text"
    )


def _app_raising(exc: BaseException) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def boom() -> None:
        raise exc

    @app.command()
    def other() -> None:  # two commands: the app is a group, as advisor's is
        pass

    return app


def test_the_guard_turns_clicks_own_usage_errors_into_exit_2_too(capsys):
    """typer before 0.26 raised click's exceptions, later ones their bundled copy's: both are
    caught, whichever typer is installed (click itself comes with streamlit)."""
    import click

    from advisor.cli._output import run_guarded

    assert run_guarded(_app_raising(click.UsageError("no good")), ["boom"]) == 2
    assert "Error: no good" in capsys.readouterr().err
    assert run_guarded(_app_raising(click.exceptions.Exit(3)), ["boom"]) == 3
    assert run_guarded(_app_raising(click.exceptions.Abort()), ["boom"]) == 1
    assert capsys.readouterr().err == "Aborted\n"


def test_the_guard_turns_ctrl_c_into_exit_130_and_one_line(capsys):
    from advisor.cli._output import run_guarded

    assert run_guarded(_app_raising(KeyboardInterrupt()), ["boom"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == "Interrupted"


def test_the_guard_passes_an_advisor_error_with_its_exit_code(capsys):
    from advisor.cli._output import run_guarded
    from advisor.errors import NotFoundError

    assert run_guarded(_app_raising(NotFoundError("x.txt: no such file")), ["boom"]) == 4
    assert capsys.readouterr().err == "Error: x.txt: no such file\n"


# --- advisor dashboard: stopping it stops the Streamlit child ---------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).text == "ok"
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from advisor.ingest import ingest_files

    db = tmp_path_factory.mktemp("dash") / "d.duckdb"
    ingest_files(db, [FIX / "edge.txt"])
    return db


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code"),
    # SIGKILL runs no handler in the parent: the kernel kills the child (PR_SET_PDEATHSIG)
    [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -signal.SIGKILL)],
    ids=["TERM", "INT", "KILL"],
)
def test_stopping_advisor_dashboard_stops_its_streamlit_child(sig, code, sample_db, tmp_path):
    import psutil

    port = _free_port()
    proc = subprocess.Popen(
        [
            str(SCRIPT),
            "dashboard",
            "--db",
            str(sample_db),
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
        ],
        env=_env(),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # only for the clean-up below, should the test fail
    )
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and not _answers(port):
            time.sleep(0.3)
        assert _answers(port), proc.stdout.read() if proc.poll() is not None else "no answer"
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "the dashboard runs in a child process"
        os.kill(proc.pid, sig)  # the advisor process alone, as `kill` or a service manager does
        assert proc.wait(timeout=30) == code
        _, alive = psutil.wait_procs(children, timeout=15)
        assert alive == [], f"left running: {alive}"
        assert not _answers(port)
        with socket.socket() as s:  # nothing listens on the port any more
            assert s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for child in children:
            if child.is_running():
                child.kill()


# --- numbers in tables, progress -----------------------------------------------------------


def test_table_counts_get_thousands_separators_while_csv_and_json_stay_raw(cli, db_path):
    import json

    from advisor.ingest import ingest_files

    ingest_files(db_path, [FIX / "edge.txt"])
    code, table, _ = cli("jobs", "--db", str(db_path), "--limit", "0")
    assert code == 0
    header = next(line for line in table.splitlines() if "mem_mb" in line)
    row = next(line for line in table.splitlines() if "│ 804 " in line)
    names = [c.strip() for c in header.split("┃")]
    assert [c.strip() for c in row.split("│")][names.index("mem_mb")] == "16,384"
    code, csv_out, _ = cli("jobs", "--db", str(db_path), "--limit", "0", "-f", "csv")
    assert "alpha,804,804," in csv_out and ",16384" in csv_out and "16,384" not in csv_out
    code, json_out, _ = cli("jobs", "--db", str(db_path), "--limit", "0", "-f", "json")
    [job] = [j for j in json.loads(json_out) if j["job_id"] == "804"]
    assert job["mem_mb"] == 16384


def test_cells_separate_counts_but_not_identifiers():
    from advisor.cli._output import _cell

    assert _cell(4_650_000, "jobs") == "4,650,000"
    assert _cell(4_650_000, "job_id_raw") == "4650000"
    assert _cell(123456, "ingest_id") == "123456"
    assert _cell(8611, "port") == "8611"
    assert _cell(24572.2475, "gpu_hours") == "24,572"
    assert _cell(0.25, "p25") == "0.25"
    assert _cell(True, "ok") == "yes" and _cell(False, "ok") == "no"
    assert _cell([1, 2.5], "cores") == "1, 2.5" and _cell({"a": 1}, "x") == "a=1"


def _shown(progress, label, done, total):
    progress(label, done, total)
    return progress.describe(label, done, total)


def test_ingest_progress_names_each_stage_instead_of_a_bare_count():
    from advisor.cli._progress import RichProgress
    from advisor.ingest.pipeline import STAGE_NAMES, STAGES

    assert len(STAGE_NAMES) == STAGES
    with RichProgress(stages=STAGE_NAMES) as p:
        seen = [_shown(p, "f.txt", i, STAGES)["description"] for i in range(STAGES + 1)]
        assert seen == [f"f.txt · {n}" for n in STAGE_NAMES] + ["f.txt · done"]
        assert p.describe("f.txt", 1, STAGES)["amount"] == "stage 2/5"


def test_row_progress_shows_the_count_the_rate_and_the_time_left():
    from advisor.cli._progress import RichProgress

    with RichProgress(unit="rows") as p:
        p("synth", 0, 4_000_000)
        time.sleep(0.2)
        fields = _shown(p, "synth", 1_000_000, 4_000_000)
    assert fields["amount"] == "1,000,000/4,000,000 rows"
    rate = int(fields["rate"].removesuffix(" rows/s").replace(",", ""))
    assert 100_000 < rate <= 5_000_000  # a million rows in a bit over 0.2 s
    left = float(fields["left"].removesuffix(" s left").replace(",", ""))
    assert left == pytest.approx(3_000_000 / rate, abs=1)


def test_ingest_of_several_files_shows_a_total_with_its_rate_and_time_left():
    from advisor.cli._progress import RichProgress

    sizes = {"a.txt": 3_000_000, "b.txt": 1_000_000}
    with RichProgress(stages=("reading",), sizes=sizes) as p:
        overall = p._progress.tasks[p._overall]
        p("a.txt", 0, 1)
        time.sleep(0.1)
        p("a.txt", 1, 1)
        p("a.txt", 1, 1)  # reported twice: counted once
        assert overall.completed == 3_000_000 and overall.total == 4_000_000
        assert overall.fields["amount"] == "3.0 MB/4.0 MB"
        assert overall.fields["rate"].endswith("MB/s") and overall.fields["left"].endswith("left")
