"""The console sweep table fits 100 columns by default; --wide shows every column."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from inferlab.report.console import NARROW_WIDTH, print_sweep, sweep_rows
from inferlab.summary import EngineSplit, RunSummary, ServerLevelMetrics

REAL = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


ENGINE = EngineSplit(
    batch=16, batch_source="interpolated", served_tpot_s=0.1056, engine_step_time_s=0.0912,
    engine_noise_s=0.001, floor_s=0.0032, kernel_overhead_s=0.088, serving_overhead_s=0.0144,
    floor_share=0.03, kernel_share=0.83, serving_share=0.14, largest="kernels",
)  # fmt: skip


def _with_server_columns() -> RunSummary:
    """The real sweep plus server and engine-alone blocks, with open-loop labels: the widest
    table bench prints."""
    s: RunSummary = RunSummary.from_json(json.loads(REAL.read_text()))
    blank = {f: None for f in ServerLevelMetrics.known_keys()}
    srv = ServerLevelMetrics.from_json(
        {**blank, "dialect": "llamacpp", "samples": 9, "failed_scrapes": 0,
         "counter_reset": False, "step_window_full_batch": True, "steps_per_s": 80.5,
         "tokens_per_step": 3.97, "running_mean": 3.9, "running_max": 4, "kv_cache_usage_max": 0.3}
    )  # fmt: skip
    levels = [
        replace(lv, label=f"rate={12.5 * (i + 1):g}/s", server=srv, engine=ENGINE)
        for i, lv in enumerate(s.levels)
    ]
    return replace(s, levels=tuple(levels))


def _printed(summary: RunSummary, wide: bool) -> list[str]:
    buf = io.StringIO()  # not a terminal: the width is the table's own choice
    print_sweep(summary, wide=wide, file=buf)
    return buf.getvalue().splitlines()


def test_default_table_fits_100_columns_with_one_line_per_level() -> None:
    s = _with_server_columns()
    lines = _printed(s, wide=False)
    assert max(len(x) for x in lines) <= NARROW_WIDTH
    for lv in s.levels:  # each level whole on one line: label, counts, MBU
        row = next(x for x in lines if x.strip().startswith(lv.label + " "))
        assert f"{lv.requests_ok}/{lv.requests_failed}/{lv.requests_early_stop}" in row
        mbu = lv.comparison.mbu if lv.comparison else None
        assert mbu is not None and f"{mbu:.0%}" in row
    text = "\n".join(lines)
    assert "srv steps/s" not in text and "…" not in text  # nothing cut short
    assert "engine" in text and "floor" in text  # headers on two lines: "engine" / "ms"


@pytest.mark.parametrize(
    ("name", "tails"),
    [
        ("demo_full_summary.json", (("rate=0.37/s", "stable"), ("trace", "-"), ("c=16", "-"))),
        # the floor with two decimals (12.88) and a 'backlogged' Poisson level: the load
        # column was cropped to 'backlogg' until the TTFT/TPOT headers broke after their name
        (
            "demo_full_summary_floor2dp.json",
            (("rate=0.62/s", "backlogged"), ("trace", "-"), ("c=16", "-")),
        ),
    ],
)
def test_a_full_demo_fits_with_its_slo_load_and_trace_columns(
    name: str, tails: tuple[tuple[str, str], ...]
) -> None:
    """A real full demo's summary (sweep, Poisson level, trace, SLO): every cell whole."""
    from inferlab.metrics.runfolder import read_summary

    s = read_summary(Path(__file__).parents[1] / "data" / name)
    lines = _printed(s, wide=False)
    assert max(len(x) for x in lines) <= NARROW_WIDTH and "…" not in "\n".join(lines)
    for label, tail in tails:
        row = next(x for x in lines if x.startswith(label + " "))
        assert row.rstrip().endswith(tail), row


def test_wide_has_every_column_and_html_keeps_them() -> None:
    s = _with_server_columns()
    head, _ = sweep_rows(s)
    assert "srv steps/s" in head and "worst gap ms" in head  # what the HTML report renders
    text = "\n".join(_printed(s, wide=True))
    assert max(len(x) for x in text.splitlines()) > NARROW_WIDTH
    for h in ("srv steps/s", "worst gap ms", "GB/s", "stalls"):
        assert h in text


def test_ms_cells_carry_their_unit_from_ten_seconds() -> None:
    from inferlab.report.console import _ms

    assert (_ms(0.0123), _ms(9.99), _ms(12.5), _ms(1356.0), _ms(None)) == (
        "12.3",
        "9990.0",
        "12.5 s",
        "22.6 min",
        "-",
    )
