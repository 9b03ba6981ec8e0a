"""Prices with dates and sources, site overrides, and the research's 1.5% cost reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.pricing import PRICING_COLUMNS, cost_delta, load_pricing


def test_the_researchs_reference_16_vcpus_at_5_cents_on_a_p5_is_about_1_5_percent():
    p5 = load_pricing().instance_for("H100")
    assert p5.name == "p5.48xlarge" and p5.usd_per_hour == 55.04 and p5.gpus == 8
    delta = cost_delta(16, 8, p5, 0.05)
    assert delta.usd_per_hour_delta == pytest.approx(0.80)
    assert delta.gpu_share_usd_per_hour == pytest.approx(55.04)
    assert delta.cost_delta_pct == pytest.approx(1.4535, abs=1e-3)


def test_every_builtin_price_has_a_date_and_a_source_and_every_family_is_priced():
    book = load_pricing()
    assert {"H100", "H200", "B200", "A100", "L40S"} <= set(book.gpu_types())
    assert book.vcpu.usd_per_vcpu_hour == 0.0504
    for inst in book.instances:
        assert inst.as_of.year >= 2026 and inst.source
    assert book.instance_for("h200").name == "p5en.48xlarge"
    assert book.instance_for("A100").vcpus_per_gpu == 12


def test_a_site_file_overrides_the_builtin_rates(tmp_path: Path):
    site = tmp_path / "site.csv"
    site.write_text(
        ",".join(PRICING_COLUMNS) + "\n"
        "vcpu,chargeback,,,,,0.02,,2026-11-01,our finance team,\n"
        "instance,dgx-h100,H100,8,224,40,,,2026-11-01,our finance team,\n"
    )
    book = load_pricing(site)
    assert book.vcpu.usd_per_vcpu_hour == 0.02
    assert book.instance_for("H100").name == "dgx-h100"
    assert book.instance_for("B200").name == "p6-b200.48xlarge"  # the rest still built in


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("instance,x,H100,8,192,-3,,,2026-01-01,me,", "usd_per_hour"),
        ("instance,x,H100,eight,192,3,,,2026-01-01,me,", "gpus"),
        ("instance,x,,8,192,3,,,2026-01-01,me,", "gpu_type"),
        ("vcpu,x,,,,,0.05,,yesterday,me,", "as_of"),
        ("vcpu,x,,,,,0.05,,2026-01-01,,", "source"),
        ("gpu,x,,,,,0.05,,2026-01-01,me,", "kind"),
    ],
)
def test_a_bad_site_price_names_the_file_line_and_field(tmp_path: Path, row: str, field: str):
    site = tmp_path / "rates.csv"
    site.write_text(",".join(PRICING_COLUMNS) + "\nvcpu,ok,,,,,0.03,,2026-01-01,me,\n" + row + "\n")
    with pytest.raises(InputError, match=rf"rates.csv:3, field {field}"):
        load_pricing(site)
