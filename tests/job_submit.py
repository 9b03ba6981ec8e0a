"""The job-submit command that the tests and ``bench/bench_recommend.py`` run: ``advisor
recommend`` for one job (four H100s, an 8B model at 8 requests/s), answered in JSON."""

from __future__ import annotations


def job_submit_args(*options: str) -> list[str]:
    """``recommend`` with the job's options, then ``options`` (e.g. ``--prompt-tokens 32000``),
    then ``--format json``: the arguments after ``advisor``."""
    job = ["--gpu-type", "H100", "--gpus", "4", "--model-size", "8b", "--rps", "8"]
    return ["recommend", *job, *options, "--format", "json"]
