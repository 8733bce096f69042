"""bench --url A --url B: one sweep of several endpoints, each level in short blocks that
alternate them (bench/blocks.py), one endpoint loaded at a time, into one run folder.

Each endpoint is probed and preflighted as a single-URL bench does (its own model, slots
and prompt counting) before any record is written; each gets its warm-up before its first
block of every level, and (llama-server) its slots settled before every block. A level's
prompts are all made before its first block, so nothing but the blocks themselves reaches
a server while the level runs. Records are written as each request completes, naming
their endpoint and block; summary.json is rewritten after every level
(bench/paired_summary.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from inferlab.bench.benchmark import (
    BenchConfig,
    BenchResult,
    RunState,
    accept_server,
    all_failed,
    all_failed_warning,
    connection_limit,
    host_ticks_into,
    level_context,
    note_tokenizer,
    opening_notes,
    request_headers,
    settle_before,
    stopped_early,
    write_summary,
)
from inferlab.bench.blocks import LevelBlocks, block_order, block_plan, side_level
from inferlab.bench.client import make_connector
from inferlab.bench.machine_canary import MachineProbe, machine_probe, take_machine
from inferlab.bench.materialise import Target, make_level_prompts
from inferlab.bench.paired_summary import PairedProgress, Side, paired_note, paired_summary
from inferlab.bench.progress import Hooks
from inferlab.bench.prompt_text import Prompt, TextSource
from inferlab.bench.runner import LevelContext, LevelRun, run_level
from inferlab.load.spec import Level
from inferlab.records import RecordWriter
from inferlab.summary import LevelSummary, RunSummary


@dataclass(frozen=True, slots=True)
class Block:
    """One block ready to run: whose (an index into the sides), its place in the level's
    order, its prompts (warm-up first) and the first request id they take."""

    side: int
    index: int
    prompts: list[Prompt]
    warmup: int
    first_id: int
    implied_hit_ratio: float | None = None


@dataclass(slots=True)
class Sweep:
    """A paired run while it runs: what the summary reads, each side's context, the ids,
    and each side's machine canary (None: --no-canary)."""

    progress: PairedProgress
    contexts: list[LevelContext]
    probes: list[MachineProbe | None]
    next_id: int = 0


async def machine_probes(cfg: BenchConfig, urls: list[str]) -> list[MachineProbe | None]:
    """Each endpoint's machine canary (its server's cores where local), one set of arrays
    for all; none with --no-canary."""
    if not cfg.canary:
        return [None] * len(urls)
    first = await asyncio.to_thread(machine_probe, urls[0])
    out: list[MachineProbe | None] = [first]
    for url in urls[1:]:
        found = await asyncio.to_thread(machine_probe, url, None, first.arrays)
        out.append(found)
    return out


def _side_cfg(cfg: BenchConfig, url: str) -> BenchConfig:
    """One endpoint's own config: its URL; no drift canary and no /metrics (see
    paired_summary.paired_note)."""
    return dataclasses.replace(
        cfg, url=url, canary=False, scrape=False, extra=dict(cfg.extra), paired=None
    )


async def run_paired(cfg: BenchConfig, hooks: Hooks | None = None) -> BenchResult:
    """The paired sweep (cfg.paired's endpoints), written to cfg.out_dir as it goes."""
    if cfg.paired is None:
        raise ValueError("run_paired needs cfg.paired (bench --url A --url B)")
    hooks = hooks or Hooks()
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    records_path, summary_path = cfg.out_dir / "records.jsonl", cfg.out_dir / "summary.json"
    started, t0_ns = time.time(), time.perf_counter_ns()
    sides = [
        Side(t.label, RunState(_side_cfg(cfg, t.url), started, t0_ns, model=cfg.model or ""))
        for t in cfg.paired.targets
    ]
    notes = [*opening_notes(cfg), paired_note(cfg)]
    progress = PairedProgress(cfg, sides, [], notes)
    connector = make_connector(connection_limit(cfg))
    async with aiohttp.ClientSession(connector=connector, read_bufsize=1 << 20) as session:
        headers = request_headers(cfg)
        accepted = [await accept_server(session, side.state, headers) for side in sides]
        # Opened only once every server answered: a refused run leaves no records file.
        writer = RecordWriter(records_path)
        contexts = [level_context(cfg, session, writer, t0_ns, a) for a in accepted]
        probes = await machine_probes(cfg, [e.base_url for _, e in accepted])
        run = Sweep(progress, contexts, probes)
        try:
            await _sweep(run, hooks, summary_path)
        except BaseException as e:  # Ctrl-C, a crashed server, anything: keep what finished
            progress.interrupted = True
            progress.warnings.append(stopped_early(e))
            raise
        finally:
            writer.close()
            summary = paired_summary(progress)
            write_summary(summary_path, summary)
    runs = [r for side in sides for r in side.state.runs]
    return BenchResult(summary, runs, summary_path, records_path)


