"""The records of the bench domain: run configuration, per-request records, run results.

Frozen dataclasses with units in field names. A run result serialises to one self-describing
JSON file (``SCHEMA``) whose ``run`` object has the columns of ``bench_runs`` and whose
``requests`` have the columns of ``bench_requests`` (see advisor/sql/migrations/001_initial.sql).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "advisor.bench.run/1"

WORKLOADS = ("unique", "shared-prefix", "tokenize-heavy")
# The prefix-cache hit share each workload is built to give (None: depends on the load).
EXPECTED_PREFIX_HIT = {"unique": (0.0, 0.1), "tokenize-heavy": (0.9, 1.0), "shared-prefix": None}
RUN_STATUSES = ("ok", "crashed", "hung", "start-timeout", "failed")


@dataclass(frozen=True)
class LoadSpec:
    """One load phase: attackers (long prompts, Poisson arrivals) plus victims (short prompts)."""

    workload: str = "unique"  # unique | shared-prefix | tokenize-heavy
    attacker_rps: float = 8.0
    attacker_tokens_min: int = 16000
    attacker_tokens_max: int = 64000
    attacker_output_tokens: int = 16
    victim_rps: float = 1.0
    victim_tokens: int = 64
    victim_output_tokens: int = 16
    duration_s: float = 60.0
    timeout_s: float = 200.0
    seed: int = 0
    conversation_turns: int = 16  # shared-prefix: turns from attacker_tokens_min to _max
    tail_tokens: int = 64  # tokenize-heavy: the unique tail after the shared document
    # Leading marker of every request of the phase (fixed width): phases with the same seed and
    # another salt carry the same traffic that the prefix cache cannot serve from the last one.
    salt: str = ""
    level: str = ""  # the demand level this load was chosen for (light | medium | heavy), if any


@dataclass(frozen=True)
class RequestRecord:
    """One request: times in seconds since the phase's start (monotonic clock), TTFT in ms."""

    request_no: int
    kind: str  # attacker | victim | warmup
    prompt_tokens: int
    output_tokens: int | None
    sent_s: float
    first_token_s: float | None
    finished_s: float | None
    ttft_ms: float | None
    e2e_ms: float | None
    status: str  # ok | error | timeout
    error: str | None = None


@dataclass(frozen=True)
class Platform:
    """Where a run ran: the GPU (canonical family and raw name), the CPU, the engine."""

    platform: str  # canonical GPU family (H200, H100, ...) or CPU
    gpu_name: str | None
    gpu_count: int
    cpu_model: str | None
    cpu_count: int
    hostname: str
    engine_version: str | None


@dataclass(frozen=True)
class RunResult:
    """One run (one engine start x core count x load x repeat), as written to JSON."""

    run: dict[str, Any]  # the bench_runs columns (env, metrics and extra as nested objects)
    requests: tuple[RequestRecord, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "run": self.run,
            "requests": [asdict(r) for r in self.requests],
        }
