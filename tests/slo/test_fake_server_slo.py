"""`bench --slo` and `--find-max-load` against the fake server's SLO models, whose answers
are known by construction (testing/fake_slo.py); margins are wide (x1.5 and x2 of TPOT,
+300 ms TTFT) so the machine's speed cannot move them."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.records import read_records
from inferlab.testing.fake_server import running_fake_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_fake_server(ttft=0.02, tpot=0.02, slow_every=0) as u:
        yield u


def test_search_finds_the_known_concurrency_exactly(run_cli, url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # crowded-5: TPOT 20 ms up to 5 open streams, 100 ms at 6: within tpot_p50=50ms up to 5.
    # The margins (30 ms over 9 gaps below, 50 ms above) hold with a client some 270 ms late.
    out = tmp_path / "run"
    code, stdout, err = run_cli(
        "bench", "--url", url, "--model", "crowded-5", "--find-max-load", "concurrency",
        "--slo", "tpot_p50=50ms", "--requests-per-level", "12", "--output-tokens", "10",
        "--no-scrape", "--no-plots", "--out", str(out), "--json",
    )  # fmt: skip
    assert code == 0, err
    s = json.loads(stdout)
    found = s["max_load"]
    assert (found["kind"], found["value"], found["status"]) == ("concurrency", 5, "found")
    assert found["binding_objective"] == "tpot_p50"
    assert "max concurrency within the SLO: 5 (6 breaks tpot_p50:" in err
    tried = [t["value"] for t in found["levels_tried"]]
    assert len(tried) <= 8 and {5, 6} <= set(tried)
    # every level probed is kept: one summary level and its records each
    assert [lv["concurrency"] for lv in s["levels"]] == tried
    labels = {r.level for r in read_records(out / "records.jsonl")}
    assert labels == {f"c={int(v)}" for v in tried}
    assert all("slo" in lv for lv in s["levels"])


def test_attainment_equals_the_servers_own_count(run_cli, url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "mix"
    code, stdout, err = run_cli(
        "bench", "--url", url, "--model", "slo-mix", "--concurrency", "4",
        "--slo", "ttft=200ms", "--requests-per-level", "40", "--output-tokens", "4",
        "--no-scrape", "--no-plots", "--out", str(out), "--json",
    )  # fmt: skip
    assert code == 0, err
    (lv,) = json.loads(stdout)["levels"]
    with urllib.request.urlopen(url.removesuffix("/v1") + "/debug/log", timeout=10) as r:
        log = json.load(r)
    measured = [r for r in read_records(out / "records.jsonl") if r.phase == "measure"]
    facts = [log[r.prompt_sha1] for r in measured]
    good = sum(1 for f in facts if not f["slow"] and not f["failed"])
    ok = sum(1 for f in facts if not f["failed"])
    assert 0 < good < ok < len(measured)  # the mix has both kinds of miss
    slo = lv["slo"]
    assert slo["requests_good"] == good and slo["requests_ok"] == ok
    assert slo["attainment"] == pytest.approx(good / len(measured))
    assert slo["attainment_successful"] == pytest.approx(good / ok)
    assert slo["goodput_requests_per_s"] == pytest.approx(good / slo["window_s"])


def test_reasoning_stream_has_ttfo_and_reasoning_tokens(run_cli, url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, stdout, err = run_cli(
        "bench", "--url", url, "--model", "reasoning", "--api", "chat", "--concurrency", "1",
        "--requests-per-level", "3", "--output-tokens", "10", "--no-scrape", "--no-plots",
        "--out", str(tmp_path / "r"), "--json",
    )  # fmt: skip
    assert code == 0, err
    (lv,) = json.loads(stdout)["levels"]
    assert lv["reasoning_tokens"] == 15  # 3 requests x 5 reasoning tokens of 10
    assert lv["ttfo_s"]["n"] == 3 and lv["ttfo_s"]["p50"] > lv["ttft_s"]["p50"]
    # TTFT counts the first (reasoning) token; TTFO is the sixth event, the first answer.
    for r in read_records(tmp_path / "r" / "records.jsonl"):
        assert r.reasoning_tokens == 5 and r.first_answer_ns == r.event_ns[5]
        assert r.streamed_tokens == 10


def test_spec_decode_acceptance_from_the_fake_vllm_page(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # vllm-spec publishes one 3-token draft per step, 2 accepted (fake_metrics.SPEC_*).
    with running_fake_server(ttft=0.02, tpot=0.02, slow_every=0, metrics="vllm-spec") as u:
        code, stdout, err = run_cli(
            "bench", "--url", u, "--concurrency", "2", "--requests-per-level", "4",
            "--output-tokens", "20", "--no-plots", "--out", str(tmp_path / "spec"), "--json",
        )  # fmt: skip
    assert code == 0, err
    (lv,) = json.loads(stdout)["levels"]
    srv = lv["server"]
    assert srv["spec_drafts"] > 0 and srv["spec_draft_tokens"] == 3 * srv["spec_drafts"]
    assert srv["spec_acceptance_rate"] == pytest.approx(2 / 3)
    assert srv["spec_mean_acceptance_length"] == pytest.approx(3.0)


def test_no_level_meets_exit_0_or_1_under_strict(run_cli, url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    argv = [
        "bench", "--url", url, "--model", "crowded-1", "--find-max-load", "concurrency",
        "--slo", "tpot_p50=5ms", "--requests-per-level", "3", "--output-tokens", "10",
        "--no-scrape", "--no-plots",
    ]  # fmt: skip
    code, stdout, err = run_cli(*argv, "--out", str(tmp_path / "a"), "--json")
    assert code == 0, err
    found = json.loads(stdout)["max_load"]
    assert found["value"] is None and found["status"] == "none_meets"
    assert [t["value"] for t in found["levels_tried"]] == [1]  # nothing lower to try
    assert "the lowest tried, concurrency 1, already fails" in err and "tpot_p50: " in err
    code, _, err = run_cli(*argv, "--out", str(tmp_path / "b"), "--strict")
    assert code == 1 and "--strict: no level meets the SLO" in err
