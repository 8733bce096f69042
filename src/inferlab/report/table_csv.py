"""The level table as CSV (`bench --csv FILE`): one row per level, numbers in SI units.

Headers carry their unit as summary.json's keys do (`ttft_p50_s`); a value the level does
not have is an empty cell, so a spreadsheet reads every column as numbers.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

from inferlab.summary import LevelSummary, RunSummary

Cell = Callable[[LevelSummary], float | int | str | None]

COLUMNS: tuple[tuple[str, Cell], ...] = (
    ("level", lambda lv: lv.label),
    ("concurrency", lambda lv: lv.concurrency),
    ("rate_per_s", lambda lv: lv.rate_per_s),
    ("requests_ok", lambda lv: lv.requests_ok),
    ("requests_failed", lambda lv: lv.requests_failed),
    ("ttft_p50_s", lambda lv: lv.ttft_s.p50),
    ("ttft_p99_s", lambda lv: lv.ttft_s.p99),
    ("tpot_p50_s", lambda lv: lv.tpot_s.p50),
    ("tpot_p99_s", lambda lv: lv.tpot_s.p99),
    ("itl_p50_s", lambda lv: lv.gap_s.p50),
    ("itl_p99_s", lambda lv: lv.gap_s.p99),
    ("e2e_p50_s", lambda lv: lv.e2e_s.p50),
    ("e2e_p99_s", lambda lv: lv.e2e_s.p99),
    ("requests_per_s", lambda lv: lv.requests_per_s),
    ("output_tokens_per_s", lambda lv: lv.output_tokens_per_s_total),
    ("total_tokens_per_s", lambda lv: lv.total_tokens_per_s),
    ("output_tokens_per_s_per_user", lambda lv: lv.output_tokens_per_s_per_user),
    ("floor_step_s", lambda lv: lv.comparison.predicted_step_time_s if lv.comparison else None),
    ("mbu", lambda lv: lv.comparison.mbu if lv.comparison else None),
    ("stall_count", lambda lv: lv.stall_count),
)


def level_csv(summary: RunSummary) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([name for name, _ in COLUMNS])
    for lv in summary.levels:
        w.writerow(["" if (v := cell(lv)) is None else v for _, cell in COLUMNS])
    return buf.getvalue()


def write_level_csv(summary: RunSummary, path: Path) -> Path:
    path.write_text(level_csv(summary), encoding="utf-8")
    return path
