"""Benchmarks that ``advisor`` launches: an OpenAI-compatible engine (vLLM first) started pinned
to a core set, attacker-victim load against it, TTFT and tokenization measured, one
self-describing JSON per run, Slurm sweeps, and collection into DuckDB.

Nothing here imports duckdb at module level except :mod:`advisor.harness.results.collect`: ``advisor bench
run`` must work on GPU machines that have no DuckDB.
"""
