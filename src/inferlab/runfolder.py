"""A run folder holds one run: claiming one refuses to mix two runs' records.

`claim_run_folder` is called once a command has validated its inputs. It
refuses a folder that already holds a run (exit 2) unless the user asked to
`--overwrite` it (the old run's files are removed first) or to `--append-run`
(the new run goes into the next free `run-N/` sub-folder). Used as a context
manager it removes a folder it created if the run fails before writing into
it, so a refused or broken run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from inferlab.errors import InferlabError

# Any of these in a folder means a run lives there.
RUN_MARKERS = ("records.jsonl", "summary.json", "watch.jsonl", "server_metrics.jsonl")
MAX_SUBRUNS = 10_000


class RunFolderError(InferlabError):
    """--out names a file, or a folder that already holds a run."""


def default_out() -> Path:
    """Where a run goes without --out: results/run-<date>-<time> under the current folder."""
    return Path("results") / time.strftime("run-%Y%m%d-%H%M%S")


def holds_run(folder: Path) -> bool:
    return folder.is_dir() and any((folder / m).exists() for m in RUN_MARKERS)


def _next_subrun(folder: Path) -> Path:
    for n in range(1, MAX_SUBRUNS + 1):
        candidate = folder / f"run-{n}"
        if not candidate.exists():
            return candidate
    raise RunFolderError(f"{folder} already holds {MAX_SUBRUNS} sub-runs; choose another --out")


def _clear_run(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def resolve_run_folder(out: Path, overwrite: bool = False, append_run: bool = False) -> Path:
    """The folder this run will write into; refuses to mix runs (nothing is created here)."""
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {out} is a file; give a folder (it is created if missing)")
    if overwrite and append_run:
        raise RunFolderError("give --overwrite or --append-run, not both")
    if not holds_run(out):
        return out
    if append_run:
        return _next_subrun(out)
    if overwrite:
        return out
    raise RunFolderError(
        f"--out {out} already holds a run; add --overwrite to replace it, "
        "--append-run to add this run beside it (in a run-N/ sub-folder), or choose another folder"
    )


@contextlib.contextmanager
def claim_run_folder(
    out: Path, overwrite: bool = False, append_run: bool = False
) -> Iterator[Path]:
    """Create (or clear, with overwrite) the run folder; remove it again if the run dies empty."""
    folder = resolve_run_folder(out, overwrite, append_run)
    created = not folder.exists()
    # The outermost folder this claim creates (e.g. results/ for results/run-...), so a
    # refused run removes every empty folder it made, not just the last one.
    top = folder
    while not top.parent.exists():
        top = top.parent
    if not created and overwrite and holds_run(folder):
        _clear_run(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a file on the way (--out FILE/x), a read-only or virtual place
        raise RunFolderError(
            f"--out {out}: cannot create the folder ({e.strerror or e}); give a writable folder"
        ) from e
    try:
        yield folder
    except BaseException:
        if created:
            _remove_empty(folder, top)
        raise


def _remove_empty(folder: Path, top: Path) -> None:
    """Remove `folder` and its parents up to `top` while they are empty."""
    d = folder
    while d.is_dir() and not any(d.iterdir()):
        d.rmdir()
        if d == top:
            break
        d = d.parent


def result_folder(out: Path | None, stem: str, result_name: str, overwrite: bool) -> Path:
    """--out for a verb that writes one result file (engine-bench, profile): the given
    folder or results/<stem>-<time>; a file, or a folder already holding the result (unless
    --overwrite), is refused. Created when the result is written, not here."""
    folder = out or Path("results") / time.strftime(f"{stem}-%Y%m%d-%H%M%S")
    if folder.exists() and not folder.is_dir():
        raise InferlabError(f"--out {folder} is a file; give a folder (it is created if missing)")
    if (folder / result_name).exists() and not overwrite:
        raise InferlabError(
            f"--out {folder} already holds {result_name}; add --overwrite or choose another folder"
        )
    return folder
