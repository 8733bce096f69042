"""A server that answers 200 and then trickles its body a byte at a time (a stuck proxy
does this) holds no request of bench's past its deadline: a per-read timeout never fires on
it, so every request around the levels has a deadline on the whole answer.

/v1/models is bench's first question: a trickled listing ends the run in one line, exit 2.
The side endpoints (/metrics, /props, /tokenize) are done without, with a warning that
names each, and the run goes on; /slots bench never reads. The test sets the deadline
(--request-timeout 1s bounds every request's); the server counts the spaces it trickled
before the client hung up, far below its cap of 5 min, so no verdict rests on a clock.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.records import read_records
from tests.bench.bounded_app import TRICKLE_CAP, Script, make_app, serve
from tests.clirun import RunCli

DEADLINE = "1s"  # the test's bound on every answer around the levels
CUT_BY = TRICKLE_CAP // 10  # spaces: a deadline of seconds cuts long before this


def _bench(run_cli: RunCli, base: str, out: Path) -> tuple[int, str, str]:
    return run_cli(
        "bench", "--url", f"{base}/v1", "--concurrency", "1", "--requests-per-level", "2",
        "--warmup", "0", "--prompt-tokens", "4", "--output-tokens", "4",
        "--request-timeout", DEADLINE, "--no-plots", "--out", str(out),
    )  # fmt: skip


def _cut_early(script: Script, path: str) -> None:
    sent = script.trickled.get(path, [])
    assert sent and all(n < CUT_BY for n in sent), (path, sent)


def test_a_trickled_model_listing_ends_bench_in_one_line(run_cli: RunCli, tmp_path: Path) -> None:
    script = Script(trickle_paths={"/v1/models"})
    with serve(make_app(script)) as base:
        code, out, err = _bench(run_cli, base, tmp_path / "run")
    lines = [ln for ln in err.splitlines() if ln.strip() and "error" in ln]
    assert code == 2 and out == "" and len(lines) == 1, err
    assert f"{base}/v1/models had not finished its answer after 1 s" in lines[0]
    assert "Traceback" not in err
    _cut_early(script, "/v1/models")
    assert not (tmp_path / "run" / "records.jsonl").exists()  # refused before any level


LLAMA = {"object": "list", "data": [{"id": "m", "owned_by": "llamacpp"}]}  # /props is read


@pytest.mark.parametrize(
    ("path", "code", "names"),
    [
        ("/metrics", "no_server_metrics", "/metrics did not finish its answer within"),
        ("/props", "slow_endpoint", "/props had not finished its answer after 1 s"),
        ("/tokenize", "slow_endpoint", "/tokenize had not finished its answer after 1 s"),
    ],
)
def test_a_trickled_side_endpoint_is_done_without_and_named(
    run_cli: RunCli, tmp_path: Path, path: str, code: str, names: str
) -> None:
    script = Script(trickle_paths={path}, models=LLAMA)
    with serve(make_app(script)) as base:
        rc, _, err = _bench(run_cli, base, tmp_path / "run")
    assert rc == 0, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    said = [w["message"] for w in summary["warnings"] if w["code"] == code]
    assert any(names in m for m in said), summary["warnings"]
    assert [r.ok for r in read_records(tmp_path / "run" / "records.jsonl")] == [True, True]
    _cut_early(script, path)


def test_a_trickled_slots_page_is_never_waited_on(run_cli: RunCli, tmp_path: Path) -> None:
    script = Script(trickle_paths={"/slots"}, models=LLAMA)
    with serve(make_app(script)) as base:
        rc, _, err = _bench(run_cli, base, tmp_path / "run")
    assert rc == 0, err
    assert script.trickled.get("/slots") is None  # bench reads llama-server's /props only
    assert [r.ok for r in read_records(tmp_path / "run" / "records.jsonl")] == [True, True]
