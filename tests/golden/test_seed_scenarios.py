"""Every number in the seeds (lesson 16 and deck 01, cards Q1-Q7), within 2 %.

Each test is named after its scenario id in SPEC.md and drives the public API;
several also go through the CLI.
"""

from __future__ import annotations

import pytest

from inferlab.physics.amdahl import amdahl
from inferlab.physics.capacity import capacity
from inferlab.physics.decode import compute_bound_batch, decode_point
from inferlab.physics.measured import check_claim, utilisation
from inferlab.physics.prefill import prefill_stall
from inferlab.physics.price import price_per_million
from inferlab.physics.roofline import launch_overhead_s, ridge_point
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec
from tests.clirun import RunJson

GB = 1e9
approx = lambda x: pytest.approx(x, rel=0.02)  # noqa: E731

CARD = (
    "--weight-bytes",
    "16GB",
    "--kv-bytes-per-token",
    "128KiB",
    "--params",
    "8B",
    "--hardware",
    "h100-sxm",
)


def test_L16_a_floor_at_4k_context(llama8b_card: ModelCost, h100: HardwareSpec) -> None:
    p = decode_point(llama8b_card, h100, batch=1, context=4096)
    assert p.kv_bytes_total == approx(0.537 * GB)
    assert p.bytes_per_step == approx(16.54 * GB)
    assert p.step_time_s == approx(4.94e-3)
    assert p.tokens_per_s_per_user == pytest.approx(200, rel=0.02)
    assert p.step.bound == "memory"


def test_L16_a_through_cli(run_json: RunJson) -> None:
    d = run_json("floor", *CARD, "--context", "4096")
    assert d["kv_bytes_total"] == approx(0.537 * GB)
    assert d["bytes_per_step"] == approx(16.54 * GB)
    assert d["decode_step_time_s"] == approx(4.94e-3)
    assert d["decode_bound"] == "memory"


def test_L16_b_floor_at_32k_context(llama8b_card: ModelCost, h100: HardwareSpec) -> None:
    p = decode_point(llama8b_card, h100, batch=1, context=32768)
    assert p.kv_bytes_total == approx(4.29 * GB)
    assert p.step_time_s == approx(6.06e-3)


def test_L16_c_max_batch_in_80GB(llama8b_card: ModelCost, h100: HardwareSpec) -> None:
    assert h100.memory_bytes == 80 * GB
    assert capacity(llama8b_card, h100, context=4096).max_batch == 119


def test_L16_c_through_cli(run_json: RunJson) -> None:
    d = run_json("capacity", *CARD, "--context", "4096", "--memory", "80GB")
    assert d["max_batch"] == 119


def test_L16_d_achieved_bandwidth_and_mbu(h100: HardwareSpec) -> None:
    u = utilisation(16.6 * GB, 0.0, 12e-3, h100.bandwidth_bytes_per_s, 989e12, 16.6 * GB / 3.35e12)
    assert u.achieved_bandwidth_bytes_per_s == approx(1.38e12)
    assert u.mbu == approx(0.41)


def test_L16_d_through_cli(run_json: RunJson) -> None:
    d = run_json(
        "floor", "--weight-bytes", "16.6GB", "--bandwidth", "3.35TB/s", "--measured-step", "12ms"
    )
    assert d["achieved_bandwidth_bytes_per_s"] == approx(1.38e12)
    assert d["mbu"] == approx(0.41)


def test_L16_e_halving_weights_beats_halving_kv_at_batch_16(
    llama8b_card: ModelCost, h100: HardwareSpec
) -> None:
    base = decode_point(llama8b_card, h100, batch=16, context=4096)
    assert base.weight_bytes_per_step == approx(16 * GB)
    assert base.kv_bytes_total == approx(8.59 * GB)
    assert base.step_time_s == approx(7.34e-3)
    half_w = llama8b_card.with_overrides(weight_bytes=8 * GB)
    half_kv = llama8b_card.with_overrides(kv_bytes_per_token=64 * 1024)
    assert decode_point(half_w, h100, 16, 4096).step_time_s == approx(4.95e-3)
    assert decode_point(half_kv, h100, 16, 4096).step_time_s == approx(6.06e-3)


