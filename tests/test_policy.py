"""Policy export: the docs/policy-format.md structure, valid Lua 5.1, slurm.conf lines."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
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
