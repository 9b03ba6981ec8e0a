"""What machine a run is on: GPU model and count (NVML, else ``nvidia-smi``), its canonical
family (H100, H200, ...), the GPUs' PCI bus ids (for NUMA placement), the CPU model, and the
engine's version. Everything is optional: on a CPU-only machine the platform is ``CPU``.
Also a sampler of GPU utilisation during a phase.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from advisor.gputypes import canonical_gpu_type
from advisor.harness.records import Platform
from advisor.harness.serve.ticker import Ticker


@dataclass(frozen=True)
class GpuInfo:
    names: tuple[str, ...]
    pci_bus_ids: tuple[str, ...]


def gpu_info() -> GpuInfo:
    """The visible GPUs' names and PCI bus ids (empty when none are found)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            names, buses = [], []
            for i in range(pynvml.nvmlDeviceGetCount()):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                name = pynvml.nvmlDeviceGetName(h)
                names.append(name.decode() if isinstance(name, bytes) else str(name))
                bus = pynvml.nvmlDeviceGetPciInfo(h).busId
                buses.append(bus.decode() if isinstance(bus, bytes) else str(bus))
            return GpuInfo(tuple(names), tuple(buses))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML library, no driver, no GPU
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,pci.bus_id", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            ).stdout
            rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line]
            return GpuInfo(tuple(r[0] for r in rows), tuple(r[1] for r in rows if len(r) > 1))
        except (OSError, subprocess.SubprocessError):
            pass
    return GpuInfo((), ())


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def engine_version(engine: str, env: Mapping[str, str] | None = None) -> str | None:
    """The installed version of the engine's Python package (vllm, sglang, transformers)."""
    package = {"vllm": "vllm", "sglang": "sglang", "transformers": "transformers"}.get(engine)
    if package is None:
        return None
    import sys

    try:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import importlib.metadata as m; print(m.version({package!r}))",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **(env or {})},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def detect_platform(engine: str, env: Mapping[str, str] | None = None) -> tuple[Platform, GpuInfo]:
    gpus = gpu_info()
    name = gpus.names[0] if gpus.names else None
    family = canonical_gpu_type(name) if name else "CPU"
    return (
        Platform(
            platform=family or "CPU",
            gpu_name=name,
            gpu_count=len(gpus.names),
            cpu_model=cpu_model(),
            cpu_count=os.cpu_count() or 0,
            hostname=socket.gethostname(),
            engine_version=engine_version(engine, env),
        ),
        gpus,
    )


class GpuSampler:
    """Mean GPU utilisation (percent, over all GPUs) sampled every ``period_s`` in a thread."""

    def __init__(self, period_s: float = 0.5) -> None:
        self.period_s = period_s
        self.samples: list[float] = []
        self._ticker: Ticker | None = None

    def __enter__(self) -> GpuSampler:
        try:
            import pynvml

            pynvml.nvmlInit()
            handles = [
                pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
            ]
        except Exception:
            return self
        if not handles:
            return self

        def tick() -> bool:
            try:
                vals = [pynvml.nvmlDeviceGetUtilizationRates(h).gpu for h in handles]
            except Exception:
                return False
            self.samples.append(sum(vals) / len(vals))
            return True

        self._ticker = Ticker(self.period_s, tick)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ticker is not None:
            self._ticker.stop()

    @property
    def mean_percent(self) -> float | None:
        return sum(self.samples) / len(self.samples) if self.samples else None
