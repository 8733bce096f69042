"""Run the probes and save the result as the hardware entry `this-machine`."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass
from typing import Any

from inferlab.jsonio import write_json
from inferlab.probe.compute import FlopsResult, measure_flops
from inferlab.probe.gpu import GpuResult, probe_gpu
from inferlab.probe.memory import BandwidthResult, measure_bandwidth
from inferlab.specs.hardware import this_machine_path


@dataclass(frozen=True, slots=True)
class ProbeResult:
    cpu: str
    cores: int
    memory_bytes: float
    bandwidth: BandwidthResult
    flops: FlopsResult
    gpu: GpuResult | None
    seconds: float

    def hardware_entry(self) -> dict[str, Any]:
        """The figures the floor uses. Decode reads weights and KV, so it is the READ rate."""
        if self.gpu is not None:
            g = self.gpu
            return {
                "name": f"this machine: {g.name}",
                "bandwidth_bytes_per_s": g.read_bytes_per_s,
                "memory_bytes": g.memory_bytes,
                "flops_per_s": {"bf16": g.bf16_flops_per_s, "fp16": g.bf16_flops_per_s},
                "source": f"inferlab probe {time.strftime('%Y-%m-%d')}: {g.library}, "
                "device events; bandwidth = reduction read rate",
            }
        return {
            "name": f"this machine: {self.cpu} ({self.cores} cores)",
            "bandwidth_bytes_per_s": self.bandwidth.read_bytes_per_s,
            "memory_bytes": self.memory_bytes,
            "flops_per_s": {
                "fp32": self.flops.fp32_flops_per_s,
                "fp64": self.flops.fp64_flops_per_s,
            },
            "source": f"inferlab probe {time.strftime('%Y-%m-%d')}: numpy read over "
            f"{self.bandwidth.array_bytes / 1e9:.2g} GB x {self.bandwidth.threads} threads, "
            f"best of {self.bandwidth.repeats}; matmul n={self.flops.n} ({self.flops.blas})",
        }

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "hardware_entry": self.hardware_entry()}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0.0


def run_probe(array_bytes: int = 1 << 30, repeats: int = 10, gpu: bool = True) -> ProbeResult:
    t = time.perf_counter()
    bw = measure_bandwidth(array_bytes, repeats)
    fl = measure_flops()
    g = probe_gpu() if gpu else None
    return ProbeResult(
        _cpu_name(), os.cpu_count() or 1, _memory_bytes(), bw, fl, g, time.perf_counter() - t
    )


def save(result: ProbeResult) -> None:
    path = this_machine_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = result.hardware_entry()
    entry["probe"] = result.to_json()
    write_json(path, entry)
