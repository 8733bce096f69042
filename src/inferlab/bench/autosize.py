"""`--workers auto`: as many workers as the expected token rate needs, measured, not guessed.

One worker's ingest rate is measured here, on this machine, by pushing
synthetic SSE events through the same parser and record-folding code the
client runs per token. The expected token rate of the heaviest level is the
floor's aggregate rate at that batch when a floor is given (an upper bound: a
real server is slower), else a generous 100 tok/s per stream; a rate level
produces rate x output tokens per second (Little's law). Each worker is
planned at half its measured ingest rate, so its stamps stay prompt.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from typing import Any

DEFAULT_TOKENS_PER_S_PER_STREAM = 100.0
HEADROOM = 0.5  # plan each worker at this fraction of what it can ingest
CALIBRATION_EVENTS = 3000


def ingest_events_per_cpu_s(events: int = CALIBRATION_EVENTS) -> float:
    """Token events one worker folds into records per CPU-second (SSE parse + JSON + stamp)."""
    from inferlab.bench.client import _Stream
    from inferlab.bench.sse import SSEParser
    from inferlab.records import RequestRecord

    event = {"choices": [{"text": " word", "index": 0, "finish_reason": None}], "usage": None}
    chunk = f"data: {json.dumps(event)}\n\n".encode()
    rec = RequestRecord(0, "calibrate", "measure", 8, events)
    stream, parser = _Stream(rec), SSEParser()
    cpu0 = time.process_time()
    for _ in range(events):
        for data in parser.feed(chunk):
            stream.handle(data, time.perf_counter_ns())
    cpu = max(time.process_time() - cpu0, 1e-6)
    return events / cpu


def expected_tokens_per_s(levels: Sequence[Any], output_tokens: int, floor: Any = None) -> float:
    """The heaviest level's token rate: the floor's aggregate at that batch, or 100 tok/s/stream."""
    best = 0.0
    for lv in levels:
        if lv.kind != "concurrency":  # rate and trace levels: their offered rate
            best = max(best, lv.value * output_tokens)
            continue
        streams = int(lv.value)
        rate = streams * DEFAULT_TOKENS_PER_S_PER_STREAM
        if floor is not None:
            from inferlab.physics.decode import decode_point

            rate = decode_point(floor.cost, floor.hardware, streams, 0).tokens_per_s_total
        best = max(best, rate)
    return best


def auto_workers(expected_tokens_per_s: float, ingest_per_worker: float) -> int:
    """Workers needed at HEADROOM of each one's ingest rate, at most one per core."""
    need = math.ceil(expected_tokens_per_s / max(HEADROOM * ingest_per_worker, 1.0))
    return max(1, min(need, os.cpu_count() or 1))
