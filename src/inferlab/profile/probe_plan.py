"""The fixed probe grid: the same whatever workload is later predicted, never fitted to one.

`--budget 1` (the default) fits in 3 minutes on a 2-core machine with the bundled
SmolLM2-135M. Its decode probe measures every batch up to 8, then halfway to the slots
and the slots: on one CPU thread the step is not a line in D (the bundled model, 8
slots: 12, 23, 37, 38, 49, 52, 65, 66 ms at D = 1..8: odd batches cost about what the
next even one does), and the simulator prices every ubatch of decoders at its own
size (slots that are not consecutive cut them: specs/llamacpp_ubatches.py), so the small batches
matter even on a server whose loads fill every slot. Each level up adds repeats (a
tighter median) and widens the grid (more batches, up to every slot; more prompt
lengths; longer contexts). The grid depends only on the budget and on what the server
can hold (its slots and context per slot).
"""

from __future__ import annotations

from dataclasses import dataclass

SHORT_PROMPT = 16  # the decoders' prompt: their step is the decode step
EVERY_BATCH_UP_TO = 8  # decode batches probed one by one (past it, halfway and the slots)
CONTEXT_MOST = 8  # the context probe's largest batch: 16 prompts of 384 tokens took 45 s
# the context probe runs once (its prompts are long): 47 gaps a stream, so one stretch
# of a slow machine does not become its median (with 15, D=1 read 14.5 then 25.1 ms)
CONTEXT_OUTPUT = 48
MARGIN_TOKENS = 48  # context kept free in a slot beyond a probe's prompt


@dataclass(frozen=True, slots=True)
class ProbePlan:
    repeats: int  # lone, prefix and mixed requests per point
    lone_prompts: tuple[int, ...]
    decode_batches: tuple[int, ...]
    decode_output: int  # tokens each steady stream generates
    context_output: int  # tokens each context stream generates (one run: more gaps)
    decode_rounds: int  # decode and split runs, spread over the profile (the machine drifts)
    context_prompt: int  # the context-growth probe's prompt (long)
    context_batches: tuple[int, ...]
    mixed_decoders: tuple[int, ...]  # D steady decoders (a slot stays free for the prompt)
    mixed_prompts: tuple[int, ...]  # P: the arriving prompt
    split_batches: tuple[int, ...]  # D streams in slots 0, 2, 4...: one ubatch each
    prefix_prompt: int  # the prefix probe's whole prompt
    prefix_cached: tuple[int, ...]  # K: its first tokens, cached by a request before it


def _fit(values: tuple[int, ...], most: int) -> tuple[int, ...]:
    """The values a slot can hold, ascending, without repeats (the largest kept if none fits)."""
    kept = sorted({min(v, most) for v in values if v >= 1})
    return tuple(kept)


def make_plan(budget: int, slots: int, ctx_per_slot: int) -> ProbePlan:
    """The grid for this budget on a server of `slots` slots of `ctx_per_slot` tokens."""
    room = max(ctx_per_slot - MARGIN_TOKENS, SHORT_PROMPT * 2)
    wide = budget >= 2
    few = min(slots, EVERY_BATCH_UP_TO)
    batches = range(1, slots + 1) if wide else (*range(1, few + 1), (few + slots) // 2, slots)
    prompts = (16, 64, 128, 256, 512, 768) if wide else (16, 128, 384)
    mixed = (32, 128, 256, 512) if wide else (32, 128, 256)
    mixed_d = tuple(range(1, slots)) if wide else (1, slots - 1)
    return ProbePlan(
        repeats=1 + 2 * budget,
        lone_prompts=_fit(prompts, room),
        decode_batches=_fit(tuple(batches), slots),
        decode_output=8 + 8 * budget,  # 16 at budget 1: 15 gaps a stream a round
        context_output=CONTEXT_OUTPUT,  # within the 64 tokens context_prompt leaves
        decode_rounds=2 + 2 * budget,
        context_prompt=min(384 * budget, room - 64),
        context_batches=_fit((1, slots), min(slots, CONTEXT_MOST)),
        mixed_decoders=_fit(mixed_d, max(slots - 1, 1)) if slots > 1 else (),
        mixed_prompts=_fit(mixed, room),
        split_batches=_fit((2, (slots + 1) // 2), min((slots + 1) // 2, 4 * budget))
        if slots > 2
        else (),
        prefix_prompt=min(384, room),
        prefix_cached=_fit((128, 256) if not wide else (64, 128, 256, 320), min(384, room) - 16),
    )


VLLM_BATCHES = (1, 2, 4, 8)  # --budget 1's decode batches on vLLM: concurrent streams
VLLM_WIDE_BATCHES = (1, 2, 4, 8, 16, 32)  # --budget 2 and 3
VLLM_CONTEXT_OUTPUT = 96  # the context probe's streams: their context grows by as much


def make_vllm_plan(
    budget: int, max_num_seqs: int, max_model_len: int, block: int, step_tokens: int
) -> ProbePlan:
    """The grid for a vLLM server: it has no slots, so a batch is as many streams at once
    (up to max_num_seqs); no ubatches (no split probe); cached prefixes in whole KV blocks
    of `block` tokens (its prefix cache hashes full blocks only). A probe's prompt, beside
    its decoders, fits one step's token budget (`step_tokens`: max_num_batched_tokens),
    so each TTFT and stall is one step, never a prompt chunked over several."""
    fits = min(max_model_len - MARGIN_TOKENS, step_tokens - max(VLLM_BATCHES))
    room = max(fits, SHORT_PROMPT * 2)
    wide = budget >= 2
    batches = VLLM_WIDE_BATCHES if wide else VLLM_BATCHES
    prompts = (16, 64, 128, 256, 512, 768) if wide else (16, 128, 384, 768)
    cached = (64, 128, 256, 320) if wide else (128, 256)
    whole = {k - k % block for k in cached if k >= block}
    prefix_prompt = min(384, room)
    return ProbePlan(
        repeats=1 + 2 * budget,
        lone_prompts=_fit(prompts, room),
        decode_batches=_fit(batches, max_num_seqs),
        decode_output=8 + 8 * budget,
        context_output=VLLM_CONTEXT_OUTPUT,
        decode_rounds=2 + 2 * budget,
        context_prompt=max(min(512 * budget, room - VLLM_CONTEXT_OUTPUT), SHORT_PROMPT),
        context_batches=_fit((1, batches[-1]), min(max_num_seqs, CONTEXT_MOST)),
        mixed_decoders=_fit((1, 2, 4, 8) if wide else (1, 4), max_num_seqs - 1)
        if max_num_seqs > 1
        else (),
        mixed_prompts=_fit((32, 128, 256, 512), room),
        split_batches=(),
        prefix_prompt=prefix_prompt,
        prefix_cached=_fit(tuple(whole), prefix_prompt - 16) if whole else (),
    )
