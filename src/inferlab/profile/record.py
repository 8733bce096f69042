"""profile.json: what `inferlab profile` measured on one server, and who that server was.

One file per profile, schema-versioned, written once at the end (jsonio, atomically).
Every probe is kept as an `Observation`: the step it measured (decoders, their contexts,
the prompt tokens computed and the tokens cached before them), whether the time includes
the per-request cost (a TTFT does, a decoder's gap does not), and the median, quartiles
and count of the repeats (never the fastest pass). The fit (profile/fit.py) is a pure
function of the observations, so a profile can be refitted without the server. The drift
canary taken around the probes (`canary`: bench's record of it, profile/run_profile.py)
says how fast the machine ran while it was profiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from inferlab.errors import InferlabError
from inferlab.jsonio import loads_strict
from inferlab.jsonrecord import Count, JsonRecord, SchemaError, optional
from inferlab.summary import Canary

SCHEMA_VERSION = 1
PROFILE_NAME = "profile.json"

# lone: a request alone (TTFT); prefix: alone, its first tokens cached (TTFT);
# decode / context: the gap between tokens of D steady streams (short / long prompts);
# mixed: the stall D steady decoders see while a prompt arrives;
# split: the gap of D steady streams in slots that are not consecutive (one ubatch each).
Probe = Literal["lone", "prefix", "decode", "context", "mixed", "split"]
TTFT_PROBES = ("lone", "prefix")


# vLLM 0.32's CPU build serving the OpenAI API, where the server does not publish them
# (engine/arg_utils.py get_batch_defaults: "cpu specific default values"); its /metrics
# states only its cache config
VLLM_CPU_DEFAULTS = {"max_num_seqs": 128, "max_num_batched_tokens": 2048}
# vLLM's settings a profile holds the server to (as llama-server's threads and slots)
VLLM_COMPARED = (
    "block_size",
    "num_gpu_blocks",
    "enable_prefix_caching",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
)


@dataclass(frozen=True, slots=True)
class VllmSettings(JsonRecord):
    """A vLLM server's scheduler and cache settings: read from it where it states them
    (/version, /v1/models, /metrics `vllm:cache_config_info`), else vLLM 0.32 CPU's
    defaults, each named in `defaulted`. The names are vLLM's own (its flags' fields)."""

    version: str | None  # GET /version
    block_size: int | None  # tokens per KV block: the prefix cache's unit
    num_gpu_blocks: int | None  # KV blocks (one of them vLLM's null block)
    enable_prefix_caching: bool | None
    max_model_len: int | None  # /v1/models
    max_num_seqs: int  # requests running at once: the largest batch
    max_num_batched_tokens: int  # a step's token budget (decodes and prompt chunks)
    defaulted: tuple[str, ...] = ()  # fields the server did not state: VLLM_CPU_DEFAULTS

    @property
    def kv_tokens(self) -> int | None:
        """Tokens the KV blocks hold, less vLLM's null block (v1/core/block_pool.py)."""
        if self.num_gpu_blocks is None or self.block_size is None:
            return None
        return max(self.num_gpu_blocks - 1, 1) * self.block_size

    def knob_values(self) -> tuple[tuple[str, int], ...]:
        """The settings as (vLLM's name, value) pairs, on/off as 1/0; those not known left out."""
        out = []
        for name in VLLM_COMPARED:
            v = getattr(self, name)
            if v is not None and name != "max_model_len":
                out.append((name, int(v)))
        return tuple(out)

    def stated(self, name: str) -> object:
        """The value of `name` if the server stated it, else None (a default is not compared)."""
        return None if name in self.defaulted else getattr(self, name)


