"""bench states the floor itself for a server on this machine that names its GGUF (/props),
from the file's real tensor bytes and this machine's probed bandwidth; otherwise it says which
flag would give MBU. A tiny aiohttp app plays llama-server's /props."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import inferlab.specs.resolve as resolve_mod
from inferlab.bench.autofloor import (
    auto_floor,
    is_loopback,
    model_file,
    models_url,
    props_url,
    served_folder,
)
from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.engines.bundled import smollm2_gguf_path
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.specs.cost import derive_cost
from inferlab.units import fmt_bandwidth, fmt_bytes
from tests.bench.bounded_app import Script, make_app, serve

BANDWIDTH = 20e9
_SPECS: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def read_each_gguf_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real GGUF reader, remembered per path: it takes seconds on a loaded machine, and
    every test here reads the same bundled file."""
    import inferlab.specs.resolve as resolve_mod

    real = resolve_mod.resolve_model

    def remembered(name: str, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return real(name, *args, **kwargs)
        if name not in _SPECS:
            _SPECS[name] = real(name)
        return _SPECS[name]

    monkeypatch.setattr(resolve_mod, "resolve_model", remembered)


@pytest.fixture
def probed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A probe cache saying this machine reads at 20 GB/s (as `inferlab probe` writes it)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = {
        "name": "this machine: test CPU (2 cores)",
        "bandwidth_bytes_per_s": BANDWIDTH,
        "memory_bytes": 16e9,
        "flops_per_s": {"fp32": 1e11, "fp64": 5e10},
        "source": "inferlab probe (test)",
    }
    (cache / "this-machine.json").write_text(json.dumps(entry))
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(cache))
    return cache


@pytest.fixture
def unprobed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(tmp_path / "empty-cache"))


def _llama_props(path: str) -> dict[str, object]:
    """The parts of llama-server's /props (server-context.cpp, get_res_props) that matter."""
    return {"total_slots": 1, "model_alias": "smollm2", "model_path": path, "build_info": "b0"}


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:8080", True),
        ("http://127.3.2.1:80/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://10.0.0.5:8080/v1", False),
        ("https://api.example.com/v1", False),
        ("http://[bad", False),
    ],
)
def test_loopback(url: str, local: bool) -> None:
    assert is_loopback(url) is local


def test_props_url_and_model_file(tmp_path: Path) -> None:
    assert props_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/props"
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert model_file({"model_path": str(gguf)}) == gguf
    assert model_file({"model_path": "none"}) is None  # llama-server in router mode
    assert model_file({"model_path": str(tmp_path / "gone.gguf")}) is None
    assert model_file({}) is None and model_file(None) is None


@pytest.mark.slow
def test_a_local_llama_server_gets_its_floor(probed: Path) -> None:
    gguf = smollm2_gguf_path()
    with serve(make_app(Script(props=_llama_props(str(gguf))))) as base:
        auto = auto_floor(f"{base}/v1", None)
    assert auto.floor is not None
    weight = derive_cost(resolve_mod.resolve_model(str(gguf))).weight_bytes_per_step(1)
    assert auto.floor.cost.weight_bytes_per_step(1) == weight  # the GGUF's real tensor bytes
    assert auto.floor.hardware.bandwidth_bytes_per_s == BANDWIDTH
    step_ms = weight / BANDWIDTH * 1e3
    assert auto.line == (
        f"floor: {gguf.name} {fmt_bytes(weight)} / {fmt_bandwidth(BANDWIDTH)} probed here "
        f"= {step_ms:.3g} ms; --floor-* to override"
    )


@pytest.mark.slow
def test_no_probe_yet_says_how_to_get_one(unprobed: None) -> None:
    gguf = smollm2_gguf_path()
    with serve(make_app(Script(props=_llama_props(str(gguf))))) as base:
        auto = auto_floor(f"{base}/v1", None)
    assert auto.floor is None
    assert "inferlab probe" in auto.line and "--floor-bandwidth" in auto.line
    assert gguf.name in auto.line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("props", "said"),
    [
        (None, "names no model file here"),  # 404: not llama.cpp
        ({"model_path": "none"}, "names no model file here"),
        ({"model_path": "/nowhere/x.gguf"}, "names no model file here"),
    ],
)
def test_no_model_file_says_which_flags(
    probed: Path, props: dict[str, object] | None, said: str
) -> None:
    with serve(make_app(Script(props=props))) as base:
        auto = auto_floor(f"{base}/v1", None)
    assert auto.floor is None
    assert auto.line == f"no MBU: {base}/props {said}; --floor-gguf FILE with --floor-hardware " \
        "NAME (or --floor-bandwidth) gives MBU"  # fmt: skip


def test_a_remote_server_is_not_asked(probed: Path) -> None:
    auto = auto_floor("http://10.255.255.1:8080/v1", None, timeout_s=0.001)
    assert auto.floor is None and auto.line.startswith("no MBU: the server is not on this machine")


