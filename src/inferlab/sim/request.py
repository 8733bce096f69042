"""One simulated request: what it asks for and how far the engine has got with it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from inferlab.errors import InferlabError

DECODE, PREFILL = 0, 1  # which table of token times a piece indexes (see Running)

# A prompt's token identity, as runs of (id, tokens): two prompts hold the same tokens as
# far as their runs agree, a run of the same id and a different length agreeing on the
# shorter one (sim/prefix_cache.py builds them from load/'s request specs).
Prompt = tuple[tuple[int, int], ...]


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
    prompt: Prompt | None = None  # its tokens' identity; None: shares nothing with anyone
    cached_tokens: int = 0  # prompt tokens a prefix cache served at its latest admission


@dataclass(frozen=True, slots=True)
class RequestCosts:
    """Serving costs per request that no engine step carries (0: none, the default).

    `request_overhead_s` + `request_overhead_per_token_s` x its prompt tokens: from a
    request's arrival until the scheduler sees it (HTTP, chat template, tokenisation);
    its TTFT still counts from the arrival.
    `finish_overhead_s`: from the step that gave its last token until the client has the
    whole reply (a closed-loop user sends its next request then).
    `chat_first_tokens` + `chat_per_message_tokens` x each earlier message: the tokens a
    server's chat template adds to a conversation's prompt (a profile's template probe),
    the first `chat_shared_tokens` of them alike in every conversation (a system prompt)."""

    request_overhead_s: float = 0.0
    finish_overhead_s: float = 0.0
    request_overhead_per_token_s: float = 0.0
    chat_first_tokens: int = 0
    chat_per_message_tokens: int = 0
    chat_shared_tokens: int = 0  # of chat_first_tokens: the head every conversation shares

    def scaled(self, factor: float) -> RequestCosts:
        """Every time x `factor` (the token counts stay)."""
        return replace(
            self,
            request_overhead_s=self.request_overhead_s * factor,
            finish_overhead_s=self.finish_overhead_s * factor,
            request_overhead_per_token_s=self.request_overhead_per_token_s * factor,
        )

    def __post_init__(self) -> None:
        for name in ("request_overhead_s", "finish_overhead_s", "request_overhead_per_token_s"):
            v = getattr(self, name)
            if not 0 <= v < float("inf"):
                raise InferlabError(f"{name} must be a finite time >= 0 (got {v})")


NO_COSTS = RequestCosts()


@dataclass(frozen=True, slots=True)
class RequestModel:
    """What the simulator knows of requests beside their lengths: serving costs, and each
    request spec's prompt identity (sim/prefix_cache.prompt_runs, by spec row; None:
    prompts share nothing and no prefix cache is modelled)."""

    costs: RequestCosts = NO_COSTS
    prompts: Sequence[Prompt] | None = None


PLAIN = RequestModel()
