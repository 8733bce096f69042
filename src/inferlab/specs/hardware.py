"""Hardware: peak memory bandwidth, dense peak FLOPS per dtype, capacity, interconnect.

The catalogue is data (data/hardware.toml, a source per entry), checked at
load time. `this-machine` is what `inferlab probe` measured, read from the cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from inferlab.errors import SpecError
from inferlab.specs.datafiles import cache_base, read_catalogue

if TYPE_CHECKING:  # a catalogue entry needs no path: pathlib loads for this-machine only
    from pathlib import Path

THIS_MACHINE = "this-machine"


@dataclass(frozen=True, slots=True)
class HardwareSpec:
    key: str
    name: str
    bandwidth_bytes_per_s: float
    memory_bytes: float
    interconnect_bytes_per_s: float
    flops_per_s: dict[str, float]  # dense peak per compute dtype
    source: str

    def peak_flops(self, dtype: str) -> float:
        """Dense peak for `dtype`; a dtype the chip lacks runs at its bf16/fp16/fp32 rate."""
        for d in (dtype, "bf16", "fp16", "fp32"):
            if d in self.flops_per_s:
                return self.flops_per_s[d]
        # No FLOPS figure at all (only a bandwidth was stated): compute never binds.
        return max(self.flops_per_s.values(), default=float("inf"))

    def scaled(self, devices: int) -> HardwareSpec:
        """N devices under tensor parallelism: bandwidths, FLOPS and memory add."""
        if devices == 1:
            return self
        return replace(
            self,
            key=f"{self.key}x{devices}",
            name=f"{devices} x {self.name}",
            bandwidth_bytes_per_s=self.bandwidth_bytes_per_s * devices,
            memory_bytes=self.memory_bytes * devices,
            flops_per_s={k: v * devices for k, v in self.flops_per_s.items()},
        )


def cache_dir() -> Path:
    from pathlib import Path

    return Path(cache_base())


def this_machine_path() -> Path:
    return cache_dir() / "this-machine.json"


def _check(key: str, e: dict[str, Any]) -> HardwareSpec:
    need = ("name", "bandwidth_tb_s", "memory_gb", "interconnect_gb_s", "flops_tflops", "source")
    missing = [k for k in need if k not in e]
    if missing:
        raise SpecError(f"hardware entry {key!r} lacks {', '.join(missing)}")
    if e["bandwidth_tb_s"] <= 0 or not e["flops_tflops"]:
        raise SpecError(f"hardware entry {key!r}: bandwidth and FLOPS must be positive")
    return HardwareSpec(
        key=key,
        name=e["name"],
        bandwidth_bytes_per_s=float(e["bandwidth_tb_s"]) * 1e12,
        memory_bytes=float(e["memory_gb"]) * 1e9,
        interconnect_bytes_per_s=float(e["interconnect_gb_s"]) * 1e9,
        flops_per_s={k: float(v) * 1e12 for k, v in e["flops_tflops"].items()},
        source=e["source"],
    )


def catalogue() -> dict[str, HardwareSpec]:
    return {k: _check(k, v) for k, v in read_catalogue("hardware.toml").items()}


def load_this_machine() -> HardwareSpec:
    path = this_machine_path()
    if not path.exists():
        raise SpecError(
            f"no measurement of this machine yet: run `inferlab probe` first (it saves {path})"
        )
    import json  # only here: the catalogue is TOML

    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        hw = HardwareSpec(
            key=THIS_MACHINE,
            name=str(d["name"]),
            bandwidth_bytes_per_s=float(d["bandwidth_bytes_per_s"]),
            memory_bytes=float(d["memory_bytes"]),
            interconnect_bytes_per_s=0.0,
            flops_per_s={str(k): float(v) for k, v in d["flops_per_s"].items()},
            source=str(d["source"]),
        )
    except (KeyError, ValueError, TypeError, AttributeError, RecursionError, OSError) as e:
        # ValueError covers bad JSON and a file that is not UTF-8 text
        raise SpecError(f"{path} is damaged ({_short(e)}); run `inferlab probe` again") from e
    figures = [hw.bandwidth_bytes_per_s, hw.memory_bytes, *hw.flops_per_s.values()]
    if not all(math.isfinite(x) and x > 0 for x in figures):
        raise SpecError(f"{path} is damaged (a figure is not positive); run `inferlab probe` again")
    return hw


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".splitlines()[0]
    return text if len(text) <= 80 else text[:77] + "..."


def get_hardware(name: str) -> HardwareSpec:
    key = name.strip().lower()
    if key == THIS_MACHINE:
        return load_this_machine()
    cat = catalogue()
    if key not in cat:
        import difflib  # only to word the refusal

        close = difflib.get_close_matches(key, [*cat, THIS_MACHINE], n=3, cutoff=0.4)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise SpecError(
            f"unknown hardware {name!r}.{hint} Known: {', '.join([*cat, THIS_MACHINE])}; "
            "or state --bandwidth and --flops."
        )
    return cat[key]


STATED = HardwareSpec(
    key="stated",
    name="stated hardware",
    bandwidth_bytes_per_s=0.0,
    memory_bytes=0.0,
    interconnect_bytes_per_s=0.0,
    flops_per_s={},
    source="stated",
)


def with_overrides(
    hw: HardwareSpec,
    bandwidth_bytes_per_s: float | None = None,
    flops_per_s: float | None = None,
    memory_bytes: float | None = None,
) -> HardwareSpec:
    """A stated figure replaces the catalogue's (a stated FLOPS applies to every dtype)."""
    stated = [bandwidth_bytes_per_s, flops_per_s, memory_bytes]
    if all(v is None for v in stated):
        return hw
    flops = dict(hw.flops_per_s)
    if flops_per_s is not None:
        flops = {k: flops_per_s for k in flops} or {"bf16": flops_per_s}
    return replace(
        hw,
        bandwidth_bytes_per_s=bandwidth_bytes_per_s or hw.bandwidth_bytes_per_s,
        flops_per_s=flops,
        memory_bytes=memory_bytes if memory_bytes is not None else hw.memory_bytes,
        source=hw.source if hw is STATED else hw.source + "; some figures stated",
    )
