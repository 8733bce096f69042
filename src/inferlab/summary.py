"""Typed run and level summaries: what summary.json holds, as frozen dataclasses.

bench and sim produce them, report, sim/steptime/calibrated and metrics/runfolder read
them; JSON is only their edge (`to_json()` / `from_json()`, inferlab.jsonrecord), and the
classes are the one
schema: reading a file checks every value against these annotations, so a mistyped
key is a mypy error and a damaged file is one line naming the key.

Adding a field (e.g. a level's `server` metrics block): declare it with `optional()`
after the fields already there, set it with `dataclasses.replace(level, server=...)`
where it is known, and read it as `level.server` (None on runs that predate it).
Nothing else changes: old files read as None, new files write the key only when it is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Self

from inferlab.engines.result import EngineBench
from inferlab.jsonrecord import (
    Count,
    JsonRecord,
    SchemaError,
    flat,
    json_meta,
    optional,
    rest,
)
from inferlab.slo.attainment import SloLevel
from inferlab.slo.saturation import Saturation
from inferlab.slo.search import MaxLoad
from inferlab.vocab import Bound, Dialect, LevelKind, Severity

SCHEMA_VERSION = 1  # summary.json's; the one number bench, sim and metrics/runfolder share


@dataclass(frozen=True, slots=True)
class RunWarning(JsonRecord):
    """A named honesty warning. `level` is "c=8", "rate=4/s" or "run"; severity
    "error" (wrong as measured, fails --strict), "warning" (may be distorted) or "info"."""

    code: str
    level: str
    severity: Severity
    message: str


@dataclass(frozen=True, slots=True)
class LatencyStats(JsonRecord):
    """Percentiles with the sample count beside them; all None when there were no samples."""

    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p999: float | None
    max: float | None
    mean: float | None
    n: Count

    @classmethod
    def empty(cls) -> LatencyStats:
        return cls(None, None, None, None, None, None, None, 0)


@dataclass(frozen=True, slots=True)
class ClientStats(JsonRecord):
    """How busy the load generator itself was during a level."""

    cpu_s: float
    wall_s: float
    cpu_fraction: float
    loop_lag_p99_s: float
    loop_lag_max_s: float

    @classmethod
    def idle(cls) -> ClientStats:
        """A simulated level: no client, so nothing to distort the timestamps."""
        return cls(0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerLevel(JsonRecord):
    """One load worker's part of a level (bench --workers / --ray)."""

    worker: int
    host: str | None
    pid: int | None
    requests_assigned: int
    requests_completed: int
    cpu_s: float | None  # that worker's process CPU during its share
    cpu_fraction: float | None  # of one core
    loop_lag_p99_s: float | None
    loop_lag_max_s: float | None
    clock_offset_ns: int  # worker clock - driver clock, estimated at the start
    clock_uncertainty_ns: int  # half the best ping round trip
    lost: str | None  # why the worker was lost mid-level, if it was
    lost_in_flight: int  # its requests in flight then, recorded as failed
    not_started: int  # its requests never sent
    error: str | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorComparison(JsonRecord):
    """A level measured against the floor (flattened into the level's JSON)."""

    floor_batch: Count
    floor_context_tokens: Count
    bytes_per_step: float
    flops_per_step: float
    predicted_step_time_s: float
    predicted_bound: Bound
    ceiling_tokens_per_s_per_user: float
    predicted_tokens_per_s_total: float
    measured_step_time_s: float | None = optional()
    achieved_bandwidth_bytes_per_s: float | None = optional()
    achieved_flops_per_s: float | None = optional()
    mbu: float | None = optional()
    mfu: float | None = optional()
    measured_over_floor: float | None = optional()
    # "server_steps": measured step time and batch from the server's /metrics;
    # "client_tpot": the client's TPOT p50 at its mean active streams
    mbu_basis: str | None = optional()
    mbu_client_tpot: float | None = optional()  # the client-basis MBU, kept beside
    engine_estimated_read_bytes_per_step: float | None = optional()  # vLLM, all devices

    def problem(self) -> str | None:
        if not self.predicted_step_time_s > 0:
            return "'predicted_step_time_s' must be above 0"
        if self.bytes_per_step < 0 or self.flops_per_step < 0:
            return "'bytes_per_step' and 'flops_per_step' must be >= 0"
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLevelMetrics(JsonRecord):
    """The server's own books for one level, from its /metrics (servermetrics/level_counts.py).
    None: the engine does not publish it (never 0 for "unknown")."""

    dialect: Dialect
    samples: int  # good snapshots in the level, start and end included
    failed_scrapes: int
    sample_rate_hz: float | None
    counter_reset: bool  # a counter went down: the server restarted mid-level
    steps: float | None
    step_time_s: float | None  # wall time / steps where every stream decoded
    steps_per_s: float | None
    step_window_s: float | None
    step_window_full_batch: bool  # that window had the level's whole batch running
    decode_running_mean: float | None  # mean running requests inside the window
    tokens_per_step: float | None  # generated tokens / steps over the level
    running_mean: float | None
    running_max: float | None
    waiting_max: float | None
    kv_cache_usage_max: float | None
    kv_capacity_tokens: float | None
    generation_tokens: float | None
    prompt_tokens: float | None
    preemptions: float | None
    prefix_cache_hit_tokens: float | None
    prefix_cache_query_tokens: float | None
    spec_accepted_tokens: float | None
    spec_draft_tokens: float | None
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    itl_p50_s: float | None
    itl_p99_s: float | None
    e2e_p50_s: float | None
    e2e_p99_s: float | None
    estimated_read_bytes_per_step: float | None  # vLLM --enable-mfu-metrics, per GPU
    estimated_flops_per_step: float | None
    # speculative decoding (vLLM spec_decode_*), deltas over the level
    spec_drafts: float | None = optional()
    spec_acceptance_rate: float | None = optional()  # accepted / drafted tokens
    spec_mean_acceptance_length: float | None = optional()  # tokens per verify step


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSplit(JsonRecord):
    """A level's served TPOT split: floor / kernels (engine alone - floor) / serving
    (served - engine alone), in seconds and as shares of the served TPOT (see
    metrics/decomposition.py). A part may be negative when two measurements disagree."""

    batch: int
    batch_source: str  # "measured" (the engine ran this batch) or "interpolated"
    served_tpot_s: float
    engine_step_time_s: float
    engine_noise_s: float
    floor_s: float | None  # None when the run had no floor
    kernel_overhead_s: float | None
    serving_overhead_s: float
    floor_share: float | None
    kernel_share: float | None
    serving_share: float
    largest: str  # "floor", "kernels", "serving" ("engine" without a floor)

    @property
    def faster_than_engine(self) -> bool:
        return self.served_tpot_s < self.engine_step_time_s - self.engine_noise_s

    @property
    def below_floor(self) -> bool:
        return self.floor_s is not None and self.engine_step_time_s < (
            self.floor_s - self.engine_noise_s
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStats(JsonRecord):
    """A conversation turn's latencies over the level (turn 0 = first turns)."""

    turn: int
    requests_ok: int
    ttft_s: LatencyStats
    tpot_s: LatencyStats


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictedQuantiles(JsonRecord):
    """A predicted latency: its p50, and its p99 where predicted."""

    p50: float | None
    p99: float | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionErrors(JsonRecord):
    """(predicted - measured) / measured, + = predicted higher; None where either is
    missing or the measured value is 0."""

    ttft_p50: float | None
    ttft_p99: float | None
    tpot_p50: float | None
    tokens_per_s: float | None
    goodput_requests_per_s: float | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictedRange(JsonRecord):
    """The lowest and highest a quantity was predicted across the band's speeds (None:
    not predicted), and, once measured, whether the measurement fell within them."""

    low: float | None
    high: float | None
    inside: bool | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictedBand(JsonRecord):
    """The same level predicted with every profiled cost x (1 - spread) and x (1 + spread),
    `speed_spread` being how far the machine's speed moved while it was profiled (the
    profile's decode rounds): how much of the prediction the machine's own drift can move."""

    speed_spread: float
    ttft_p50_s: PredictedRange
    ttft_p99_s: PredictedRange
    tpot_p50_s: PredictedRange
    goodput_requests_per_s: PredictedRange


# A prediction graded against its measurement (metrics/scoring.py): within the quantity's
# target, else within the measurement's own 95 % interval, else a miss; `ungradable` where
# that interval, on the prediction's side, is wider than twice the target (it would excuse
# any error), never counted as predicted.
Grade = Literal["within_target", "within_noise", "miss", "ungradable"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GradedQuantity(JsonRecord):
    """One quantity of a prediction graded against the level measured (metrics/scoring.py):
    it counts as predicted when |predicted - measured| <= max(target x measured, the
    measured 95 % interval's half-width on the prediction's side)."""

    quantity: str  # as the targets name it: "tpot_p50_s", "goodput_requests_per_s", ...
    predicted: float | None
    measured: float | None
    ci95: tuple[float, ...] | None = optional()  # the measurement's [low, high], where known
    error: float | None  # (predicted - measured) / measured
    target: float  # the largest |error| within the target
    grade: Grade


@dataclass(frozen=True, slots=True, kw_only=True)
class AtMeasuredSpeed(JsonRecord):
    """The prediction again with every profiled cost x `speed_ratio` (the drift canary's
    TPOT during the measurement / during the profile, metrics/speed_shift.py): what it
    would have said at the machine's speed while the level was measured. Made after the
    measurement and only where the canary moved beyond its noise; stated beside the
    prediction, never graded (metrics/scoring.py grades the prediction itself)."""

    speed_ratio: float
    ttft_s: PredictedQuantiles
    tpot_s: PredictedQuantiles
    errors: PredictionErrors | None = optional()  # against the measurement, as `errors`


@dataclass(frozen=True, slots=True, kw_only=True)
class Predicted(JsonRecord):
    """What a level was predicted to measure before it ran (sim/predict.py), from what,
    whether the shape was held out of the fit, and the errors once measured."""

    ttft_s: PredictedQuantiles
    tpot_s: PredictedQuantiles
    tokens_per_s: float
    source: str  # the step-time model, the policy and its knobs, the overhead
    held_out: bool  # the level's shape was not used to fit the model
    goodput_requests_per_s: float | None = optional()  # under the run's SLO
    requests: Count | None = optional()  # request specs predicted (the ones bench sends)
    errors: PredictionErrors | None = optional()
    # cached / prompt tokens the simulated prefix cache served (prompts sharing a prefix)
    prefix_hit_ratio: float | None = optional()
    band: PredictedBand | None = optional()  # a served profile's: at its speed spread
    # once measured: each target quantity predicted, measured with its interval, and its grade
    graded: tuple[GradedQuantity, ...] | None = optional()
    # the simulated scheduler's preemptions (vLLM's: KV blocks ran out), to set beside the
    # server's own count (server.preemptions); absent: none
    preemptions: Count | None = optional()
    # the prediction at the machine's speed during the measurement (the canary moved)
    at_measured_speed: AtMeasuredSpeed | None = optional()

    @property
    def preempted(self) -> int:
        """Preemptions predicted (0 when the block has none)."""
        return self.preemptions or 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerSource(JsonRecord):
    """Where a level read from another tool's file came from (inferlab.peers). `basis`:
    "per_request" (recomputed here from the file's per-request values) or "aggregates"
    (the tool's own figures, taken as it wrote them)."""

    tool: str
    version: str | None
    file: str
    basis: Literal["per_request", "aggregates"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RepeatStats(JsonRecord):
    """One run of a level under `bench --repeat N`: its own counts and statistics."""

    repeat: Count  # 0: the first run of the level
    requests_ok: Count
    requests_failed: Count
    ttft_s: LatencyStats
    tpot_s: LatencyStats
    e2e_s: LatencyStats
    window_s: float
    output_tokens_per_s_total: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval(JsonRecord):
    """One statistic of a level (`quantity`: "tpot_s.p50", "output_tokens_per_s_total"), its
    95 % confidence interval `ci95` ([low, high], the statistic's unit) and, with two
    repeats or more, its coefficient of variation across them (std / mean, as AIPerf's).
    `tail_undersampled` (true, else absent): a high percentile from fewer requests than a
    95 % upper bound on it needs (metrics/intervals.py's requests_for_upper_bound: p99
    368, p95 72, p90 36); `ci95`'s high end is then the bootstrap's, about the slowest
    request seen, and bounds nothing: a repeat lands above it far more often than 2.5 %.

    Two claims, so each says which it is: `ci95` covers the level's long-run value (a
    confidence interval); `pi95` covers where one more run of the level would land (a
    prediction interval over the repeats' own values: their mean +- t(0.975, R-1) x s x
    sqrt(1 + 1/R), never below 0; metrics/intervals.py), the statistic's unit. `pi95` needs
    two repeats or more: absent with one (one run says nothing of the next), and in
    summaries written before it."""

    quantity: str
    value: float
    ci95: tuple[float, ...]
    cv_across_repeats: float | None = optional()
    tail_undersampled: bool | None = optional()
    pi95: tuple[float, ...] | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class Uncertainty(JsonRecord):
    """A level's intervals and how they were made: a bootstrap over requests within each
    repeat, and over repeats where there are two or more (then they cover the machine's
    drift between runs; with one repeat they do not, and `covers_drift` says so)."""

    repeats: Count
    covers_drift: bool
    method: str
    resamples: Count
    intervals: tuple[Interval, ...]

    def of(self, quantity: str) -> Interval | None:
        """The interval of one quantity ("ttft_s.p50"), None when there is none."""
        return next((i for i in self.intervals if i.quantity == quantity), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostLevel(JsonRecord):
    """The machine around a level, where the host says (Linux /proc/stat, bench/hoststat.py):
    the CPU time the hypervisor gave other guests (steal) as a share of all the host's CPU
    time over the level. The client's own CPU use is the level's `client.cpu_fraction`."""

    cpu_steal_fraction: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelSummary(JsonRecord):
    """One load level: counts, latency percentiles, throughput, and what was around it."""

    label: str
    concurrency: float | None = optional()  # closed loop: streams
    rate_per_s: float | None = optional()  # open loop: requests per second
    requests_measured: Count
    requests_warmup: Count
    requests_ok: Count
    requests_failed: Count
    requests_early_stop: Count
    errors: tuple[str, ...]
    ttft_s: LatencyStats
    tpot_s: LatencyStats
    e2e_s: LatencyStats
    # every inter-token gap: ITL, as vLLM, AIPerf and guidellm call it (JSON `itl_s`; files
    # written before the rename say `gap_s`, still read)
    gap_s: LatencyStats = field(metadata=json_meta(key="itl_s", aliases=("gap_s",)))
    worst_gap_per_request_s: LatencyStats
    stall_threshold_s: float
    stall_count: Count
    multi_token_events: Count
    queue_delay_s: LatencyStats
    output_tokens: Count
    window_s: float
    output_tokens_per_s_total: float
    output_tokens_per_s_per_user: float
    # completed requests and prompt + output tokens per second over the level's window
    requests_per_s: float | None = optional()
    total_tokens_per_s: float | None = optional()
    mean_active_streams: float
    prompt_tokens_usage_p50: float | None
    completion_tokens_p50: float | None
    streamed_tokens_mismatch: Count
    malformed_events: Count
    preemptions: Count | None = optional()  # simulated
    steps: Count | None = optional()  # simulated
    client: ClientStats | None = optional()
    injected_requests: Count | None = optional()  # simulated
    interrupted: bool | None = optional()  # measured
    comparison: FloorComparison | None = flat(FloorComparison)
    server: ServerLevelMetrics | None = optional()  # its /metrics
    workers: tuple[WorkerLevel, ...] | None = optional()
    engine: EngineSplit | None = optional()  # with an engine baseline
    # Open-loop levels: the schedule asked, the sends achieved, and send - scheduled.
    offered_rate_per_s: float | None = optional()
    achieved_rate_per_s: float | None = optional()
    schedule_lag_s: LatencyStats | None = optional()
    # Workloads that share prompt text: cached / prompt tokens the server reported, and the
    # ratio a perfect prefix cache would give for the specs sent.
    prefix_cache_hit_ratio: float | None = optional()
    prefix_cache_hit_ratio_implied: float | None = optional()
    per_turn: tuple[TurnStats, ...] | None = optional()
    slo: SloLevel | None = optional()  # with --slo (slo/attainment.py)
    saturation: Saturation | None = optional()  # open-loop levels
    # reasoning streams: first answer token (TTFT counts reasoning), reasoning tokens apart
    ttfo_s: LatencyStats | None = optional()
    reasoning_tokens: int | None = optional()
    predicted: Predicted | None = optional()  # the demo: before measuring
    source: PeerSource | None = optional()  # read from a peer's file
    # bench --repeat N: each run's own statistics (the level's are over all runs' requests)
    repeats: tuple[RepeatStats, ...] | None = optional()
    uncertainty: Uncertainty | None = optional()  # 95 % intervals (metrics/intervals.py)
    host: HostLevel | None = optional()  # bench on Linux: the host's CPU steal time
    rest: dict[str, Any] = rest()

    @property
    def kind(self) -> LevelKind:
        return "rate" if self.rate_per_s is not None else "concurrency"

    @property
    def value(self) -> float:
        v = self.rate_per_s if self.rate_per_s is not None else self.concurrency
        return float(v or 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerBlock(JsonRecord):
    """What answered: URL, engine kind, model (the simulator says "simulator")."""

    url: str | None
    kind: str | None
    model: str | None
    models_answer: Any = optional()
    rest: dict[str, Any] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload(JsonRecord):
    """The load every level shared; producer-specific settings stay in `rest`."""

    prompt_tokens: Count
    output_tokens: Count
    requests_per_level: Count
    rest: dict[str, Any] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorBlock(JsonRecord):
    """The floor a run was compared against: the model's bytes and the hardware's rates."""

    model: str
    model_source: str
    weight_bytes_resident: float
    weight_bytes_per_step: float
    kv_bytes_per_token: float
    hardware: str
    hardware_source: str
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float

    def problem(self) -> str | None:
        sizes = (self.weight_bytes_resident, self.weight_bytes_per_step, self.kv_bytes_per_token)
        if min(sizes) < 0:
            return "bytes must be >= 0"
        if self.bandwidth_bytes_per_s <= 0 or self.peak_flops_per_s <= 0:
            return "'bandwidth_bytes_per_s' and 'peak_flops_per_s' must be above 0"
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationBlock(JsonRecord):
    """How a simulated run was made: scheduler, step-time model, seed, wall time.

    The step-time model's own parameters (roofline: efficiency, overhead_s, model,
    hardware; fitted: base_s, per_decode_s, per_prefill_token_s, source) stay in `rest`."""

    step_time_model: str  # "roofline" or "fitted"
    policy: str  # a key of sim.policies.POLICIES
    max_batch: Count
    chunk_tokens: Count | None
    kv_capacity_tokens: Count | None
    block_tokens: Count
    seed: int
    wall_s: float | None = optional()
    rest: dict[str, Any] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Utilisation(JsonRecord):
    """The simulated engine's steps, downsampled: one row per kept step, named by `columns`."""

    columns: tuple[str, ...]
    rows: tuple[tuple[float, ...], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CanaryReading(JsonRecord):
    """One drift-canary request (bench/canary.py): when it was sent (seconds after the run's
    clock origin), its TPOT (None: it failed, `error` says why), and the level run it
    preceded (None: it followed the last one)."""

    at_s: float
    tpot_ms: float | None
    at_rest: bool  # one of the readings at the start that measure the canary's own noise
    before: str | None  # the label of the level it preceded
    repeat: Count | None = optional()  # which repeat of that level (bench --repeat)
    error: str | None = optional()


# Which was slower over a run (metrics/machine_verdict.py): the machine, the server, both.
Slower = Literal["machine", "server", "both", "neither"]


@dataclass(frozen=True, slots=True)
class MachineReading(JsonRecord):
    """One machine-canary reading: the mean time of one round of its matmul and of its
    memory read, the cores it was pinned to and how they were found."""

    matmul_ms: float
    read_ms: float
    cores: tuple[int, ...]
    cores_from: str  # "server pid 812 (llama-server) on port 8080: its affinity", ...

    @property
    def machine_ms(self) -> float:
        return self.matmul_ms + self.read_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class WhichSlowed(JsonRecord):
    """Which was slower, the machine or the server (metrics/machine_verdict.py's rule), with
    the figures it read; `verdict_words` says it."""

    says: Slower
    machine_ratio: float  # median(measured) / median(reference) of matmul_ms + read_ms
    machine_noise: float  # max(5 %, the reference's spread)
    server_ratio: float  # of the server canary's TPOT
    server_noise: float
    server_own_ratio: float  # server_ratio / machine_ratio where the machine moved
    server_own_noise: float  # server_noise (+ machine_noise where the machine moved)


@dataclass(frozen=True, slots=True, kw_only=True)
class MachineCanary(JsonRecord):
    """summary.json `canary.machine`: the workload, one reading per drift-canary reading
    (same order; None where none was taken), the rest's median and spread, the run's
    verdict (its readings at rest against the later ones; None without both)."""

    workload: str
    readings: tuple[MachineReading | None, ...]
    rest_machine_ms: float | None  # the median of matmul_ms + read_ms at rest
    rest_spread: float | None
    verdict: WhichSlowed | None
    # The share of the server canary's variance over the run that the machine canary
    # explains (metrics/covariate.py's fit over every pair of readings; 0.0 where no more
    # than chance; None with fewer than 4 pairs).
    server_variance_explained: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Canary(JsonRecord):
    """The drift canary of a run: one fixed short request (same prompt, same forced length,
    same slot where the server has slots) sent at rest at the start and after every level
    while the server is otherwise idle; its TPOT over the run is the machine's speed. A
    level whose canary moved by more than `drift_threshold` (max(3 x rest_spread, 5 %),
    metrics/checks.py) is warned `machine_drift`."""

    prompt: str
    output_tokens: Count
    slot: int | None  # llama-server's slot it is pinned to; None: the server has none
    rest_tpot_ms: float | None  # the median of the readings at rest
    rest_spread: float | None  # (max - min) / median of the readings at rest
    drift_threshold: float
    readings: tuple[CanaryReading, ...]
    # The machine canary beside each reading (bench/machine_canary.py): a fixed matmul and
    # memory read on the server's cores.
    machine: MachineCanary | None = optional(MachineCanary.from_json)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeedShift(JsonRecord):
    """How far the machine's speed moved between a reference and the measurement, read
    from the drift canary both took (metrics/speed_shift.py): `against` the profile the
    predictions came from (`level` None: over the whole measurement), or the engine-alone
    measurement (`level`: the served level its time split is read at). A ratio farther
    from 1 than `threshold` (max of both sides' own spreads and 5 %) is beyond noise."""

    against: Literal["profile", "engine_alone"]
    level: str | None
    reference_readings_ms: tuple[float, ...]  # the reference's canary TPOTs
    reference_tpot_ms: float  # their median
    reference_spread: float | None  # (max - min) / median; None with fewer than two
    measured_tpot_ms: float  # the median of the measurement's canary TPOTs
    measured_spread: float | None
    ratio: float  # measured / reference: above 1, the machine ran slower when measured
    threshold: float
    beyond_noise: bool


# A paired comparison's word for B against A (metrics/paired.py): as report's verdicts.
PairedVerdict = Literal["faster", "slower", "within_noise"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedQuantity(JsonRecord):
    """One quantity of one level, B against A over the block pairs (metrics/paired.py):
    each endpoint's value over the level (all its blocks), B/A per block pair, their
    geometric mean `ratio` with its 95 % interval `ci95` (t over the pairs' log-ratios,
    back-transformed), the verdict (within_noise where `ci95` holds 1), and the smallest
    change this run could have found at 80 % power and 5 % two-sided (a share: 0.04 is 4 %).
    None where fewer than two pairs had the quantity on both sides."""

    quantity: str  # "tpot_s.p50", "ttft_s.p50", "output_tokens_per_s_total"
    a: float | None
    b: float | None
    ratio: float | None  # B/A
    ci95: tuple[float, ...] | None
    verdict: PairedVerdict
    detectable_change_80pct_power: float | None
    block_ratios: tuple[float, ...]  # B/A of each block pair, in the order they ran
    # The machine canary after each block as a fitted covariate (metrics/covariate.py):
    # absent where the run took no machine readings.
    machine_covariate: CovariateFit | None = optional(lambda d: CovariateFit.from_json(d))


@dataclass(frozen=True, slots=True, kw_only=True)
class CovariateFit(JsonRecord):
    """The pairs' ln(B/A) against their ln(machine canary B/A), CUPED (Deng et al. 2013):
    the share of the variance it removed (0 where not `applied`: a slope no larger than an
    unrelated covariate's by chance, or too few pairs), and why."""

    pairs: Count
    correlation: float
    variance_removed: float
    applied: bool
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedComparison(JsonRecord):
    """One endpoint against the baseline (the first --url) at one level."""

    baseline: str
    endpoint: str
    block_pairs: Count  # pairs whose blocks both ran
    quantities: tuple[PairedQuantity, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedLevel(JsonRecord):
    """One level of a paired run: its blocks in the order they ran (endpoint labels), each
    a `requests_per_block` closed-loop run, and each endpoint against the baseline. The
    endpoints' own statistics are the run's levels labelled "<endpoint> <level>"."""

    level: str  # "c=4"
    requests_per_block: Count
    block_order: tuple[str, ...]
    comparisons: tuple[PairedComparison, ...]
    # The machine canary's reading (matmul + read, ms) after each block, in block order:
    # absent where the run took none (--no-canary).
    machine_ms: tuple[float | None, ...] | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedEndpoint(JsonRecord):
    """One endpoint of a paired run, as its probe found it."""

    label: str
    url: str
    kind: str | None
    model: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedRun(JsonRecord):
    """bench --url A --url B: every level ran as short blocks alternating the endpoints in
    a randomized, order-balanced sequence (bench/blocks.py); `method` says how the ratios'
    intervals and the detectable change were computed."""

    method: str
    block_requests_per_stream: Count
    endpoints: tuple[PairedEndpoint, ...]
    levels: tuple[PairedLevel, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary(JsonRecord):
    """A whole run (measured or simulated): summary.json."""

    schema_version: int
    tool: str
    simulated: bool | None = optional()
    command: tuple[str, ...]
    started_at_unix_s: float
    clock: dict[str, Any] | None = optional()
    interrupted: bool
    server: ServerBlock
    workload: Workload
    floor: FloorBlock | None
    simulation: SimulationBlock | None = optional()
    utilisation: Utilisation | None = optional()
    client_host: dict[str, Any] | None = optional()
    extra: dict[str, Any] = field(default_factory=dict)
    levels: tuple[LevelSummary, ...]
    warnings: tuple[RunWarning, ...]
    engine_baseline: EngineBench | None = optional(EngineBench.from_json)  # engine-bench
    max_load: MaxLoad | None = optional()  # --find-max-load (slo/search.py)
    canary: Canary | None = optional()  # bench: the machine's speed over the run
    # the demo: the canary's move since the profile and since the engine-alone measurement
    speed_shifts: tuple[SpeedShift, ...] | None = optional()
    paired: PairedRun | None = optional()  # bench --url A --url B: B against A in blocks
    rest: dict[str, Any] = rest()

    @classmethod
    def from_json(cls, d: object, where: str = "") -> Self:
        """Another schema_version is refused before anything else is read."""
        if isinstance(d, dict) and d.get("schema_version") != SCHEMA_VERSION:
            raise SchemaError(f"schema_version {d.get('schema_version')!r} is not {SCHEMA_VERSION}")
        return super(RunSummary, cls).from_json(d, where)