async def _sweep(run: Sweep, hooks: Hooks, summary_path: Path) -> None:
    """Every level in blocks; the summary rewritten after each; a level whose every
    request failed on an endpoint ends the sweep there (unless --keep-going)."""
    p = run.progress
    cfg = p.cfg
    for lb in level_plans(cfg):
        level, plan = lb.level, lb.plan
        blocks = await _prepare(run, lb)
        p.levels.append(lb)
        warm = sum(b.warmup for b in blocks)
        hooks.level_start(level, plan.per_block * len(lb.order), warm)
        for block in blocks:
            await _run_block(run, lb, block, hooks)
        summary = paired_summary(p)
        write_summary(summary_path, summary)
        done = _levels_of(summary, p.sides, level)
        hooks.level_end(level, done[0])
        failed = next((lv for lv in done if all_failed(lv)), None)
        if failed is not None and not cfg.keep_going:
            p.warnings.append(all_failed_warning(failed))
            return


def _per_stream(cfg: BenchConfig) -> int:
    return cfg.paired.block_requests if cfg.paired is not None else 1


def level_plans(cfg: BenchConfig) -> list[LevelBlocks]:
    """Every level's blocks and their order, as the run will take them (seeded)."""
    k = len(cfg.paired.targets) if cfg.paired is not None else 1
    out = []
    for i, level in enumerate(cfg.levels):
        plan = block_plan(cfg.requests_per_level * cfg.repeats, int(level.value), _per_stream(cfg))
        out.append(LevelBlocks(level, plan, block_order(k, plan.rounds, cfg.seed * 1_000_003 + i)))
    return out


def paired_plan_line(cfg: BenchConfig) -> str:
    """'plan: paired run of base, new: c=1 8 block pairs of 2 requests, ...'."""
    labels = cfg.paired.labels if cfg.paired is not None else ()
    parts = [f"{lb.level.label} {lb.plan.rounds} x {lb.plan.per_block}" for lb in level_plans(cfg)]
    per_endpoint = sum(lb.plan.rounds * lb.plan.per_block for lb in level_plans(cfg))
    return (
        f"plan: paired run of {', '.join(labels)}: each level in rounds of one block per "
        f"endpoint, block pairs x requests per block: {', '.join(parts)}; {per_endpoint:,} "
        "measured requests per endpoint (+ its warm-up before its first block of each level)"
    )


def _levels_of(summary: RunSummary, sides: list[Side], level: Level) -> list[LevelSummary]:
    """The level's summaries, one per endpoint, in the endpoints' order."""
    labels = {side_level(level, side.label).label for side in sides}
    return [lv for lv in summary.levels if lv.label in labels]


async def _prepare(run: Sweep, lb: LevelBlocks) -> list[Block]:
    """Every block's prompts, made before the level's first block runs. A round's blocks
    draw the same request lengths (the same specs), every prompt's text its own."""
    p = run.progress
    cfg, k = p.cfg, len(p.sides)
    later = dataclasses.replace(cfg.load, requests_per_level=lb.plan.per_block, warmup=0)
    first_load = dataclasses.replace(later, warmup=cfg.load.warmup)
    blocks: list[Block] = []
    for index, i in enumerate(lb.order):
        side, first = p.sides[i], i not in {b.side for b in blocks}
        load = first_load if first else later
        level = lb.level
        reqs = load.requests(Level(level.kind, level.value, f"{level.label} #{index // k}"))
        warm = load.warmup_requests(level)
        words = TextSource(cfg.prompt_corpus, cfg.tokenizer)
        target = Target(run.contexts[i].session, side.state.count_at, side.state.model, words)
        seed = cfg.seed * 1_000_003 + run.next_id
        prompts = await make_level_prompts(target, side_level(level, side.label), warm, reqs, seed)
        note_tokenizer(side.state, prompts)
        blocks.append(Block(i, index, prompts, len(warm), run.next_id, reqs.implied_hit_ratio))
        run.next_id += len(prompts)
    return blocks


async def _run_block(run: Sweep, lb: LevelBlocks, block: Block, hooks: Hooks) -> None:
    """One endpoint's block: its slots settled first (llama-server: each block starts from
    an idle server's slot order, as each level and repeat does), then its requests (warm-up
    first, in the endpoint's first block of the level) as a closed loop."""
    side, ctx = run.progress.sides[block.side], run.contexts[block.side]
    level = side_level(lb.level, side.label)
    if side.state.settle_slot_count:  # every block from an idle server's slot order
        await settle_before(ctx, side.state, level.label)
    out = LevelRun(
        level,
        implied_hit_ratio=block.implied_hit_ratio,
        endpoint=side.label,
        block=block.index,
    )
    side.state.runs.append(out)
    with host_ticks_into(out):
        await run_level(ctx, out, block.prompts, block.warmup, block.first_id, hooks.request_done)
    probe = run.probes[block.side]
    if probe is not None:  # the machine just after the block, on this endpoint's cores
        out.machine_after = await asyncio.to_thread(take_machine, probe)