@dataclass(frozen=True, slots=True)
class ServerIdentity(JsonRecord):
    """Who was profiled; None where the server did not say (then it is not compared)."""

    model: str  # the served model id (llama-server: the GGUF path)
    kind: str  # llamacpp, vllm, sglang, openai (from /v1/models)
    threads: int | None = optional()  # /props where it says, else --threads
    parallel: int | None = optional()  # slots (llama-server /props total_slots)
    ctx_per_slot: int | None = optional()
    build: str | None = optional()
    vllm: VllmSettings | None = optional()  # a vLLM server's settings (kind "vllm")


@dataclass(frozen=True, slots=True)
class Observation(JsonRecord):
    """One probe point: the step it measured and its time over the repeats."""

    probe: Probe
    decoders: Count  # sequences decoding in the step
    context_tokens: Count  # their contexts, summed
    prompt_tokens: Count  # prompt tokens computed in the step
    cached_tokens: Count  # tokens already cached before those prompt tokens
    median_s: float
    p25_s: float
    p75_s: float
    n: Count  # repeats (or gaps) behind the median
    # the server's own time for the step: /metrics over the window (decode probes), its
    # prefill time (timings.prompt_ms, vLLM's request_prefill_time_seconds: TTFT probes;
    # the fit then splits the TTFT into this step and the request's own cost)
    server_step_s: float | None = optional()
    # llama.cpp's physical passes in the step (specs/llamacpp_ubatches.py); None: one
    # (a vLLM step, or profiles written before they were counted)
    ubatches: int | None = optional()
    # decode / split: the median gap of each run (rounds spread over the profile), whose
    # spread is how much the machine's speed moved while it was profiled
    run_medians_s: tuple[float, ...] | None = optional()
    # the decoders in each ubatch that carries any (split_ubatches); None:
    # not recorded (profiles before they were), then as the probe places its streams
    decode_groups: tuple[int, ...] | None = optional()

    @property
    def ubatch_count(self) -> int:
        return self.ubatches or 1

    @property
    def groups(self) -> tuple[int, ...]:
        """The decoders of each ubatch: recorded, else one each (split) or all in one."""
        if self.decode_groups is not None:
            return self.decode_groups
        if not self.decoders:
            return ()
        return (1,) * self.decoders if self.probe == "split" else (self.decoders,)

    @property
    def with_request_cost(self) -> bool:
        return self.probe in TTFT_PROBES


@dataclass(frozen=True, slots=True)
class ProfileRecord(JsonRecord):
    schema_version: int
    created_unix_s: float
    url: str
    server: ServerIdentity
    budget: int  # the --budget level the probes ran at
    wall_s: float  # how long the probes took
    observations: tuple[Observation, ...]
    # the chat template's tokens (profile/template.py); absent: no chat API, or older files
    chat_first_tokens: int | None = optional()
    chat_per_message_tokens: int | None = optional()
    chat_shared_tokens: int | None = optional()  # of the first: alike in every chat
    # the drift canary (bench/canary.py's request) around the probes: the machine's speed
    # while profiled, set against a measurement's own (metrics/speed_shift.py); absent:
    # profiles before it, or a server that failed it
    canary: Canary | None = optional()

    def problem(self) -> str | None:
        if self.schema_version != SCHEMA_VERSION:
            return (
                f"schema_version {self.schema_version} is not {SCHEMA_VERSION}: "
                "profile the server again with this inferlab"
            )
        if not self.observations:
            return "no observations"
        return None


def profile_path(path: Path) -> Path:
    """A profile folder's profile.json (or the file itself)."""
    return path / PROFILE_NAME if path.is_dir() else path


def load_profile(path: Path) -> ProfileRecord:
    """Read and check a profile; one InferlabError line if it is missing or malformed."""
    file = profile_path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as e:
        raise InferlabError(
            f"cannot read {file} ({e.strerror or e}): run `inferlab profile --out DIR` first"
        ) from e
    try:
        record: ProfileRecord = ProfileRecord.from_json(loads_strict(text))
    except (ValueError, SchemaError) as e:
        raise InferlabError(f"{file} is not a profile: {e}") from e
    return record
