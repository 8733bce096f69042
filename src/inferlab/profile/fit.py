"""The step model fitted to a profile's observations by least squares (numpy, lazily).

One engine step of D decoders (contexts summed to C) and prompt chunks (n tokens each,
k tokens cached before each) takes

    base + sum over its ubatches of decode(g) + per_context_token x C
         + per_prompt_token x sum(n) + per_kilo_pair x sum(n x (k + n/2)) / 1000
         + per_ubatch x (ubatches - 1)

the pairs term being the prompt's attention over what it sees (cached tokens and itself),
the last one what each more pass over the weights costs when llama.cpp cuts the step into
several ubatches (decoders in slots that are not consecutive, a prompt beside decoders:
specs/llamacpp_ubatches.py; a server with one unified KV cache (--kv-unified) does not
cut them, and its split probe should then price a ubatch near 0: not measured here).

decode(g) is the cost of a ubatch of g decoders, piecewise linear through the batches the
decode probe measured: per_decode x g up to the second of them, the slope changing by
`bend` at each later one but the last (past the largest, along the last segment). On one
CPU thread it is far from a line (the bundled model: 12, 23, 37, 38, 49, 52, 65, 66 ms at
g = 1..8), so one slope would miss every batch but two. A bend may be negative (the slope
falls). Each ubatch is its own pass: 4 decoders in slots 0, 2, 4, 6 cost 4 x decode(1),
not decode(4) (47 ms against 38 measured on the bundled model), and a level whose
requests come and go leaves its decoders in slots that are seldom all consecutive.

A request also pays, once, `request_overhead_s + request_per_prompt_token_s x its prompt
tokens` (tokenise, template, HTTP, the client) before the scheduler sees it: a lone
request's TTFT is that plus its prefill step; a decoder's gap never holds it. Where the
server times each prefill itself (llama-server's `timings.prompt_ms`), a TTFT probe's
row is that step, and the request cost is measured: the line through what each TTFT
holds beyond the server's step (3-4 ms flat on the bundled server). Fitted from the
TTFTs alone, it took whatever part of a lone prefill the decoders' probes priced lower
(0.26 ms a prompt token), and the simulator delayed every prompt by it: the shortest
prompt of a round reached the scheduler first and ran a step alone, which the server,
whose requests arrive within ~4 ms, does not do. Otherwise (a server without timings)
the two are told apart because the mixed probe sees the prefill step without the cost.

All observations are fitted together, each weighted by 1/its median (relative error:
a 2 ms step counts as much as a 300 ms one). A coefficient that comes out negative is
noise on a term the probes barely moved: it is fixed at 0 and the rest refitted (an
active-set non-negative least squares), and the fit names it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from inferlab.errors import InferlabError
from inferlab.jsonrecord import JsonRecord
from inferlab.profile.record import Observation

TERMS = (
    "base_s",
    "per_decode_s",
    "per_context_token_s",
    "per_prompt_token_s",
    "per_kilo_pair_s",
    "per_ubatch_s",
    "request_overhead_s",
    "request_per_prompt_token_s",
)


def bends_of(knots: Sequence[int]) -> tuple[int, ...]:
    """Where decode(D)'s slope may change: every probed batch past the second but the last."""
    return tuple(knots[1:-1])


def features(o: Observation, bends: Sequence[int], request_cost: bool) -> list[float]:
    """One observation's row: what each coefficient is multiplied by (TERMS, then each
    bend of decode(D)); `request_cost`: its time holds the request's own cost."""
    n, k = o.prompt_tokens, o.cached_tokens
    req = 1.0 if request_cost else 0.0
    return [
        1.0,
        float(o.decoders),
        float(o.context_tokens),
        float(n),
        n * (k + n / 2) / 1000,
        float(o.ubatch_count - 1),
        req,
        req * (n + k),
        *(float(sum(max(g - k, 0) for g in o.groups)) for k in bends),
    ]


@dataclass(frozen=True, slots=True)
class Residual(JsonRecord):
    probe: str
    decoders: int
    context_tokens: int
    prompt_tokens: int
    cached_tokens: int
    ubatches: int
    measured_s: float
    predicted_s: float
    error: float  # (predicted - measured) / measured


