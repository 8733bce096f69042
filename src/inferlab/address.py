"""A server's address, normalised in one place.

Users give a server as its root (http://host:8080), its OpenAI base (.../v1), or its
metrics page (.../metrics), with or without a trailing slash. Everything inferlab
needs hangs off the root: `/v1/...` for the API, `/tokenize` and `/health`, `/metrics`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from inferlab.errors import InferlabError

_SUFFIXES = ("/metrics", "/v1")


def root_of(url: str) -> str:
    """The server's root: the URL without a trailing slash, /metrics or /v1 (a path prefix
    before them, e.g. a proxy's /llama, is kept)."""
    u = url.strip().rstrip("/")
    for suffix in _SUFFIXES:
        if u.endswith(suffix):
            u = u[: -len(suffix)].rstrip("/")
    return u


def checked_root(url: str, flag: str = "--url", scheme_optional: bool = False) -> str:
    """root_of(url) once it is an http(s) URL with a host and a valid port; one line naming
    `flag` otherwise. `scheme_optional`: a bare host:port means http://host:port."""
    u = url.strip()
    if scheme_optional and "://" not in u:
        u = "http://" + u
    try:
        parts = urlsplit(u)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a broken [IPv6] host, a port out of range
        ok = False
    if not ok:
        raise InferlabError(
            f"{flag} {url!r}: give an http(s) URL with a host, e.g. http://127.0.0.1:8080"
        )
    return root_of(u)


def metrics_url(url: str, flag: str = "--url") -> str:
    """The /metrics URL for a server root, an OpenAI /v1 base, or a /metrics URL itself."""
    return checked_root(url, flag) + "/metrics"


def api_base(url: str) -> str:
    """The OpenAI base (root + /v1) for any of the accepted forms."""
    return root_of(url) + "/v1"
