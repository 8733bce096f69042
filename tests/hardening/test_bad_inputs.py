"""Table-driven bad input over every verb and every input file kind: each case exits 2 with
ONE line that names the flag or the file, and never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.hardening.cli_harness import check_promises, run

UNREACHABLE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Path], list[str]]  # gets the case's tmp folder (inputs are written there)
    names: Callable[[Path], str]  # what the one line must name: a flag, or a file's path


def flag_cases(
    verb: str,
    base: list[str] | Callable[[Path], list[str]],
    flags: list[str],
    values: list[str],
) -> list[Case]:
    def prefix(t: Path) -> list[str]:
        return base(t) if callable(base) else base

    return [
        Case(
            f"{verb} {flag} {value}",
            lambda t, f=flag, v=value: [verb, *prefix(t), f, v],
            lambda t, f=flag: f,
        )
        for flag in flags
        for value in values
    ]


BAD = ["-1", "nan", "1e400", "x"]
FLOOR_BASE = ["--weight-bytes", "16GB", "--bandwidth", "3.35TB/s"]
FLOOR_FLAGS = [
    "--batch", "--context", "--prompt", "--streams", "--chunk", "--kernels", "--launch-time",
    "--overhead", "--measured-step", "--target-tokens-per-s", "--claimed-tokens-per-s",
    "--draft-tokens", "--acceptance", "--draft-cost", "--gpu-hour", "--kv-bytes-per-token",
    "--params", "--flops", "--memory", "--tp",
]  # fmt: skip
COST_BASE = ["--gpu-hour", "3", "--tokens-per-s", "100"]
BENCH_FLAGS = [
    "--requests-per-level", "--warmup", "--prompt-tokens", "--output-tokens", "--stall-factor",
    "--lag-threshold", "--seed", "--max-connections", "--request-timeout", "--floor-tp",
    "--floor-bandwidth", "--floor-flops", "--concurrency", "--rate", "--workers",
]  # fmt: skip


def _bench_base(t: Path) -> list[str]:
    return ["--url", UNREACHABLE, "--out", str(t / "out")]


CASES: list[Case] = [
    *flag_cases("floor", FLOOR_BASE, FLOOR_FLAGS, BAD),
    *flag_cases("capacity", ["--weight-bytes", "1GB", "--memory", "8GB", "--context", "8"],
                ["--context", "--reserve"], BAD),
    *flag_cases("cost", COST_BASE, ["--gpu-hour", "--tokens-per-s", "--vs-tokens-per-s",
                                    "--gpus"], BAD),
    *flag_cases("bench", _bench_base, BENCH_FLAGS, BAD),
    *flag_cases("serve", [], ["--port", "--parallel", "--ctx-size", "--ctx-per-slot",
                              "--threads"], BAD),
    *flag_cases("probe", [], ["--array-bytes", "--repeats"], BAD),
    *flag_cases("demo", ["--out", "/nonexistent-never/x"],
                ["--threads", "--concurrency", "--requests-per-level", "--output-tokens"], BAD),
]  # fmt: skip


def case(name: str, names: Callable[[Path], str] | str) -> Callable[..., Case]:
    def wrap(fn: Callable[[Path], list[str]]) -> Case:
        c = Case(name, fn, names if callable(names) else (lambda t, n=names: n))
        CASES.append(c)
        return c

    return wrap


# --- flags whose values are refused after parsing -----------------------------------
case("bench too many local workers", "--workers")(
    lambda t: ["bench", *_bench_base(t), "--workers", "100"]
)
case("bench streams beyond what the workers can drive", "--concurrency")(
    lambda t: ["bench", *_bench_base(t), "--workers", "2", "--concurrency", "30000"]
)
case("floor zero weights", "--weight-bytes")(lambda t: ["floor", "--weight-bytes", "0",
                                                         "--bandwidth", "1TB/s"])  # fmt: skip
case("floor vanishing bandwidth", "--bandwidth")(
    lambda t: ["floor", "--weight-bytes", "16GB", "--bandwidth", "1e-300B/s"]
)
case("floor zero bandwidth", "--bandwidth")(
    lambda t: ["floor", "--weight-bytes", "16GB", "--bandwidth", "0B/s"]
)
case("floor negative rate unit", "--bandwidth")(
    lambda t: ["floor", "--weight-bytes", "16GB", "--bandwidth", "-1TB/s"]
)
case("floor huge batch", "--batch")(lambda t: ["floor", *FLOOR_BASE, "--batch", "1" + "0" * 400])
case("floor unknown unit", "--weight-bytes")(
    lambda t: ["floor", "--weight-bytes", "16XB", "--bandwidth", "1TB/s"]
)
case("floor overflowing bytes", "--weight-bytes")(
    lambda t: ["floor", "--weight-bytes", "1e308PB", "--bandwidth", "1TB/s"]
)
case("floor tiny kv", "--kv-bytes-per-token")(
    lambda t: ["floor", *FLOOR_BASE, "--kv-bytes-per-token", "1e-308B"]
)
case("floor tp 3 on 32/8 heads", "--tp 3")(
    lambda t: ["floor", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--tp", "3"]
)
case("floor tp 0", "--tp")(lambda t: ["floor", *FLOOR_BASE, "--tp", "0"])
case("floor nothing to compute", "--weight-bytes")(lambda t: ["floor", "--hardware", "h100-sxm"])
case("floor unknown hardware", "h100")(lambda t: ["floor", "--weight-bytes", "1GB",
                                                  "--hardware", "h100"])  # fmt: skip
case("floor unknown dtype", "fp7")(
    lambda t: ["floor", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--weight-dtype", "fp7"]
)
case("floor unknown flag", "--batchsize")(lambda t: ["floor", *FLOOR_BASE, "--batchsize", "4"])
case("floor missing value", "--batch")(lambda t: ["floor", *FLOOR_BASE, "--batch"])
case("capacity no memory", "--memory")(
    lambda t: ["capacity", "--weight-bytes", "16GB", "--context", "4096"]
)
case("capacity context zero", "--context")(
    lambda t: ["capacity", "--weight-bytes", "1GB", "--memory", "8GB", "--context", "0"]
)
case("capacity context missing", "--context")(lambda t: ["capacity", "--weight-bytes", "1GB"])
case("cost vs zero", "--vs-tokens-per-s")(lambda t: ["cost", *COST_BASE, "--vs-tokens-per-s", "0"])
case("cost gpus zero", "--gpus")(lambda t: ["cost", *COST_BASE, "--gpus", "0"])
case("cost gpu-hour zero", "--gpu-hour")(lambda t: ["cost", "--gpu-hour", "0",
                                                    "--tokens-per-s", "1"])  # fmt: skip
case("amdahl zero speedup", "speedup")(lambda t: ["amdahl", "1:0"])
case("amdahl fraction over one", "fraction")(lambda t: ["amdahl", "2:3"])
case("amdahl overlapping parts", "add up")(lambda t: ["amdahl", "0.6:3", "0.5:2"])
case("amdahl not a pair", "FRACTION:SPEEDUP")(lambda t: ["amdahl", "x"])
case("amdahl vanishing speedup", "speedup")(lambda t: ["amdahl", "0.5:1e-320"])
case("amdahl nan fraction", "fraction")(lambda t: ["amdahl", "nan:2"])
case("amdahl infinite speedup", "speedup")(lambda t: ["amdahl", "0.5:1e400"])
case("amdahl negative fraction", "fraction")(lambda t: ["amdahl", "-0.5:2"])
case("bench rate -1/s", "--rate")(lambda t: ["bench", *_bench_base(t), "--rate", "-1/s"])
case("bench rate and concurrency", "--rate")(
    lambda t: ["bench", *_bench_base(t), "--rate", "1", "--concurrency", "1"]
)
case("bench concurrency too high", "--concurrency")(
    lambda t: ["bench", *_bench_base(t), "--concurrency", "100000"]
)
case("bench output tokens 1", "--output-tokens")(
    lambda t: ["bench", *_bench_base(t), "--output-tokens", "1"]
)
case("bench no url", "--url")(lambda t: ["bench", "--out", str(t / "o")])
case("bench unreachable", UNREACHABLE)(lambda t: ["bench", *_bench_base(t)])
case("bench overwrite and append", "--overwrite")(
    lambda t: ["bench", *_bench_base(t), "--overwrite", "--append-run"]
)
case("bench floor without model", "--floor-model")(
    lambda t: ["bench", *_bench_base(t), "--floor-hardware", "h100-sxm"]
)
case("bench floor tp 3", "--tp 3")(
    lambda t: ["bench", *_bench_base(t), "--floor-model", "llama-3-8b", "--floor-hardware",
               "h100-sxm", "--floor-tp", "3"]
)  # fmt: skip
case("bench api unknown", "--api")(lambda t: ["bench", *_bench_base(t), "--api", "grpc"])
case("demo rate", "--rate")(lambda t: ["demo", "--rate", "1", "--out", str(t / "o")])
case("demo missing gguf", "--gguf")(
    lambda t: ["demo", "--gguf", str(t / "none.gguf"), "--out", str(t / "o")]
)
case("probe tiny arrays", "--array-bytes")(lambda t: ["probe", "--array-bytes", "1kB"])
case("serve port too high", "--port")(lambda t: ["serve", "--port", "70000"])
case("unknown verb", "flor")(lambda t: ["flor"])
case("report nothing", "dirs")(lambda t: ["report"])


# --- run folders ------------------------------------------------------------------
def _file(t: Path, name: str, data: bytes | str) -> Path:
    p = t / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


def _run_folder(t: Path) -> Path:
    _file(t, "prev/records.jsonl", "")
    return t / "prev"


case("bench out is a file", "is a file")(
    lambda t: ["bench", "--url", UNREACHABLE, "--out", str(_file(t, "f.txt", "x"))]
)
case("demo out is a file", "is a file")(lambda t: ["demo", "--out", str(_file(t, "f.txt", "x"))])
case("bench out holds a run", "already holds a run")(
    lambda t: ["bench", "--url", UNREACHABLE, "--out", str(_run_folder(t))]
)
case("demo out holds a run", "already holds a run")(
    lambda t: ["demo", "--out", str(_run_folder(t))]
)

# --- config.json ------------------------------------------------------------------
GOOD_CFG = {
    "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000,
}  # fmt: skip
CONFIGS: dict[str, bytes | str] = {
    "binary": b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01",
    "not json": '{"hidden_size": 4096,',
    "a list": "[1, 2, 3]",
    "empty object": "{}",
    "negative layers": json.dumps({**GOOD_CFG, "num_hidden_layers": -2}),
    "string width": json.dumps({**GOOD_CFG, "hidden_size": "wide"}),
    "fractional heads": json.dumps({**GOOD_CFG, "num_attention_heads": 4.5}),
    "huge vocab": json.dumps(GOOD_CFG)[:-1] + ', "vocab_size": 1' + "0" * 400 + "}",
    "infinite width": json.dumps(GOOD_CFG)[:-1] + ', "hidden_size": 1e400}',
    "nested too deep": "[" * 100_000 + "]" * 100_000,
    "dense layers beyond layers": json.dumps(
        {**GOOD_CFG, "num_local_experts": 4, "first_k_dense_replace": 9}
    ),
    "experts per token beyond experts": json.dumps(
        {**GOOD_CFG, "num_local_experts": 2, "num_experts_per_tok": 8}
    ),
    "null heads": json.dumps({**GOOD_CFG, "num_attention_heads": None}),
    "empty file": "",
}
for _name, _data in CONFIGS.items():
    case(f"config.json {_name}", lambda t: str(t / "m" / "config.json"))(
        lambda t, d=_data: ["floor", "--model", str(_file(t, "m/config.json", d)),
                            "--hardware", "h100-sxm"]
    )  # fmt: skip
case("model folder without config.json", lambda t: str(t / "empty"))(
    lambda t: ["floor", "--model", str((t / "empty").mkdir() or t / "empty"), "--hardware",
               "h100-sxm"]
)  # fmt: skip
case("model path missing", "nope.json")(
    lambda t: ["floor", "--model", str(t / "nope.json"), "--hardware", "h100-sxm"]
)


# --- GGUF ---------------------------------------------------------------------------
def _gguf(t: Path, kv: dict[str, tuple[str, object]], arch: str | None = "llama") -> Path:
    import gguf

    path = t / "m.gguf"
    w = gguf.GGUFWriter(str(path), arch or "llama")
    if arch is None:  # drop the architecture key the writer adds
        w.kv_data[0].pop("general.architecture", None)
    for key, (kind, value) in kv.items():
        getattr(w, f"add_{kind}")(key, value)
    w.add_tensor("token_embd.weight", np.zeros((8, 16), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


GOOD_GGUF = {
    "llama.block_count": ("uint32", 2),
    "llama.embedding_length": ("uint32", 16),
    "llama.attention.head_count": ("uint32", 4),
    "llama.feed_forward_length": ("uint32", 32),
}
GGUFS: dict[str, Callable[[Path], Path]] = {
    "empty": lambda t: _file(t, "m.gguf", b""),
    "bad magic": lambda t: _file(t, "m.gguf", b"GGUX" + b"\0" * 64),
    "text": lambda t: _file(t, "m.gguf", "hello, not a model\n" * 10),
    "truncated": lambda t: _file(t, "m.gguf", _gguf(t, GOOD_GGUF).read_bytes()[:40]),
    "negative block count": lambda t: _gguf(t, {**GOOD_GGUF, "llama.block_count": ("int32", -3)}),
    "zero heads": lambda t: _gguf(t, {**GOOD_GGUF, "llama.attention.head_count": ("uint32", 0)}),
    "string width": lambda t: _gguf(t, {**GOOD_GGUF, "llama.embedding_length": ("string", "x")}),
    "no block count": lambda t: _gguf(
        t, {k: v for k, v in GOOD_GGUF.items() if k != "llama.block_count"}
    ),
    "negative ffn": lambda t: _gguf(t, {**GOOD_GGUF, "llama.feed_forward_length": ("int32", -1)}),
}
for _name, _make in GGUFS.items():
    case(f"gguf {_name}", "m.gguf")(
        lambda t, mk=_make: ["floor", "--model", str(mk(t)), "--hardware", "h100-sxm"]
    )
case("gguf missing", "none.gguf")(
    lambda t: ["floor", "--model", str(t / "none.gguf"), "--hardware", "h100-sxm"]
)
case("bench floor-gguf negative blocks", "m.gguf")(
    lambda t: ["bench", *_bench_base(t), "--floor-gguf",
               str(_gguf(t, {**GOOD_GGUF, "llama.block_count": ("int32", -3)})),
               "--floor-hardware", "h100-sxm"]
)  # fmt: skip

# --- traces (simulate --trace) ---------------------------------------------------------
TRACES: dict[str, bytes | str] = {
    "binary": b"\xff\xfe\x00garbage\x80\x81",
    "not json": "{arrival_s: 0}\n",
    "missing keys": '{"arrival_s": 0}\n',
    "negative tokens": '{"arrival_s": 0, "prompt_tokens": -5, "output_tokens": 4}\n',
    "zero output": '{"arrival_s": 0, "prompt_tokens": 5, "output_tokens": 0}\n',
    "nan arrival": '{"arrival_s": NaN, "prompt_tokens": 5, "output_tokens": 4}\n',
    "negative arrival": '{"arrival_s": -1, "prompt_tokens": 5, "output_tokens": 4}\n',
    "text tokens": '{"arrival_s": 0, "prompt_tokens": "many", "output_tokens": 4}\n',
}
for _name, _data in TRACES.items():
    case(f"trace {_name}", "t.jsonl")(
        lambda t, d=_data: ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm",
                            "--trace", str(_file(t, "t.jsonl", d))]
    )  # fmt: skip
case("trace is a folder", "tdir")(
    lambda t: ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--trace",
               str((t / "tdir").mkdir() or t / "tdir")]
)  # fmt: skip


# --- summaries (report, simulate --calibrate) ----------------------------------------------
def _summary(levels: object = None, **over: object) -> str:
    s = {"schema_version": 1, "workload": {"prompt_tokens": 4, "output_tokens": 8},
         "levels": [] if levels is None else levels, "warnings": [], **over}  # fmt: skip
    return json.dumps(s)


SUMMARIES: dict[str, bytes | str] = {
    "binary": b"\x00\xff\xfe\x80binary",
    "not json": "{schema_version: 1",
    "a list": "[]",
    "schema 2": _summary(schema_version=2),
    "no workload": json.dumps({"schema_version": 1, "levels": [], "warnings": []}),
    "levels not a list": _summary(levels={"c=1": {}}),
    "level without label": _summary(levels=[{"ttft_s": {}}]),
    "level without stats": _summary(levels=[{"label": "c=1"}]),
    "level text counts": _summary(
        levels=[
            {
                "label": "c=1",
                **{k: {"p50": 0.1, "p99": 0.2} for k in ("ttft_s", "tpot_s", "e2e_s", "gap_s")},
                "requests_ok": "four",
                "requests_failed": 0,
                "requests_early_stop": 0,
                "stall_count": 0,
            }
        ]
    ),  # fmt: skip
    "warnings wrong": _summary(warnings=["oops"]),
    "floor wrong": _summary(floor={"weight_bytes_per_step": "a lot"}),
    "deep nesting": "[" * 100_000 + "]" * 100_000,
}
for _name, _data in SUMMARIES.items():
    case(f"report summary {_name}", "summary.json")(
        lambda t, d=_data: ["report", str(_file(t, "run/summary.json", d).parent)]
    )
for _name in ("binary", "schema 2", "level without stats"):
    case(f"calibrate summary {_name}", "summary.json")(
        lambda t, d=SUMMARIES[_name]: ["simulate", "--model", "llama-3-8b", "--hardware",
                                       "h100-sxm", "--users", "2", "--calibrate",
                                       str(_file(t, "run/summary.json", d).parent)]
    )  # fmt: skip
case("report summary.json is a folder", "summary.json")(
    lambda t: ["report", str((t / "run" / "summary.json").mkdir(parents=True) or t / "run")]
)
case("report a file", "f.txt")(lambda t: ["report", str(_file(t, "f.txt", "x"))])
case("report missing folder", "gone")(lambda t: ["report", str(t / "gone")])
case("report empty folder", "emptyrun")(
    lambda t: ["report", str((t / "emptyrun").mkdir() or t / "emptyrun")]
)
case("calibrate a file", "f.txt")(
    lambda t: ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--users", "2",
               "--calibrate", str(_file(t, "f.txt", "x"))]
)  # fmt: skip

# --- records (report of a run without summary) -------------------------------------------
REC = {
    "request_id": 0, "level": "c=1", "phase": "measure", "prompt_tokens_target": 4,
    "max_tokens": 8, "send_ns": 0, "end_ns": 10, "event_ns": [5], "event_tokens": [1],
}  # fmt: skip
RECORDS: dict[str, bytes | str] = {
    "binary": b"\xff\xfe\x00\x80records",
    "garbage mid-file": json.dumps(REC) + "\n{torn\n" + json.dumps(REC) + "\n",
    "text event times": json.dumps({**REC, "event_ns": ["soon"]}) + "\n",
    "events and tokens differ": json.dumps({**REC, "event_tokens": [1, 1]}) + "\n",
    "level not text": json.dumps({**REC, "level": 3}) + "\n",
    "a list per line": "[1, 2]\n[3]\n",
    "missing ids": json.dumps({k: v for k, v in REC.items() if k != "request_id"}) + "\n",
}
for _name, _data in RECORDS.items():
    case(f"records {_name}", "records.jsonl")(
        lambda t, d=_data: ["report", str(_file(t, "run/records.jsonl", d).parent)]
    )

# --- probe cache (--hardware this-machine) -----------------------------------------------
PROBE = {"name": "m", "bandwidth_bytes_per_s": 1e10, "memory_bytes": 1e10,
         "flops_per_s": {"bf16": 1e11}, "source": "probe"}  # fmt: skip
CACHES: dict[str, bytes | str] = {
    "binary": b"\xff\xfe\x00\x80",
    "not json": "{",
    "a list": "[]",
    "missing bandwidth": json.dumps({k: v for k, v in PROBE.items() if k != "memory_bytes"}),
    "negative bandwidth": json.dumps({**PROBE, "bandwidth_bytes_per_s": -5}),
    "flops a list": json.dumps({**PROBE, "flops_per_s": [1, 2]}),
    "text bandwidth": json.dumps({**PROBE, "bandwidth_bytes_per_s": "fast"}),
}
for _name, _data in CACHES.items():
    case(f"probe cache {_name}", "this-machine.json")(
        lambda t, d=_data: [
            "floor", "--weight-bytes", "1GB", "--hardware", "this-machine",
            "#cache", str(_file(t, "cache/this-machine.json", d)),
        ]
    )  # fmt: skip
case("probe cache missing", "inferlab probe")(
    lambda t: ["floor", "--weight-bytes", "1GB", "--hardware", "this-machine"]
)

# --- found by the review pass (hostile inputs through the real CLI) ------------------------
case("serve log is a folder", "--log")(lambda t: ["serve", "--log", str(t)])
case("serve log under a file", "--log")(
    lambda t: ["serve", "--log", str(_file(t, "f.txt", "x") / "x.log")]
)
case("bench out under a file", "--out")(
    lambda t: ["bench", "--url", UNREACHABLE, "--out", str(_file(t, "f.txt", "x") / "run")]
)
case("bench out in /proc", "--out")(lambda t: ["bench", "--url", UNREACHABLE, "--out", "/proc/x"])
case("bench vanishing rate", "--rate")(
    lambda t: ["bench", "--url", UNREACHABLE, "--rate", "1e-300/s", "--out", str(t / "o")]
)
case("bench engine baseline nested deep", "deep.json")(
    lambda t: ["bench", "--url", UNREACHABLE, "--out", str(t / "o"), "--engine-baseline",
               str(_file(t, "deep.json", "[" * 100_000 + "]" * 100_000))]
)  # fmt: skip
case("drill a billion cards", "--cards")(lambda t: ["drill", "--cards", "1000000000"])
case("drill history binary", "h.jsonl")(
    lambda t: ["drill", "--stats", "--history", str(_file(t, "h.jsonl", b"\xff\xfe\x00\x82"))]
)

for _url in ("", "x", "http://[::1", "http://127.0.0.1:99999"):
    case(f"scrape url {_url!r}", "--url")(lambda t, u=_url: ["scrape", "--url", u, "--json"])
for _bad in (None, "soon", [1]):
    case(f"records scheduled_ns {_bad!r}", "scheduled_ns")(
        lambda t, b=_bad: [
            "report",
            str(_file(t, "run/records.jsonl", json.dumps({**REC, "scheduled_ns": b})).parent),
        ]
    )


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_bad_input(c: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # nothing may land in the source tree
    argv = c.argv(tmp_path)
    if "#cache" in argv:  # the case wrote a probe cache file: drop the marker
        i = argv.index("#cache")
        argv = argv[:i] + argv[i + 2 :]
    r = run(argv)
    check_promises(argv, r)
    assert r.code == 2, (argv, r.code, r.out[-300:], r.err)
    assert c.names(tmp_path) in r.err, (argv, r.err)


def test_refused_bench_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    r = run(["bench", "--url", UNREACHABLE, "--out", str(tmp_path / "new" / "run")])
    assert r.code == 2 and "cannot reach" in r.err
    assert not (tmp_path / "new" / "run").exists()
    r = run(["bench", "--url", UNREACHABLE])  # the default results/<time> folder
    assert r.code == 2
    assert not (tmp_path / "results").exists()


def test_capacity_needs_no_bandwidth() -> None:
    r = run(["capacity", "--weight-bytes", "16GB", "--kv-bytes-per-token", "128KiB",
             "--memory", "80GB", "--context", "4096", "--json"])  # fmt: skip
    check_promises(["--json"], r)
    assert json.loads(r.out)["max_batch"] == 119  # (80 - 16) GB / (128 KiB x 4096)


def test_units_the_table_used_to_lack() -> None:
    for size in ("1kiB", "1PiB"):
        r = run(["floor", "--weight-bytes", size, "--bandwidth", "1TB/s", "--json"])
        assert r.code == 0, r.err
    assert json.loads(r.out)["weight_bytes_resident"] == 2.0**50


def test_messages_say_what_is_accepted() -> None:
    r = run(["floor", *FLOOR_BASE, "--batch", "-1"])
    assert "'-1' must be at least 1" in r.err
    r = run(["bench", "--url", UNREACHABLE, "--rate", "nan"])
    assert "--rate" in r.err and "positive" in r.err
    r = run(["cost", *COST_BASE, "--vs-tokens-per-s", "0"])
    assert "must be above 0" in r.err
    r = run(["floor", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--tp", "3"])
    assert "32 attention heads / 8 KV heads" in r.err and "1, 2, 4, 8" in r.err


def test_drill_kinds_json_is_json() -> None:
    r = run(["drill", "--kinds", "--json"])
    check_promises(["--json"], r)
    assert "ceiling" in json.loads(r.out)["kinds"]
