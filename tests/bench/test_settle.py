"""bench's settled slots (bench/settle.py), on by default on llama-server: its slots
released highest id first, so the next load starts from an idle server's slot order, not
the one a probe left; --no-settle-slots turns it off. Other engines get a note of what
carries state between levels (their prefix caches).

Against the scripted fake llama-server (testing/fake_steps.py), which picks slots as
llama-server does (the named `id_slot`, else the idle slot released longest ago, the
highest of equals) and says each slot's last task on GET /slots. Requests are sent one
after another, so the order is the server's policy, never a race."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path

import aiohttp
import pytest

from inferlab.bench.client import Endpoint, stream_request
from inferlab.bench.settle import (
    CARRIED_STATE,
    SETTLE_TIMEOUT_S,
    carried_state,
    pinned,
    settle_slots,
    slot_count,
)
from inferlab.errors import InferlabError
from inferlab.jsonio import loads_strict
from inferlab.records import RequestRecord
from inferlab.testing.fake_server import running_fake_server
from inferlab.testing.fake_steps import MODEL, StepScript, running_fake_steps
from tests.clirun import RunCli
from tests.fakeslots import slot_tasks

pytestmark = pytest.mark.slow

FAST = StepScript(base_s=0.001, per_decode_s=0.0, request_overhead_s=0.0, slots=4)


async def _send(session: aiohttp.ClientSession, ep: Endpoint, t0: int) -> int:
    """One 2-token request; the slot it took (the one whose last task is newest)."""
    rec = RequestRecord(0, "t", "measure", 1, 2)
    await stream_request(session, ep, rec, "one two", t0)
    assert rec.ok, rec.error
    tasks = await asyncio.to_thread(slot_tasks, ep.base_url)
    return tasks.index(max(tasks))


async def _after_probes(url: str, settle: bool) -> list[int]:
    """Slots 0 then 2 used by pinned requests (as the profile's split probe leaves them),
    settled or not; then the slots four plain requests take, one after another."""
    ep = Endpoint(url, MODEL)
    t0 = time.perf_counter_ns()
    async with aiohttp.ClientSession() as session:
        for k in (0, 2):
            assert await _send(session, pinned(ep, k), t0) == k
        if settle:
            assert await settle_slots(session, ep, 4, t0) == [3, 2, 1, 0]
        return [await _send(session, ep, t0) for _ in range(4)]


def test_settled_slots_fill_as_an_idle_servers_do() -> None:
    with running_fake_steps(FAST) as url:
        unsettled = asyncio.run(_after_probes(url, settle=False))
        settled = asyncio.run(_after_probes(url, settle=True))
    assert unsettled == [3, 1, 0, 2]  # never used first (highest of equals), then by age
    assert settled == [3, 2, 1, 0]  # an idle server's order: consecutive slots, one ubatch


def test_pinned_sends_only_its_slot_and_is_cut_short() -> None:
    ep = Endpoint("http://h/v1", "m", api="chat", cache_prompt=True, extra_body_json='{"a": 1}')
    p = pinned(ep, 5)
    assert json.loads(p.extra_body_json) == {"id_slot": 5}  # not the user's body: one token
    assert (p.api, p.cache_prompt) == ("completions", False)
    assert p.request_timeout_s == SETTLE_TIMEOUT_S < ep.request_timeout_s


def test_slot_count_takes_llama_servers_slots_and_refuses_others() -> None:
    assert slot_count("llamacpp", {"total_slots": 8}, "http://h/v1") == 8
    for kind, props in (("vllm", {"total_slots": 8}), ("llamacpp", {}), ("llamacpp", None)):
        with pytest.raises(InferlabError, match="drop --settle-slots"):
            slot_count(kind, props, "http://h/v1")
        assert slot_count(kind, props, "http://h/v1", insist=False) == 0  # the default


def _note(summary: dict[str, object]) -> str:
    warnings = summary["warnings"]
    assert isinstance(warnings, list)
    notes = [w for w in warnings if w["code"] == CARRIED_STATE]
    assert len(notes) == 1 and notes[0]["level"] == "run" and notes[0]["severity"] == "info"
    return str(notes[0]["message"])


@pytest.mark.parametrize(
    ("flag", "settled"), [(None, True), ("--settle-slots", True), ("--no-settle-slots", False)]
)
def test_bench_settles_before_each_level_by_default_on_llama_server(
    tmp_path: Path, run_cli: RunCli, flag: str | None, settled: bool
) -> None:
    args = ["--concurrency", "1,2", "--requests-per-level", "2", "--output-tokens", "4"]
    args.append("--no-canary")  # the slots' tasks are counted: no canary among them
    args += [flag] if flag else []
    with running_fake_steps(FAST) as url:
        code, out, err = run_cli("bench", "--url", url, *args, "--out", str(tmp_path), "--json")
        tasks = slot_tasks(url)
    assert code == 0, err
    s = loads_strict(out)
    assert s["workload"]["settle_slots"] is settled
    if settled:
        # tasks: 1 the preflight; c=1: 2-5 settling (slots 3..0), 6 warm-up, 7-8; c=2: 9-12
        # settling, then 13-14 warm-ups in slots 3 and 2 and 15-16 in 1 and 0 (by age)
        assert tasks == [16, 15, 14, 13]
        assert "its 4 slots were released highest id first" in _note(s)
    else:
        # tasks: 1 the preflight; c=1: 2 warm-up, 3-4; c=2: 5-6 warm-ups, 7-8: none settling
        assert max(tasks) == 8
        assert "slots not settled (--no-settle-slots)" in _note(s)
    assert "carried_state (run): llama-server" in " ".join(err.split())  # printed too


def test_a_vllm_server_gets_a_note_of_its_prefix_cache_and_no_settling(
    tmp_path: Path, run_cli: RunCli
) -> None:
    # /v1/models names no engine (owned_by "fake"): the /metrics dialect says vLLM
    args = ["--concurrency", "1", "--requests-per-level", "2", "--output-tokens", "4"]
    with running_fake_server(ttft=0.01, tpot=0.002, metrics="vllm") as url:
        code, out, err = run_cli("bench", "--url", url, *args, "--out", str(tmp_path), "--json")
    assert code == 0, err
    s = loads_strict(out)
    assert s["server"]["kind"] == "openai" and s["levels"][0]["server"]["dialect"] == "vllm"
    assert s["workload"]["settle_slots"] is False
    note = _note(s)
    assert note.startswith("vLLM keeps the KV blocks of earlier levels' prompts")
    assert "--no-enable-prefix-caching" in note
    assert "carried_state (run): vLLM keeps" in " ".join(err.split())


def test_each_engine_is_told_what_it_carries_between_levels() -> None:
    def note(
        kind: str, dialect: str | None = None, slots: int = 0, asked: bool | None = None
    ) -> str:
        w = carried_state(kind, dialect, slots, asked)
        assert (w.code, w.level, w.severity) == (CARRIED_STATE, "run", "info")
        return w.message

    assert "radix cache" in note("sglang") and "--disable-radix-cache" in note("sglang")
    assert "automatic prefix caching" in note("vllm") == note("openai", "vllm")
    assert note("openai").startswith("server kind openai: what it keeps between levels")
    assert note("openai", "tgi").startswith("server kind tgi: what it keeps")
    assert "its 8 slots were released" in note("llamacpp", slots=8)
    assert "its /props states no total_slots" in note("llamacpp")
    assert "(--no-settle-slots)" in note("llamacpp", asked=False)


def test_bench_refuses_settling_a_server_that_is_not_llama_server(
    tmp_path: Path, run_cli: RunCli, fake_url: str
) -> None:
    code, out, err = run_cli(
        "bench", "--url", fake_url, "--settle-slots", "--out", str(tmp_path / "r")
    )
    assert code == 2 and out == ""
    assert "drop --settle-slots" in err and "Traceback" not in err
    assert not (tmp_path / "r" / "records.jsonl").exists()


def test_a_server_that_dies_while_settling_fails_the_level_not_the_run(
    tmp_path: Path, run_cli: RunCli
) -> None:
    # tasks: 1 the preflight, 2-8 the c=1 level (4 settling, 1 warm-up, 2 measured); the
    # server dies at the 9th, c=2's first settling request
    args = ["--concurrency", "1,2", "--requests-per-level", "2", "--output-tokens", "4"]
    args.append("--no-canary")  # the slots' tasks are counted: no canary among them
    with running_fake_steps(dataclasses.replace(FAST, die_after=8)) as url:
        code, out, err = run_cli(
            "bench", "--url", url, *args, "--settle-slots", "--out", str(tmp_path), "--json"
        )
    assert code == 1 and "Traceback" not in err  # c=2 failed, as any level a dead server fails
    s = loads_strict(out)
    assert [lv["label"] for lv in s["levels"]] == ["c=1", "c=2"]
    assert s["levels"][0]["requests_ok"] == 2 and s["levels"][1]["requests_ok"] == 0
    settle = [w for w in s["warnings"] if w["code"] == "settle_failed"]
    assert [w["level"] for w in settle] == ["c=2"] and "pinned to slot 3" in settle[0]["message"]
