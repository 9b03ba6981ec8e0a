"""The console script when its reader goes away (`advisor ... | head`): no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.job_submit import job_submit_args


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write fails with EPIPE
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from advisor.cli import main; main()",
            *job_submit_args(),
        ],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == 1  # as click's own commands exit when the reader leaves
