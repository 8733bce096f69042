"""GET /slots of a llama-server (or the scripted fake, testing/fake_steps.py) in tests."""

from __future__ import annotations

import json
import urllib.request


def slot_tasks(base_url: str) -> list[int]:
    """Each slot's last task id, by slot, from the server at `base_url` (…/v1)."""
    url = base_url.removesuffix("/v1") + "/slots"
    with urllib.request.urlopen(url, timeout=10) as r:
        return [int(s["id_task"]) for s in json.loads(r.read())]
