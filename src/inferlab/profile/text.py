"""The profile as the console shows it: coefficients, then the residual on every probe."""

from __future__ import annotations

from inferlab.profile.fit import ProfileFit
from inferlab.profile.record import VLLM_COMPARED, ProfileRecord, VllmSettings


def fit_lines(fit: ProfileFit) -> list[str]:
    """The coefficients in words and the residual table (measured, predicted, error)."""
    out = fit.formula()
    if fit.zeroed:
        out.append(
            f"fixed at 0 (not moved by the probes, or < 0 by noise): {', '.join(fit.zeroed)}"
        )
    out.append(
        f"{'probe':11} {'D':>3} {'ctx':>6} {'P':>5} {'K':>5} {'U':>2} {'measured ms':>12} "
        f"{'fitted ms':>10} {'error':>7}"
    )
    for r in fit.residuals:
        out.append(
            f"{r.probe:11} {r.decoders:>3} {r.context_tokens:>6} {r.prompt_tokens:>5} "
            f"{r.cached_tokens:>5} {r.ubatches:>2} {r.measured_s * 1e3:>12.2f} "
            f"{r.predicted_s * 1e3:>10.2f} {r.error:>+7.1%}"
        )
    out.append(f"worst residual {fit.worst_error:.1%} over {len(fit.residuals)} probes")
    spread = fit.spread_line()
    if spread:
        out.append(spread)
    return out


def vllm_settings_line(v: VllmSettings) -> str:
    """A vLLM server's settings, those it did not state marked as vLLM 0.32 CPU defaults."""
    said = ", ".join(
        f"{name} {getattr(v, name) if getattr(v, name) is not None else '?'}"
        + (" (not published: vLLM 0.32 CPU's default)" if name in v.defaulted else "")
        for name in VLLM_COMPARED
    )
    return f"vLLM {v.version or '?'}: {said}"


def identity_line(p: ProfileRecord) -> str:
    s = p.server
    if s.vllm is not None:
        threads = f"threads {s.threads}; " if s.threads is not None else ""
        return (
            f"server {s.model} ({threads}{vllm_settings_line(s.vllm)}); probes took "
            f"{p.wall_s:.1f} s at --budget {p.budget}"
        )
    return (
        f"server {s.model} ({s.kind}; threads {s.threads if s.threads is not None else '?'}, "
        f"slots {s.parallel if s.parallel is not None else '?'}, ctx/slot "
        f"{s.ctx_per_slot if s.ctx_per_slot is not None else '?'}); probes took {p.wall_s:.1f} s "
        f"at --budget {p.budget}"
    )
