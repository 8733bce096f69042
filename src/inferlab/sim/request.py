"""One simulated request: what it asks for and how far the engine has got with it."""

from __future__ import annotations

from dataclasses import dataclass, field

DECODE, PREFILL = 0, 1  # which table of token times a piece indexes (see Running)


@dataclass(slots=True, eq=False)  # eq=False: identity, so list.remove is cheap and exact
class SimRequest:
    id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    injected: bool = False
    user: int | None = None  # closed-loop user who sent it
    prefill_target: int = 0  # tokens to (re)compute before decoding
    prefilled: int = 0
    # Tokens emitted (the user saw them, so they survive preemption). While the
    # request decodes this is the count when its decode run began (see Running).
    generated: int = 0
    blocks: int = 0  # KV blocks held while prefilling (decoders are counted by Running)
    decode_from: int = -1  # decode-step index its current decode run began at; -1: not decoding
    # Its token times, in order: (DECODE or PREFILL, first index, count) into Running's tables.
    pieces: list[tuple[int, int, int]] = field(default_factory=list)
    finish_s: float | None = None
    preemptions: int = 0
    admit_order: int = 0
    spec: int = -1  # its row in the level's request specs (load/); -1: injected
