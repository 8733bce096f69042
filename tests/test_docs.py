"""The docs as a product: links that resolve, a README a newcomer reads, a short accuracy page,
a run log that parses, and no file under tests/ or docs/ that names the machine it was made on."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
DOCS = sorted([README, *(ROOT / "docs").rglob("*.md"), *(ROOT / "benchmarks").glob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|tmp|Users)/")


def prose(text: str) -> list[str]:
    """Paragraphs outside code blocks and tables. A list item starts a paragraph, unless the
    sentence before it is not over (its line ends in ':' or ';', a blank line between at
    most): then the list goes on with that sentence, as a reader reads it."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    paras: list[list[str]] = []
    cur: list[str] | None = None  # where the next line goes; None after a break
    joinable = False  # the last paragraph may take a list item (no heading or table since)
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", "|")) or line.startswith("    "):
            cur, joinable = None, joinable and not s
        elif s.startswith(("- ", "* ", "1. ", "2. ", "3. ", "4. ")):
            if not (joinable and paras and paras[-1][-1].endswith((":", ";"))):
                paras.append([])
            cur, joinable = paras[-1], True
            cur.append(s)
        else:
            if cur is None:
                cur = []
                paras.append(cur)
            cur.append(s)
            joinable = True
    return [" ".join(p) for p in paras]


def sentences(text: str) -> list[str]:
    return [s for p in prose(text) for s in re.split(r"(?<=[.?!])\s+", p) if s]


def anchors(md: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for h in re.findall(r"^#+\s+(.*)$", md, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def broken_links(doc: Path) -> list[str]:
    bad = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):  # http(s):, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        missing = not dest.exists()
        if missing or (anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text())):
            bad.append(target)
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_its_heading(doc: Path) -> None:
    assert broken_links(doc) == []


