"""The `slo`, `saturation` and `max_load` blocks of summary.json are read as the rest of it
is: every value checked against its type, the first that does not fit named by its path."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from inferlab.jsonrecord import SchemaError
from inferlab.slo.attainment import ObjectiveResult, SloLevel
from inferlab.slo.saturation import Saturation
from inferlab.slo.search import MaxLoad
from inferlab.summary import RunSummary
from tests.clirun import RunCli, RunJson

# The three blocks as the hand-written encoders wrote them before they became JsonRecords.
BEFORE = json.loads((Path(__file__).parents[1] / "data" / "slo_blocks_before.json").read_text())


@pytest.mark.parametrize(("name", "cls"), [("slo", SloLevel), ("saturation", Saturation)])
def test_the_blocks_read_and_write_the_keys_they_had(name: str, cls: Any) -> None:
    assert cls.from_json(BEFORE[name]).to_json() == BEFORE[name]


def test_the_max_load_block_reads_and_writes_the_keys_it_had() -> None:
    found = MaxLoad.from_json(BEFORE["max_load"])
    assert found.to_json() == BEFORE["max_load"]
    assert found.levels_tried[0].passed and found.value == 128


def test_a_margin_without_data_is_null_in_json_and_infinite_in_python() -> None:
    o = ObjectiveResult("ttft_p99", "level", 1.0, False, math.inf)
    d = o.to_json()
    assert d["margin"] is None and ObjectiveResult.from_json(d).margin == math.inf


def _summary(run_json: RunJson) -> dict[str, Any]:
    return run_json(
        "simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "20/s",
        "--duration", "2s", "--slo", "ttft_p99=1s",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("block", "key", "value", "path"),
    [
        ("slo", "attainment", "high", "levels[0].slo.attainment: must be a finite number"),
        ("slo", "pass", 1, "levels[0].slo.pass: must be true or false"),
        ("saturation", "verdict", "fine", "levels[0].saturation.verdict: must be one of"),
    ],
)
def test_a_wrongly_typed_level_block_is_refused_with_its_path(
    run_json: RunJson, block: str, key: str, value: Any, path: str
) -> None:
    d = _summary(run_json)
    RunSummary.from_json(d)  # as written, it reads
    bad = copy.deepcopy(d)
    bad["levels"][0][block][key] = value
    with pytest.raises(SchemaError, match=path.replace("[", r"\[").replace("]", r"\]")):
        RunSummary.from_json(bad)


def test_a_wrongly_typed_max_load_is_refused_by_report(
    run_json: RunJson, run_cli: RunCli, tmp_path: Path
) -> None:
    d = _summary(run_json)
    d["max_load"] = copy.deepcopy(BEFORE["max_load"])
    d["max_load"]["levels_tried"][2]["attainment"] = "all"
    (tmp_path / "summary.json").write_text(json.dumps(d))
    code, out, err = run_cli("report", str(tmp_path))
    assert code == 2 and "max_load.levels_tried[2].attainment: must be a finite number" in err
    assert "Traceback" not in err
