"""Number formats and what one element costs in bytes, block/scale overhead included.

GGUF block formats are counted by their real block sizes (bytes per block of
elements, as in ggml's type table); grouped int4 carries one fp16 scale per
group. `bytes_per_element` is what a weight or KV entry costs on average.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.errors import SpecError


@dataclass(frozen=True, slots=True)
class Dtype:
    name: str
    bytes_per_element: float
    # Which peak-FLOPS row of a hardware spec the matmuls run at. Weight-only
    # formats (int4, GGUF quants) are dequantised and multiplied in bf16/fp16.
    compute: str
    note: str


def _block(name: str, block_elems: int, block_bytes: int, note: str) -> Dtype:
    return Dtype(
        name, block_bytes / block_elems, "bf16", f"{note}; {block_bytes} B per {block_elems}"
    )


# GGUF (ggml) block sizes: (elements per block, bytes per block).
GGML_BLOCKS: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q4_0": (32, 18),
    "Q4_1": (32, 20),
    "Q5_0": (32, 22),
    "Q5_1": (32, 24),
    "Q8_0": (32, 34),
    "Q8_1": (32, 36),
    "Q2_K": (256, 84),
    "Q3_K": (256, 110),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
    "Q8_K": (256, 292),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
    "TQ1_0": (256, 54),
    "TQ2_0": (256, 66),
    "MXFP4": (32, 17),
}

_DTYPES: dict[str, Dtype] = {
    "fp32": Dtype("fp32", 4.0, "fp32", "IEEE single"),
    "bf16": Dtype("bf16", 2.0, "bf16", "bfloat16"),
    "fp16": Dtype("fp16", 2.0, "fp16", "IEEE half"),
    "fp8": Dtype("fp8", 1.0, "fp8", "e4m3/e5m2; per-tensor scales negligible"),
    "int8": Dtype("int8", 1.0, "int8", "per-channel scales negligible"),
    "int4": Dtype("int4", 4.125 / 8, "bf16", "4 bit + one fp16 scale per group of 128 (AWQ/GPTQ)"),
    "int4-g32": Dtype("int4-g32", 4.5 / 8, "bf16", "4 bit + one fp16 scale per group of 32"),
    "fp4": Dtype("fp4", 4.5 / 8, "fp4", "NVFP4: e2m1 + one fp8 scale per 16"),
}
for _name, (_elems, _bytes) in GGML_BLOCKS.items():
    if _name.lower() not in _DTYPES:
        _DTYPES[_name.lower()] = _block(_name.lower(), _elems, _bytes, f"GGUF {_name}")

ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "f16": "fp16",
    "f32": "fp32",
    "e4m3": "fp8",
    "fp8_e4m3": "fp8",
    "float8": "fp8",
}


def get_dtype(name: str) -> Dtype:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in _DTYPES:
        known = ", ".join(sorted(_DTYPES))
        raise SpecError(f"unknown dtype {name!r}; known dtypes: {known}")
    return _DTYPES[key]
