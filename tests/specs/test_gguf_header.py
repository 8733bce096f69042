"""The header reader gives what gguf.GGUFReader gives (fields, tensor bytes), from the header
alone; bytes that are not a GGUF v2/v3 header are one GGUFHeaderError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inferlab.engines.bundled import smollm2_gguf_path
from inferlab.specs.gguf_header import GGUFHeaderError, TensorInfo, read_header


def _write(path: Path) -> Path:
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.block_count", 2)
    w.add_int32("llama.signed", -3)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_bool("llama.flag", True)
    w.add_string("general.name", "tiny")
    w.add_array("llama.attention.head_count_kv", [1, 2])
    w.add_array("tokenizer.ggml.tokens", ["<s>", "hello", "wörld"])
    w.add_tensor("token_embd.weight", np.zeros((8, 32), dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight", np.zeros((4, 32), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _reader_view(path: Path) -> tuple[dict[str, object], tuple[TensorInfo, ...]]:
    from gguf import GGUFReader

    r = GGUFReader(str(path))
    fields = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}
    tensors = tuple(
        TensorInfo(t.name, int(t.n_elements), int(t.n_bytes), t.tensor_type.name) for t in r.tensors
    )
    return fields, tensors


def test_same_fields_and_tensors_as_the_gguf_package(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.gguf")
    h = read_header(path)
    fields, tensors = _reader_view(path)
    assert h.tensors == tensors
    assert h.tensors[1] == TensorInfo("blk.0.attn_q.weight", 128, 256, "F16")
    strings = {"tokenizer.ggml.tokens"}  # skipped by their lengths, not kept
    assert {k: v for k, v in h.fields.items() if k not in strings} == {
        k: v for k, v in fields.items() if k not in strings
    }
    assert h.fields["llama.attention.head_count_kv"] == [1, 2]
    assert h.fields["llama.rope.freq_base"] == 10000.0 and h.fields["llama.flag"] is True
    assert h.fields["tokenizer.ggml.tokens"] is None


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "empty"),
        (b"GGUX" + b"\0" * 64, "no GGUF magic"),
        (b"GGUF" + (1).to_bytes(4, "little") + b"\0" * 16, "version 1"),
    ],
)
def test_not_a_header_is_one_error(tmp_path: Path, data: bytes, says: str) -> None:
    p = tmp_path / "x.gguf"
    p.write_bytes(data)
    with pytest.raises(GGUFHeaderError, match=says):
        read_header(p)


def test_a_truncated_header_is_one_error(tmp_path: Path) -> None:
    whole = _write(tmp_path / "m.gguf").read_bytes()
    for cut in (12, 40, 200, len(whole) // 4):
        p = tmp_path / f"cut{cut}.gguf"
        p.write_bytes(whole[:cut])
        with pytest.raises(GGUFHeaderError):
            read_header(p)


@pytest.mark.slow  # gguf.GGUFReader takes seconds on the bundled model's tokenizer
def test_the_bundled_model_reads_as_the_gguf_package_reads_it() -> None:
    path = smollm2_gguf_path()
    _, tensors = _reader_view(path)
    h = read_header(path)
    assert h.tensors == tensors and len(tensors) == 272
    assert h.fields["general.architecture"] == "llama"
    assert h.fields["llama.attention.head_count_kv"] == 3
