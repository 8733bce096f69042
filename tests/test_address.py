"""One normaliser for a server's address: root, /v1 base or /metrics, any trailing slash."""

from __future__ import annotations

import pytest

from inferlab.address import checked_root, metrics_url, root_of
from inferlab.errors import InferlabError


@pytest.mark.parametrize(
    "given",
    ["http://h:8080", "http://h:8080/", "http://h:8080/v1", "http://h:8080/v1/",
     "http://h:8080/metrics", " http://h:8080/metrics/ "],
)  # fmt: skip
def test_every_form_gives_the_root(given: str) -> None:
    assert root_of(given) == "http://h:8080"
    assert metrics_url(given) == "http://h:8080/metrics"


def test_a_path_prefix_is_kept() -> None:
    assert root_of("https://proxy/llama/v1") == "https://proxy/llama"


def test_bad_urls_name_the_flag() -> None:
    for bad in ("", "x", "ftp://h/", "http://[::1", "http://127.0.0.1:99999"):
        with pytest.raises(InferlabError, match="--metrics-url"):
            checked_root(bad, "--metrics-url")
    assert checked_root("127.0.0.1:8080/v1", scheme_optional=True) == "http://127.0.0.1:8080"
