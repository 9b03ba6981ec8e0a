"""Benchmark prompts built with the model's own tokenizer, to a token count.

Text comes from the Python standard library's source (every machine has it; see
:mod:`advisor.harness.load.modeldir`), tokenized once into a corpus of token ids; a prompt of ``n``
tokens is a slice of that corpus decoded back to text. Attacker prompts of the ``unique``
workload each start with a distinct marker so that no prefix cache can serve them; those of
``shared-prefix`` are turns of a few long conversations that grow, so most of each prompt hits
the prefix cache while the server still tokenizes all of it; those of ``tokenize-heavy`` are one
long shared document plus a short unique tail, so the prefix cache serves almost all of each
prompt (the GPU has little to prefill) while the API server tokenizes every token: the load
that starves the CPU side. Token counts are the tokenizer's
for the slice; the server's own count (its usage report) is preferred when it sends one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError
from advisor.harness.load.modeldir import stdlib_text


@dataclass(frozen=True)
class Prompt:
    text: str
    tokens: int  # by the model's tokenizer, before the server adds its special tokens


class PromptFactory:
    """Makes prompts of given token counts from the model directory's ``tokenizer.json``."""

    def __init__(self, model_dir: str | Path, corpus_tokens: int = 300_000, seed: int = 0) -> None:
        from tokenizers import Tokenizer

        path = Path(model_dir) / "tokenizer.json"
        if not path.is_file():
            raise InputError(
                "no tokenizer.json: the model directory needs a fast tokenizer "
                "(make one with `advisor bench make-model`)",
                source=str(path),
            )
        self.tokenizer = Tokenizer.from_file(str(path))
        ids: list[int] = []
        for text in stdlib_text(corpus_tokens * 6):
            ids.extend(self.tokenizer.encode(text, add_special_tokens=False).ids)
            if len(ids) >= corpus_tokens:
                break
        if len(ids) < 1000:
            raise InputError("the tokenizer produced almost no tokens", source=str(path))
        self.corpus = ids
        self.rng = random.Random(seed)

    def _slice(self, n: int, rng: random.Random | None = None) -> list[int]:
        rng = rng or self.rng
        out: list[int] = []
        while len(out) < n:
            start = rng.randrange(0, len(self.corpus) - 1)
            out.extend(self.corpus[start : start + (n - len(out))])
        return out

    def text(self, n: int, rng: random.Random | None = None) -> str:
        """Text of about ``n`` tokens (drawn with ``rng``, else the factory's own generator)."""
        return self.tokenizer.decode(self._slice(max(1, n), rng))

    def unique(self, n: int, tag: str, rng: random.Random | None = None) -> Prompt:
        """A prompt of about ``n`` tokens that starts with ``tag`` (no shared prefix); its text
        is drawn with ``rng`` (else the factory's own generator)."""
        head = f"# request {tag}\n"
        head_n = len(self.tokenizer.encode(head, add_special_tokens=False).ids)
        return Prompt(head + self.text(max(1, n - head_n), rng), max(n, head_n + 1))

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


class Conversations:
    """The ``shared-prefix`` workload: a few conversations whose context grows turn by turn.

    Each new request continues the next conversation in turn: its whole history plus a new
    turn. A conversation that would pass ``max_tokens`` starts over with a new first document
    of ``min_tokens``.
    """

    def __init__(
        self,
        factory: PromptFactory,
        min_tokens: int,
        max_tokens: int,
        sessions: int = 4,
        turns: int = 16,
        rng: random.Random | None = None,
        salt: str = "",
    ) -> None:
        self.factory = factory
        self.rng = rng
        self.salt = salt
        self.min_tokens = min_tokens
        self.max_tokens = max(max_tokens, min_tokens)
        self.turn_tokens = max(64, (self.max_tokens - self.min_tokens) // max(1, turns))
        self.history: list[tuple[str, int]] = []
        self.started = 0
        for _ in range(sessions):
            self.history.append(self._new())
        self.next = 0

    def _new(self) -> tuple[str, int]:
        self.started += 1
        tag = f"conversation {self.salt}{self.started}"
        return self.factory.unique(self.min_tokens, tag, self.rng).text, self.min_tokens

    def prompt(self) -> Prompt:
        i = self.next
        self.next = (self.next + 1) % len(self.history)
        text, tokens = self.history[i]
        if tokens + self.turn_tokens > self.max_tokens:
            text, tokens = self._new()
        else:
            text = text + "\n" + self.factory.text(self.turn_tokens, self.rng)
            tokens += self.turn_tokens
        self.history[i] = (text, tokens)
        return Prompt(text, tokens)


class SharedDocument:
    """The ``tokenize-heavy`` workload: one shared document, then a unique tail per request.

    The document is ``min_tokens - tail_tokens`` long; the tail is ``tail_tokens`` plus a uniform
    draw up to ``max_tokens - min_tokens``, so prompts span ``min_tokens..max_tokens`` and the
    prefix cache can serve the document's share of each one.
    """

    def __init__(
        self,
        factory: PromptFactory,
        min_tokens: int,
        max_tokens: int,
        tail_tokens: int = 64,
        seed: int = 0,
    ) -> None:
        self.factory = factory
        self.tail_tokens = max(1, min(tail_tokens, min_tokens - 1))
        self.doc_tokens = max(1, min_tokens - self.tail_tokens)
        self.spread = max(0, max_tokens - min_tokens)
        # Seeded on its own: every phase of a series reuses the document the cache already holds.
        self.document = factory.text(self.doc_tokens, random.Random(f"document-{seed}"))

    def prompt(self, tag: str, rng: random.Random | None = None) -> Prompt:
        rng = rng or self.factory.rng
        extra = rng.randint(0, self.spread) if self.spread else 0
        tail = self.factory.unique(self.tail_tokens + extra, tag, rng)
        return Prompt(self.document + "\n" + tail.text, self.doc_tokens + 1 + tail.tokens)

    @property
    def expected_prefix_share(self) -> float:
        """The share of an average prompt that the document (the cacheable part) makes up."""
        return self.doc_tokens / (self.doc_tokens + 1 + self.tail_tokens + self.spread / 2)