@pytest.mark.slow
def test_bench_cli_computes_mbu_from_the_stated_floor(
    probed: Path, run_cli: Any, tmp_path: Path
) -> None:
    gguf = smollm2_gguf_path()
    # Tokens 20 ms apart: the client reads them apart, so the level has a TPOT (and an MBU);
    # sent back to back they can land in one read, a TPOT of 0 and no MBU to compute.
    with serve(make_app(Script(props=_llama_props(str(gguf)), token_gap_s=0.02))) as base:
        code, out, err = run_cli(
            "bench", "--url", f"{base}/v1", "--concurrency", "1", "--requests-per-level", "2",
            "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "4", "--no-scrape",
            "--out", str(tmp_path / "run"), "--no-plots", "--json",
        )  # fmt: skip
    assert code == 0, err
    s = json.loads(out)
    assert s["floor"]["bandwidth_bytes_per_s"] == BANDWIDTH
    assert s["floor"]["model_source"].endswith(gguf.name) or gguf.name in json.dumps(s["floor"])
    assert s["levels"][0]["mbu"] is not None
    floor_lines = [x for x in err.splitlines() if x.startswith("floor: ")]
    assert len(floor_lines) == 1 and "--floor-* to override" in floor_lines[0]
    assert {w["code"] for w in s["warnings"]} >= {"floor_stated"}


@pytest.mark.slow
def test_bench_without_a_floor_says_which_flag(probed: Path, tmp_path: Path) -> None:
    script = Script()  # no /props: not llama.cpp
    with serve(make_app(script)) as base:
        load = Workload.fixed(8, 4, [Level("concurrency", 1)], requests_per_level=2, warmup=0)
        cfg = BenchConfig(
            url=f"{base}/v1", model=None, load=load, out_dir=tmp_path, scrape=False,
            floor_note=auto_floor(f"{base}/v1", None).line)  # fmt: skip
        res = asyncio.run(run_benchmark(cfg))
    info = [w for w in res.summary.warnings if w.code == "no_floor"]
    assert len(info) == 1 and info[0].severity == "info" and "--floor-gguf" in info[0].message
    # the tokenizer note is still given beside it (it used to need an empty warning list)
    assert "no_tokenizer" in {w.code for w in res.summary.warnings}


def _smollm2_folder(tmp_path: Path, dtype: str = "bfloat16") -> Path:
    """A Hugging Face folder as vLLM serves it: SmolLM2-135M's config.json (its published
    numbers), no weights needed for the floor."""
    folder = tmp_path / "smollm2-hf"
    folder.mkdir()
    config = {
        "model_type": "llama",
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "num_hidden_layers": 30,
        "vocab_size": 49152,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "torch_dtype": dtype,
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _vllm_models(root: str) -> dict[str, object]:
    """vLLM 0.32's /v1/models (../shared/fixtures/vllm-0.32-cpu/v1-models.json), its root ours."""
    return {"object": "list", "data": [{"id": "smollm2", "owned_by": "vllm", "root": root}]}


def test_served_folder_reads_vllms_root(tmp_path: Path) -> None:
    folder = _smollm2_folder(tmp_path)
    assert served_folder(_vllm_models(str(folder))) == folder
    assert served_folder(_vllm_models(str(tmp_path / "gone"))) is None  # not on this machine
    assert served_folder({"data": [{"id": "m"}]}) is None and served_folder(None) is None
    assert models_url("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/v1/models"
    fixture = Path(__file__).parents[2].parent / "shared/fixtures/vllm-0.32-cpu/v1-models.json"
    if fixture.is_file():  # the captured bytes name a folder of the machine they came from
        captured_root = "/" + "tmp/smollm2-hf"  # in parts: test_docs finds no machine path here
        assert json.loads(fixture.read_text())["data"][0]["root"] == captured_root


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dtype", "name", "bytes_per_param"), [("bfloat16", "bf16", 2), ("float32", "fp32", 4)]
)
def test_a_local_vllm_gets_its_floor_from_the_served_folder(
    probed: Path, tmp_path: Path, dtype: str, name: str, bytes_per_param: int
) -> None:
    folder = _smollm2_folder(tmp_path, dtype)
    with serve(make_app(Script(models=_vllm_models(str(folder))))) as base:  # no /props: 404
        auto = auto_floor(f"{base}/v1", None)
    assert auto.floor is not None
    weight = auto.floor.cost.weight_bytes_per_step(1)
    params = derive_cost(resolve_mod.resolve_model(str(folder)), name).params_total
    assert weight == pytest.approx(params * bytes_per_param, rel=0.01)
    assert 134e6 < params < 136e6  # SmolLM2-135M
    assert auto.line.startswith(f"floor: smollm2-hf ({name}, config.json) {fmt_bytes(weight)} / ")


@pytest.mark.slow
def test_a_remote_folder_name_is_no_floor(probed: Path, tmp_path: Path) -> None:
    with serve(make_app(Script(models=_vllm_models(str(tmp_path / "elsewhere"))))) as base:
        auto = auto_floor(f"{base}/v1", None)
    assert auto.floor is None and "names no model file here" in auto.line
