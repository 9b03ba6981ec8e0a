"""What the bench test modules share: the stub server's command, the machine's CPUs, a tiny
random-weight model directory, a short tokenize-heavy load, and one builder of a
``BenchConfig`` against the stub server (a real process speaking the streamed completions API;
no GPU here, none is mocked by it).
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from advisor.harness.config import BenchConfig
from advisor.harness.records import LoadSpec

ROOT = Path(__file__).resolve().parent.parent
STUB = "{python} -m advisor.harness.serve.stubserver --host {host} --port {port}"
CPUS = sorted(os.sched_getaffinity(0))
# A tokenize-heavy load short enough for the stub server: one second, long attacker prompts.
TOKENIZE_LOAD = LoadSpec(
    workload="tokenize-heavy",
    attacker_rps=4,
    attacker_tokens_min=300,
    attacker_tokens_max=320,
    attacker_output_tokens=2,
    victim_rps=4,
    victim_tokens=8,
    victim_output_tokens=2,
    duration_s=1.0,
    timeout_s=3.0,
)


def tiny_model_dir(factory: pytest.TempPathFactory, *, weights: bool = True) -> Path:
    """``bench make-model --arch tiny [--weights]``: a real random-weight Llama and tokenizer."""
    from advisor.harness.load.modeldir import MakeModelConfig, make_model

    out = factory.mktemp("tiny-model")
    make_model(MakeModelConfig("tiny", out, weights=weights))
    return out


def stub_config(
    tmp_path: Path,
    model: Path,
    load: LoadSpec,
    *stub_args: str,
    **kw: Any,
) -> BenchConfig:
    """A one-core, one-repeat ``bench run`` against the stub server (``stub_args`` script its
    behaviour); keyword arguments override any field."""
    base: dict[str, Any] = dict(
        model=str(model),
        cores=(1,),
        loads=(load,),
        out_dir=tmp_path / "out",
        engine="stub",
        engine_cmd=" ".join([STUB, *stub_args]),
        repeats=1,
        client_cores=1,
        start_timeout_s=20,
        tokenize_probe=False,
        warmup_requests=1,
        noload_s=1.0,
        engine_env=(("PYTHONPATH", str(ROOT)),),
    )
    base.update(kw)
    return BenchConfig(**base)


def unpack(archive: Path, dest: Path) -> Path:
    """A committed run archive unpacked into ``dest``: its folders and plain files only, inside
    ``dest``. tarfile's "data" filter says the same from Python 3.11.4 on; the package allows
    3.11.0, so the check is spelled out where the filter is missing."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
            return dest
        top = dest.resolve()
        for m in tar.getmembers():
            target = (top / m.name).resolve()
            if not (m.isdir() or m.isreg()) or top not in (target, *target.parents):
                raise ValueError(f"{archive}: {m.name!r} is not a plain file or folder inside it")
        tar.extractall(dest)  # noqa: S202 - every member checked above
    return dest
