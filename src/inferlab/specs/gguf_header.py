"""A GGUF file's metadata and tensor table, read from its header alone.

`gguf.GGUFReader` builds a numpy view for every element of every array field: the
bundled SmolLM2's tokenizer (49,152 tokens, 48,900 merges) takes it 4-7 s on a 2-core
machine, paid by `floor`, `bench` (its stated floor), `watch` and the demo. The floor
needs the architecture numbers and each tensor's shape and quant type, so this reads
the header once through a memory map: numeric arrays in one `numpy.frombuffer`, string
arrays skipped by their lengths, tensor bytes from the gguf package's own quant table
(`GGML_QUANT_SIZES`). Layout (GGUF v2/v3, little-endian): magic, version u32, tensor
count u64, KV count u64; each KV a string key, a u32 type and its value; then each
tensor's name, dims, type u32 and data offset u64.
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?"}
_SCALARS |= {10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFHeaderError(ValueError):
    """The bytes are not a GGUF header this reader understands."""


@dataclass(frozen=True, slots=True)
class TensorInfo:
    name: str
    n_elements: int
    n_bytes: int  # as stored: quant blocks x block bytes
    type_name: str  # Q4_1, Q8_0, F32, ...


@dataclass(frozen=True, slots=True)
class GGUFHeader:
    fields: dict[str, Any]  # str, int, float, bool, or a list of numbers (strings: None)
    tensors: tuple[TensorInfo, ...]


class _Cursor:
    def __init__(self, buf: Any) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise GGUFHeaderError(f"the header ends early (at byte {self.pos})")
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return v

    def string(self) -> str:
        n = self.take("<Q")
        if self.pos + n > len(self.buf):
            raise GGUFHeaderError(f"a string runs past the end of the file (at byte {self.pos})")
        s = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return s

    def value(self, kind: int, keep_strings: bool = False) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            return self.array(self.take("<I"), self.take("<Q"), keep_strings)
        raise GGUFHeaderError(f"unknown value type {kind} at byte {self.pos}")

    def array(self, kind: int, n: int, keep_strings: bool = False) -> list[Any] | None:
        """Numbers as a list (one frombuffer); strings skipped by length (None) unless kept."""
        if kind == _STRING and keep_strings:
            return [self.string() for _ in range(n)]
        if kind in _SCALARS:
            import numpy as np  # lazily: `inferlab floor` on a preset never reads a GGUF

            dt = np.dtype(_SCALARS[kind])
            end = self.pos + n * dt.itemsize
            if end > len(self.buf):
                raise GGUFHeaderError(f"an array runs past the end of the file (at {self.pos})")
            out: list[Any] = np.frombuffer(self.buf, dt, n, self.pos).tolist()
            self.pos = end
            return out
        for _ in range(n):
            self.value(kind)  # strings (a tokenizer's vocabulary): skipped, not kept
        return None


def _tensor(c: _Cursor) -> TensorInfo:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    name = c.string()
    dims = [c.take("<Q") for _ in range(c.take("<I"))]
    kind = c.take("<I")
    c.take("<Q")  # the data offset: not needed for the bytes
    try:
        qtype = GGMLQuantizationType(kind)
        block, size = GGML_QUANT_SIZES[qtype]
    except (ValueError, KeyError) as e:
        raise GGUFHeaderError(f"tensor {name}: unknown quant type {kind}") from e
    n = math.prod(dims)
    return TensorInfo(name, n, n // block * size, qtype.name)


def read_header(path: Path, keep_strings: frozenset[str] = frozenset()) -> GGUFHeader:
    """Metadata and tensor table; GGUFHeaderError if the bytes are not a GGUF v2/v3 header.
    String arrays are skipped (None) except the fields named in `keep_strings` (a
    tokenizer's vocabulary and merges, for specs/vocab_bpe.py)."""
    with path.open("rb") as f:
        try:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError as e:  # an empty file cannot be mapped
            raise GGUFHeaderError("the file is empty") from e
    with buf:
        c = _Cursor(memoryview(buf))
        try:
            if bytes(c.buf[:4]) != b"GGUF":
                raise GGUFHeaderError("no GGUF magic at the start")
            c.pos = 4
            version = c.take("<I")
            if version not in (2, 3):
                raise GGUFHeaderError(f"GGUF version {version} (this reader knows 2 and 3)")
            n_tensors, n_kv = c.take("<Q"), c.take("<Q")
            fields = {}
            for _ in range(n_kv):
                key = c.string()
                fields[key] = c.value(c.take("<I"), key in keep_strings)
            tensors = tuple(_tensor(c) for _ in range(n_tensors))
        finally:
            c.buf.release()
    return GGUFHeader(fields, tensors)
