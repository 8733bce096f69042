"""The profile as the console shows it: coefficients, then the residual on every probe."""

from __future__ import annotations

from inferlab.profile.fit import ProfileFit
from inferlab.profile.record import ProfileRecord


def fit_lines(fit: ProfileFit) -> list[str]:
    """The coefficients in words and the residual table (measured, predicted, error)."""
    out = [
        f"step = {fit.base_s * 1e3:.2f} ms + {fit.per_decode_s * 1e3:.3f} ms x decoders "
        f"+ {fit.per_context_token_s * 1e6:.3f} us x context tokens "
        f"+ {fit.per_prompt_token_s * 1e3:.4f} ms x prompt tokens "
        f"+ {fit.per_kilo_pair_s * 1e3:.4f} ms x 1000 prompt-attended token pairs",
        f"per request (at arrival): {fit.request_overhead_s * 1e3:.2f} ms "
        f"+ {fit.request_per_prompt_token_s * 1e3:.4f} ms x its prompt tokens",
    ]
    if fit.zeroed:
        out.append(
            f"fixed at 0 (not moved by the probes, or < 0 by noise): {', '.join(fit.zeroed)}"
        )
    out.append(
        f"{'probe':8} {'D':>3} {'ctx':>6} {'P':>5} {'K':>5} {'measured ms':>12} "
        f"{'fitted ms':>10} {'error':>7}"
    )
    for r in fit.residuals:
        out.append(
            f"{r.probe:8} {r.decoders:>3} {r.context_tokens:>6} {r.prompt_tokens:>5} "
            f"{r.cached_tokens:>5} {r.measured_s * 1e3:>12.2f} {r.predicted_s * 1e3:>10.2f} "
            f"{r.error:>+7.1%}"
        )
    out.append(f"worst residual {fit.worst_error:.1%} over {len(fit.residuals)} probes")
    return out


def identity_line(p: ProfileRecord) -> str:
    s = p.server
    return (
        f"server {s.model} ({s.kind}; threads {s.threads if s.threads is not None else '?'}, "
        f"slots {s.parallel if s.parallel is not None else '?'}, ctx/slot "
        f"{s.ctx_per_slot if s.ctx_per_slot is not None else '?'}); probes took {p.wall_s:.1f} s "
        f"at --budget {p.budget}"
    )
