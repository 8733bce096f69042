"""scrape_once against a live HTTP server: real text, and every bad answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiohttp import web

from inferlab.address import metrics_url
from inferlab.servermetrics.dialects import MetricsError, MetricsUnparsable
from inferlab.servermetrics.scrape import (
    MetricsDisabled,
    MetricsNotFound,
    MetricsTimeout,
    MetricsUnreachable,
    scrape_once,
)
from inferlab.servermetrics.snapshot import Snapshot
from tests.servermetrics.conftest import fixture_text

LLAMA = fixture_text("llamacpp", "metrics-during-c4-load.txt")


def app_with(routes: dict[str, Callable[[web.Request], object]]) -> web.Application:
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)  # type: ignore[arg-type]
    return app


async def _ok(_: web.Request) -> web.Response:
    return web.Response(text=LLAMA, content_type="text/plain")


async def _disabled(_: web.Request) -> web.Response:
    # llama-server without --metrics answers 501 with this JSON
    return web.json_response(
        {"error": {"code": 501, "message": "This server does not support metrics endpoint."}},
        status=501,
    )


async def _html(_: web.Request) -> web.Response:
    return web.Response(text="<html><body>dashboard</body></html>", content_type="text/html")


async def _garbage(_: web.Request) -> web.Response:
    return web.Response(text="not {prometheus at all", content_type="text/plain")


async def _slow(_: web.Request) -> web.Response:
    await asyncio.sleep(6)
    return web.Response(text=LLAMA)


ROUTES = {
    "/metrics": _ok,
    "/off/metrics": _disabled,
    "/html/metrics": _html,
    "/junk/metrics": _garbage,
    "/slow/metrics": _slow,
}


def test_metrics_url() -> None:
    assert metrics_url("http://h:8080/v1") == "http://h:8080/metrics"
    assert metrics_url("http://h:8080/v1/") == "http://h:8080/metrics"
    assert metrics_url("http://h:8080") == "http://h:8080/metrics"
    assert metrics_url("http://h:9090/metrics") == "http://h:9090/metrics"


@pytest.mark.slow
def test_scrape_once(metrics_server: Callable[[web.Application], str]) -> None:
    root = metrics_server(app_with(ROUTES))
    s = scrape_once(metrics_url(root + "/v1"), 5.0)
    assert isinstance(s, Snapshot) and s.dialect == "llamacpp" and s.steps == 2971
    assert s.running == 4


CASES = [
    ("/nothing/metrics", MetricsNotFound, "no_server_metrics"),
    ("/off/metrics", MetricsDisabled, "no_server_metrics"),
    ("/html/metrics", MetricsUnparsable, "metrics_unparsable"),
    ("/junk/metrics", MetricsUnparsable, "metrics_unparsable"),
    ("/slow/metrics", MetricsTimeout, "no_server_metrics"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("path", "error", "code"), CASES)
def test_bad_answers(
    metrics_server: Callable[[web.Application], str],
    path: str,
    error: type[MetricsError],
    code: str,
) -> None:
    root = metrics_server(app_with(ROUTES))
    with pytest.raises(error) as e:
        scrape_once(root + path, 0.5)
    assert e.value.warning_code == code


def test_unreachable() -> None:
    from inferlab.engines.llama_server import free_port

    url = f"http://127.0.0.1:{free_port()}/metrics"
    with pytest.raises(MetricsUnreachable):
        scrape_once(url, 1.0)
