"""Fixture texts (real server bytes, kept in tests/servermetrics/fixtures) and a tiny /metrics
server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web

HERE = Path(__file__).parent / "fixtures"


def fixture_text(dialect: str, name: str) -> str:
    return (HERE / dialect / name).read_text()


@pytest.fixture
def metrics_server() -> Iterator[Callable[[web.Application], str]]:
    """Serve an aiohttp app on a free port in a background thread; yields start(app) -> root URL."""
    stops: list[Callable[[], None]] = []

    def start(app: web.Application) -> str:
        loop = asyncio.new_event_loop()
        # a handler still sleeping at the end (the /slow route) is cancelled, not awaited
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        ready = threading.Event()
        port: list[int] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            port.append(runner.addresses[0][1])
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            # a handler cancelled by the cleanup (the /slow route) finishes here, not as
            # "Task was destroyed but it is pending!" when the worker exits
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        assert ready.wait(10), "test server did not start"

        def stop() -> None:
            loop.call_soon_threadsafe(loop.stop)
            t.join(10)

        stops.append(stop)
        return f"http://127.0.0.1:{port[0]}"

    yield start
    for stop in stops:
        stop()
