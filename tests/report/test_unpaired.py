"""`report A B` of two run folders: the comparison says it is unpaired, the smallest change it
could have found, and the paired command (text and --json); and a throughput drop reads as
its own change, `-X %`, and `slower`, in the table and in --fail-if-slower's message.

The run folders are written here from seeded records (no server): one level, c=1, three
repeats of 8 requests back to back, the first token after 20 ms and each next `tpot_ns`
later, with 3 % noise per request and 1 % drift per repeat."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inferlab.jsonio import write_json
from inferlab.metrics.runfolder import load_summary
from inferlab.records import RecordWriter, RequestRecord
from inferlab.report.verdict_text import PAIRED_COMMAND
from tests.clirun import RunCli
from tests.metrics.test_machine_verdict import _canary

TOKENS = 11
STARTED_A, APART_S = 1_800_000_000.0, 720.0  # B started 12 minutes after A


def _folder(out: Path, tpot_ns: float, seed: int, started: float) -> Path:
    """A run folder: records.jsonl, and summary.json rebuilt from it with its start time."""
    rng = np.random.default_rng(seed)
    w = RecordWriter(out / "records.jsonl")
    t, i = 1_000_000_000, 0
    for rep in range(3):
        drift = 1 + rng.normal(0, 0.01)
        for _ in range(8):
            step = int(tpot_ns * drift * rng.lognormal(0, 0.03))
            first = int(20e6 * drift * rng.lognormal(0, 0.03))
            r = RequestRecord(i, "c=1", "measure", 16, TOKENS, repeat=rep)
            r.event_ns = [t + first + k * step for k in range(TOKENS)]
            r.send_ns, r.http_status, r.event_tokens = t, 200, [1] * TOKENS
            r.completion_tokens = TOKENS
            w.write(r)
            t, i = r.event_ns[-1] + 1_000_000, i + 1  # the next request once this one ends
    w.close()
    doc = load_summary(out).to_json()
    doc["started_at_unix_s"] = started
    write_json(out / "summary.json", doc)
    return out


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A, and B with every step 1.5 x as long (tok/s about a third lower), 12 min later."""
    a = _folder(tmp_path / "a", 10e6, 1, STARTED_A)
    b = _folder(tmp_path / "b", 15e6, 2, STARTED_A + APART_S)
    return a, b, tmp_path / "out"


def test_the_comparison_says_it_is_unpaired_and_what_it_could_not_see(
    run_cli: RunCli, pair: tuple[Path, Path, Path]
) -> None:
    a, b, out = pair
    code, text, err = run_cli("report", str(a), str(b), "--out", str(out))
    assert code == 0, err
    flat = " ".join(text.split())
    assert "unpaired: A and B ran 12 min apart, so the machine's drift is in the difference" in flat
    assert "could not have detected a change smaller than" in flat
    assert f"for a paired run: {PAIRED_COMMAND}" in flat
    code, text, err = run_cli("report", str(a), str(b), "--json")
    assert code == 0, err
    c = json.loads(text)["comparison"]
    assert c["paired"] is False and c["apart_s"] == pytest.approx(APART_S)
    assert c["paired_command"] == PAIRED_COMMAND and c["unpaired_note"].startswith("unpaired: ")
    each = {q["quantity"]: q["smallest_detectable_change"] for q in c["quantities"]}
    assert all(x is not None and x > 0 for x in each.values())
    # the headline is the largest over the gated quantities (a p99 of 24 requests is not)
    assert c["smallest_detectable_change"] == pytest.approx(
        max(v for k, v in each.items() if not k.endswith(".p99"))
    )
    at = c["smallest_detectable_change_at"]
    assert at["level"] == "c=1" and each[at["quantity"]] == c["smallest_detectable_change"]
    shown = f"{c['smallest_detectable_change'] * 100:.1f} % at c=1"
    assert shown in c["unpaired_note"]
    for q in c["quantities"]:  # no smaller than the repeat spread, nor the half-width
        half = (q["ci95"][1] - q["ci95"][0]) / 2
        assert q["smallest_detectable_change"] * q["a"] == pytest.approx(
            max(q["repeat_spread"], half)
        )


def test_a_throughput_drop_reads_minus_and_slower(
    run_cli: RunCli, pair: tuple[Path, Path, Path]
) -> None:
    """tok/s falls by about a third: the table's change and the gate's are negative (the
    value's own B / A - 1), and the word is slower; TPOT rises: positive, slower too."""
    a, b, out = pair
    code, text, err = run_cli("report", str(a), str(b), "--out", str(out), "--fail-if-slower", "5%")
    assert code == 1
    row = next(line for line in text.splitlines() if "tok/s total" in line and "slower" in line)
    change = next(x for x in row.split("  ") if x.strip().endswith("%")).strip()
    assert change.startswith("-") and -40.0 < float(change.split()[0]) < -25.0, row
    gate = next(line for line in err.splitlines() if "output_tokens_per_s_total" in line)
    assert gate.startswith("slower: c=1 output_tokens_per_s_total -")
    assert "(B / A - 1; fewer tok/s is slower)" in gate and "(--fail-if-slower 5.0 %)" in gate
    tpot = next(line for line in err.splitlines() if "tpot_s.p50" in line)
    assert tpot.startswith("slower: c=1 tpot_s.p50 +") and "more time is slower" in tpot
    code, text, _ = run_cli("report", str(a), str(b), "--json")
    q = next(
        x
        for x in json.loads(text)["comparison"]["quantities"]
        if x["quantity"] == "output_tokens_per_s_total"
    )
    assert q["verdict"] == "slower" and q["relative"] < 0 and q["diff"] < 0


def _with_canary(folder: Path, server_ms: list[float], machine_ms: list[float]) -> None:
    doc = json.loads((folder / "summary.json").read_text())
    doc["canary"] = _canary(server_ms, machine_ms).to_json()
    write_json(folder / "summary.json", doc)


def test_the_canaries_say_whether_the_machine_or_the_server_was_slower(
    run_cli: RunCli, pair: tuple[Path, Path, Path]
) -> None:
    a, b, _ = pair
    _with_canary(a, [40.0, 40.5, 40.2], [5.0, 5.05, 5.1])
    _with_canary(b, [60.0, 61.0, 60.5], [5.0, 5.1, 5.05])  # the server's canary alone moved
    code, text, err = run_cli("report", str(a), str(b))
    assert code == 0, err
    flat = " ".join(text.split())
    assert "B against A, the canaries at rest: the server was slower" in flat
    _with_canary(b, [60.0, 61.0, 60.5], [7.5, 7.6, 7.55])  # both, by as much: the machine
    code, text, err = run_cli("report", str(a), str(b), "--json")
    c = json.loads(text)["comparison"]
    assert c["machine_between"]["says"] == "machine"
    assert c["machine_between_note"].startswith("B against A, the canaries at rest: the machine")
