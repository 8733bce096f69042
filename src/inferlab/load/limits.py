"""The bounds every load obeys, wherever it was stated (flags, a config, a test)."""

from __future__ import annotations

MAX_TOKENS = 10_000_000  # a request's prompt or output, at most
MAX_REQUESTS = 10**8
