"""A stream that never ends is cut at max_tokens + a margin or at the request deadline,
recorded as failed, and the run goes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.bench.client import OUTPUT_OVER_MAX, REQUEST_TIMEOUT, over_max_limit
from inferlab.jsonio import loads_strict
from inferlab.records import read_records
from tests.clirun import RunCli

pytestmark = pytest.mark.slow  # the scripted fake server, in its own process


def _bench(
    run_cli: RunCli, url: str, out: Path, *extra: str, model: str = "endless"
) -> tuple[int, str, str]:
    return run_cli(
        "bench",
        "--url",
        url,
        "--model",
        model,
        "--concurrency",
        "1,2",
        "--requests-per-level",
        "2",
        "--warmup",
        "0",
        "--prompt-tokens",
        "4",
        "--no-plots",
        "--out",
        str(out),
        "--keep-going",
        *extra,
    )  # fmt: skip  (--keep-going: every request of a level fails here, on purpose)


def test_endless_stream_cut_past_max_tokens(run_cli: RunCli, fake_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, stdout, err = _bench(run_cli, fake_url, out, "--output-tokens", "8", "--json")
    assert code == 0, err
    summary = loads_strict(stdout)  # stdout is the JSON alone: progress and table on stderr
    assert [lv["label"] for lv in summary["levels"]] == ["c=1", "c=2"]
    recs = read_records(out / "records.jsonl")
    assert len(recs) == 4  # the run went on after the first cut request
    limit = over_max_limit(8)
    for r in recs:
        assert r.error is not None and r.error.startswith(OUTPUT_OVER_MAX), r.error
        assert limit < r.streamed_tokens <= limit + 2
        assert r.finish_reason is None
    assert "Traceback" not in err


def test_burst_past_max_tokens_cut_at_the_crossing_event(
    run_cli: RunCli, fake_url: str, tmp_path: Path
) -> None:
    """64 one-token events arrive in one write: the cut falls on the event that crosses
    the limit, not at the end of the chunk (a loaded machine reads bursts like this)."""
    out = tmp_path / "run"
    code, _, err = _bench(run_cli, fake_url, out, "--output-tokens", "8", model="endless-burst")
    assert code == 0, err
    recs = read_records(out / "records.jsonl")
    assert len(recs) == 4
    for r in recs:
        assert r.error is not None and r.error.startswith(OUTPUT_OVER_MAX), r.error
        assert r.streamed_tokens == over_max_limit(8) + 1  # not 64: the burst's size


def test_endless_stream_ended_by_request_timeout(
    run_cli: RunCli, fake_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    code, _, err = _bench(
        run_cli, fake_url, out, "--output-tokens", "100000", "--request-timeout", "300ms"
    )
    assert code == 0, err
    recs = read_records(out / "records.jsonl")
    assert len(recs) == 4
    for r in recs:
        assert r.error is not None and r.error.startswith(REQUEST_TIMEOUT), r.error
        # ended by the deadline (never before it), not at the end of the 100000-token stream
        assert 0 < r.streamed_tokens < 100000
        assert (r.end_ns - r.send_ns) / 1e9 >= 0.3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workload"]["request_timeout_s"] == 0.3


def test_negative_max_connections_refused_at_once(
    run_cli: RunCli, fake_url: str, tmp_path: Path
) -> None:
    code, _, err = run_cli(
        "bench", "--url", fake_url, "--max-connections", "-1", "--out", str(tmp_path / "x")
    )
    assert code == 2
    assert "--max-connections" in err and "at least 1" in err
    assert not (tmp_path / "x").exists()
