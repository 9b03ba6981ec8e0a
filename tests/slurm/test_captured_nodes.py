"""Loading the node inventory that the real sandbox's `scontrol show node -o` printed.

No Slurm needed: data/sample/slurm/scontrol-show-node.txt was captured from the sandbox
(see its README). The four nodes must come out with the shape scripts/slurm-sandbox gave them.
"""

from __future__ import annotations

from pathlib import Path

from advisor import store
from advisor.ingest import nodes

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "sample" / "slurm"

# (cpus, sockets, cores per socket, threads per core, memory MB, GPUs, family, raw type, partitions)
SHAPES = {
    "hnode1": (32, 2, 16, 1, 256000, 4, "H100", "h100", ("gpu",)),
    "hnode2": (32, 2, 16, 1, 256000, 4, "H100", "h100", ("gpu",)),
    "anode1": (64, 2, 16, 2, 512000, 8, "A100", "a100", ("gpu",)),
    "cnode1": (16, 1, 16, 1, 64000, 0, None, None, ("cpu",)),
}


def test_the_sandbox_node_capture_loads_every_node_with_its_configured_shape(db_path):
    con = store.connect(db_path)
    try:
        result = nodes.ingest_nodes(
            con,
            nodes.NodeIngestConfig(
                path=CAPTURED / "scontrol-show-node.txt", cluster="advisor-sandbox"
            ),
        )
        assert (result.nodes_read, result.inserted, result.rejected) == (4, 4, 0)
        got = {
            n.node_name: (
                n.cpus,
                n.sockets,
                n.cores_per_socket,
                n.threads_per_core,
                n.real_memory_mb,
                n.gpus,
                n.gpu_type,
                n.gpu_type_raw,
                tuple(n.partitions),
            )
            for n in nodes.list_nodes(con, "advisor-sandbox")
        }
    finally:
        con.close()
    assert got == SHAPES


def test_the_node_capture_through_the_cli_reports_four_nodes(cli, db_path):
    code, out, err = cli(
        "nodes",
        "ingest",
        str(CAPTURED / "scontrol-show-node.txt"),
        "--cluster",
        "advisor-sandbox",
        "--db",
        str(db_path),
        "--format",
        "json",
    )
    assert code == 0, err
    import json

    doc = json.loads(out)
    assert (doc["nodes"], doc["inserted"], doc["rejected"], doc["clusters"]) == (
        4,
        4,
        0,
        ["advisor-sandbox"],
    )