def test_L16_e_levers_rank_weights_first(run_json: RunJson) -> None:
    d = run_json("floor", *CARD, "--batch", "16", "--context", "4096", "--levers")
    by_name = {e["lever"].split(" (")[0]: e for e in d["levers"]}
    assert by_name["halve weight bytes"]["step_time_s"] == approx(4.95e-3)
    assert by_name["halve KV bytes"]["step_time_s"] == approx(6.06e-3)
    names = [e["lever"] for e in d["levers"]]
    assert names.index(by_name["halve weight bytes"]["lever"]) < names.index(
        by_name["halve KV bytes"]["lever"]
    )


def test_L16_f_batch_64(llama8b_card: ModelCost, h100: HardwareSpec) -> None:
    p = decode_point(llama8b_card, h100, batch=64, context=4096)
    assert p.kv_bytes_total == approx(34.4 * GB)
    assert p.step_time_s == approx(15.0e-3)
    assert p.tokens_per_s_total > 4000


def test_Q1_a_300_not_promisable_2000_impossible(run_json: RunJson) -> None:
    d = run_json(
        "floor",
        "--weight-bytes",
        "16GB",
        "--hardware",
        "h100-sxm",
        "--target-tokens-per-s",
        "300",
        "--claimed-tokens-per-s",
        "2000",
    )
    assert d["decode_step_time_s"] == approx(4.78e-3)
    assert d["tokens_per_s_per_user"] == approx(209)
    assert d["target_possible"] is False
    assert d["claimed_possible"] is False
    assert any("synchron" in c for c in d["impossible_causes"])
    assert any("prompt tokens" in c for c in d["impossible_causes"])
    assert check_claim(180, 209).possible


def test_Q1_b_70B_fp8_tp2(run_json: RunJson) -> None:
    d = run_json(
        "floor",
        "--weight-bytes",
        "70GB",
        "--weight-dtype",
        "fp8",
        "--hardware",
        "h100-sxm",
        "--tp",
        "2",
        "--measured-step",
        "14ms",
    )
    assert d["bandwidth_bytes_per_s"] == approx(6.7e12)
    assert d["decode_step_time_s"] == approx(10.4e-3)
    assert d["mbu"] == approx(0.75)


def test_Q2_a_prefill_500_tokens(llama8b_card: ModelCost, h100: HardwareSpec) -> None:
    pf = prefill_stall(llama8b_card, h100, prompt_tokens=500)
    assert pf.step.flops == approx(8e12)
    assert pf.prefill_time_s == approx(8.1e-3)
    assert pf.step.bound == "compute"
    assert pf.stall_steps == approx(1.7)


def test_Q2_b_8000_token_paste_stalls_30_streams(run_json: RunJson) -> None:
    d = run_json(
        "floor",
        "--weight-bytes",
        "16GB",
        "--params",
        "8B",
        "--hardware",
        "h100-sxm",
        "--prompt",
        "8000",
        "--streams",
        "30",
        "--chunk",
        "512",
    )
    assert d["prefill_time_s"] == approx(0.129)
    assert d["stall_steps"] == approx(27)
    # Chunked prefill bounds the stall: the longest gap is one mixed step, not 27 steps.
    assert d["chunk_step_time_s"] < 3 * d["decode_step_time_s"]
    assert d["chunks"] == 16


def test_Q2_c_ridge_point(h100: HardwareSpec) -> None:
    assert ridge_point(h100.peak_flops("bf16"), h100.bandwidth_bytes_per_s) == approx(295)


def test_Q3_a_batch_32_is_25_percent_slower_not_32x(
    llama8b_card: ModelCost, h100: HardwareSpec
) -> None:
    p1 = decode_point(llama8b_card, h100, batch=1, context=0)
    p = decode_point(llama8b_card, h100, batch=32, context=1000)
    assert 4.1 * GB <= p.kv_bytes_total <= 4.2 * GB
    assert p.step_time_s == approx(6.0e-3)
    assert p.tokens_per_s_per_user == approx(166)
    assert p.step_time_s / p1.step_time_s == approx(1.25)
    assert p.tokens_per_s_total == approx(5300)
    assert p.tokens_per_s_total / p1.tokens_per_s_total == approx(25.4)


