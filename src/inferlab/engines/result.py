"""Typed results of the engine-alone benchmark (llama.cpp's own tools): engine_bench.json.

A value module that lives with the engine it describes: engines/llama_bench.py fills it,
summary holds it, metrics and report read it, and it imports nothing of inferlab but
errors (the one module of a package a neutral module may import: tests/test_architecture).

A step time per batch (llama-batched-bench), a lone prefill and a lone
generation repeated (llama-bench), and what the processes cost; the noise of a
step is derived from the repetitions, so a served TPOT can be held against it.
`context_steps` are the same batches after longer prompts: how the step grows
with the context (absent in results written before they were measured).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from inferlab.errors import InferlabError

KIND = "inferlab.engine_bench"
ENGINE_SCHEMA_VERSION = 1  # engine_bench.json's own (summary.json's is summary.SCHEMA_VERSION)
# "Clearly" different: two standard deviations of the engine's own repetitions.
NOISE_SIGMAS = 2.0


class EngineBenchError(InferlabError):
    """A benchmark binary missing, crashing, printing something unknown, or a bad GGUF."""


@dataclass(frozen=True, slots=True)
class BatchStep:
    """llama-batched-bench at one batch: B sequences prefilled together, then decoded together.

    With several passes the times are the best pass (a busy machine only slows a run, as
    for the bandwidth probe); `step_samples_s` keeps every pass, their spread is noise.
    """

    batch: int
    prompt_tokens: int
    output_tokens: int
    prefill_s: float  # B prompts of prompt_tokens, in one batch
    prefill_tokens_per_s: float
    decode_s: float  # all output_tokens steps
    step_time_s: float  # decode_s / output_tokens
    tokens_per_s_total: float
    n_kv_max: int
    n_batch: int
    n_ubatch: int
    threads: int
    step_samples_s: tuple[float, ...]  # one per pass, in the order they ran

    @property
    def spread_rel(self) -> float:
        """(slowest - fastest) / fastest pass: 0 with one pass."""
        lo = min(self.step_samples_s)
        return (max(self.step_samples_s) - lo) / lo if lo > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__slots__}
        d["step_samples_s"] = list(self.step_samples_s)
        return d | {"spread_rel": self.spread_rel}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> BatchStep:
        return cls(
            **{k: d[k] for k in cls.__slots__} | {"step_samples_s": tuple(d["step_samples_s"])}
        )


def best_of_passes(rows: tuple[BatchStep, ...]) -> tuple[BatchStep, ...]:
    """One BatchStep per batch from several passes: the fastest pass, every pass kept."""
    out = []
    for b in sorted({r.batch for r in rows}):
        runs = [r for r in rows if r.batch == b]
        best = min(runs, key=lambda r: r.step_time_s)
        prefill = min(r.prefill_s for r in runs)
        out.append(
            replace(
                best,
                prefill_s=prefill,
                prefill_tokens_per_s=b * best.prompt_tokens / prefill,
                step_samples_s=tuple(r.step_time_s for r in runs),
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Repeated:
    """One llama-bench test (a lone prefill `pp` or a lone generation `tg`), repeated."""

    test: str  # "pp32", "tg128"
    n_tokens: int
    mean_s: float
    stddev_s: float
    samples_s: tuple[float, ...]

    @property
    def per_token_s(self) -> float:
        return self.mean_s / self.n_tokens

    @property
    def tokens_per_s(self) -> float:
        return self.n_tokens / self.mean_s

    @property
    def rel_stddev(self) -> float:
        return self.stddev_s / self.mean_s if self.mean_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "n_tokens": self.n_tokens,
            "mean_s": self.mean_s,
            "stddev_s": self.stddev_s,
            "samples_s": list(self.samples_s),
            "per_token_s": self.per_token_s,
            "tokens_per_s": self.tokens_per_s,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Repeated:
        return cls(d["test"], d["n_tokens"], d["mean_s"], d["stddev_s"], tuple(d["samples_s"]))


@dataclass(frozen=True, slots=True)
class ProcessRun:
    """What one binary cost: its command, wall time and CPU time (to see a starved engine)."""

    command: tuple[str, ...]
    wall_s: float
    cpu_s: float
    timed_out: bool = False  # stopped at its budget; what it had printed was kept

    def to_json(self) -> dict[str, Any]:
        return {
            "command": list(self.command),
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "timed_out": self.timed_out,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProcessRun:
        return cls(tuple(d["command"]), d["wall_s"], d["cpu_s"], d.get("timed_out", False))


@dataclass(frozen=True, slots=True)
class EngineBench:
    """The engine-alone measurement: step time per batch, prefill rate, and their noise."""

    gguf: str
    model_type: str
    threads: int
    prompt_tokens: int
    output_tokens: int
    ctx_size: int
    steps: tuple[BatchStep, ...]
    prefill: Repeated
    decode: Repeated
    runs: tuple[ProcessRun, ...]
    build: str
    cpu_info: str
    context_steps: tuple[BatchStep, ...] = ()  # the batches again after longer prompts

    @property
    def context_prompts(self) -> tuple[int, ...]:
        """Every prompt length the steps were measured after, shortest first."""
        return tuple(sorted({self.prompt_tokens, *(s.prompt_tokens for s in self.context_steps)}))

    @property
    def noise_rel(self) -> float:
        """Relative noise of any step, measured: the larger of 2 stddev of llama-bench's
        repeated generation and the two tools' disagreement on the same batch-1 step."""
        rel = NOISE_SIGMAS * self.decode.rel_stddev
        one = self.step_at(1)
        if one is not None and self.decode.per_token_s > 0:
            rel = max(rel, abs(one[0] - self.decode.per_token_s) / self.decode.per_token_s)
        return rel

    def noise_s(self, batch: int) -> float:
        """The noise of the step at `batch`: noise_rel, or the spread of its passes (of the
        two measured batches around it) if larger."""
        at = self.step_at(batch)
        if at is None:
            return 0.0
        near = [s for s in self.steps if s.batch == batch] or [
            s for s in self.steps if s.batch in self._neighbours(batch)
        ]
        return at[0] * max([self.noise_rel, *(s.spread_rel for s in near)])

    def _neighbours(self, batch: int) -> tuple[int, int]:
        batches = [s.batch for s in self.steps]
        return max(b for b in batches if b < batch), min(b for b in batches if b > batch)

    @property
    def cpu_fraction(self) -> float:
        """CPU time the engine got over what its threads could use: < 1 means it waited."""
        wall = sum(r.wall_s for r in self.runs)
        return sum(r.cpu_s for r in self.runs) / (wall * self.threads) if wall else 0.0

    def step_at(self, batch: int) -> tuple[float, str] | None:
        """(step time, "measured" | "interpolated") at a batch; None outside the measured ones."""
        by = {s.batch: s.step_time_s for s in self.steps}
        if batch in by:
            return by[batch], "measured"
        if not by or not min(by) < batch < max(by):
            return None
        lo, hi = self._neighbours(batch)
        # The step grows about linearly with the batch between two measured ones.
        return by[lo] + (by[hi] - by[lo]) * (batch - lo) / (hi - lo), "interpolated"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "schema_version": ENGINE_SCHEMA_VERSION,
            "engine": "llama.cpp",
            "gguf": self.gguf,
            "model_type": self.model_type,
            "threads": self.threads,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "ctx_size": self.ctx_size,
            "steps": [s.to_json() for s in self.steps],
            "context_prompts": list(self.context_prompts),
            "context_steps": [s.to_json() for s in self.context_steps],
            "prefill": self.prefill.to_json(),
            "decode": self.decode.to_json(),
            "noise_rel": self.noise_rel,
            "cpu_fraction": self.cpu_fraction,
            "runs": [r.to_json() for r in self.runs],
            "build": self.build,
            "cpu_info": self.cpu_info,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EngineBench:
        if d.get("kind") != KIND or d.get("schema_version") != ENGINE_SCHEMA_VERSION:
            raise EngineBenchError(
                f"not an engine-bench result (kind {d.get('kind')!r}, schema_version "
                f"{d.get('schema_version')!r}; expected {KIND!r}, {ENGINE_SCHEMA_VERSION})"
            )
        return cls(
            gguf=d["gguf"],
            model_type=d["model_type"],
            threads=d["threads"],
            prompt_tokens=d["prompt_tokens"],
            output_tokens=d["output_tokens"],
            ctx_size=d["ctx_size"],
            steps=tuple(BatchStep.from_json(s) for s in d["steps"]),
            prefill=Repeated.from_json(d["prefill"]),
            decode=Repeated.from_json(d["decode"]),
            runs=tuple(ProcessRun.from_json(r) for r in d["runs"]),
            build=d["build"],
            cpu_info=d["cpu_info"],
            context_steps=tuple(BatchStep.from_json(s) for s in d.get("context_steps", [])),
        )
