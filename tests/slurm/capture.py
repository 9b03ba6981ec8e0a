"""Capture real Slurm output from the sandbox: what the ingest and node tests read.

``python -m tests.slurm.capture [DIR]`` (root, sandbox running) submits the job mix of
tests/slurm/jobset.py, waits for it, and writes into DIR (default data/sample/slurm/):

- ``sacct-P-wide.txt``: ``sacct -a -P -j IDS --format WIDE`` (steps included)
- ``sacct-P-delimiter.txt``: ``sacct -a -P --delimiter='^|^' -j IDS --format WIDE``
- ``sacct-noheader.txt``: ``sacct -a -X -P --noheader -j IDS --format NOHEADER``
- ``sacct.json``: ``sacct -a --json -j IDS``
- ``scontrol-show-node.txt``: ``scontrol show node -o``
- ``jobcomp.log``: the jobcomp/filetxt lines of these jobs
- ``expected.json``: each allocation's expected values (from what was submitted) and its times
  from ``scontrol show job`` (a source other than sacct), plus the exact commands and versions.

The live tests call :func:`capture` into a temp dir with a fresh job mix.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.slurm import jobset

WIDE = (
    "JobID,JobIDRaw,Cluster,Partition,QOS,Account,Group,User,UID,State,ExitCode,Submit,"
    "Eligible,Start,End,Elapsed,ElapsedRaw,Timelimit,NNodes,NCPUS,AllocCPUS,ReqCPUS,ReqMem,"
    "ReqTRES,AllocTRES,NodeList,WorkDir,SubmitLine,JobName"
)
NOHEADER = (
    "JobIDRaw,JobID,Cluster,User,Account,Partition,State,AllocTRES,NCPUS,Submit,Start,End,Elapsed"
)
DELIMITER = "^|^"

FILES = {
    "wide": "sacct-P-wide.txt",
    "delimiter": "sacct-P-delimiter.txt",
    "noheader": "sacct-noheader.txt",
    "json": "sacct.json",
    "nodes": "scontrol-show-node.txt",
    "jobcomp": "jobcomp.log",
    "expected": "expected.json",
}


def sacct_commands(ids: str) -> dict[str, list[str]]:
    """The sacct command lines, by output name (``ids``: comma list of submitted job ids)."""
    return {
        "wide": ["sacct", "-a", "-P", "-j", ids, "--format", WIDE],
        "delimiter": ["sacct", "-a", "-P", f"--delimiter={DELIMITER}", "-j", ids, "--format", WIDE],
        "noheader": ["sacct", "-a", "-X", "-P", "--noheader", "-j", ids, "--format", NOHEADER],
        "json": ["sacct", "-a", "--json", "-j", ids],
    }


def wait_for_accounting(ids: str, results: list[jobset.JobResult], timeout_s: float = 90) -> None:
    """Wait until slurmdbd lists every expected allocation with its end time: jobs end in
    slurmctld before their final records reach the database (a het job's second component was
    seen missing, and its first listed without "+0", right after the last job ended)."""
    want = {r.job_id for r in results}
    deadline = time.monotonic() + timeout_s
    while True:
        listed = jobset.run(
            ["sacct", "-a", "-X", "-P", "--noheader", "-j", ids, "--format", "JobID,End"]
        ).stdout
        ends = dict(line.split("|", 1) for line in listed.splitlines() if "|" in line)
        missing = sorted(j for j in want if ends.get(j, "Unknown") == "Unknown")
        if not missing:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"slurmdbd never recorded the end of {missing} in {timeout_s:.0f} s")
        time.sleep(0.5)


def capture(out: Path, results: list[jobset.JobResult] | None = None) -> list[jobset.JobResult]:
    """Submit the mix (unless given its results), write every capture into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    if results is None:
        results = jobset.submit_all()
    leaders = sorted({int(r.job_id.split("_")[0].split("+")[0]) for r in results})
    ids = ",".join(str(i) for i in leaders)
    wait_for_accounting(ids, results)
    cmds = sacct_commands(ids)
    for name, argv in cmds.items():
        (out / FILES[name]).write_text(jobset.run(argv).stdout, encoding="utf-8")
    (out / FILES["nodes"]).write_text(
        jobset.run(["scontrol", "show", "node", "-o"]).stdout, encoding="utf-8"
    )
    raw_ids = {str(r.job_id_raw) for r in results}
    log = jobset.SANDBOX / "log" / "jobcomp.log"
    lines = [
        ln
        for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()
        if ln.split(" ", 1)[0].removeprefix("JobId=") in raw_ids
    ]
    (out / FILES["jobcomp"]).write_text("\n".join(lines) + "\n", encoding="utf-8")
    version = jobset.run(["sinfo", "-V"]).stdout.strip()
    meta = {
        "slurm_version": version,
        "cluster": jobset.CLUSTER,
        "tz": "UTC",
        "commands": {k: " ".join(v) for k, v in cmds.items()},
        "noheader_fields": NOHEADER,
        "delimiter": DELIMITER,
        "jobs": [r.as_json() for r in results],
    }
    (out / FILES["expected"]).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return results


def load_expected(directory: Path) -> tuple[dict[str, object], list[jobset.JobResult]]:
    """Read ``expected.json`` back into JobResults (and the metadata)."""
    meta = json.loads((directory / FILES["expected"]).read_text(encoding="utf-8"))
    jobs = []
    for j in meta["jobs"]:
        exp = jobset.Expected(**j.pop("expected"))
        jobs.append(jobset.JobResult(**j, expected=exp))
    return meta, jobs


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else jobset.ROOT / "data" / "sample" / "slurm"
    got = capture(target)
    print(f"captured {len(got)} allocations into {target}")
