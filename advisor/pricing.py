"""Prices: GPU instances and the per-vCPU price, each with its date and source; the cost delta.

The built-in table is ``data/pricing/aws.csv`` (AWS on-demand, Linux, USD per hour; figures and
sources from the research notes, ``llm-bench-tools-and-pricing.md`` section 3). A site's own
chargeback rates come from ``--pricing FILE`` in the same format; its rows win over the built-in
ones (its first ``vcpu`` row becomes the per-vCPU price, its instances replace those of the same
GPU type). Columns:

``kind`` (``instance`` | ``vcpu``), ``name``, ``gpu_type``, ``gpus``, ``vcpus``, ``usd_per_hour``
(instances), ``usd_per_vcpu_hour`` (vcpu rows), ``region``, ``as_of`` (YYYY-MM-DD), ``source``,
``notes``. For each GPU type the first instance row is its reference instance; the first vcpu
row is the per-vCPU price.

Cost of more cores (:func:`cost_delta`): extra vCPUs x the per-vCPU price, against the GPU
share of the instance (instance price x job GPUs / instance GPUs). There is no SKU that sells
extra vCPUs on a GPU instance: the price is an opportunity cost, the cores a Slurm job takes
from other jobs.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError, NotFoundError
from advisor.resources import shipped_data

PRICING_COLUMNS: tuple[str, ...] = (
    "kind",
    "name",
    "gpu_type",
    "gpus",
    "vcpus",
    "usd_per_hour",
    "usd_per_vcpu_hour",
    "region",
    "as_of",
    "source",
    "notes",
)


@dataclass(frozen=True)
class InstancePrice:
    """An on-demand GPU instance: its GPUs, vCPUs and hourly price, with date and source."""

    name: str
    gpu_type: str
    gpus: int
    vcpus: int
    usd_per_hour: float
    region: str | None
    as_of: dt.date
    source: str

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.usd_per_hour / self.gpus

    @property
    def vcpus_per_gpu(self) -> float:
        return self.vcpus / self.gpus


@dataclass(frozen=True)
class VcpuPrice:
    """The price of one vCPU for one hour, with its basis, date and source."""

    basis: str
    usd_per_vcpu_hour: float
    region: str | None
    as_of: dt.date
    source: str


@dataclass(frozen=True)
class PriceBook:
    """All prices in force: instances (reference first per GPU type) and per-vCPU prices."""

    instances: tuple[InstancePrice, ...]
    vcpu_prices: tuple[VcpuPrice, ...]
    files: tuple[str, ...]

    @property
    def vcpu(self) -> VcpuPrice:
        """The per-vCPU price used for cost deltas (the first vcpu row)."""
        if not self.vcpu_prices:
            raise InputError(
                "no vcpu row: a per-vCPU price is needed", source=", ".join(self.files)
            )
        return self.vcpu_prices[0]

    def find_instance(self, gpu_type: str) -> InstancePrice | None:
        """The reference instance of a GPU family (case-insensitive), or None without a price."""
        low = gpu_type.lower()
        for inst in self.instances:
            if inst.gpu_type.lower() == low:
                return inst
        return None

    def no_price_reason(self, gpu_type: str) -> str:
        """Why a GPU family has no cost: no instance price, the known ones, and the fix."""
        known = sorted({i.gpu_type for i in self.instances})
        return (
            f"no instance price for GPU type {gpu_type!r} (known: {', '.join(known)}); "
            "add an instance row for it in a file given with --pricing FILE"
        )

    def instance_for(self, gpu_type: str) -> InstancePrice:
        """The reference instance of a GPU family (case-insensitive); NotFoundError if none."""
        inst = self.find_instance(gpu_type)
        if inst is None:
            raise NotFoundError(self.no_price_reason(gpu_type))
        return inst

    def gpu_types(self) -> list[str]:
        return list(dict.fromkeys(i.gpu_type for i in self.instances))


def builtin_pricing_path() -> Path:
    """The shipped price table ``data/pricing/aws.csv`` (advisor.resources)."""
    return shipped_data("pricing", "aws.csv")


def _num(row: dict[str, str], name: str, src: str, line: int, *, integer: bool = False) -> float:
    text = (row.get(name) or "").strip()
    if not text:
        raise InputError("is empty", source=src, line=line, field=name)
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{text!r} is not a number", source=src, line=line, field=name) from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(
            f"must be a positive number, got {text!r}", source=src, line=line, field=name
        )
    if integer and value != int(value):
        raise InputError(f"{text!r} is not a whole number", source=src, line=line, field=name)
    return value


def read_pricing(path: str | os.PathLike[str]) -> tuple[list[InstancePrice], list[VcpuPrice]]:
    """Read one pricing CSV; any bad row fails with its file, line and field."""
    p = Path(path)
    src = str(p)
    try:
        fh = p.open(newline="", encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(f"{p}: no such pricing file") from exc
    instances: list[InstancePrice] = []
    vcpus: list[VcpuPrice] = []
    try:
        with fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in PRICING_COLUMNS if c not in header]
            if missing:
                raise InputError(
                    f"header lacks {', '.join(missing)} (columns: {','.join(PRICING_COLUMNS)})",
                    source=src,
                    line=1,
                    field=missing[0],
                )
            for row in reader:
                line = reader.line_num
                if None in row:
                    raise InputError("more fields than the header", source=src, line=line)
                kind = (row.get("kind") or "").strip()
                source = (row.get("source") or "").strip()
                if not source:
                    raise InputError(
                        "is empty; every price needs its source",
                        source=src,
                        line=line,
                        field="source",
                    )
                as_of_text = (row.get("as_of") or "").strip()
                try:
                    as_of = dt.date.fromisoformat(as_of_text)
                except ValueError:
                    raise InputError(
                        f"{as_of_text!r} is not a date (YYYY-MM-DD)",
                        source=src,
                        line=line,
                        field="as_of",
                    ) from None
                region = (row.get("region") or "").strip() or None
                name = (row.get("name") or "").strip()
                if not name:
                    raise InputError("is empty", source=src, line=line, field="name")
                if kind == "instance":
                    gpu_type = (row.get("gpu_type") or "").strip()
                    if not gpu_type:
                        raise InputError(
                            "is empty; an instance needs its GPU type",
                            source=src,
                            line=line,
                            field="gpu_type",
                        )
                    instances.append(
                        InstancePrice(
                            name=name,
                            gpu_type=gpu_type,
                            gpus=int(_num(row, "gpus", src, line, integer=True)),
                            vcpus=int(_num(row, "vcpus", src, line, integer=True)),
                            usd_per_hour=_num(row, "usd_per_hour", src, line),
                            region=region,
                            as_of=as_of,
                            source=source,
                        )
                    )
                elif kind == "vcpu":
                    vcpus.append(
                        VcpuPrice(
                            basis=name,
                            usd_per_vcpu_hour=_num(row, "usd_per_vcpu_hour", src, line),
                            region=region,
                            as_of=as_of,
                            source=source,
                        )
                    )
                else:
                    raise InputError(
                        f"{kind!r} is not instance or vcpu", source=src, line=line, field="kind"
                    )
    except UnicodeDecodeError:
        # (decoding runs a buffer ahead of the reader: the line is found in the bytes)
        raw = p.read_bytes()
        try:
            raw.decode("utf-8")
            at = 0
        except UnicodeDecodeError as exc:
            at = exc.start
        raise InputError(
            f"not UTF-8 text (byte {raw[at]:#04x}); save the file as UTF-8",
            source=src,
            line=raw.count(b"\n", 0, at) + 1,
        ) from None
    return instances, vcpus


def load_pricing(site_file: str | os.PathLike[str] | None = None) -> PriceBook:
    """The built-in prices, with a site's own file (if given) taking precedence."""
    files = []
    instances: list[InstancePrice] = []
    vcpus: list[VcpuPrice] = []
    if site_file is not None:
        si, sv = read_pricing(site_file)
        instances.extend(si)
        vcpus.extend(sv)
        files.append(str(site_file))
    bi, bv = read_pricing(builtin_pricing_path())
    instances.extend(bi)
    vcpus.extend(bv)
    files.append(str(builtin_pricing_path()))
    return PriceBook(tuple(instances), tuple(vcpus), tuple(files))


@dataclass(frozen=True)
class CostDelta:
    """What extra cores cost per hour, and as a share of the job's GPU share of the instance."""

    extra_vcpus: float
    usd_per_vcpu_hour: float
    usd_per_hour_delta: float
    gpu_share_usd_per_hour: float
    cost_delta_pct: float


def cost_delta(
    extra_vcpus: float, gpus: int, instance: InstancePrice, usd_per_vcpu_hour: float
) -> CostDelta:
    """Extra vCPUs x price per vCPU-hour against (instance price x gpus / instance GPUs).

    The research's reference: 16 vCPU x $0.05 = $0.80/h against $55.04/h (8 x H100) = 1.45%.
    """
    if gpus <= 0:
        raise InputError(f"gpus must be positive, got {gpus}", field="gpus")
    share = instance.usd_per_hour * gpus / instance.gpus
    delta = extra_vcpus * usd_per_vcpu_hour
    return CostDelta(
        extra_vcpus=extra_vcpus,
        usd_per_vcpu_hour=usd_per_vcpu_hour,
        usd_per_hour_delta=delta,
        gpu_share_usd_per_hour=share,
        cost_delta_pct=100.0 * delta / share,
    )