@dataclass(frozen=True, slots=True)
class ProfileFit(JsonRecord):
    """The coefficients, the ranges the probes covered, and the residuals on them."""

    base_s: float
    per_decode_s: float  # decode(D)'s slope up to its first bend
    per_context_token_s: float
    per_prompt_token_s: float
    per_kilo_pair_s: float
    request_overhead_s: float
    request_per_prompt_token_s: float
    zeroed: tuple[str, ...]  # terms fixed at 0 (their least-squares value was negative)
    max_decoders: int
    max_prompt_tokens: int
    max_context_tokens: int  # one sequence's context
    max_cached_tokens: int
    residuals: tuple[Residual, ...]
    per_ubatch_s: float = 0.0  # each ubatch past the first in a step
    decode_bends: tuple[int, ...] = ()  # batches where decode(D)'s slope changes
    decode_bends_s: tuple[float, ...] = ()  # by how much (s per decoder; may be < 0)
    speed_spread: float | None = None  # speed_spread(): the machine's drift while profiled

    def decode_s(self, decoders: int) -> float:
        """The decoders' part of a step (piecewise linear)."""
        out = self.per_decode_s * decoders
        for k, h in zip(self.decode_bends, self.decode_bends_s, strict=True):
            if decoders > k:
                out += h * (decoders - k)
        return out

    def split_decode_s(self, groups: Sequence[int]) -> float:
        """What decoders cut into ubatches of `groups` decoders cost beyond one ubatch of
        them all: each ubatch is its own pass, priced along decode(D) at its own size."""
        return sum(self.decode_s(g) for g in groups) - self.decode_s(sum(groups))

    def step_s(self, decoders: int, context_sum: int, prompt_tokens: int, pairs: float) -> float:
        """One step; `pairs`: sum over chunks of n x (k + n/2)."""
        return (
            self.base_s
            + self.decode_s(decoders)
            + self.per_context_token_s * context_sum
            + self.per_prompt_token_s * prompt_tokens
            + self.per_kilo_pair_s * pairs / 1000
        )

    def formula(self) -> list[str]:
        """The step and the per-request cost, in words (the console and `simulate` print it)."""
        return [
            f"step = {self.base_s * 1e3:.2f} ms + {self.per_decode_s * 1e3:.3f} ms per decoder "
            f"+ {self.per_context_token_s * 1e6:.3f} us per context token "
            f"+ {self.per_prompt_token_s * 1e3:.3f} ms per prompt token "
            f"+ {self.per_kilo_pair_s * 1e3:.4f} ms per 1000 prompt x attended token pairs "
            f"+ {self.per_ubatch_s * 1e3:.2f} ms per ubatch past the first",
            *self._decode_line(),
            f"per request at arrival: {self.request_overhead_s * 1e3:.2f} ms + "
            f"{self.request_per_prompt_token_s * 1e3:.4f} ms per prompt token",
        ]

    def _decode_line(self) -> list[str]:
        """decode(g) at its knots, where it bends (nothing where it is one line)."""
        if not self.decode_bends:
            return []
        knots = sorted({1, *self.decode_bends, max(self.max_decoders, 1)})
        at = ", ".join(f"{g}: {self.decode_s(g) * 1e3:.1f}" for g in knots)
        return [f"  decoders' part of a ubatch of g, ms (a line between): {at}"]

    def spread_line(self) -> str | None:
        """The machine's drift while it was profiled, in words (None: not measured)."""
        if self.speed_spread is None:
            return None
        return (
            f"the machine's speed over the profile: its decode rounds spread "
            f"+-{self.speed_spread:.0%}: predictions from it carry that much of the machine's "
            "own noise"
        )

    def request_cost_s(self, prompt_tokens: int) -> float:
        """What one request pays once, outside every step."""
        return self.request_overhead_s + self.request_per_prompt_token_s * prompt_tokens

    def scaled(self, factor: float) -> ProfileFit:
        """Every time term x `factor` (simulate --step-scale: 1.1 is the machine 10 % slower
        than when profiled; the ranges, residuals and spread stay the profile's)."""
        times = {t: getattr(self, t) * factor for t in TERMS}
        bends = tuple(h * factor for h in self.decode_bends_s)
        return replace(self, **times, decode_bends_s=bends)

    def coefficients(self) -> dict[str, float]:
        out = {t: float(getattr(self, t)) for t in TERMS}
        bends = zip(self.decode_bends, self.decode_bends_s, strict=True)
        return out | {f"per_decode_s_past_{k}": h for k, h in bends}

    @property
    def worst_error(self) -> float:
        return max((abs(r.error) for r in self.residuals), default=0.0)


def _solve(
    rows: list[list[float]], y: list[float], names: Sequence[str]
) -> tuple[list[float], tuple[str, ...]]:
    """Relative least squares with the TERMS >= 0 (drop the most negative, refit); the
    bends past them are free."""
    import numpy as np

    a = np.asarray(rows, float) / np.asarray(y, float)[:, None]
    b = np.ones(len(y))
    active = [i for i in range(a.shape[1]) if np.any(a[:, i])]  # terms the probes moved
    while True:
        sol, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
        signed = [(v, j) for j, v in enumerate(sol.tolist()) if active[j] < len(TERMS)]
        worst = min(signed, default=(0.0, -1))
        if worst[0] >= 0:
            break
        active.pop(worst[1])
    coef = [0.0] * a.shape[1]
    for i, v in zip(active, sol.tolist(), strict=True):
        coef[i] = float(v)
    zeroed = tuple(t for i, t in enumerate(names) if i not in active)
    return coef, zeroed


