"""A steady streaming load: `clients` threads, each sending the next request as one ends."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager


def _one(base_url: str, i: int, max_tokens: int) -> None:
    body = json.dumps(
        {"model": "fake", "prompt": f"client {i} " + "word " * 30, "max_tokens": max_tokens,
         "stream": True}
    ).encode()  # fmt: skip
    req = urllib.request.Request(
        base_url + "/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        while r.read(4096):
            pass


@contextmanager
def steady_load(base_url: str, clients: int, max_tokens: int = 40) -> Iterator[None]:
    stop = threading.Event()
    counter = iter(range(1 << 30))

    def loop() -> None:
        while not stop.is_set():
            _one(base_url, next(counter), max_tokens)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
