"""A typed engine-alone result built from stated step times, for tests of what uses one."""

from __future__ import annotations

from inferlab.engines.result import BatchStep, EngineBench, ProcessRun, Repeated


def engine(
    steps_s: dict[int, float],
    lone_step_s: float,
    rel_sd: float = 0.01,
    output_tokens: int = 64,
    cpu_fraction: float = 1.0,
) -> EngineBench:
    n = output_tokens
    return EngineBench(
        gguf="m.gguf",
        model_type="llama 256M Q4_1",
        threads=1,
        prompt_tokens=32,
        output_tokens=n,
        ctx_size=4096,
        steps=tuple(
            BatchStep(b, 32, n, 0.17 * b, 188.0, s * n, s, b / s, 4096, 2048, 512, 1, (s, s))
            for b, s in sorted(steps_s.items())
        ),
        prefill=Repeated("pp32", 32, 0.17, 0.003, (0.168, 0.172)),
        decode=Repeated(f"tg{n}", n, lone_step_s * n, rel_sd * lone_step_s * n, (1.0, 1.0)),
        runs=(ProcessRun(("llama-batched-bench",), 10.0, 10.0 * cpu_fraction),),
        build="0 (commit unknown)",
        cpu_info="test cpu",
    )
