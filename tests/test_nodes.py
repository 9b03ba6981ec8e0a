"""Node inventory: parsing `scontrol show node -o`, loading it into a real DuckDB file, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from advisor import ratios, store
from advisor.errors import ExternalToolError, UsageError
from advisor.ingest import nodes
from advisor.ingest.nodes import NodeIngestConfig, parse_gres, parse_node_line, parse_scontrol_nodes

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample" / "scontrol-nodes-synth.txt"

H100_LINE = (
    "NodeName=gpu01 Arch=x86_64 CoresPerSocket=32 CPUAlloc=0 CPUEfctv=120 CPUTot=128 "
    "CPULoad=0.00 AvailableFeatures=h100,nvlink ActiveFeatures=h100,nvlink "
    "Gres=gpu:nvidia_h100_80gb_hbm3:8(S:0-1) NodeAddr=gpu01 NodeHostName=gpu01 Version=23.11.4 "
    "OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) "
    "RealMemory=2000000 AllocMem=0 FreeMem=1990000 Sockets=2 Boards=1 State=IDLE+DRAIN "
    "ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu,debug "
    "CfgTRES=cpu=128,mem=2000000M,billing=128,gres/gpu=8,gres/gpu:nvidia_h100_80gb_hbm3=8 "
    "Reason=Kill task failed [slurm@2024-03-02T11:20:05]"
)


def test_a_full_node_line_gives_cpus_gpus_canonical_type_and_partitions():
    n = parse_node_line(H100_LINE, 1)
    assert n is not None
    assert (n.node_name, n.cpus, n.cpus_effective) == ("gpu01", 128, 120)
    assert (n.sockets, n.cores_per_socket, n.threads_per_core) == (2, 32, 2)
    assert n.real_memory_mb == 2_000_000
    assert (n.gpus, n.gpu_type, n.gpu_type_raw) == (8, "H100", "nvidia_h100_80gb_hbm3")
    assert n.partitions == ("gpu", "debug")
    assert n.state == "IDLE+DRAIN"
    assert n.features == "h100,nvlink"


@pytest.mark.parametrize(
    ("gres", "expect"),
    [
        ("gpu:h100:4(S:0-1)", {"h100": 4}),
        ("gpu:4", {None: 4}),
        ("gpu:a100:2(IDX:0,2),gpu:v100:2(IDX:1,3)", {"a100": 2, "v100": 2}),
        ("gpu:h100:8(S:0-1),shard:h100:64(S:0-1)", {"h100": 8}),
        ("gpu:(null):0(IDX:N/A)", {None: 0}),
        ("(null)", {}),
        ("mps:400", {}),
        ("gpu:tesla", {"tesla": 1}),
    ],
)
def test_node_gres_strings_give_gpus_per_raw_type(gres, expect):
    assert parse_gres(gres) == expect


def test_gpus_come_from_cfgtres_when_gres_has_none_and_typed_keys_are_not_summed():
    line = "NodeName=n1 CPUTot=64 Gres=(null) CfgTRES=cpu=64,gres/gpu=4,gres/gpu:a100=4"
    n = parse_node_line(line, 1)
    assert n is not None and (n.gpus, n.gpu_type) == (4, "A100")


def test_the_synthetic_sample_matches_the_synth_clusters_node_shapes():
    recs, rejects = parse_scontrol_nodes(SAMPLE.read_text(), str(SAMPLE))
    assert rejects == []
    shapes = {(r.cluster, r.gpu_type, r.cpus, r.gpus) for r in recs if r.gpus}
    assert shapes == {
        ("teaching", "H100", 128, 8),
        ("teaching", "A100", 64, 4),
        ("research", "H100", 128, 8),
        ("research", "A100", 64, 4),
        ("research", "L40S", 64, 4),
    }


def test_bad_lines_are_rejected_with_file_line_and_field_and_the_rest_loads(db_path, tmp_path):
    f = tmp_path / "nodes.txt"
    f.write_text(
        "NodeName=a1 CPUTot=64 Gres=gpu:a100:4\n"
        "NodeName=a2 CPUTot=sixty Gres=gpu:a100:4\n"
        "\n"
        "CPUTot=64 Gres=gpu:a100:4\n"
        "NodeName=a4 CPUTot=64 Gres=gpu:a100:x4y\n"
        "NodeName=a5 Gres=gpu:a100:4\n"
        "NodeName=a6 CPUTot=64 Gres=gpu:a100:4\n"
    )
    con = store.connect(db_path)
    result = nodes.ingest_nodes(con, NodeIngestConfig(path=f, cluster="c1"))
    assert (result.nodes_read, result.inserted, result.rejected) == (2, 2, 4)
    messages = [r.message() for r in result.rejects]
    assert messages == [
        f"{f}:2, field CPUTot: 'sixty' is not an integer",
        f"{f}:4, field NodeName: no NodeName= on this line",
        f"{f}:5, field Gres: 'x4y' is not a count",
        f"{f}:6, field CPUTot: CPUTot is missing",
    ]
    stored = con.execute(
        "SELECT line_no, field, raw FROM rejects WHERE ingest_id = ? ORDER BY line_no",
        [result.ingest_id],
    ).fetchall()
    assert [(ln, fld) for ln, fld, _ in stored] == [
        (2, "CPUTot"),
        (4, "NodeName"),
        (5, "Gres"),
        (6, "CPUTot"),
    ]
    assert stored[0][2] == "NodeName=a2 CPUTot=sixty Gres=gpu:a100:4"
    names = [r[0] for r in con.execute("SELECT node_name FROM nodes ORDER BY 1").fetchall()]
    assert names == ["a1", "a6"]
    ingest = con.execute(
        "SELECT format, rows_read, inserted, rejected, status FROM ingests WHERE ingest_id = ?",
        [result.ingest_id],
    ).fetchone()
    assert ingest == ("scontrol-node", 2, 2, 4, "done")
    con.close()


def test_a_file_whose_every_line_is_rejected_exits_3_with_one_line_saying_so(
    cli, db_path, tmp_path
):
    f = tmp_path / "nodes.txt"
    f.write_text("garbage line\nNodeName=a2 CPUTot=sixty Gres=gpu:a100:4\n")
    code, _, err = cli("nodes", "ingest", str(f), "--cluster", "c1", "--db", str(db_path))
    assert code == 3, err
    errors = [ln for ln in err.splitlines() if ln.startswith("Error:")]
    assert errors == [
        f"Error: {f}: every node line (2) was rejected, nothing loaded; "
        "give `scontrol show node -o` output (one node per line)"
    ]
    assert len([ln for ln in err.splitlines() if ln.startswith("Rejected:")]) == 2
    assert "Traceback" not in err
    # one good line is a load, not a failure
    f.write_text("NodeName=a1 CPUTot=64 Gres=gpu:a100:4\nNodeName=a2 CPUTot=sixty\n")
    code, _, err = cli("nodes", "ingest", str(f), "--cluster", "c1", "--db", str(db_path))
    assert code == 0, err


def test_a_node_load_keeps_its_whole_ingests_row_and_its_rejects_through_the_shared_bookkeeping(
    db_path, tmp_path
):
    """advisor.ingest.bookkeeping writes the rows of job and node loads alike: a node load's
    row holds what it always held, and nothing of a job load's (no compression, no field
    catalogue, the default zone)."""
    import hashlib

    f = tmp_path / "nodes.txt"
    text = "NodeName=a1 CPUTot=64 Gres=gpu:a100:4\nNodeName=a2 CPUTot=sixty\n"
    f.write_text(text)
    con = store.connect(db_path)
    first = nodes.ingest_nodes(con, NodeIngestConfig(path=f, cluster="c1"))
    again = nodes.ingest_nodes(con, NodeIngestConfig(path=f, cluster="c1"))
    rows = con.execute(
        "SELECT source, format, compression, content_hash, cluster, source_tz, lines_read,"
        " rows_read, inserted, updated, unchanged, rejected, missing_fields,"
        " disabled_analyses, status, finished_at >= started_at FROM ingests ORDER BY ingest_id"
    ).fetchall()
    digest = hashlib.sha256(text.encode()).hexdigest()
    # The same file twice: the first load inserts a1, the second updates it; both reject a2.
    read = (str(f), "scontrol-node", None, digest, "c1", "UTC", 2, 1)  # ... lines, rows read
    done = (0, 1, None, None, "done", True)  # unchanged, rejected, ..., status, finished
    assert rows == [(*read, 1, 0, *done), (*read, 0, 1, *done)]  # inserted, updated
    assert con.execute(
        "SELECT ingest_id, source, line_no, field, raw FROM rejects ORDER BY ingest_id"
    ).fetchall() == [
        (first.ingest_id, str(f), 2, "CPUTot", "NodeName=a2 CPUTot=sixty"),
        (again.ingest_id, str(f), 2, "CPUTot", "NodeName=a2 CPUTot=sixty"),
    ]
    con.close()


def test_loading_a_snapshot_again_updates_nodes_without_duplicates(db_path, tmp_path):
    con = store.connect(db_path)
    first = nodes.ingest_nodes(con, NodeIngestConfig(path=SAMPLE))
    again = nodes.ingest_nodes(con, NodeIngestConfig(path=SAMPLE))
    assert first.inserted == 21 and (again.inserted, again.updated) == (0, 21)
    assert con.execute("SELECT count(*) FROM nodes").fetchone() == (21,)
    changed = tmp_path / "later.txt"
    changed.write_text("CLUSTER: teaching\nNodeName=th100-00 CPUTot=256 Gres=gpu:h100:8\n")
    nodes.ingest_nodes(con, NodeIngestConfig(path=changed))
    row = con.execute(
        "SELECT cpus, gpus FROM nodes WHERE cluster = 'teaching' AND node_name = 'th100-00'"
    ).fetchone()
    assert row == (256, 8)
    con.close()


def test_fair_share_per_node_type_uses_usable_cpus(db_path):
    con = store.connect(db_path)
    nodes.ingest_nodes(con, NodeIngestConfig(path=SAMPLE))
    types = {(t.cluster, t.gpu_type): t for t in ratios.fair_share(con)}
    assert types[("teaching", "H100")].cores_per_gpu == 16.0
    # research H100 nodes in the sample keep 4 cores for the system (CPUEfctv=124)
    assert types[("research", "H100")].cores_per_gpu == 15.5
    assert types[("research", "H100")].nodes == 3
    assert [t.cluster for t in ratios.fair_share(con, "teaching")] == ["teaching", "teaching"]
    con.close()


def test_nodes_without_a_cluster_name_are_refused_with_the_fix(db_path, tmp_path):
    f = tmp_path / "n.txt"
    f.write_text("NodeName=a1 CPUTot=64 Gres=gpu:a100:4\n")
    con = store.connect(db_path)
    with pytest.raises(UsageError, match="--cluster NAME"):
        nodes.ingest_nodes(con, NodeIngestConfig(path=f))
    assert con.execute("SELECT count(*) FROM ingests").fetchone() == (0,)
    con.close()


def _stub_scontrol(tmp_path: Path) -> Path:
    """A stand-in for `scontrol` (no slurmctld runs in this test): it prints the sample for
    `show node -o` and a ClusterName for `show config`, and records its arguments."""
    script = tmp_path / "scontrol"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{tmp_path}/args"\n'
        'if [ "$2" = "config" ]; then echo "ClusterName             = teaching"; exit 0; fi\n'
        f'grep -v "^CLUSTER:" "{SAMPLE}" | grep "NodeName=t"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_live_ingest_runs_scontrol_with_an_argument_list_and_takes_its_cluster_name(
    db_path, tmp_path
):
    script = _stub_scontrol(tmp_path)
    con = store.connect(db_path)
    result = nodes.ingest_nodes(con, NodeIngestConfig(live=True, scontrol=str(script)))
    assert result.clusters == ("teaching",) and result.nodes_read == 9
    assert (tmp_path / "args").read_text().splitlines() == ["show node -o", "show config"]
    con.close()


def test_a_failing_scontrol_is_an_external_tool_error(db_path, tmp_path, monkeypatch):
    if shutil.which("scontrol") is None:
        pytest.skip("SKIPPED LOUDLY: Slurm's scontrol is not installed on this machine")
    # The real scontrol, pointed at a configuration without a controller, fails at once.
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=nowhere\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    con = store.connect(db_path)
    with pytest.raises(ExternalToolError, match="scontrol show node -o failed"):
        nodes.ingest_nodes(con, NodeIngestConfig(live=True, cluster="x"))
    con.close()


def test_a_missing_scontrol_is_an_external_tool_error_that_suggests_a_file(db_path, tmp_path):
    con = store.connect(db_path)
    missing = str(tmp_path / "no-scontrol-here")
    with pytest.raises(ExternalToolError, match="advisor nodes ingest FILE"):
        nodes.ingest_nodes(con, NodeIngestConfig(live=True, cluster="x", scontrol=missing))
    con.close()


# --- the CLI ---------------------------------------------------------------------------


def test_nodes_ingest_and_list_through_the_cli(cli, db_path):
    code, out, err = cli("nodes", "ingest", str(SAMPLE), "--db", str(db_path), "--format", "json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["clusters"] == ["research", "teaching"]
    assert (summary["nodes"], summary["inserted"], summary["rejected"]) == (21, 21, 0)
    code, out, _ = cli("nodes", "list", "--db", str(db_path), "--format", "json")
    listed = json.loads(out)
    assert len(listed) == 21 and listed[0]["node_name"] == "ra100-00"
    assert listed[0]["cores_per_gpu"] == 16.0
    code, out, _ = cli("nodes", "list", "--types", "--db", str(db_path), "--format", "csv")
    assert code == 0
    assert out.splitlines()[0].startswith("cluster,gpu_type,cpus_per_node,gpus_per_node,nodes")
    assert len(out.splitlines()) == 6


def test_nodes_ingest_cli_reports_rejects_on_stderr_and_still_loads(cli, db_path, tmp_path):
    f = tmp_path / "n.txt"
    f.write_text("NodeName=a1 CPUTot=64 Gres=gpu:a100:4\nNodeName=a2 CPUTot=-\n")
    code, out, err = cli(
        "nodes", "ingest", str(f), "--cluster", "c1", "--db", str(db_path), "--format", "json"
    )
    assert code == 0
    assert json.loads(out)["rejected"] == 1
    assert f"Rejected: {f}:2, field CPUTot: '-' is not an integer" in err


def test_nodes_ingest_cli_errors_name_the_problem(cli, db_path, tmp_path):
    code, _, err = cli("nodes", "ingest", str(tmp_path / "nope.txt"), "--db", str(db_path))
    assert code == 4 and "no such file" in err
    code, _, err = cli("nodes", "ingest", "--db", str(db_path))
    assert code == 2 and "--live" in err
    assert os.path.exists(db_path)


REAL = (
    Path(__file__).resolve().parent.parent / "data" / "sample" / "slurm" / "scontrol-show-node.txt"
)


def test_real_slurm_scontrol_output_loads_with_exact_shapes(db_path):
    if not REAL.exists():
        pytest.skip(f"SKIPPED LOUDLY: the real Slurm capture {REAL} is missing")
    con = store.connect(db_path)
    result = nodes.ingest_nodes(con, NodeIngestConfig(path=REAL, cluster="advisor-sandbox"))
    assert result.rejects == ()
    got = {
        n.node_name: (n.cpus, n.cpus_effective, n.gpus, n.gpu_type, n.partitions, n.sockets)
        for n in nodes.list_nodes(con)
    }
    assert got == {
        "anode1": (64, 64, 8, "A100", ("gpu",), 2),
        "cnode1": (16, 16, 0, None, ("cpu",), 1),
        "hnode1": (32, 32, 4, "H100", ("gpu",), 2),
        "hnode2": (32, 32, 4, "H100", ("gpu",), 2),
    }
    assert [(t.gpu_type, t.nodes, t.cores_per_gpu) for t in ratios.fair_share(con)] == [
        ("A100", 1, 8.0),
        ("H100", 2, 8.0),
    ]
    con.close()
