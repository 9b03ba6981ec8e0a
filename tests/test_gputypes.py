"""GPU type normalisation: site names to canonical families, unknown names kept."""

from __future__ import annotations

import json

import pytest

from advisor.errors import InputError
from advisor.gputypes import canonical_gpu_type, load_site_mapping


@pytest.mark.parametrize(
    ("raw", "family"),
    [
        ("h100", "H100"),
        ("h100_80gb", "H100"),
        ("nvidia_h100_80gb_hbm3", "H100"),
        ("H100-SXM5-80GB", "H100"),
        ("h200", "H200"),
        ("nvidia_h200", "H200"),
        ("gh200", "GH200"),
        ("b200", "B200"),
        ("rtx_pro_6000", "RTX PRO 6000 Blackwell"),
        ("nvidia_rtx_pro_6000_blackwell_server_edition", "RTX PRO 6000 Blackwell"),
        ("a100", "A100"),
        ("a100-sxm4-80gb", "A100"),
        ("nvidia_a100_80gb_pcie", "A100"),
        ("a100_3g.40gb", "A100"),
        ("l40s", "L40S"),
        ("l40", "L40"),
        ("l4", "L4"),
        ("v100", "V100"),
        ("volta", "V100"),
        ("rtx2080ti", "RTX 2080 Ti"),
        ("a10g", "A10G"),
    ],
)
def test_site_names_map_to_their_family(raw, family):
    assert canonical_gpu_type(raw) == family


def test_unknown_names_are_kept_raw_and_untyped_is_none():
    assert canonical_gpu_type("quantum_widget") == "quantum_widget"
    assert canonical_gpu_type("") is None
    assert canonical_gpu_type(None) is None


def test_a_site_mapping_wins_over_the_builtin_patterns(tmp_path):
    f = tmp_path / "map.json"
    f.write_text(json.dumps({"a100l": "A100", "big.*": "H200", "h100": "H100 NVL"}))
    site = load_site_mapping(f)
    assert canonical_gpu_type("a100l", site) == "A100"
    assert canonical_gpu_type("bigcard", site) == "H200"
    assert canonical_gpu_type("H100", site) == "H100 NVL"
    assert canonical_gpu_type("v100", site) == "V100"


def test_a_broken_mapping_file_names_the_file_and_line(tmp_path):
    f = tmp_path / "map.json"
    f.write_text('{\n "a": 1,\n')
    with pytest.raises(InputError, match=r"map\.json:\d+"):
        load_site_mapping(f)
    f.write_text('["a100"]')
    with pytest.raises(InputError, match="JSON object"):
        load_site_mapping(f)
