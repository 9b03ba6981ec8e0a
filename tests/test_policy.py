"""Policy export: the docs/policy-format.md structure, valid Lua 5.1, slurm.conf lines."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.policy import Mode, Policy, PolicyRule, lua_string, to_lua, to_slurm_conf
from advisor.store import connect

LUA = shutil.which("lua5.1")
needs_lua = pytest.mark.skipif(
    LUA is None,
    reason="LOUD SKIP: lua5.1 is not installed (Debian package lua5.1); the Lua "
    "output cannot be checked",
)


@pytest.fixture
def no_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ADVISOR_DB", raising=False)
    return tmp_path


def _cluster_db(db: Path) -> None:
    con = connect(db)
    con.execute(
        "INSERT INTO nodes (cluster, node_name, cpus, gpus, gpu_type, gpu_type_raw,"
        " partitions, snapshot_at) VALUES ('c', 'n1', 64, 4, 'H100', 'h100_80gb',"
        " ['gpu'], TIMESTAMP '2026-11-01')"
    )
    start = dt.datetime(2026, 11, 1)
    for i in range(4):
        con.execute(
            'INSERT INTO jobs (cluster, job_id_raw, submit, job_id, "partition", start,'
            ' "end", elapsed_s, cpus, gpus, gpu_type, gpu_type_raw) VALUES'
            " ('c', ?, ?, ?, 'gpu', ?, ?, 3600, 1, 4, 'H100', 'h100_80gb')",
            [i, start, str(i), start, start + dt.timedelta(hours=1)],
        )
    con.close()


def _lua_eval(path: Path, expr: str) -> str:
    assert LUA is not None
    script = f"local p = dofile({lua_string(str(path))}); io.write(tostring({expr}))"
    done = subprocess.run([LUA, "-e", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_json_export_has_exactly_the_contracts_structure(cli, no_db):
    code, out, err = cli("policy", "export", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"version", "generated_at", "source", "rules"} and data["version"] == 1
    dt.datetime.strptime(data["generated_at"], "%Y-%m-%dT%H:%M:%SZ")
    keys = {"partition", "gpu_type", "min_cpus_per_gpu", "default_cpus_per_gpu", "mode"}
    assert all(set(r) == keys for r in data["rules"])
    assert {"h100", "h200", "b200", "a100", "l40s", "*"} <= {r["gpu_type"] for r in data["rules"]}
    assert data["rules"][-1]["partition"] == "*" and data["rules"][-1]["gpu_type"] == "*"
    for r in data["rules"]:
        assert 1 <= r["min_cpus_per_gpu"] <= r["default_cpus_per_gpu"]
        assert r["mode"] == "set-default-when-unset"


@needs_lua
def test_lua_export_is_valid_lua_5_1_with_the_same_rules(cli, no_db, db_path: Path):
    _cluster_db(db_path)
    out_file = no_db / "policy.lua"
    code, _, err = cli(
        "policy",
        "export",
        "--format",
        "lua",
        "--mode",
        "enforce-minimum",
        "--db",
        str(db_path),
        "--output",
        str(out_file),
    )
    assert code == 0, err
    code, out, _ = cli(
        "policy", "export", "--format", "json", "--mode", "enforce-minimum", "--db", str(db_path)
    )
    rules = json.loads(out)["rules"]
    assert _lua_eval(out_file, "p.version") == "1"
    assert _lua_eval(out_file, "#p.rules") == str(len(rules))
    first = rules[0]
    assert (first["partition"], first["gpu_type"]) == ("gpu", "h100_80gb")  # most specific first
    assert (
        _lua_eval(out_file, "p.rules[1].partition .. '/' .. p.rules[1].gpu_type") == "gpu/h100_80gb"
    )
    assert _lua_eval(out_file, "p.rules[1].default_cpus_per_gpu") == str(
        first["default_cpus_per_gpu"]
    )
    assert _lua_eval(out_file, "p.rules[1].mode") == "enforce-minimum"
    # other GRES names in the partition fall back to the partition's own rule, not the cluster's
    assert (rules[1]["partition"], rules[1]["gpu_type"]) == ("gpu", "*")
    assert rules[1]["default_cpus_per_gpu"] == first["default_cpus_per_gpu"]


@needs_lua
def test_hostile_partition_names_stay_inert_strings_in_lua(tmp_path: Path):
    evil = 'x"; os.exit(3) --\n]]\\ é\t1'
    policy = Policy(
        1, "2026-11-29T00:00:00Z", "advisor", (PolicyRule(evil, "h100", 2, 4, Mode.advise),)
    )
    path = tmp_path / "p.lua"
    path.write_text(to_lua(policy))
    assert _lua_eval(path, "p.rules[1].partition") == evil


def test_slurm_conf_gives_each_observed_partition_its_def_cpu_per_gpu(cli, db_path: Path):
    _cluster_db(db_path)
    code, out, err = cli("policy", "export", "--format", "slurm.conf", "--db", str(db_path))
    assert code == 0, err
    lines = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith("PartitionName=gpu DefCpuPerGPU=")
    assert int(lines[0].rsplit("=", 1)[1]) >= 2


def test_slurm_conf_skips_a_partition_name_that_would_inject_options_and_keeps_the_rest():
    rules = (
        PolicyRule("gpu MaxTime=1", "*", 2, 4, Mode.advise),
        PolicyRule("gpu", "*", 2, 4, Mode.advise),
    )
    policy = Policy(1, "t", "advisor", rules)
    lines = to_slurm_conf(policy).splitlines()
    assert "PartitionName=gpu DefCpuPerGPU=4" in lines
    assert not [ln for ln in lines if "MaxTime" in ln and not ln.startswith("#")]


def test_a_policy_built_on_one_context_has_the_rules_of_one_built_on_its_own(tmp_path: Path):
    from advisor.policy import PolicyConfig, build_policy
    from advisor.recommend import RecommendContext

    db = tmp_path / "advisor.duckdb"
    _cluster_db(db)
    cfg = PolicyConfig(db=str(db))
    alone = build_policy(cfg)
    with RecommendContext.open(db=db) as ctx:
        shared = build_policy(cfg, ctx=ctx)
    assert shared.rules == alone.rules
    assert ("gpu", "h100_80gb") in {(r.partition, r.gpu_type) for r in shared.rules}


def _two_clusters(db: Path) -> None:
    """Two clusters each with a partition named 'gpu' (same name, different clusters) and one
    of their own: cluster 'a' on 1 core per GPU, cluster 'b' on 16."""
    con = connect(db)
    start = dt.datetime(2026, 11, 1)
    rows = [("a", "gpu", 1), ("a", "a-only", 1), ("b", "gpu", 16), ("b", "b-only", 16)]
    for i, (cluster, part, cpg) in enumerate(rows * 3):
        con.execute(
            'INSERT INTO jobs (cluster, job_id_raw, submit, job_id, "partition", start,'
            ' "end", elapsed_s, cpus, gpus, gpu_type, gpu_type_raw) VALUES'
            " (?, ?, ?, ?, ?, ?, ?, 3600, ?, 4, 'H100', 'h100_80gb')",
            [cluster, i, start, str(i), part, start, start + dt.timedelta(hours=1), 4 * cpg],
        )
    con.close()


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("advisor") or str(Path(sys.executable).parent / "advisor")
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120)


def test_slurm_conf_gives_each_cluster_its_own_block_and_cluster_narrows_it(db_path: Path):
    """Issue 39 item 9: both clusters' partitions came out in one block, no --cluster."""
    _two_clusters(db_path)
    both = _script("policy", "export", "--format", "slurm.conf", "--db", str(db_path))
    assert both.returncode == 0, both.stderr
    blocks = both.stdout.split("\n\n")
    assert len(blocks) == 2
    assert "cluster a: its slurm.conf only" in blocks[0]
    assert "cluster b: its slurm.conf only" in blocks[1]
    parts = [
        sorted(ln.split()[0] for ln in b.splitlines() if ln.startswith("PartitionName="))
        for b in blocks
    ]
    assert parts == [
        ["PartitionName=a-only", "PartitionName=gpu"],
        ["PartitionName=b-only", "PartitionName=gpu"],
    ]
    one = _script(
        "policy", "export", "--format", "slurm.conf", "--cluster", "b", "--db", str(db_path)
    )
    assert one.returncode == 0, one.stderr
    assert "cluster b: its slurm.conf only" in one.stdout and "a-only" not in one.stdout
    assert [ln.split()[0] for ln in one.stdout.splitlines() if ln.startswith("Partition")] == [
        "PartitionName=b-only",
        "PartitionName=gpu",
    ]


