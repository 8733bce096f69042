"""`inferlab scrape`: one normalised snapshot as a table or strict JSON; bad URLs exit 2."""

from __future__ import annotations

from typing import Any

import pytest

from inferlab.jsonio import loads_strict
from inferlab.testing.fake_server import running_fake_server

pytestmark = pytest.mark.slow  # the scripted fake server, in its own process


def test_scrape_json_and_table(run_cli: Any) -> None:
    with running_fake_server(ttft=0.01, tpot=0.01, slow_every=0, metrics="vllm") as url:
        code, out, err = run_cli("scrape", "--url", url, "--json")
        assert code == 0, err
        d = loads_strict(out)  # strict: the +Inf bucket bound became null
        assert d["metrics_url"] == url.removesuffix("/v1") + "/metrics"
        snap = d["snapshot"]
        assert snap["dialect"] == "vllm" and snap["kv_capacity_tokens"] == 46592
        assert snap["running"] == 0 and snap["spec_draft_tokens"] is None
        code, out, err = run_cli("scrape", "--url", url)
        assert code == 0, err
        assert "kv_capacity_tokens" in out and "46592" in out
        assert "spec_draft_tokens" in out and "not published" in out


def test_scrape_without_metrics_is_one_line_exit_2(run_cli: Any) -> None:
    with running_fake_server(ttft=0.01, tpot=0.01, slow_every=0) as url:
        code, out, err = run_cli("scrape", "--url", url)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "404" in err and "Traceback" not in err
