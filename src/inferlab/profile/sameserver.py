"""Is a measurement of this server? One check for the engine baseline
(sim/steptime/engine_baseline.py) and the step profile (profile/identity.py): a model,
thread count or `--parallel` that differs is refused with one line (InferlabError, exit 2),
unless forced. A field one side did not state is not compared.
"""

from __future__ import annotations

from pathlib import Path

from inferlab.errors import InferlabError


def model_stem(model: str) -> str:
    """A GGUF path or a model id, compared by its file stem (llama-server names the path)."""
    return Path(model).stem.lower() if model.endswith(".gguf") else model.lower()


def same_model(a: str, b: str) -> bool:
    """One names the other (a quantisation or path around the same stem); blank: unknown."""
    x, y = model_stem(a), model_stem(b)
    return not (x and y) or x == y or x in y or y in x


def count_problems(
    noun: str, server: tuple[int | None, int | None], stated: tuple[int | None, int | None]
) -> list[str]:
    """(threads, slots) of the server against those the baseline or profile measured."""
    problems = []
    (threads, slots), (their_threads, their_slots) = server, stated
    if None not in (threads, their_threads) and threads != their_threads:
        problems.append(f"the server uses {threads} thread(s), the {noun} {their_threads}")
    if None not in (slots, their_slots) and slots != their_slots:
        problems.append(f"the server has {slots} slot(s), the {noun} {their_slots}")
    return problems


def refuse_mismatch(what: str, problems: list[str], fix: str, force: bool) -> None:
    """One line naming every difference and the two ways out, unless forced."""
    if problems and not force:
        raise InferlabError(f"{what}: {'; '.join(problems)}; {fix}, or add --force")
