"""Tokenization measured under the engine's own core set, with the knobs the research never
tried: ``TOKENIZERS_PARALLELISM`` on and off, and Rayon's thread count capped.

:func:`measure_tokenization` runs ``python -m advisor.harness.load.tokenize_probe`` once per setting,
each in a fresh process pinned to the given cores with that setting in its environment (the
knobs are read when the tokenizer library starts, so a fresh process per setting is needed).
The child times the model's ``tokenizer.json`` on the same prompts the load phase sends:
one prompt at a time, and ``concurrency`` prompts at once from threads, as an API server
tokenizes concurrent requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

SETTINGS: dict[str, dict[str, str]] = {
    "parallelism-on": {"TOKENIZERS_PARALLELISM": "true"},
    "parallelism-off": {"TOKENIZERS_PARALLELISM": "false"},
    "rayon-2-threads": {"TOKENIZERS_PARALLELISM": "true", "RAYON_NUM_THREADS": "2"},
}


@dataclass(frozen=True)
class TokenizeTiming:
    setting: str
    env: dict[str, str]
    victim_encode_ms: float | None  # median, one prompt at a time
    attacker_encode_ms: float | None
    attacker_concurrent_ms: float | None  # median per prompt with `concurrency` at once
    attacker_tokens_mean: float | None
    concurrency: int
    error: str | None = None


def _median(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def measure_tokenization(
    tokenizer_json: str | Path,
    victim_prompts: Sequence[str],
    attacker_prompts: Sequence[str],
    cores: Sequence[int],
    concurrency: int = 8,
    timeout_s: float = 300.0,
) -> list[TokenizeTiming]:
    """One timing per setting in :data:`SETTINGS`, each in a process pinned to ``cores``."""
    with tempfile.TemporaryDirectory() as tmp:
        prompts_file = Path(tmp, "prompts.json")
        prompts_file.write_text(
            json.dumps({"victim": list(victim_prompts), "attacker": list(attacker_prompts)})
        )
        out = []
        for name, knobs in SETTINGS.items():
            env = {
                k: v
                for k, v in os.environ.items()
                if k not in ("TOKENIZERS_PARALLELISM", "RAYON_NUM_THREADS")
            }
            env.update(knobs)
            cmd = [
                sys.executable,
                "-m",
                "advisor.harness.load.tokenize_probe",
                str(tokenizer_json),
                str(prompts_file),
                str(concurrency),
            ]
            cset = set(cores)
            try:
                proc = subprocess.run(
                    cmd,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                    preexec_fn=lambda cset=cset: os.sched_setaffinity(0, cset),  # type: ignore[misc]
                )
                if proc.returncode != 0:
                    raise RuntimeError(proc.stderr.strip()[-500:])
                d = json.loads(proc.stdout)
                out.append(TokenizeTiming(setting=name, env=knobs, concurrency=concurrency, **d))
            except (OSError, subprocess.SubprocessError, RuntimeError, ValueError) as exc:
                out.append(
                    TokenizeTiming(
                        name,
                        knobs,
                        None,
                        None,
                        None,
                        None,
                        concurrency,
                        error=f"{type(exc).__name__}: {exc}",
                    )
                )
        return out


def _child(tokenizer_json: str, prompts_file: str, concurrency: int) -> dict[str, float | None]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_json)
    prompts = json.loads(Path(prompts_file).read_text())
    tok.encode("warm up the tokenizer")

    def timed(text: str) -> float:
        t = time.perf_counter()
        tok.encode(text)
        return (time.perf_counter() - t) * 1000.0

    victim = [timed(p) for p in prompts["victim"]]
    attacker = [timed(p) for p in prompts["attacker"]]
    conc: list[float] = []
    if prompts["attacker"]:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            batch = (prompts["attacker"] * concurrency)[
                : max(concurrency, len(prompts["attacker"]))
            ]
            conc = list(pool.map(timed, batch))
    lens = [len(tok.encode(p).ids) for p in prompts["attacker"]]
    return {
        "victim_encode_ms": _median(victim),
        "attacker_encode_ms": _median(attacker),
        "attacker_concurrent_ms": _median(conc),
        "attacker_tokens_mean": sum(lens) / len(lens) if lens else None,
    }


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
