"""The floor bench states by itself, when it can: a server on this machine that names its file.

`bench --url` without --floor-* flags asks a server on a loopback address which
model it loaded: llama.cpp's /props `model_path` (llama-server in router mode says
"none"), read as that GGUF's real tensor bytes; else the folder /v1/models names as a
model's `root` (vLLM serves a Hugging Face folder), read from its config.json at its
`torch_dtype`. The weight bytes (specs/) are divided by this machine's read bandwidth
as `inferlab probe` measured and saved it. The result is one line saying so ("floor:
FILE BYTES / BANDWIDTH probed here = X ms; --floor-* to override"); where any piece is
missing, the line says which flag would give MBU instead. Never an error: the bench goes on.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from inferlab.errors import InferlabError
from inferlab.httpbody import MAX_JSON_BYTES, AnswerTooSlow, BodyTooLarge, Unreachable, get_sync
from inferlab.physics.floor import Floor
from inferlab.specs.cost import ModelCost
from inferlab.units import fmt_bandwidth, fmt_bytes

AUTO_FLOOR_DEADLINE_S = 5.0  # each of /props and /v1/models: the floor is a nicety
FLAGS_HINT = "--floor-gguf FILE with --floor-hardware NAME (or --floor-bandwidth) gives MBU"


@dataclass(frozen=True, slots=True)
class AutoFloor:
    floor: Floor | None
    line: str  # what bench did, or which flag would give MBU


def is_loopback(url: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1: a server on this machine."""
    try:
        host = urlsplit(url if "://" in url else "http://" + url).hostname or ""
    except ValueError:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def props_url(base_url: str) -> str:
    u = base_url.strip().rstrip("/")
    return (u[: -len("/v1")] if u.endswith("/v1") else u) + "/props"


def fetch_props(url: str, headers: dict[str, str], timeout_s: float) -> dict[str, Any] | None:
    """A JSON object the server serves at `url` (llama.cpp's /props, /v1/models) as a dict
    ({} where it answered without one), None if no answer; AnswerTooSlow where the answer
    had not ended within `timeout_s` (a stuck server: the caller says so)."""
    try:
        answer = get_sync(url, headers, MAX_JSON_BYTES, timeout_s)
    except (Unreachable, BodyTooLarge):
        return None
    if answer.status != 200:
        return {}  # it answered: it has no /props (not llama.cpp) or refused it
    try:
        d = json.loads(answer.body)
    except ValueError:
        return None
    return d if isinstance(d, dict) else {}


def model_file(props: dict[str, Any] | None) -> Path | None:
    """The .gguf the server says it loaded, if that path is a file here."""
    path = (props or {}).get("model_path")
    if not isinstance(path, str) or not path or path == "none":
        return None
    p = Path(path).expanduser()
    return p if p.suffix == ".gguf" and p.is_file() else None


def models_url(base_url: str) -> str:
    u = base_url.strip().rstrip("/")
    return (u if u.endswith("/v1") else u + "/v1") + "/models"


def served_folder(models: dict[str, Any] | None) -> Path | None:
    """The model folder /v1/models names as `root` (vLLM), if it holds a config.json here."""
    data = (models or {}).get("data")
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    root = first.get("root")
    if not isinstance(root, str) or not root:
        return None
    folder = Path(root).expanduser()
    return folder if (folder / "config.json").is_file() else None


def _torch_dtype(folder: Path) -> str:
    """The weights' dtype config.json states (torch_dtype), as inferlab names it; bf16 else."""
    from inferlab.specs.dtypes import ALIASES

    try:
        said = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("torch_dtype")
    except (OSError, ValueError, AttributeError):
        return "bf16"
    return ALIASES.get(said, said) if isinstance(said, str) and said in ALIASES else "bf16"


def floor_for(model: Path) -> AutoFloor:
    """The model's weight bytes (a GGUF's tensors, or a folder's config.json at its
    torch_dtype) over this machine's probed read bandwidth."""
    from inferlab.specs.cost import derive_cost
    from inferlab.specs.resolve import resolve_model

    dtype = "bf16" if model.suffix == ".gguf" else _torch_dtype(model)
    try:
        cost = derive_cost(resolve_model(str(model)), weight_dtype=dtype)
    except InferlabError as e:
        return AutoFloor(
            None, f"no MBU: the server's model {model} could not be read ({e}); {FLAGS_HINT}"
        )
    name = model.name if model.suffix == ".gguf" else f"{model.name} ({dtype}, config.json)"
    return _over_bandwidth(cost, name)


def _over_bandwidth(cost: ModelCost, name: str) -> AutoFloor:
    from inferlab.specs.hardware import get_hardware

    weight = cost.weight_bytes_per_step(1)
    try:
        hw = get_hardware("this-machine")
    except InferlabError:
        return AutoFloor(
            None,
            f"no MBU: the server runs {name} ({fmt_bytes(weight)}) but this machine's "
            "bandwidth was never probed: run `inferlab probe` once, or pass --floor-bandwidth "
            "with --floor-gguf",
        )
    step_s = weight / hw.bandwidth_bytes_per_s
    line = (
        f"floor: {name} {fmt_bytes(weight)} / {fmt_bandwidth(hw.bandwidth_bytes_per_s)} "
        f"probed here = {step_s * 1e3:.3g} ms; --floor-* to override"
    )
    return AutoFloor(Floor(cost, hw), line)


def auto_floor(
    base_url: str, api_key: str | None, timeout_s: float = AUTO_FLOOR_DEADLINE_S
) -> AutoFloor:
    """The floor for a local server that names its GGUF, or the line saying what is missing."""
    if not is_loopback(base_url):
        return AutoFloor(None, f"no MBU: the server is not on this machine; {FLAGS_HINT}")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = props_url(base_url)
    try:
        props = fetch_props(url, headers, timeout_s)
        model = model_file(props)
        if model is None and props is not None:  # not llama.cpp's file: vLLM's folder?
            model = served_folder(fetch_props(models_url(base_url), headers, timeout_s))
    except AnswerTooSlow as e:
        return AutoFloor(None, f"no MBU: {e}; {FLAGS_HINT}")
    if model is None:
        said = "names no model file here" if props is not None else "did not answer"
        return AutoFloor(None, f"no MBU: {url} {said}; {FLAGS_HINT}")
    return floor_for(model)
