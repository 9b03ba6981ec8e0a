"""Model directories for benchmark runs that need no downloaded weights: ``bench make-model``.

A directory holds a Llama ``config.json`` (a real architecture's shape, e.g. Llama-3.1-8B, or a
tiny one for CPU tests), ``generation_config.json`` and a byte-level BPE tokenizer trained here
with the ``tokenizers`` library on text every machine has: the Python standard library's own
source. vLLM serves such a directory with ``--load-format dummy`` (random weights); the tiny
architecture is small enough that the test suite saves real random weights for a CPU server.
The same tokenizer builds the benchmark's prompts (see :mod:`advisor.harness.load.prompts`).
"""

from __future__ import annotations

import json
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import UsageError
from advisor.progress import ProgressFn, no_progress

# Llama 3's pre-tokenizer split (its published tokenizer.json), used for every architecture here.
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
MODEL_INFO = "advisor-model.json"  # what make-model made: the name results carry
BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"


@dataclass(frozen=True)
class ArchSpec:
    """The shape of one architecture: the fields of a Llama ``config.json`` that differ."""

    name: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    regular_vocab: int  # BPE tokens learned (the byte alphabet included)
    special_tokens: int
    max_position_embeddings: int
    rope_theta: float
    params_b: float  # parameters, billions (for the results' model_params_b)
    display_name: str  # the model's name in results (advisor-model.json)
    llama3_rope: bool
    training_text_bytes: int  # how much standard-library text trains the tokenizer


ARCHS: dict[str, ArchSpec] = {
    # Shape from Meta's published Llama-3.1-8B config.json (see ../shared/tools/vllm-offline).
    "llama-3.1-8b": ArchSpec(
        "llama-3.1-8b",
        4096,
        32,
        32,
        8,
        14336,
        128000,
        256,
        131072,
        500000.0,
        8.03,
        "Llama-3.1-8B",
        True,
        24_000_000,
    ),
    # For CPU tests: a few hundred thousand parameters, served by `transformers serve`.
    "tiny": ArchSpec(
        "tiny", 64, 2, 4, 2, 128, 1024, 256, 8192, 10000.0, 0.0002, "tiny-llama", False, 400_000
    ),
}


@dataclass(frozen=True)
class MakeModelConfig:
    arch: str
    out_dir: Path
    weights: bool = False  # also save random weights (only sensible for the tiny architecture)
    seed: int = 0


@dataclass(frozen=True)
class MadeModel:
    out_dir: str
    arch: str
    vocab_size: int
    tokenizer_vocab: int
    params_b: float
    training_text_bytes: int
    weights_saved: bool


def stdlib_text(limit_bytes: int) -> Iterator[str]:
    """The standard library's ``.py`` files, sorted by path, until ``limit_bytes`` are given."""
    root = Path(sysconfig.get_paths()["stdlib"])
    given = 0
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "dist-packages" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield text
        given += len(text)
        if given >= limit_bytes:
            return


def train_tokenizer(spec: ArchSpec, progress: ProgressFn = no_progress):
    """A byte-level BPE (Llama 3's split pattern) trained on standard-library text."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.regular_vocab,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    progress("train tokenizer", 0, 1)
    tok.train_from_iterator(stdlib_text(spec.training_text_bytes), trainer=trainer)
    specials = [BOS, EOS] + [
        f"<|reserved_special_token_{i}|>" for i in range(spec.special_tokens - 2)
    ]
    tok.add_special_tokens(specials)
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
    )
    progress("train tokenizer", 1, 1)
    return tok


def llama_config(spec: ArchSpec, vocab_size: int, bos_id: int, eos_id: int) -> dict[str, Any]:
    """A Llama ``config.json`` of the given shape."""
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "head_dim": spec.hidden_size // spec.num_attention_heads,
        "hidden_act": "silu",
        "hidden_size": spec.hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": spec.intermediate_size,
        "max_position_embeddings": spec.max_position_embeddings,
        "mlp_bias": False,
        "num_attention_heads": spec.num_attention_heads,
        "num_hidden_layers": spec.num_hidden_layers,
        "num_key_value_heads": spec.num_key_value_heads,
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        "rope_theta": spec.rope_theta,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "vocab_size": vocab_size,
    }
    if spec.llama3_rope:
        cfg["rope_scaling"] = {
            "factor": 8.0,
            "high_freq_factor": 4.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        }
    return cfg


def make_model(config: MakeModelConfig, progress: ProgressFn = no_progress) -> MadeModel:
    """Write a model directory (config, generation config, tokenizer; weights if asked)."""
    spec = ARCHS.get(config.arch)
    if spec is None:
        raise UsageError(f"--arch {config.arch!r}: unknown; choose one of {', '.join(ARCHS)}")
    if config.weights and spec.params_b > 0.1:
        raise UsageError(
            f"--weights with --arch {spec.name}: too large to save random weights; "
            "serve it with vLLM's --load-format dummy instead"
        )
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(spec, progress)
    tok_vocab = tok.get_vocab_size(with_added_tokens=True)
    # The model's vocabulary is the architecture's, never smaller than the tokenizer's.
    vocab_size = max(spec.regular_vocab + spec.special_tokens, tok_vocab)
    bos_id, eos_id = tok.token_to_id(BOS), tok.token_to_id(EOS)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": BOS,
                "eos_token": EOS,
                "add_bos_token": True,
                "clean_up_tokenization_spaces": False,
                "model_max_length": spec.max_position_embeddings,
                "model_input_names": ["input_ids", "attention_mask"],
            },
            indent=2,
        )
    )
    (out / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": BOS, "eos_token": EOS}, indent=2)
    )
    cfg = llama_config(spec, vocab_size, bos_id, eos_id)
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False}, indent=2)
    )
    (out / MODEL_INFO).write_text(
        json.dumps(
            {
                "name": spec.display_name,
                "arch": spec.name,
                "weights": "random",
                "tokenizer": "byte-level BPE trained on the Python standard library's source",
                "made_by": "advisor bench make-model",
            },
            indent=2,
        )
    )
    saved = False
    if config.weights:
        _save_random_weights(out, cfg, config.seed)
        saved = True
    return MadeModel(
        out_dir=str(out),
        arch=spec.name,
        vocab_size=vocab_size,
        tokenizer_vocab=tok_vocab,
        params_b=spec.params_b,
        training_text_bytes=spec.training_text_bytes,
        weights_saved=saved,
    )


def _save_random_weights(out: Path, cfg: dict[str, Any], seed: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in cfg.items() if k != "architectures"}))
    model = model.to(torch.float32)  # type: ignore[arg-type]
    model.save_pretrained(str(out))
