"""GPU type names: from the many names sites give them to canonical families.

Sites name the same card ``h100``, ``h100_80gb``, ``nvidia_h100_80gb_hbm3``, ``H100-SXM5-80GB``;
reports group by the family (``H100``). :func:`canonical_gpu_type` maps a raw name through the
built-in patterns plus a site's own mapping; an unknown name is kept as given (never dropped).

A site mapping is a JSON object ``{"raw name or regex": "Family"}`` (``ADVISOR_GPU_TYPES`` or
``--gpu-types FILE``); its entries win over the built-in ones. Keys are matched case-insensitively
against the whole raw name, first as an exact name, then as a regular expression.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from advisor.errors import InputError

GPU_TYPES_ENV = "ADVISOR_GPU_TYPES"

# Order matters: the first pattern that matches anywhere in the lower-cased name wins, so
# more specific families (GH200 before H200, H100 NVL before plain H100) come first.
BUILTIN: tuple[tuple[str, str], ...] = (
    (r"gb300", "GB300"),
    (r"gb200", "GB200"),
    (r"gh200", "GH200"),
    (
        r"rtx[_ -]?pro[_ -]?6000|rtxpro6000|pro6000|rtx_?6000_?blackwell|rtx6000bw",
        "RTX PRO 6000 Blackwell",
    ),
    (r"b300", "B300"),
    (r"b200", "B200"),
    (r"h200", "H200"),
    (r"h100", "H100"),
    (r"h800", "H800"),
    (r"h20(?!\d)", "H20"),
    (r"a100", "A100"),
    (r"a800", "A800"),
    (r"a40(?!\d)", "A40"),
    (r"a30(?!\d)", "A30"),
    (r"a10g", "A10G"),
    (r"a10(?!\d)", "A10"),
    (r"a6000|rtx_?a6000", "RTX A6000"),
    (r"a5000", "RTX A5000"),
    (r"a4000", "RTX A4000"),
    (r"l40s", "L40S"),
    (r"l40(?!\d)", "L40"),
    (r"l4(?!\d)", "L4"),
    (r"v100", "V100"),
    (r"p100", "P100"),
    (r"t4(?!\d)", "T4"),
    (r"rtx_?8000|quadro_?rtx_?8000", "Quadro RTX 8000"),
    (r"rtx_?6000|quadro_?rtx_?6000", "Quadro RTX 6000"),
    (r"5090", "RTX 5090"),
    (r"4090", "RTX 4090"),
    (r"3090", "RTX 3090"),
    (r"2080_?ti|2080ti", "RTX 2080 Ti"),
    (r"mi300x", "MI300X"),
    (r"mi250", "MI250"),
    (r"mi210", "MI210"),
    # (not `tesla`: a brand over K20 to V100 and T4; such a name stays unknown unless the site
    # maps it)
    (r"^volta$", "V100"),
)

_BUILTIN_RE = tuple((re.compile(p), fam) for p, fam in BUILTIN)


def load_site_mapping(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Read a site's mapping (JSON object raw -> family) from ``path`` or ``$ADVISOR_GPU_TYPES``."""
    if path is None:
        path = os.environ.get(GPU_TYPES_ENV) or None
    if path is None:
        return {}
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("no such GPU type mapping file", source=str(p)) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source=str(p), line=exc.lineno) from exc
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise InputError('must be a JSON object of strings, e.g. {"a100l": "A100"}', source=str(p))
    return data


@lru_cache(maxsize=4096)
def _builtin(name: str) -> str | None:
    low = name.lower()
    for rx, fam in _BUILTIN_RE:
        if rx.search(low):
            return fam
    return None


def canonical_gpu_type(raw: str | None, site: Mapping[str, str] | None = None) -> str | None:
    """The canonical family of a raw GPU type name; the raw name itself when unknown.

    ``None`` or an empty name (an untyped ``gres/gpu``) gives ``None``.
    """
    if raw is None:
        return None
    name = raw.strip()
    if not name:
        return None
    if site:
        low = name.lower()
        for key, fam in site.items():
            if key.lower() == low:
                return fam
        for key, fam in site.items():
            try:
                if re.fullmatch(key, name, flags=re.IGNORECASE):
                    return fam
            except re.error:
                continue
    return _builtin(name) or name


def known_families() -> list[str]:
    """Every canonical family the built-in patterns produce, in pattern order, without repeats."""
    return list(dict.fromkeys(fam for _, fam in BUILTIN))