@dataclass(frozen=True, slots=True)
class Point:
    """One row of the fit: an observation's time as the client saw it, or (`-step`) the
    server's own time for its prefill step."""

    label: str
    obs: Observation
    time_s: float
    request_cost: bool  # the time holds the request's own cost (a client's TTFT)

    def residual(self, predicted_s: float) -> Residual:
        o = self.obs
        return Residual(
            self.label,
            o.decoders,
            o.context_tokens,
            o.prompt_tokens,
            o.cached_tokens,
            o.ubatch_count,
            self.time_s,
            predicted_s,
            (predicted_s - self.time_s) / self.time_s,
        )


def server_timed(obs: Sequence[Observation]) -> bool:
    """Every TTFT probe carries the server's own prefill time (llama.cpp's prompt_ms)."""
    ttft = [o for o in obs if o.with_request_cost]
    return bool(ttft) and all(o.server_step_s for o in ttft)


def points_of(obs: Sequence[Observation], split: bool) -> list[Point]:
    """The fit's rows. `split`: a TTFT probe's row is the server's prefill step alone,
    and the request's own cost is what its TTFT holds beyond that step, measured rather
    than fitted (on llama-server, 2-6 ms flat): fitted, it took whatever part of a lone
    prefill the decoders' probes priced lower, and delayed every prompt by it."""
    return [
        Point(f"{o.probe}-step", o, o.server_step_s, False)
        if split and o.with_request_cost and o.server_step_s
        else Point(o.probe, o, o.median_s, o.with_request_cost)
        for o in obs
    ]


def measured_request_cost(obs: Sequence[Observation]) -> tuple[float, float]:
    """(per request, per prompt token): a line through what the TTFT probes' medians
    hold beyond the server's step, both >= 0 (flat at the median where a slope would be
    negative)."""
    import numpy as np

    ttft = [o for o in obs if o.with_request_cost]
    extra = np.asarray([o.median_s - (o.server_step_s or 0.0) for o in ttft], float)
    tokens = np.asarray([o.prompt_tokens + o.cached_tokens for o in ttft], float)
    if len(set(tokens.tolist())) > 1:
        a = np.stack([np.ones(len(tokens)), tokens], axis=1)
        (base, slope), *_ = np.linalg.lstsq(a, extra, rcond=None)
        if slope >= 0 and base >= 0:
            return float(base), float(slope)
    return max(float(np.median(extra)), 0.0), 0.0


def speed_spread(obs: Sequence[Observation]) -> float | None:
    """How much the decode step moved between the profile's rounds: for each decode
    batch, (slowest - fastest) / (slowest + fastest) of its runs' medians; the median
    over the batches (None: no batch ran twice)."""
    each = [
        (max(r) - min(r)) / (max(r) + min(r))
        for o in obs
        if o.probe == "decode" and (r := o.run_medians_s) and len(r) > 1
    ]
    return statistics.median(each) if each else None


def fit_profile(observations: Sequence[Observation]) -> ProfileFit:
    """The step model from the observations, with its residual on each of them."""
    obs = [o for o in observations if o.median_s > 0]
    if len(obs) < 3:
        raise InferlabError(
            f"a profile needs at least 3 timed observations to fit, this one has {len(obs)}: "
            "profile the server again"
        )
    bends = bends_of(sorted({o.decoders for o in obs if o.probe == "decode" and o.decoders}))
    names = [*TERMS, *(f"per_decode_s_past_{k}" for k in bends)]
    split = server_timed(obs)
    pts = points_of(obs, split)
    coef, zeroed = _solve(
        [features(p.obs, bends, p.request_cost) for p in pts], [p.time_s for p in pts], names
    )
    if split:
        cost = measured_request_cost(obs)
        coef[TERMS.index("request_overhead_s")] = cost[0]
        coef[TERMS.index("request_per_prompt_token_s")] = cost[1]
        zeroed = tuple(z for z in zeroed if not z.startswith("request_"))
        pts += [Point(o.probe, o, o.median_s, True) for o in obs if o.with_request_cost]
    residuals = tuple(
        p.residual(
            sum(c * x for c, x in zip(coef, features(p.obs, bends, p.request_cost), strict=True))
        )
        for p in pts
    )
    return ProfileFit(
        **dict(zip(TERMS, coef, strict=False)),
        decode_bends=bends,
        decode_bends_s=tuple(coef[len(TERMS) :]),
        zeroed=zeroed,
        max_decoders=max((o.decoders for o in obs), default=0),
        max_prompt_tokens=max((o.prompt_tokens for o in obs), default=0),
        max_context_tokens=max((o.context_tokens // max(o.decoders, 1) for o in obs), default=0),
        max_cached_tokens=max((o.cached_tokens for o in obs), default=0),
        residuals=residuals,
        speed_spread=speed_spread(obs),
    )
