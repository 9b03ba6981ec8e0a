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


def range_text(low: float, high: float, digits: int = 2, unit: str = "x", prefix: str = "") -> str:
    """An interval as a person reads it: "2.92x to 4.06x", "$1,900 to $3,100", or one number
    when both ends are the same once rounded (never "4.45x to 4.45x")."""
    lo, hi = f"{prefix}{low:,.{digits}f}{unit}", f"{prefix}{high:,.{digits}f}{unit}"
    return lo if lo == hi else f"{lo} to {hi}"


def gpu_hours_range_text(low: float, high: float) -> str:
    """GPU-hours between two bounds as a person reads them: "1,370 to 6,702 GPU-h",
    "0.42 to 3.1 GPU-h", "< 0.01 GPU-h" (never "3.89e-06 to 3.22e-05" or "0-0")."""
    if high < 0.005:
        return "< 0.01 GPU-h"
    digits = 0 if high >= 10 else 1 if high >= 1 else 2
    return f"{range_text(low, high, digits, '')} GPU-h"


def age_words(age_days: float) -> str:
    """A data age as every surface says it: whole days from now to the newest record (submit
    or end), "705 days old", "1 day old" or "less than a day old"."""
    if age_days < 1:
        return "less than a day old"
    days = round(age_days)
    return f"{days:,} day{'s' * (days != 1)} old"
