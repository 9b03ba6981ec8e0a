"""The launcher and the load generator against real server processes.

``advisor.harness.serve.stubserver`` is a real process speaking the streamed completions API with
scripted behaviour (a fixed delay before the first token, hanging, dying, never becoming
ready): the cases a real engine cannot be made to show on demand. The end-to-end test runs
``transformers serve`` (a real OpenAI-compatible engine) on a tiny random-weight Llama on CPU.
No GPU is needed or mocked here.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import pytest

from advisor.harness.config import BenchConfig
from advisor.harness.load.httpclient import build_request
from advisor.harness.load.loadgen import PlannedRequest, Target, completion_payload, run_phase
from advisor.harness.records import LoadSpec
from advisor.harness.runner import run_bench
from advisor.harness.serve import engine as eng
from advisor.harness.serve.pinning import check_pinning
from tests.bench_fixtures import CPUS, ROOT, STUB, stub_config, tiny_model_dir


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory)


def _stub(tmp_path: Path, *args: str, cores: tuple[int, ...] = (CPUS[0],)) -> eng.EngineProcess:
    port = eng.free_port()
    spec = eng.spec_from(
        STUB + " " + " ".join(args),
        model="m",
        tp=1,
        cores=cores,
        host="127.0.0.1",
        port=port,
        log_path=tmp_path / "stub.log",
        env={"PYTHONPATH": str(ROOT)},
    )
    return eng.EngineProcess(spec)


def _requests(target: Target, n: int, gap_s: float, max_tokens: int = 3) -> list[PlannedRequest]:
    return [
        PlannedRequest(
            i,
            "victim",
            i * gap_s,
            5,
            max_tokens,
            build_request(
                target.host,
                target.port,
                target.path,
                completion_payload(target, f"hello {i}", max_tokens),
            ),
        )
        for i in range(n)
    ]


def test_ttft_is_measured_between_the_servers_own_timestamps(tmp_path: Path):
    log = tmp_path / "server-times.jsonl"
    with _stub(tmp_path, "--first-token-ms", "120", "--itl-ms", "5", "--log", str(log)) as stub:
        assert stub.wait_ready(30).status == "ok"
        target = Target("127.0.0.1", stub.spec.port, "m", ignore_eos=False)
        phase = run_phase(_requests(target, 4, 0.05), target, timeout_s=10)
    server = {d["request"]: d for d in map(json.loads, log.read_text().splitlines())}
    assert len(server) == 4 and all(r.status == "ok" for r in phase.records)
    # perf_counter and monotonic_ns are both CLOCK_MONOTONIC: one clock for both processes
    for r, s in zip(
        sorted(phase.records, key=lambda r: r.sent_s),
        sorted(server.values(), key=lambda d: d["received_ns"]),
        strict=True,
    ):
        sent = phase.t0_s + r.sent_s
        first = phase.t0_s + (r.first_token_s or 0.0)
        assert sent <= s["received_ns"] / 1e9 <= s["first_token_sent_ns"] / 1e9 <= first
        server_span_ms = (s["first_token_sent_ns"] - s["received_ns"]) / 1e6
        assert server_span_ms >= 120.0
        assert r.ttft_ms is not None and r.ttft_ms >= server_span_ms
        assert r.output_tokens == 3 and r.e2e_ms is not None and r.e2e_ms >= r.ttft_ms


def test_a_request_past_the_timeout_is_recorded_as_a_timeout_not_dropped(tmp_path: Path):
    with _stub(tmp_path, "--hang-after", "2") as stub:
        assert stub.wait_ready(30).status == "ok"
        target = Target("127.0.0.1", stub.spec.port, "m", ignore_eos=False)
        phase = run_phase(_requests(target, 5, 0.0), target, timeout_s=1.0)
    statuses = sorted(r.status for r in phase.records)
    assert len(phase.records) == 5
    assert statuses == ["ok", "ok", "timeout", "timeout", "timeout"]
    timed_out = [r for r in phase.records if r.status == "timeout"]
    assert all(r.error == "timeout after 1 s" and r.ttft_ms is None for r in timed_out)


def test_a_crash_at_start_is_told_apart_from_a_start_that_never_ends(tmp_path: Path):
    with _stub(tmp_path, "--crash-on-start") as crashing:
        crashed = crashing.wait_ready(30)
    assert crashed.status == "crashed" and crashed.exit_code == 3
    assert "crashing at start as asked" in crashed.log_tail
    with _stub(tmp_path, "--never-ready") as hanging:
        slow = hanging.wait_ready(2.0)
        assert hanging.alive()
    assert slow.status == "start-timeout" and slow.exit_code is None


def test_stop_ends_the_engines_whole_process_group(tmp_path: Path):
    port = eng.free_port()
    template = (
        'bash -c \'sleep 300 & sleep 300 & exec "$0" -m advisor.harness.serve.stubserver '
        '--port "$1"\' {python} {port}'
    )
    spec = eng.spec_from(
        template,
        model="m",
        tp=1,
        cores=CPUS,
        host="127.0.0.1",
        port=port,
        env={"PYTHONPATH": str(ROOT)},
    )
    engine = eng.EngineProcess(spec)
    engine.start()
    try:
        assert engine.wait_ready(30).status == "ok"
        pids = engine.pids()
        assert len(pids) == 3  # the server and its two children
    finally:
        survivors = engine.stop(grace_s=5)
    assert survivors == []
    assert eng.group_members(engine.pid) == []
    assert not any(Path(f"/proc/{p}").exists() and eng._pid_alive(p) for p in pids)


@pytest.mark.skipif(len(CPUS) < 2, reason="LOUD SKIP: needs 2 CPUs to pin to a strict subset")
def test_every_thread_of_the_engine_is_checked_and_a_widened_thread_is_caught(tmp_path: Path):
    # A real process pinned to one core, with a thread that widens its own affinity.
    script = (
        "import os, threading, time\n"
        "def widen():\n"
        "    os.sched_setaffinity(0, set(range(os.cpu_count())))\n"
        "    time.sleep(60)\n"
        "ok = threading.Thread(target=time.sleep, args=(60,), daemon=True); ok.start()\n"
        "bad = threading.Thread(target=widen, daemon=True); bad.start()\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    spec = eng.EngineSpec(
        (sys.executable, "-c", script), "127.0.0.1", 1, (CPUS[0],), log_path=tmp_path / "p.log"
    )
    engine = eng.EngineProcess(spec)
    engine.start()
    try:
        deadline = time.monotonic() + 20
        while "ready" not in engine.log_tail() and time.monotonic() < deadline:
            time.sleep(0.05)
        report = check_pinning(engine.pids(), (CPUS[0],))
    finally:
        engine.stop(grace_s=2)
    assert report.processes == 1 and report.threads == 3
    assert not report.ok
    assert len(report.violations) == 1
    assert set(report.violations[0].cpus) > {CPUS[0]}


ENGINE_LOAD = LoadSpec(
    attacker_rps=4,
    attacker_tokens_min=50,
    attacker_tokens_max=80,
    attacker_output_tokens=2,
    victim_rps=2,
    victim_tokens=8,
    victim_output_tokens=2,
    duration_s=1.0,
    timeout_s=2.0,
)


def _cfg(tmp_path: Path, model: Path, *stub_args: str, **kw) -> BenchConfig:
    # the no-load phase is tested in test_bench_protocol.py
    return stub_config(tmp_path, model, ENGINE_LOAD, *stub_args, **{"noload_s": 0.0, **kw})


def _run_json(row) -> dict:
    return json.loads(Path(row.path).read_text())


def test_an_engine_killed_during_the_load_is_recorded_as_crashed(tmp_path: Path, tiny_model: Path):
    [row] = run_bench(_cfg(tmp_path, tiny_model, "--die-after", "3"))
    run = _run_json(row)["run"]
    assert row.status == run["status"] == "crashed"
    assert run["extra"]["engine_exit_code"] == 9
    assert run["requests_failed"] >= 1  # the requests it died on are kept, as errors


def test_an_engine_that_stops_answering_is_recorded_as_hung(tmp_path: Path, tiny_model: Path):
    [row] = run_bench(_cfg(tmp_path, tiny_model, "--hang-after", "0", warmup_requests=0))
    data = _run_json(row)
    assert data["run"]["status"] == "hung"
    assert data["run"]["requests_timed_out"] == len(data["requests"]) > 0
    assert data["run"]["requests_ok"] == 0


def test_a_start_that_never_ends_is_recorded_for_every_point(tmp_path: Path, tiny_model: Path):
    rows = run_bench(_cfg(tmp_path, tiny_model, "--never-ready", repeats=2, start_timeout_s=1.5))
    assert [r.status for r in rows] == ["start-timeout", "start-timeout"]
    assert _run_json(rows[0])["run"]["extra"]["engine_ready_status"] == "start-timeout"


def test_a_rerun_skips_finished_points_and_retries_failed_ones_only_when_asked(
    tmp_path: Path, tiny_model: Path
):
    cfg = _cfg(tmp_path, tiny_model, repeats=2)
    first = run_bench(cfg)
    assert [r.status for r in first] == ["ok", "ok"]
    extra = _run_json(first[0])["run"]["extra"]
    [proc] = extra["engine_cpu_by_process"]
    assert proc["name"].startswith("python") and proc["cpu_percent"] >= 0.0
    mtimes = [Path(r.path).stat().st_mtime_ns for r in first]
    again = run_bench(cfg)
    assert [r.status for r in again] == ["skipped", "skipped"]
    assert [Path(r.path).stat().st_mtime_ns for r in again] == mtimes
    # a failed point is rerun with retry_failed
    data = json.loads(Path(first[0].path).read_text())
    data["run"]["status"] = "crashed"
    Path(first[0].path).write_text(json.dumps(data))
    retried = run_bench(_cfg(tmp_path, tiny_model, repeats=2, retry_failed=True))
    assert sorted(r.status for r in retried) == ["ok", "skipped"]


def test_dry_run_lists_points_and_pinned_commands_and_starts_nothing(
    tmp_path: Path, tiny_model: Path
):
    rows = run_bench(_cfg(tmp_path, tiny_model, dry_run=True, repeats=2))
    assert [r.status for r in rows] == ["planned", "planned"]
    assert rows[0].command.startswith(f"taskset -c {CPUS[0]} ")
    assert "advisor.harness.serve.stubserver" in rows[0].command
    assert not (tmp_path / "out").exists()


def test_a_model_without_a_tokenizer_is_refused_naming_the_file(tmp_path: Path):
    from advisor.errors import InputError

    empty = tmp_path / "no-tokenizer"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no-tokenizer/tokenizer.json: no tokenizer.json"):
        run_bench(_cfg(tmp_path, empty))
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.json"))


@pytest.mark.server
@pytest.mark.slow
def test_a_real_engine_on_cpu_runs_pinned_end_to_end_and_its_results_load(
    tmp_path: Path, tiny_model: Path, db_path: Path
):
    pytest.importorskip("transformers", reason="LOUD SKIP: needs transformers[serving]")
    load = LoadSpec(
        workload="unique",
        attacker_rps=3,
        attacker_tokens_min=100,
        attacker_tokens_max=200,
        attacker_output_tokens=3,
        victim_rps=2,
        victim_tokens=12,
        victim_output_tokens=3,
        duration_s=3.0,
        timeout_s=30.0,
    )
    shared = dataclasses.replace(load, workload="shared-prefix")
    cfg = BenchConfig(
        model=str(tiny_model),
        cores=(1,),
        loads=(load, shared),
        out_dir=tmp_path / "out",
        engine="transformers",
        repeats=1,
        client_cores=1,
        start_timeout_s=180,
        engine_env=(("HF_HUB_OFFLINE", "1"),),
    )
    rows = run_bench(cfg)
    assert [r.status for r in rows] == ["ok", "ok"]
    for row in rows:
        data = _run_json(row)
        run, reqs = data["run"], data["requests"]
        assert run["engine_version"] and run["model"] == "tiny-llama"
        assert run["core_list"] == str(CPUS[0]) and run["cores"] == 1
        pin = run["extra"]["pinning"]
        assert pin["ok"] and pin["processes"] >= 1 and pin["threads"] >= 2
        assert run["extra"]["pinning_after"]["ok"]
        kinds = {r["kind"] for r in reqs}
        assert kinds == {"attacker", "victim"}
        ok = [r for r in reqs if r["status"] == "ok"]
        assert ok and all(0 < r["ttft_ms"] <= r["e2e_ms"] for r in ok)
        assert all(r["sent_s"] < r["first_token_s"] <= r["finished_s"] for r in ok)
        attackers = [r["prompt_tokens"] for r in reqs if r["kind"] == "attacker"]
        assert attackers and min(attackers) >= 100
        tok = {t["setting"]: t for t in run["extra"]["tokenization"]}
        assert set(tok) == {"parallelism-on", "parallelism-off", "rayon-2-threads"}
        assert all(t["error"] is None and t["attacker_encode_ms"] > 0 for t in tok.values())
        assert run["extra"].get("stop_survivors") is None
    from advisor.harness.results.collect import collect, list_runs

    result = collect([tmp_path / "out"], db_path)
    assert (result.runs_loaded, result.problems) == (2, ())
    listed = list_runs(db_path)
    assert {r["workload"] for r in listed} == {"unique", "shared-prefix"}
