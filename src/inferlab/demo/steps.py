"""The demo's first steps: probe this machine, the floor for the served GGUF, and the
engine measured alone (llama.cpp's own benchmarks) before any server starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.demo.config import DemoConfig
from inferlab.errors import InferlabError

if TYPE_CHECKING:
    from inferlab.engines.result import EngineBench
    from inferlab.physics.floor import Floor
    from inferlab.probe.machine import ProbeResult

# The engine-alone measurement's budget: the demo stays within a few minutes.
ENGINE_TIMEOUT_S, ENGINE_TIMEOUT_QUICK_S = 300.0, 90.0


def probe(quick: bool) -> ProbeResult:
    """Step 1: this machine's read bandwidth and FLOPS, saved as `this-machine`."""
    from inferlab.probe.machine import run_probe, save
    from inferlab.units import fmt_bandwidth

    print("1/4 probe: this machine's memory bandwidth and FLOPS ...", flush=True)
    # 1 GiB arrays even when quick: 256 MiB partly fits this EPYC's cache (55 vs 32 GB/s).
    pr = run_probe(
        array_bytes=1 << 30,
        repeats=4 if quick else 10,
        gpu=False,
    )
    save(pr)
    print(
        f"    read {fmt_bandwidth(pr.bandwidth.read_bytes_per_s)} (the floor uses this: decode "
        f"reads weights and KV), copy {fmt_bandwidth(pr.bandwidth.copy_bytes_per_s)} "
        f"(read+write), fp32 matmul {pr.flops.fp32_flops_per_s / 1e9:.0f} GFLOP/s"
    )
    return pr


def floor(gguf: Path, prompt_tokens: int, output_tokens: int) -> Floor:
    """Step 2: the floor for the served GGUF's real tensor bytes on this machine, at one
    stream and the sweep's mean context: the figure the c=1 row and the reading state."""
    from inferlab.metrics.compare import compare_at
    from inferlab.physics.floor import Floor
    from inferlab.specs.cost import derive_cost
    from inferlab.specs.hardware import get_hardware
    from inferlab.specs.resolve import resolve_model
    from inferlab.units import fmt_bandwidth, fmt_bytes

    hw = get_hardware("this-machine")
    cost = derive_cost(resolve_model(str(gguf)))
    context = int(prompt_tokens + output_tokens / 2)  # as metrics.compare.compare_level
    at = compare_at(cost, hw, 1, context, None)
    step = at.predicted_step_time_s
    print(
        f"2/4 floor: {gguf.name}: {fmt_bytes(at.bytes_per_step)} of real tensor and KV "
        f"bytes per step (one stream, {context} tokens of context) / "
        f"{fmt_bandwidth(hw.bandwidth_bytes_per_s)} = {step * 1e3:.2f} ms "
        f"(<= {1 / step:.0f} tok/s per user)",
        flush=True,
    )
    return Floor(cost, hw)


def engine_alone(
    cfg: DemoConfig, gguf: Path, threads: int, out: Path
) -> tuple[EngineBench | None, dict[str, str]]:
    """llama.cpp's own benchmarks before the sweep, same model, threads, context and lengths.

    Returns the result (None if it cannot run: one line says why, and the demo goes on
    with floor and served only) and the fact the report's setup table shows.
    """
    from inferlab.engines.llama_bench import RESULT_NAME, EngineBenchConfig, run_engine_bench
    from inferlab.jsonio import write_json

    if not cfg.engine_bench:
        return None, {"engine_alone": "skipped (--no-engine-bench)"}
    levels, out_tokens = list(cfg.levels), cfg.output_tokens
    ebc = EngineBenchConfig(
        gguf,
        threads,
        cfg.levels,
        cfg.prompt_tokens,
        out_tokens,
        ctx_per_slot=cfg.prompt_tokens + out_tokens + 64,  # as the server's slots
        repetitions=2 if cfg.quick else 3,
        timeout_s=ENGINE_TIMEOUT_QUICK_S if cfg.quick else ENGINE_TIMEOUT_S,
    )
    print(
        f"    engine alone: llama-batched-bench + llama-bench, {threads} thread(s), batches "
        f"{levels}, {ebc.prompt_tokens} -> {out_tokens} tokens, no HTTP ...",
        flush=True,
    )
    try:
        eb = run_engine_bench(ebc)
    except InferlabError as e:
        print(f"    engine alone: not measured: {e}; the table shows floor and served only")
        return None, {"engine_alone": f"not measured: {e}"}
    write_json(out / RESULT_NAME, eb)
    steps = ", ".join(f"b={s.batch} {s.step_time_s * 1e3:.1f}" for s in eb.steps)
    line = (
        f"step ms {steps}; prefill of {eb.prefill.n_tokens} tokens {eb.prefill.mean_s:.3g} s; "
        f"noise {eb.noise_rel:.1%}; CPU {eb.cpu_fraction:.0%}"
    )
    print(f"    engine alone: {line}", flush=True)
    return eb, {"engine_alone": f"{line} ({RESULT_NAME})"}


def machine_facts(pr: ProbeResult, threads: int, cores: int) -> dict[str, Any]:
    """Facts the report shows beside the sweep: the core split and the probe's figures."""
    return {
        "server_threads": threads,
        "machine_cores": cores,
        "core_split": f"server {threads} thread(s), client the remaining {cores - threads} core(s)",
        "probe_read_bytes_per_s": pr.bandwidth.read_bytes_per_s,
        "probe_copy_bytes_per_s": pr.bandwidth.copy_bytes_per_s,
        "probe_fp32_flops_per_s": pr.flops.fp32_flops_per_s,
        "bandwidth_basis": "read rate: decode streams weights and KV in and writes ~nothing",
    }