def test_a_plugin_policy_of_two_clusters_warns_and_an_unknown_cluster_is_refused(
    db_path: Path, tmp_path: Path
):
    _two_clusters(db_path)
    merged = _script("policy", "export", "--format", "json", "--db", str(db_path))
    assert merged.returncode == 0, merged.stderr
    assert "holds 2 clusters (a, b)" in merged.stderr and "--cluster NAME" in merged.stderr
    out = tmp_path / "a.lua"
    one = _script("policy", "export", "--cluster", "a", "--db", str(db_path), "-o", str(out))
    assert one.returncode == 0 and "clusters" not in one.stderr, one.stderr
    text = out.read_text()
    assert '"a-only"' in text and '"b-only"' not in text
    bad = _script("policy", "export", "--cluster", "c", "--db", str(db_path))
    assert bad.returncode == 4
    assert bad.stderr.strip() == "Error: --cluster 'c': the database holds jobs of a, b"
    assert "Traceback" not in bad.stderr


def test_recommend_partition_star_answers_each_clusters_partition_apart(db_path: Path):
    """Issue 39 item 9: `recommend --partition '*'` pooled two clusters' 'gpu' partitions into
    one row with no cluster column; each is its own partition with its own jobs."""
    _two_clusters(db_path)
    res = _script("recommend", "--partition", "*", "--db", str(db_path), "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["partitions"]
    got = sorted((r["cluster"], r["partition"], r["jobs"], r["p50_cores_per_gpu"]) for r in rows)
    assert got == [
        ("a", "a-only", 3, 1.0),
        ("a", "gpu", 3, 1.0),
        ("b", "b-only", 3, 16.0),
        ("b", "gpu", 3, 16.0),
    ]
    only_b = _script(
        "recommend", "--partition", "*", "--cluster", "b", "--db", str(db_path), "--format", "csv"
    )
    assert only_b.returncode == 0, only_b.stderr
    header, *lines = only_b.stdout.splitlines()
    assert header.startswith("cluster,partition,") and len(lines) == 2
    assert all(line.startswith("b,") for line in lines)
    table = subprocess.run(
        [shutil.which("advisor") or str(Path(sys.executable).parent / "advisor"), "recommend"]
        + ["--partition", "*", "--db", str(db_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert table.returncode == 0, table.stderr
    assert (
        "cluster" in table.stdout.splitlines()[2] and max(map(len, table.stdout.splitlines())) <= 80
    )
