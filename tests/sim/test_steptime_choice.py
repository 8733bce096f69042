"""sim/steptime/: the files a step time stands on are read once, at the edge (the flags'
`step_choice`), into typed values; the chooser picks the first source that applies and
reads no file itself."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from inferlab.cli import build_parser
from inferlab.commands.flags.sim import step_choice
from inferlab.engines.result import EngineBench
from inferlab.metrics.runfolder import load_summary
from inferlab.profile.record import load_profile
from inferlab.sim.steptime.choice import EngineBaseline, ServedProfile, StepChoice
from inferlab.sim.steptime.chooser import SOURCES, choose_step_model
from inferlab.sim.steptime.engine import EngineStepTime
from inferlab.sim.steptime.profile import ProfileStepTime
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec
from inferlab.summary import RunSummary
from tests.engines.baseline import engine
from tests.sim.test_engine_baseline_cli import ENGINE, SMOL, baseline, served_run
from tests.sim.test_profile_cli import profile_dir

STEPTIME = Path(__file__).parents[2] / "src" / "inferlab" / "sim" / "steptime"


def _choice(*argv: str) -> StepChoice:
    return step_choice(build_parser().parse_args(["simulate", *argv]))


def _no_roofline() -> tuple[ModelCost, HardwareSpec]:
    raise AssertionError("a measured source never resolves the model and hardware")


def test_an_engine_baseline_beside_a_served_run_is_read_at_the_edge(tmp_path: Path) -> None:
    d, run = baseline(tmp_path), served_run(tmp_path)
    c = _choice("--engine-baseline", str(d), "--calibrate", str(run))
    assert c.engine is not None and isinstance(c.engine.bench, EngineBench)
    assert c.engine.bench.gguf == SMOL and c.engine.label == str(d)
    assert isinstance(c.engine.served, RunSummary)  # the run beside it: the serving overhead
    assert c.calibration is None and c.calibrate == str(run) and c.basis == "calibrated"


def test_a_calibrate_naming_an_engine_folder_is_the_baseline(tmp_path: Path) -> None:
    d = baseline(tmp_path)
    for named in (d, d / "engine_bench.json"):
        c = _choice("--calibrate", str(named))
        assert c.engine is not None and c.engine.label == str(named)
        assert c.engine.served is None and c.calibration is None and c.basis == "calibrated"


def test_a_bench_run_to_fit_is_read_at_the_edge(tmp_path: Path) -> None:
    run = served_run(tmp_path)
    c = _choice("--calibrate", str(run), "--calibrate-levels", "c=1,c=4")
    assert isinstance(c.calibration, RunSummary) and c.engine is None
    assert c.calibrate_levels == ("c=1", "c=4")


def test_a_profile_is_read_at_the_edge_with_its_scale(tmp_path: Path) -> None:
    d = profile_dir(tmp_path)
    c = _choice("--profile", str(d), "--step-scale", "1.1")
    assert c.profile is not None and c.profile.label == str(d) == c.profile_path
    assert c.profile.step_scale == 1.1 and c.basis == "profiled"
    assert c.profile.record == load_profile(d)


def test_the_chooser_takes_typed_values_and_names_the_label_it_was_given() -> None:
    bench = dataclasses.replace(engine(ENGINE, 0.0133), gguf=SMOL, threads=1)
    choice = StepChoice(engine=EngineBaseline(bench, "measured/engine", None, 0.002))
    sm = choose_step_model(choice, _no_roofline)  # no file named exists: none is read
    assert isinstance(sm.model, EngineStepTime) and sm.model.serving_overhead_s == 0.002
    assert sm.description["engine_baseline"] == "measured/engine"
    assert sm.description["measured_batches"] == [1, 2, 4, 8, 16]


def test_the_first_source_that_applies_wins(tmp_path: Path) -> None:
    assert [s.__name__ for s in SOURCES] == ["_profiled", "engine_model", "_calibrated"]
    bench = dataclasses.replace(engine(ENGINE, 0.0133), gguf=SMOL, threads=1)
    profile = ServedProfile(load_profile(profile_dir(tmp_path)), "p")
    both = StepChoice(
        engine=EngineBaseline(bench, "e"),
        profile=profile,
        calibration=load_summary(served_run(tmp_path)),
    )
    sm = choose_step_model(both, _no_roofline)
    assert isinstance(sm.model, ProfileStepTime) and sm.description["profile"] == "p"
    fitted = choose_step_model(dataclasses.replace(both, profile=None), _no_roofline)
    assert isinstance(fitted.model, EngineStepTime)  # a baseline, not a fit to the run


READS = {"open", "read_text", "read_bytes", "is_file", "is_dir", "exists", "iterdir", "glob"}
READERS = {"load_summary", "load_profile", "load_engine_bench", "loads_strict", "read_json"}


def _reads(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            name = node.func.id if isinstance(node.func, ast.Name) else name
            if name in READS | READERS:
                found.append(f"line {node.lineno}: {name}")
        elif isinstance(node, ast.ImportFrom) and node.module in (
            "inferlab.metrics.runfolder",
            "json",
        ):
            found.append(f"line {node.lineno}: imports {node.module}")
    return found


@pytest.mark.parametrize("path", sorted(STEPTIME.glob("*.py")), ids=lambda p: p.name)
def test_no_step_time_source_nor_the_chooser_reads_a_file(path: Path) -> None:
    assert not _reads(ast.parse(path.read_text())), path.name


def test_the_read_checker_finds_a_read() -> None:
    code = (
        "from inferlab.metrics.runfolder import load_summary\n"
        "x = load_summary(p)\ny = p.read_text()\n"
    )
    assert len(_reads(ast.parse(code))) == 3
