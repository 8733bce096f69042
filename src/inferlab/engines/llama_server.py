"""A real llama.cpp `llama-server` on 127.0.0.1: started, waited for, stopped cleanly.

Its log goes to a file kept with the results (or, when no path is given, to the
user's state directory: never into the current directory by surprise). A crash
before it is healthy, a port in use, or a missing model file is one clear error.
The server dies with inferlab however inferlab ends (see engines/lifetime.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from inferlab.engines.bundled import llama_server_path, smollm2_gguf_path
from inferlab.engines.lifetime import die_with_parent
from inferlab.errors import InferlabError
from inferlab.httpbody import MAX_JSON_BYTES, get_sync


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def default_log_path(port: int) -> Path:
    """<user state dir>/inferlab/logs/llama-server-<time>-<port>.log (XDG_STATE_HOME on Linux)."""
    from platformdirs import user_state_path

    stamp = time.strftime("%Y%m%d-%H%M%S")
    return user_state_path("inferlab") / "logs" / f"llama-server-{stamp}-{port}.log"


@dataclass(slots=True)
class ServerOptions:
    gguf: Path | None = None  # default: the bundled SmolLM2 file
    port: int | None = None  # default: a free port
    parallel: int = 4  # slots: one per concurrent stream
    ctx_per_slot: int = 1024
    threads: int | None = None  # default: all cores but one, so a client keeps room
    log_path: Path | None = None  # default: default_log_path(port)
    extra_args: list[str] = field(default_factory=list)

    def resolved_threads(self) -> int:
        return self.threads or max(1, (os.cpu_count() or 2) - 1)


class LlamaServer:
    """Context manager: `with LlamaServer(opts) as srv: srv.base_url`."""

    def __init__(self, opts: ServerOptions) -> None:
        self.opts = opts
        self.gguf = opts.gguf or smollm2_gguf_path()
        if not self.gguf.is_file():
            raise InferlabError(f"model file not found: {self.gguf}")
        if opts.port is not None and port_in_use(opts.port):
            raise InferlabError(
                f"port {opts.port} on 127.0.0.1 is already in use; pick another with --port, "
                "or leave it out to use a free one"
            )
        self.port = opts.port or free_port()
        self.threads = opts.resolved_threads()
        self.log_path = opts.log_path or default_log_path(self.port)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        o = self.opts
        return [
            str(llama_server_path()),
            "-m",
            str(self.gguf),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--parallel",
            str(o.parallel),
            "--ctx-size",
            str(o.parallel * o.ctx_per_slot),
            "--threads",
            str(self.threads),
            "--threads-http",
            "1",
            "--metrics",
            "--no-webui",
            *o.extra_args,
        ]

    def start(self, timeout_s: float = 120.0) -> LlamaServer:
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = self.log_path.open("wb")
        except OSError as e:  # --log names a folder, or a path under a file
            raise InferlabError(
                f"cannot write the server log {self.log_path} (--log): {e.strerror or e}; "
                "give a file path in a writable folder"
            ) from e
        try:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches inferlab only; it stops the server
                preexec_fn=die_with_parent(),
            )
        except (OSError, subprocess.SubprocessError) as e:
            raise InferlabError(f"cannot start llama-server: {e}") from e
        finally:
            log.close()
        try:
            return self._wait_healthy(timeout_s)
        except BaseException:  # a signal while loading must not leave a half-started server
            self.stop()
            raise

    def _wait_healthy(self, timeout_s: float) -> LlamaServer:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise InferlabError(
                    f"llama-server exited with code {self.proc.returncode} before it was ready; "
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            if self.healthy():
                return self
            time.sleep(0.2)
        raise InferlabError(
            f"llama-server was not healthy after {timeout_s:.0f} s; see {self.log_path}"
        )

    def healthy(self) -> bool:
        try:
            return get_sync(f"{self.root_url}/health", {}, MAX_JSON_BYTES, 2.0).status == 200
        except InferlabError:  # refused, stuck or not HTTP: not (yet) healthy
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def returncode(self) -> int | None:
        """The exit code once the server has ended (None: still running, or never started)."""
        return None if self.proc is None else self.proc.returncode

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
