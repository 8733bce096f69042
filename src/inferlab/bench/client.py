"""One streamed request to an OpenAI-compatible server -> one RequestRecord.

Timestamps: each SSE event gets its own perf_counter_ns stamp, taken when the
socket read that completed it arrived (the connection's protocol records it),
not when the event loop got round to parsing it: with 64 streams a batching
server emits 64 tokens in the same instant, and draining that burst takes
the client milliseconds, which a parse-time stamp would add as false jitter.
Where aiohttp's protocol cannot be hooked, the stamp falls back to parse time.

Tokens per event come from the server's running usage when it sends one (vLLM
`continuous_usage_stats`), else one per non-empty event; the final usage is
kept to cross-check the count.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler

from inferlab.bench.sse import DEFAULT_MAX_EVENT_BYTES, EventTooLong, SSEParser
from inferlab.httpbody import MAX_ERROR_BYTES, BodyTooLarge, read_bounded
from inferlab.records import RequestRecord

OVER_MAX_MARGIN = 16  # tokens tolerated beyond max_tokens before the stream is cut
# Events tolerated after the one that carried the finish_reason, before [DONE]: a real server
# sends one or two there (vLLM its usage chunk; llama.cpp its usage and timings), so four
# times that is a margin no working server uses and a stream that goes on is cut early.
AFTER_FINISH_EVENTS = 8
DEFAULT_TIMEOUT_BASE_S = 60.0
DEFAULT_READ_TIMEOUT_S = 300.0
OUTPUT_OVER_MAX = "output_over_max"
REQUEST_TIMEOUT = "request_timeout"
MALFORMED_STREAM = "malformed_stream"


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str  # ends in /v1
    model: str
    api: str = "completions"  # or "chat"
    api_key: str | None = field(default=None, repr=False)  # never written to results
    force_length: bool = True  # ignore_eos + min_tokens
    server_kind: str = "openai"  # "llamacpp", "vllm", ... (from /v1/models)
    # A request still streaming after this many seconds is cut and recorded as failed.
    request_timeout_s: float = DEFAULT_TIMEOUT_BASE_S
    # A request that receives nothing (no headers, no event) for this long is cut.
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    # An SSE event longer than this ends the request as malformed_stream (--max-event-bytes).
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    # llama.cpp's prefix cache: off for unique prompts (the floor comparison), on for a
    # workload that shares prompt text on purpose (prefix groups, trace hash blocks).
    cache_prompt: bool = False
    # bench --extra-body JSON (merged into every request body) and --header K:V (sent with
    # every request); both stated by the user and kept in the summary, except header values.
    extra_body_json: str = ""
    extra_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def url(self) -> str:
        path = "chat/completions" if self.api == "chat" else "completions"
        return f"{self.base_url.rstrip('/')}/{path}"

    def pinned_to(self, slot: int) -> Endpoint:
        """This endpoint with every request pinned to llama-server's slot `slot` (`id_slot`,
        the whole extra body: the profile's probes and bench --settle-slots)."""
        return replace(self, extra_body_json=json.dumps({"id_slot": slot}))

    def headers(self) -> dict[str, str]:
        auth = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return auth | dict(self.extra_headers)

    def body(
        self, prompt: str, max_tokens: int, history: Sequence[dict[str, str]] = ()
    ) -> dict[str, Any]:
        b: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            "temperature": 0.0,
        }
        if self.api == "chat":
            b["messages"] = [*history, {"role": "user", "content": prompt}]
        else:
            b["prompt"] = prompt
        if self.force_length:
            b["ignore_eos"] = True  # vLLM, SGLang, llama.cpp
            b["min_tokens"] = max_tokens  # vLLM
        if self.server_kind == "llamacpp":
            b["cache_prompt"] = self.cache_prompt  # reuse a slot's cached prefix only if shared
        if self.extra_body_json:
            b.update(json.loads(self.extra_body_json))
        return b


