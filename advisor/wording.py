"""How numbers read for people, the same on the dashboard and in the monthly report: cores per
GPU as short as they read exactly, and counts with the noun in the right number."""

from __future__ import annotations


def cores_text(value: float) -> str:
    """Cores (per GPU) as short as they read exactly: "4", "2.5", "1,024", "0.125". A fraction
    keeps three significant digits, so that an eighth does not read as "0.13"."""
    if abs(value) >= 1.0:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def count_words(n: int, noun: str, plural: str | None = None) -> str:
    """A count and its noun: "1 job", "2 jobs", "1 CPU core", "1,200 GPU jobs"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def cores_per_gpu_words(value: float) -> str:
    """Cores per GPU in a sentence: "1 CPU core", "0.125 CPU cores", "2 CPU cores"."""
    text = cores_text(value)
    return f"{text} CPU core{'' if text == '1' else 's'}"
