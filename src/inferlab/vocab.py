"""The closed vocabularies summary.json, records and the reports share, as Literal types.

mypy checks every use; `jsonrecord` refuses a file whose value is not in the list.
A registry keyed by one of these (servermetrics' DIALECTS) is tested to hold exactly
its names, so adding a value is one edit here and one entry there.
"""

from __future__ import annotations

from typing import Literal, get_args

LevelKind = Literal["concurrency", "rate", "trace"]  # closed loop, open loop, a replayed trace
Severity = Literal["error", "warning", "info"]  # error fails --strict
Bound = Literal["memory", "compute"]  # which roof a step hits
Phase = Literal["warmup", "measure"]  # a request record's part of its level
Dialect = Literal["llamacpp", "vllm", "sglang", "tgi"]  # a server's /metrics vocabulary

DIALECT_NAMES: tuple[Dialect, ...] = get_args(Dialect)
