"""The lines under a sweep table name its two intervals (report/interval_text.py): the
cells' ci95, the level's long-run value, and below them each level's pi95, where the next
run lands; one repeat says it has none. A peer's repeated runs show pi95 in their interval
table too (report/repeat_text.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from inferlab.peers.detect import read_peer
from inferlab.peers.judge import summarise
from inferlab.physics.floor import Floor
from inferlab.report.console import print_sweep
from inferlab.report.interval_text import NO_PI, interval_lines
from inferlab.report.repeat_text import interval_table, repeat_lines, repeats_of
from inferlab.specs.hardware import STATED, with_overrides
from inferlab.specs.stated import cost_from
from inferlab.summary import RunSummary

DATA = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
AGGREGATE = (
    Path(__file__).parents[1]
    / "fixtures/peers/aiperf-0.13.0/c4-3runs/aggregate/profile_export_aiperf_aggregate.json"
)


def _with_intervals(repeats: int) -> RunSummary:
    """The sweep fixture with intervals on TPOT p50 and tok/s; pi95 where repeats >= 2."""
    d = json.loads(DATA.read_text())
    for lv in d["levels"]:
        tpot, tput = lv["tpot_s"]["p50"], lv["output_tokens_per_s_total"]
        ivs: list[dict[str, Any]] = [
            {"quantity": "tpot_s.p50", "value": tpot, "ci95": [tpot * 0.98, tpot * 1.02]},
            {"quantity": "output_tokens_per_s_total", "value": tput, "ci95": [tput * 0.97, tput]},
        ]
        if repeats > 1:
            ivs[0]["pi95"] = [tpot * 0.9, tpot * 1.1]
            ivs[1]["pi95"] = [tput * 0.85, tput * 1.1]
        lv["uncertainty"] = {
            "repeats": repeats, "covers_drift": repeats > 1, "method": "m", "resamples": 2000,
            "intervals": ivs,
        }  # fmt: skip
    return RunSummary.from_json(d)


def test_the_lines_say_which_interval_is_which_and_give_each_levels_pi95() -> None:
    s = _with_intervals(3)
    lines = interval_lines(s)
    text = " ".join(lines)
    assert "95 % confidence interval (ci95: where the level's long-run value lies" in text
    rule = next(x for x in lines if x.startswith("pi95: where the next run of the level lands"))
    assert "t(0.975, 2) x s x sqrt(1 + 1/3) = 4.97 x s" in rule
    lv = s.levels[0]
    tpot, tput = lv.tpot_s.p50 or 0.0, lv.output_tokens_per_s_total
    want = (
        f"  {lv.label}: TPOT p50 [{tpot * 900:.1f}, {tpot * 1100:.1f}] ms, "
        f"tok/s [{tput * 0.85:.1f}, {tput * 1.1:.1f}]"
    )
    assert want in lines
    assert sum(x.startswith("  ") for x in lines) == len(s.levels)  # one line a level
    assert NO_PI not in lines
    out = io.StringIO()
    print_sweep(s, file=out)
    assert "pi95: where the next run of the level lands" in " ".join(out.getvalue().split())


def test_one_repeat_says_it_has_no_pi95() -> None:
    lines = interval_lines(_with_intervals(1))
    assert NO_PI in lines and not any(x.startswith("pi95:") for x in lines)
    assert "one run says nothing of the next" in NO_PI


def test_an_old_summary_says_nothing_of_pi95() -> None:
    s = RunSummary.from_json(json.loads(DATA.read_text()))
    assert not any("pi95" in x for x in interval_lines(s))


def test_a_peers_three_runs_pooled_show_pi95_beside_ci95() -> None:
    """At 1 GFLOP/s all three AIPerf runs are pooled: inferlab's column is ci95, and a pi95
    column says where a fourth run would land (wider); the heading line names both."""
    floor = Floor(cost_from("smollm2-135m"), with_overrides(STATED, 10e9, 1e9))
    s = summarise(read_peer(AGGREGATE), floor)
    block = repeats_of(s)
    assert block is not None and len(block.kept) == 3
    head, rows = interval_table(s, block)
    assert head[2] == "pi95: next run"
    tput = rows[-1]
    lo, hi = (float(x) for x in tput[2].strip("[]").split(", "))
    ci_lo, ci_hi = (float(x) for x in tput[1].split("[")[1].strip("]").split(", "))
    assert hi - lo > ci_hi - ci_lo
    assert "inferlab's ci95 (the long-run value" in " ".join(repeat_lines(s))
    assert "its pi95 (where the next run lands" in " ".join(repeat_lines(s))