def over_max_limit(max_tokens: int) -> int:
    """Streamed tokens past which a stream is cut: max_tokens plus a margin (servers may
    count a token or two differently), so a stream that never ends still ends here."""
    return max_tokens + max(OVER_MAX_MARGIN, max_tokens // 10)


def default_request_timeout_s(prompt_tokens: int, output_tokens: int) -> float:
    """A deadline no working server misses: a fixed allowance for queueing and loading,
    plus one second per output token (1 tok/s is slower than any real deployment) and a
    generous prefill allowance."""
    return DEFAULT_TIMEOUT_BASE_S + output_tokens * 1.0 + prompt_tokens * 0.01


class ReadCounter:
    """Socket reads so far in this process: the lag sampler's sign that tokens are flowing."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


SOCKET_READS = ReadCounter()


class _StampingHandler(ResponseHandler):
    """aiohttp's protocol, noting when each socket read arrived."""

    last_rx_ns = 0

    def data_received(self, data: bytes) -> None:
        if data:
            self.last_rx_ns = time.perf_counter_ns()
            SOCKET_READS.n += 1
        super().data_received(data)


def make_connector(limit: int, keepalive: bool = True) -> aiohttp.TCPConnector:
    """A pooled connector sized to the load whose connections stamp socket reads.

    keepalive=False closes each connection after its request: an idle keep-alive
    connection holds one of llama-server's HTTP threads, so a later burst of streams can
    find none free and start one after another (inferlab profile's probes)."""
    conn = aiohttp.TCPConnector(limit=limit, limit_per_host=limit, force_close=not keepalive)
    if hasattr(conn, "_factory"):  # aiohttp internals; without it, stamps fall back to parse time
        factory: Any = functools.partial(_StampingHandler, loop=asyncio.get_running_loop())
        conn._factory = factory
    return conn


def read_timings(rec: RequestRecord, timings: Any) -> None:
    """llama.cpp's `timings` (its final chunk): the prompt tokens it reused (cache_n) and
    its own prefill time (prompt_ms)."""
    if not isinstance(timings, dict):
        return
    if isinstance(timings.get("cache_n"), int):
        rec.cached_prompt_tokens_server = timings["cache_n"]
    if isinstance(timings.get("prompt_ms"), int | float):
        rec.server_prompt_ms = float(timings["prompt_ms"])


class _Stream:
    """Folds parsed SSE payloads into a record (and the text into `reply`, when asked)."""

    def __init__(self, rec: RequestRecord, reply: list[str] | None = None) -> None:
        self.rec = rec
        self.reply = reply
        self.done = False
        self._usage_tokens = 0
        self.streamed = 0  # sum(rec.event_tokens), kept as it grows: checked on every event
        self.after_finish = 0  # events after the one that carried a finish_reason

    def past_forced_length(self, limit: int) -> bool:
        """The stream went on past its length: more than `limit` tokens (over_max_limit),
        or more than AFTER_FINISH_EVENTS events after its finish_reason without [DONE]."""
        return self.streamed > limit or self.after_finish > AFTER_FINISH_EVENTS

    def cut_reason(self, limit: int) -> str:
        """Why a stream past its forced length was cut, for the record's error."""
        rec = self.rec
        if self.streamed > limit:
            return (
                f"{OUTPUT_OVER_MAX}: the server streamed {self.streamed} tokens for "
                f"max_tokens {rec.max_tokens} without ending; cut at {limit}"
            )
        return (
            f"{OUTPUT_OVER_MAX}: the server went on for {self.after_finish} events after "
            f"finish_reason {rec.finish_reason!r} without [DONE]; cut at {AFTER_FINISH_EVENTS}"
        )

    def handle(self, data: str, t_ns: int) -> None:
        rec = self.rec
        if data.strip() == "[DONE]":
            self.done = True
            return
        if rec.finish_reason is not None:
            self.after_finish += 1
        try:
            obj = json.loads(data)
        except json.JSONDecodeError:
            rec.malformed_events += 1
            return
        if not isinstance(obj, dict):
            rec.malformed_events += 1
            return
        if obj.get("error"):
            err = obj["error"]
            msg = err.get("message", err) if isinstance(err, dict) else err
            rec.error = f"server error mid-stream: {msg}"
            return
        usage = obj.get("usage") or None
        read_timings(rec, obj.get("timings"))
        content = reasoning = False
        for choice in obj.get("choices") or []:
            text = choice.get("text")
            if text is None:
                delta = choice.get("delta") or {}
                text = delta.get("content")
                # reasoning models: a generated token too (TTFT counts it), not the answer
                reasoning = reasoning or bool(
                    delta.get("reasoning_content") or delta.get("reasoning")
                )
            if text:
                content = True
                if self.reply is not None:
                    self.reply.append(text)
            if choice.get("finish_reason"):
                rec.finish_reason = choice["finish_reason"]
        if content or reasoning:
            k = 1
            if usage and isinstance(usage.get("completion_tokens"), int):
                k = max(1, usage["completion_tokens"] - self._usage_tokens)
            rec.event_ns.append(t_ns)
            rec.event_tokens.append(k)
            self.streamed += k
            if not content:
                rec.reasoning_tokens += k
            elif rec.first_answer_ns is None:
                rec.first_answer_ns = t_ns  # TTFO: the first token of the answer
        if usage:
            if isinstance(usage.get("completion_tokens"), int):
                self._usage_tokens = usage["completion_tokens"]
                rec.completion_tokens = usage["completion_tokens"]
            if isinstance(usage.get("prompt_tokens"), int):
                rec.prompt_tokens = usage["prompt_tokens"]
            details = usage.get("prompt_tokens_details") or {}
            if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                rec.cached_prompt_tokens = details["cached_tokens"]


async def _read_stream(
    resp: aiohttp.ClientResponse, st: _Stream, t0_ns: int, watch: _StallWatch, max_event_bytes: int
) -> None:
    """Fold the SSE body into the record; cut a stream that runs past its forced length
    (max_tokens + margin, or events after its finish without [DONE]), or one whose event
    grows past max_event_bytes (its memory stays bounded)."""
    rec = st.rec
    parser = SSEParser(max_event_bytes)
    proto = resp.connection.protocol if resp.connection else None
    stamping = proto if isinstance(proto, _StampingHandler) else None
    limit = over_max_limit(rec.max_tokens)
    clock = time.perf_counter_ns
    async for chunk in resp.content.iter_any():
        rx_ns = (stamping.last_rx_ns if stamping else 0) or clock()
        watch.last_ns = rx_ns
        try:
            events = parser.feed(chunk)
        except EventTooLong as e:
            # Leaving the response closes its connection: the endless line ends here.
            rec.error = f"{MALFORMED_STREAM}: {e}; the stream was cut"
            rec.malformed_events += parser.malformed_lines
            return
        for data in events:
            st.handle(data, rx_ns - t0_ns)
            # Checked per event, not per chunk: a chunk that carries a burst of events
            # (a loaded machine reads several at once) is cut at the one that crosses.
            if st.past_forced_length(limit):
                # Leaving the response closes its connection: the endless stream ends here.
                rec.error = st.cut_reason(limit)
                return
    for data in parser.flush():
        st.handle(data, clock() - t0_ns)
    rec.malformed_events += parser.malformed_lines
    if rec.error is None and not st.done and rec.finish_reason is None:
        rec.error = "stream ended without a finish reason or [DONE] (connection dropped?)"


class _StallWatch:
    """Ends a request that has received nothing for `timeout_s` (as TimeoutError).

    aiohttp's sock_read does the same by re-arming a timer on every socket read, which
    costs ~30 us a token here; this one wakes at most once per `timeout_s` and re-arms
    from the last read it finds (the reader notes it in `last_ns`).
    """

    __slots__ = ("timeout_s", "last_ns", "fired", "_task", "_handle")

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.last_ns = time.perf_counter_ns()
        self.fired = False
        self._task = asyncio.current_task()
        self._handle = asyncio.get_running_loop().call_later(timeout_s, self._check)

    def _check(self) -> None:
        idle_s = (time.perf_counter_ns() - self.last_ns) / 1e9
        if idle_s < self.timeout_s:
            self._handle = asyncio.get_running_loop().call_later(
                self.timeout_s - idle_s, self._check
            )
        elif self._task is not None:
            self.fired = True
            self._task.cancel()

    def __enter__(self) -> _StallWatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._handle.cancel()
        ours = self.fired and kind is asyncio.CancelledError and self._task is not None
        # uncancel() == 0: the only cancel was ours, not the caller's: a timeout.
        if ours and self._task is not None and self._task.uncancel() == 0:
            raise TimeoutError(f"no data from the server for {self.timeout_s:g} s")


async def _attempt(
    session: aiohttp.ClientSession,
    endpoint: Endpoint,
    rec: RequestRecord,
    body: Any,
    t0_ns: int,
    reply: list[str] | None = None,
) -> None:
    """One try: send, check the status, read the stream into `rec` (raises on trouble)."""
    st = _Stream(rec, reply)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
    with _StallWatch(endpoint.read_timeout_s) as watch:
        async with session.post(
            endpoint.url, json=body, headers=endpoint.headers(), timeout=timeout
        ) as resp:
            rec.http_status = resp.status
            if resp.status != 200:
                rec.error = f"HTTP {resp.status}: {await _error_text(resp)}"
                return
            await _read_stream(resp, st, t0_ns, watch, endpoint.max_event_bytes)


async def _error_text(resp: aiohttp.ClientResponse) -> str:
    """The start of an error body, read up to MAX_ERROR_BYTES."""
    try:
        raw = await read_bounded(resp, MAX_ERROR_BYTES)
    except BodyTooLarge as e:
        return str(e)
    return raw.decode("utf-8", "replace")[:300].strip()


def _deadline_after(timeout_s: float) -> float:
    """The loop-clock instant `timeout_s` after now, never sooner: the loop's clock is read
    once per iteration (uvloop: in whole ms), so `loop.time() + timeout_s` alone can fire
    before `timeout_s` has passed since the send stamp."""
    loop = asyncio.get_running_loop()
    stale_s = max(0.0, time.monotonic() - loop.time())
    return loop.time() + stale_s + timeout_s + 1e-3  # + 1 ms: the timer's own rounding


async def _fresh_attempt(
    endpoint: Endpoint,
    rec: RequestRecord,
    body: dict[str, Any],
    t0_ns: int,
    reply: list[str] | None,
) -> None:
    """One attempt on a new connection, closed after it (a retry after a stale one)."""
    connector = make_connector(1, keepalive=False)
    async with aiohttp.ClientSession(connector=connector, read_bufsize=1 << 20) as fresh:
        await _attempt(fresh, endpoint, rec, body, t0_ns, reply)


async def _try_once(
    session: aiohttp.ClientSession | None,
    endpoint: Endpoint,
    rec: RequestRecord,
    body: dict[str, Any],
    t0_ns: int,
    reply: list[str] | None,
) -> BaseException | None:
    """One try within its own deadline (session None: on a fresh connection); trouble goes
    into rec.error, except a failure that never reached the server, which is returned."""
    rec.send_ns = time.perf_counter_ns() - t0_ns
    deadline = asyncio.timeout_at(_deadline_after(endpoint.request_timeout_s))
    try:
        async with deadline:
            if reply is not None:
                reply.clear()  # a resent request starts its reply again
            if session is None:
                await _fresh_attempt(endpoint, rec, body, t0_ns, reply)
            else:
                await _attempt(session, endpoint, rec, body, t0_ns, reply)
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
        # A stale pooled keep-alive connection the server had closed shows up as a
        # disconnect or "Can not write request body": before any response, the server
        # never saw this request.
        if rec.http_status is None:
            return e
        rec.error = _exc_text(e)
    except TimeoutError as e:
        if deadline.expired():
            rec.error = (
                f"{REQUEST_TIMEOUT}: not finished after {endpoint.request_timeout_s:g} s "
                "(--request-timeout)"
            )
        else:  # the stall watch, or aiohttp's connect timeout
            rec.error = _exc_text(e)
    except (aiohttp.ClientError, OSError) as e:
        rec.error = _exc_text(e)
    return None


def _exc_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


async def stream_request(
    session: aiohttp.ClientSession,
    endpoint: Endpoint,
    rec: RequestRecord,
    prompt: str,
    t0_ns: int,
    history: Sequence[dict[str, str]] = (),
    reply: list[str] | None = None,
) -> RequestRecord:
    """Send one request and fill `rec`; never raises for server or network trouble.

    `history`: a conversation's earlier messages (chat API); `reply` collects the text.

    The whole request (connect, headers, every event) must finish within the
    endpoint's request_timeout_s, the stream within its forced length (max_tokens + a
    margin, and at most AFTER_FINISH_EVENTS events after its finish without [DONE]), and
    no silence may last read_timeout_s.

    A request that never reached the server (a pooled keep-alive connection the server had
    just closed: "Can not write request body", or a disconnect before any response) is sent
    once more, on a fresh connection of its own (the pool may hold several stale ones, a
    burst's connections closed together); `retries` and `resent_after` say so. A resend
    that fails too is recorded as the server's failure, and a failure after the server
    answered is never resent. A resent request's timing (send_ns, its deadline) starts at
    the resend, as the server saw it; scheduled_ns stays, so the lost try shows as client
    queueing delay.
    """
    body = endpoint.body(prompt, rec.max_tokens, history)
    lost = await _try_once(session, endpoint, rec, body, t0_ns, reply)
    if lost is not None:
        rec.retries += 1
        rec.resent_after = _exc_text(lost)
        lost = await _try_once(None, endpoint, rec, body, t0_ns, reply)
        if lost is not None:
            rec.error = _exc_text(lost)
    rec.end_ns = time.perf_counter_ns() - t0_ns
    return rec