def test_Q4_intensity_tracks_batch_and_kv_delays_compute_bound(
    llama8b_card: ModelCost, h100: HardwareSpec
) -> None:
    for batch in (1, 8, 64):
        step = decode_point(llama8b_card, h100, batch, 0).step
        assert step.intensity_flops_per_byte == approx(batch)  # bf16: 2B FLOP per 2 bytes
        assert step.bound == "memory"
    assert compute_bound_batch(llama8b_card, h100, context=0) == approx(295)
    assert decode_point(llama8b_card, h100, 300, 0).step.bound == "compute"
    # With a long context the KV read is never shared: compute-bound much later, or never.
    at_4k = compute_bound_batch(llama8b_card, h100, context=4096)
    assert at_4k is None or at_4k > 2 * 295


def test_Q5_mbu_80_percent_mfu_near_zero(run_json: RunJson) -> None:
    d = run_json(
        "floor",
        "--weight-bytes",
        "16GB",
        "--params",
        "8B",
        "--hardware",
        "h100-sxm",
        "--measured-step",
        "6ms",
    )
    assert d["achieved_bandwidth_bytes_per_s"] == approx(2.67e12)
    assert d["mbu"] == approx(0.80)
    assert d["mfu"] < 0.01


def test_Q6_a_price_at_200_tok_s() -> None:
    assert price_per_million(3.0, 200).usd_per_million_tokens == approx(4.17)


def test_Q6_b_price_at_batch_64(
    llama8b_card: ModelCost, h100: HardwareSpec, run_json: RunJson
) -> None:
    d = run_json("cost", "--gpu-hour", "3", "--tokens-per-s", "200", "--vs-tokens-per-s", "4300")
    assert d["vs_usd_per_million_tokens"] == approx(0.19)
    assert d["cost_ratio"] == approx(21.5)
    p = decode_point(llama8b_card, h100, batch=64, context=4096)
    assert p.step_time_s == approx(15.0e-3)
    assert p.tokens_per_s_per_user == approx(67)


def test_Q7_a_launch_overhead(run_json: RunJson) -> None:
    assert launch_overhead_s(300, 4e-6) == approx(1.2e-3)
    d = run_json(
        "floor",
        "--weight-bytes",
        "16.08GB",
        "--hardware",
        "h100-sxm",
        "--kernels",
        "300",
        "--launch-time",
        "4us",
    )
    assert d["overhead_s"] == approx(1.2e-3)
    assert d["overhead_s"] / d["memory_time_s"] == approx(0.25)


def test_Q7_b_attention_3x() -> None:
    a = amdahl([(0.3, 3.0)])
    assert a.speedup == approx(1.25)
    assert a.ceiling == approx(1.43)


def test_Q7_c_attention_and_mlp(run_json: RunJson) -> None:
    a = amdahl([(0.3, 3.0), (0.5, 2.0)])
    assert a.new_time == approx(0.55)
    assert a.speedup == approx(1.82)
    d = run_json("amdahl", "0.3:3", "0.5:2")
    assert d["new_time_fraction"] == approx(0.55)
    assert d["speedup"] == approx(1.82)


def test_Q6_b_price_from_the_floor_at_batch_64(run_json: RunJson) -> None:
    d = run_json("floor", *CARD, "--batch", "64", "--context", "4096", "--gpu-hour", "3")
    assert d["tokens_per_s_total"] == approx(4300)  # 4,257 at the floor; the card rounds
    assert d["usd_per_million_tokens"] == approx(3 / (d["tokens_per_s_total"] * 3600) * 1e6)
    assert d["usd_per_million_tokens"] == pytest.approx(0.19, rel=0.04)


def test_L16_e_halving_kv_wins_at_large_batch_and_context(run_json: RunJson) -> None:
    # "halving cache bytes matters more as batch or context grows"
    d = run_json("floor", *CARD, "--batch", "64", "--context", "4096", "--levers")
    step = {e["lever"].split(" (")[0]: e["step_time_s"] for e in d["levers"]}
    assert step["halve KV bytes"] < step["halve weight bytes"]
