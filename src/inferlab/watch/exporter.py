"""--prometheus PORT: inferlab_* gauges for Grafana, beside the engine's own series.

Uses prometheus_client with a registry of its own (no process/GC collectors
mixed in). A quantity that is unknown is removed from the exposition rather
than exported as 0 or NaN: absent is what Prometheus means by "no value".
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from inferlab.errors import InferlabError
from inferlab.watch.frame import Frame

if TYPE_CHECKING:
    from prometheus_client import Gauge

# metric name -> (help, how to read it from a frame's Live)
GAUGES: dict[str, tuple[str, str]] = {
    "inferlab_mbu": ("memory-bandwidth utilisation: bytes/step x steps/s / peak bandwidth", "mbu"),
    "inferlab_mfu": ("model FLOPs utilisation: (decode + prefill FLOPs)/s / peak FLOPS", "mfu"),
    "inferlab_floor_step_seconds": (
        "roofline decode step at the running batch and context",
        "floor_step_s",
    ),
    "inferlab_measured_step_seconds": ("window / engine steps", "measured_step_s"),
    "inferlab_bytes_per_step": (
        "weights once + every running sequence's KV, per step",
        "bytes_per_step",
    ),
    "inferlab_running_batch": ("mean running requests over the window", "running"),
}


class Exporter:
    """Serves /metrics on 127.0.0.1:PORT; `update(frame)` sets the gauges."""

    def __init__(self, port: int, model: str, hardware: str, host: str = "127.0.0.1") -> None:
        from prometheus_client import CollectorRegistry, Gauge, start_http_server

        self.registry = CollectorRegistry()
        self.labels = {"model": model, "hardware": hardware}
        self.gauges = {
            name: Gauge(name, help_, ["model", "hardware"], registry=self.registry)
            for name, (help_, _) in GAUGES.items()
        }
        self.up = Gauge(
            "inferlab_server_up", "1 if the last scrape answered", ["model", "hardware"],
            registry=self.registry,
        )  # fmt: skip
        try:
            self.server, self.thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as e:
            raise InferlabError(
                f"--prometheus {port}: cannot listen on {host}:{port} ({e.strerror}); "
                "choose a free port"
            ) from e
        self.port = self.server.server_port

    def update(self, frame: Frame) -> None:
        self.up.labels(**self.labels).set(1.0 if frame.up else 0.0)
        for name, (_, attr) in GAUGES.items():
            q = getattr(frame.live, attr) if frame.live is not None else None
            g = self.gauges[name]
            if q is not None and q.value is not None:
                g.labels(**self.labels).set(q.value)
            else:
                _remove(g, self.labels)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _remove(g: Gauge, labels: dict[str, str]) -> None:
    with contextlib.suppress(KeyError):  # never set: nothing to remove
        g.remove(labels["model"], labels["hardware"])
