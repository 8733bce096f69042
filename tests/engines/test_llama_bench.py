"""Engine-alone benchmark: parsing captured llama.cpp output, and the runner's failure lines.

The fixtures are real stdout/stderr of the bundled llama-batched-bench and
llama-bench (SmolLM2 Q4_1, one thread, on a loaded 2-core machine). The
runner is driven by small shell scripts that replay them, crash, or hang.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from inferlab.engines.llama_bench import (
    BATCHED_BENCH,
    LLAMA_BENCH,
    EngineBenchConfig,
    load_engine_bench,
    parse_batched_bench,
    parse_llama_bench,
    run_engine_bench,
)
from inferlab.engines.result import EngineBench, EngineBenchError, best_of_passes
from inferlab.jsonio import dumps, loads_strict
from tests.clirun import RunCli

FIX = Path(__file__).parent / "fixtures"
BB_FULL = FIX / "batched_bench_1-16_pp32_tg128_t1.jsonl"
BB_QUICK = FIX / "batched_bench_1-4_pp32_tg32_t1.jsonl"
BB_TWICE = FIX / "batched_bench_1-2_twice_pp32_tg16_t1.jsonl"
LB_FULL = FIX / "llama_bench_pp32_tg128_r3_t1.jsonl"
LB_QUICK = FIX / "llama_bench_pp32_tg32_r2_t1.jsonl"


def test_batched_bench_rows_become_step_times() -> None:
    steps = parse_batched_bench(BB_FULL.read_text())
    assert [s.batch for s in steps] == [1, 2, 4, 8, 16]
    raw = [json.loads(ln) for ln in BB_FULL.read_text().splitlines() if ln.strip()]
    for s, r in zip(steps, raw, strict=True):
        assert s.step_time_s == pytest.approx(r["t_tg"] / 128)
        assert s.prefill_s == r["t_pp"] and s.prefill_tokens_per_s == r["speed_pp"]
        assert s.tokens_per_s_total == pytest.approx(s.batch / s.step_time_s, rel=1e-4)
        assert (s.prompt_tokens, s.output_tokens, s.threads) == (32, 128, 1)
    assert steps[0].step_time_s == pytest.approx(5.080112 / 128)


def test_several_passes_keep_the_fastest_and_their_spread() -> None:
    rows = parse_batched_bench(BB_TWICE.read_text())
    raw = [json.loads(ln) for ln in BB_TWICE.read_text().splitlines() if ln.strip()]
    steps = best_of_passes(rows)
    assert [s.batch for s in steps] == [1, 2]
    for s in steps:
        mine = [r["t_tg"] / 16 for r in raw if r["pl"] == s.batch]
        assert s.step_samples_s == pytest.approx(tuple(mine))
        assert s.step_time_s == pytest.approx(min(mine))
        assert s.prefill_s == min(r["t_pp"] for r in raw if r["pl"] == s.batch)
        assert s.spread_rel == pytest.approx((max(mine) - min(mine)) / min(mine))


def test_llama_bench_rows_become_repeated_tests() -> None:
    tests, facts = parse_llama_bench(LB_FULL.read_text())
    pp, tg = tests
    assert (pp.test, pp.n_tokens, tg.test, tg.n_tokens) == ("pp32", 32, "tg128", 128)
    assert pp.mean_s == pytest.approx(0.370482535)
    assert tg.samples_s == pytest.approx((3.609614124, 3.775078769, 3.171104112))
    assert tg.rel_stddev == pytest.approx(312104418 / 3518599001)
    assert tg.per_token_s == pytest.approx(3.518599001 / 128)
    assert facts["model_type"] == "llama 256M Q4_1"


def test_llama_bench_json_array_is_read_too() -> None:
    rows = [json.loads(ln) for ln in LB_QUICK.read_text().splitlines() if ln.strip()]
    tests, _ = parse_llama_bench(json.dumps(rows, indent=2))
    assert [t.test for t in tests] == ["pp32", "tg32"]


def test_markdown_table_is_refused_not_scraped() -> None:
    with pytest.raises(EngineBenchError, match="unknown output format"):
        parse_batched_bench((FIX / "batched_bench_md_table.txt").read_text())


def test_row_missing_a_field_names_it() -> None:
    row = json.loads(BB_QUICK.read_text().splitlines()[0])
    del row["t_tg"]
    with pytest.raises(EngineBenchError, match="lacks t_tg"):
        parse_batched_bench(json.dumps(row))
    with pytest.raises(EngineBenchError, match="no results"):
        parse_batched_bench("\n\n")


def _script(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _replay(bin_dir: Path, bb: Path = BB_QUICK, lb: Path = LB_QUICK) -> None:
    """Binaries that record their arguments and print captured output."""
    _script(bin_dir, BATCHED_BENCH, f'echo "$@" > {bin_dir}/bb.args\ncat {bb}')
    _script(bin_dir, LLAMA_BENCH, f'echo "$@" > {bin_dir}/lb.args\ncat {lb}')


def _cfg(tmp_path: Path, batches: tuple[int, ...] = (1, 2, 4), **kw: object) -> EngineBenchConfig:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    args: dict = dict(  # type: ignore[type-arg]
        gguf=gguf,
        threads=1,
        batches=batches,
        prompt_tokens=32,
        output_tokens=32,
        ctx_per_slot=128,
        repetitions=2,
        timeout_s=30.0,
        bin_dir=tmp_path,
    )
    args.update(kw)
    return EngineBenchConfig(**args)


@pytest.mark.slow
def test_run_passes_the_sweep_settings_and_reads_both_tools(tmp_path: Path) -> None:
    _replay(tmp_path)
    eb = run_engine_bench(_cfg(tmp_path))
    bb_args = (tmp_path / "bb.args").read_text().split()
    # slots x per-slot, as the server, or more where the longer prompt (4 x 32) needs it
    assert bb_args[bb_args.index("-c") + 1] == str(4 * (128 + 32))
    assert bb_args[bb_args.index("-npp") + 1] == "32,128"  # the context growth: two prompts
    assert bb_args[bb_args.index("-npl") + 1] == "1,2,4,1,2,4"  # two passes
    assert bb_args[bb_args.index("-t") + 1] == "1"
    assert bb_args[bb_args.index("--output-format") + 1] == "jsonl"
    lb_args = (tmp_path / "lb.args").read_text().split()
    assert lb_args[lb_args.index("-o") + 1] == "jsonl" and lb_args[lb_args.index("-r") + 1] == "2"
    assert [s.batch for s in eb.steps] == [1, 2, 4]
    assert eb.context_steps == ()  # the captured output has no 128-token rows: left out
    assert eb.prefill.test == "pp32" and eb.decode.test == "tg32"
    # noise: the larger of 2 stddev of the repeats and the tools' batch-1 disagreement
    lone = eb.decode.per_token_s
    expected = max(2 * eb.decode.rel_stddev, abs(eb.steps[0].step_time_s - lone) / lone)
    assert eb.noise_rel == pytest.approx(expected)
    assert len(eb.runs) == 2 and all(r.wall_s > 0 for r in eb.runs)
    back = EngineBench.from_json(loads_strict(dumps(eb)))
    assert back == eb


@pytest.mark.slow
def test_step_between_measured_batches_is_interpolated(tmp_path: Path) -> None:
    _replay(tmp_path)
    eb = run_engine_bench(_cfg(tmp_path))
    s2, s4 = eb.steps[1].step_time_s, eb.steps[2].step_time_s
    assert eb.step_at(2) == (s2, "measured")
    step, how = eb.step_at(3) or (0.0, "")
    assert how == "interpolated" and step == pytest.approx((s2 + s4) / 2)
    assert eb.step_at(8) is None and eb.noise_s(8) == 0.0


@pytest.mark.slow
def test_noise_of_a_batch_includes_the_spread_of_its_passes(tmp_path: Path) -> None:
    _replay(tmp_path, bb=BB_TWICE)
    eb = run_engine_bench(_cfg(tmp_path, batches=(1, 2)))
    for s in eb.steps:
        assert eb.noise_s(s.batch) == pytest.approx(s.step_time_s * max(eb.noise_rel, s.spread_rel))
    assert eb.steps[0].spread_rel > 0.2  # this capture ran on a machine at load 100


@pytest.mark.slow
def test_batch_skipped_for_context_is_an_error(tmp_path: Path) -> None:
    _replay(tmp_path)  # the replay has batches 1, 2, 4 only
    with pytest.raises(EngineBenchError, match=r"skipped batch \[8\]"):
        run_engine_bench(_cfg(tmp_path, batches=(1, 2, 4, 8)))


@pytest.mark.slow
def test_missing_binary_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EngineBenchError, match=f"{BATCHED_BENCH} not found in {tmp_path}"):
        run_engine_bench(_cfg(tmp_path))
    _replay(tmp_path)
    (tmp_path / LLAMA_BENCH).unlink()
    with pytest.raises(EngineBenchError, match=f"{LLAMA_BENCH} not found in {tmp_path}"):
        run_engine_bench(_cfg(tmp_path))
    assert not (tmp_path / "bb.args").exists()  # nothing ran before the check


@pytest.mark.slow
def test_unloadable_gguf_reports_the_tools_own_error(tmp_path: Path) -> None:
    _replay(tmp_path)
    err = FIX / "llama_bench_bad_gguf.stderr"
    _script(tmp_path, LLAMA_BENCH, f"cat {err} >&2\nexit 1")
    with pytest.raises(EngineBenchError) as e:
        run_engine_bench(_cfg(tmp_path))
    msg = str(e.value)
    assert msg.startswith("llama-bench failed (exit 1): llama_bench: error: failed to load model")
    assert "\n" not in msg


@pytest.mark.slow
def test_crash_and_hang_are_one_line(tmp_path: Path) -> None:
    _replay(tmp_path)
    _script(tmp_path, BATCHED_BENCH, "echo 'ggml_abort: boom' >&2\nkill -SEGV $$")
    with pytest.raises(EngineBenchError, match=r"crashed \(signal 11\): ggml_abort: boom"):
        run_engine_bench(_cfg(tmp_path))
    _script(tmp_path, BATCHED_BENCH, "exec sleep 30")
    with pytest.raises(EngineBenchError, match=r"llama-batched-bench ran past its \d s budget"):
        run_engine_bench(_cfg(tmp_path, timeout_s=2.0))
    _script(tmp_path, LLAMA_BENCH, "exec sleep 30")  # first, with a quarter of the budget
    with pytest.raises(EngineBenchError, match="llama-bench ran past its 0 s budget"):
        run_engine_bench(_cfg(tmp_path, timeout_s=0.4))


@pytest.mark.slow
def test_budget_reached_after_a_full_pass_keeps_the_rows_printed(tmp_path: Path) -> None:
    _replay(tmp_path)
    # One full pass printed, then the second pass never ends: the budget stops it.
    _script(tmp_path, BATCHED_BENCH, f"cat {BB_QUICK}\nexec sleep 30")
    eb = run_engine_bench(_cfg(tmp_path, timeout_s=2.0))
    assert [s.batch for s in eb.steps] == [1, 2, 4]
    assert all(len(s.step_samples_s) == 1 for s in eb.steps)
    assert eb.runs[1].timed_out and not eb.runs[0].timed_out
    assert 1.0 <= eb.runs[1].wall_s < 10.0


def test_bad_config_is_refused_before_running(tmp_path: Path) -> None:
    with pytest.raises(EngineBenchError, match="no such file"):
        run_engine_bench(_cfg(tmp_path, gguf=tmp_path / "missing.gguf"))
    with pytest.raises(EngineBenchError, match="ctx-per-slot"):
        run_engine_bench(_cfg(tmp_path, ctx_per_slot=40))


@pytest.mark.slow
def test_cli_writes_strict_json_and_refuses_to_overwrite(run_cli: RunCli, tmp_path: Path) -> None:
    _replay(tmp_path)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    out = tmp_path / "eb"
    argv = ["engine-bench", "--gguf", str(gguf), "--threads", "1", "--batch", "1,2,4"]
    argv += ["--output", "32", "--bin-dir", str(tmp_path), "--out", str(out), "--json"]
    code, stdout, err = run_cli(*argv)
    assert code == 0, err
    d = loads_strict(stdout)
    assert [s["batch"] for s in d["steps"]] == [1, 2, 4]
    assert "step ms" in err  # the table goes to stderr with --json
    assert load_engine_bench(out) == EngineBench.from_json(d)
    code, _, err = run_cli(*argv)
    assert code == 2 and "already holds engine_bench.json" in err and "Traceback" not in err


@pytest.mark.slow
def test_cli_quick_reduces_the_set(run_cli: RunCli, tmp_path: Path) -> None:
    _replay(tmp_path)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    argv = ["engine-bench", "--gguf", str(gguf), "--quick", "--bin-dir", str(tmp_path)]
    code, _, err = run_cli(*argv, "--out", str(tmp_path / "q"))
    assert code == 0, err
    bb_args = (tmp_path / "bb.args").read_text().split()
    assert bb_args[bb_args.index("-npl") + 1] == "1,2,4,1,2,4"  # of 1,2,4,8,16, two passes
    assert bb_args[bb_args.index("-ntg") + 1] == "32"


def test_cli_bad_input_exit_2(run_cli: RunCli, tmp_path: Path) -> None:
    code, _, err = run_cli("engine-bench", "--gguf", str(tmp_path / "nope.gguf"))
    assert code == 2 and "--gguf" in err and "no such file" in err
    code, _, err = run_cli("bench", "--url", "http://127.0.0.1:9/v1", "--engine-baseline", "/no")
    assert code == 2 and "--engine-baseline /no: no engine_bench.json" in err
    bad = tmp_path / "engine_bench.json"
    bad.write_text("{not json")
    with pytest.raises(EngineBenchError, match="damaged JSON"):
        load_engine_bench(tmp_path)
    bad.write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(EngineBenchError, match="not an engine-bench result"):
        load_engine_bench(bad)


def test_the_batches_after_a_longer_prompt_are_kept_as_the_context_growth(
    tmp_path: Path,
) -> None:
    rows = [json.loads(line) for line in BB_QUICK.read_text().splitlines() if line.strip()]
    longer = [r | {"pp": 128, "t_tg": r["t_tg"] * 1.25, "t_pp": r["t_pp"] * 4} for r in rows]
    bb = tmp_path / "bb.jsonl"
    bb.write_text("\n".join(json.dumps(r) for r in rows + longer) + "\n")
    _replay(tmp_path, bb=bb)
    eb = run_engine_bench(_cfg(tmp_path))
    assert [s.batch for s in eb.steps] == [1, 2, 4] and eb.context_prompts == (32, 128)
    assert [s.prompt_tokens for s in eb.context_steps] == [128, 128, 128]
    for short, long in zip(eb.steps, eb.context_steps, strict=True):
        assert long.step_time_s == pytest.approx(1.25 * short.step_time_s)
    back = type(eb).from_json(json.loads(json.dumps(eb.to_json())))
    assert back.context_steps == eb.context_steps