def test_a_missing_file_or_heading_is_caught(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# One heading — with a dash\n")
    doc = tmp_path / "a.md"
    doc.write_text("[x](b.md) [y](b.md#one-heading--with-a-dash) [z](c.md) [w](b.md#two)\n")
    assert broken_links(doc) == ["c.md", "b.md#two"]


def test_readme_fits_250_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_no_readme_sentence_runs_past_60_words() -> None:
    long = [s for s in sentences(README.read_text(encoding="utf-8")) if len(s.split()) > 60]
    assert long == [], "\n\n".join(f"{len(s.split())} words: {s}" for s in long)


def test_sentences_skip_code_and_tables() -> None:
    text = "One two. Three?\n\n```\nnot. prose.\n```\n| a. | b. |\n- item one. item two\n"
    assert sentences(text) == ["One two.", "Three?", "- item one.", "item two"]


def test_a_sentence_goes_on_through_the_list_it_opens() -> None:
    text = "It is:\n\n- one;\n- two.\n- Three.\n\n# H\n\nEnds:\n\n## H2\n\n- apart.\n"
    assert sentences(text) == ["It is: - one; - two.", "- Three.", "Ends:", "- apart."]


def test_predict_accuracy_page_fits_200_lines() -> None:
    page = ROOT / "docs" / "predict-accuracy.md"
    assert len(page.read_text(encoding="utf-8").splitlines()) <= 200


def test_readme_keeps_the_two_newcomer_commands_and_says_how_to_get_uv() -> None:
    text = README.read_text(encoding="utf-8")
    assert "uv run inferlab demo" in text and "uv run pytest" in text
    assert "https://astral.sh/uv/install.sh" in text


@pytest.fixture(scope="module")
def log() -> ModuleType:
    path = ROOT / "benchmarks" / "accuracy_log.py"
    spec = importlib.util.spec_from_file_location("accuracy_log", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["accuracy_log"] = mod  # dataclasses resolve their module by name
    spec.loader.exec_module(mod)
    return mod


def test_the_run_log_parses_and_holds_runs_1_to_28(log: ModuleType) -> None:
    runs = log.read_runs()
    assert [r.run for r in runs][:28] == list(range(1, 29))
    last = runs[27]
    assert (last.counts.tpot_p50, last.counts.ttft_p50, last.counts.ttft_p99) == (7, 5, 11)
    assert (last.again_counts.tpot_p50, last.again_counts.max_load_equal) == (7, 1)


def test_each_transcribed_table_agrees_with_its_stated_counts(log: ModuleType) -> None:
    """Where a run's every shape has all four quantities, the per-shape verdicts add up to
    the counts the log stated (a verdict rounded onto its target's edge may go either way)."""
    checked = 0
    for r in log.read_runs():
        full = [s for s in r.shapes if len(s.quantities) == 4]
        if r.counts is None or len(full) != r.counts.shapes:
            continue
        for name, stated in zip(
            log.QUANTITIES, ("tpot_p50", "ttft_p50", "ttft_p99", "goodput"), strict=True
        ):
            qs = [q for s in full for q in s.quantities if q.name == name]
            yes = sum(1 for q in qs if q.within_target)
            edge = sum(1 for q in qs if q.within_target is None)
            assert yes <= getattr(r.counts, stated) <= yes + edge, (r.run, name)
        checked += 1
    assert checked >= 17


def test_a_run_is_recorded_from_accuracy_json_and_read_back(
    log: ModuleType, tmp_path: Path
) -> None:
    row = {
        "tpot_p50_s": {"predicted": 0.0105, "measured": 0.010, "error": 0.05},
        "ttft_p50_s": {"predicted": 0.2, "measured": 0.25, "error": -0.2},
        "ttft_p99_s": {"predicted": 0.5, "measured": 0.5, "error": 0.0},
        "goodput_requests_per_s": {"predicted": 0.0, "measured": 0.0, "error": 0.0},
    }
    acc = {
        "shapes": {"c=1": row},
        "max_load": [{"slo": "ttft=1s", "predicted": 3.0, "measured": 4.0, "equal": False}],
        "argv": ["--out", "x"],
        "cores": 2,
        "date_unix_s": 0.0,
    }
    path = log.record_run(acc, folder=tmp_path)
    assert path == tmp_path / "run-01.json"
    (rec,) = log.read_runs(tmp_path)
    q = {x.name: x for x in rec.shapes[0].quantities}
    assert q["tpot_p50_ms"].predicted == pytest.approx(10.5)
    assert q["ttft_p50_ms"].within_target is False
    assert q["goodput_requests_per_s"].within_target is True  # both 0
    assert (rec.counts.tpot_p50, rec.counts.ttft_p50, rec.counts.max_load_equal) == (1, 0, 0)
    assert log.record_run(acc, folder=tmp_path) == tmp_path / "run-02.json"
    assert log.record_run({**acc, "argv": ["--fake"]}, folder=tmp_path) is None


def test_a_graded_run_keeps_each_interval_and_grade_and_counts_the_noise_apart(
    log: ModuleType, tmp_path: Path
) -> None:
    noisy = {"predicted": 0.0112, "measured": 0.010, "error": 0.12, "ci95": [0.0085, 0.0115]}
    row = {
        "tpot_p50_s": {**noisy, "grade": "within_noise"},
        "ttft_p50_s": {"predicted": 0.2, "measured": 0.25, "error": -0.2, "grade": "miss"},
        "ttft_p99_s": {"predicted": 0.5, "measured": 0.5, "error": 0.0, "grade": "within_target"},
        "goodput_requests_per_s": {"predicted": 0.0, "measured": 0.0, "error": 0.0},
    }
    acc = {"shapes": {"c=1": row}, "max_load": [], "argv": [], "date_unix_s": 0.0}
    log.record_run(acc, folder=tmp_path)
    (rec,) = log.read_runs(tmp_path)
    q = {x.name: x for x in rec.shapes[0].quantities}
    assert q["tpot_p50_ms"].ci95 == pytest.approx((8.5, 11.5))  # in the log's unit
    assert (q["tpot_p50_ms"].grade, q["tpot_p50_ms"].within_target) == ("within_noise", False)
    assert q["ttft_p50_ms"].grade == "miss" and q["ttft_p99_ms"].grade == "within_target"
    c, n = rec.counts, rec.counts_with_noise
    assert (c.tpot_p50, c.ttft_p50, c.ttft_p99) == (0, 0, 1)  # the target alone, as runs 1-28
    assert (n.tpot_p50, n.ttft_p50, n.ttft_p99) == (1, 0, 1)  # the interval holds TPOT
    old = log.read_runs()[27]  # a run logged before grades
    assert old.counts_with_noise is None
    assert all(q.grade is None and q.ci95 is None for s in old.shapes for q in s.quantities)


def test_a_bad_run_file_is_one_value_error(log: ModuleType) -> None:
    with pytest.raises(ValueError, match="schema_version"):
        log.from_json({"schema_version": 99})
    with pytest.raises(ValueError, match="not a run record"):
        log.from_json({"schema_version": 1, "run": "one"})


def texts(*folders: Path) -> dict[Path, str]:
    """Every file under the folders that reads as text (no NUL byte, UTF-8), but __pycache__."""
    out = {}
    for p in sorted(f for folder in folders for f in folder.rglob("*") if f.is_file()):
        if "__pycache__" in p.parts or b"\0" in (data := p.read_bytes()):
            continue
        try:
            out[p] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def machine_paths(text: str) -> list[str]:
    return [text[m.start() : m.start() + 40] for m in MACHINE_PATH.finditer(text)]


def test_no_file_under_tests_or_docs_names_a_machine_path() -> None:
    """Captured fixtures, their READMEs, the tests and the docs alike: a path of the machine
    they were written on is written relative, or as a variable the file defines."""
    files = texts(ROOT / "tests", ROOT / "docs")
    assert Path(__file__) in files and ROOT / "docs" / "simulator.md" in files
    named = {str(p.relative_to(ROOT)): hits for p, s in files.items() if (hits := machine_paths(s))}
    assert named == {}


def test_a_machine_path_is_caught_and_a_relative_one_is_not() -> None:
    # built from parts, so that this file holds no such path itself
    assert machine_paths('"model_path": "/' + 'work/main/.venv/x.gguf"') != []
    assert machine_paths("--tokenizer /" + "tmp/peer-tok") != []
    assert machine_paths('"model_path": ".venv/lib/x.gguf", "url": "http://h/v1/tmp/"') == []
