"""A server inferlab starts never outlives it, however inferlab ends (SIGKILL included).

The ordinary stop is LlamaServer.stop (SIGTERM, then SIGKILL), reached through
`with` blocks and the signal handling in inferlab.signals. That cannot run when
inferlab itself is SIGKILLed or crashes hard, so the kernel is asked to do it:

Chosen: Linux `prctl(PR_SET_PDEATHSIG, SIGKILL)`, set in the child between fork and
exec (Popen's preexec_fn; the setting survives exec of a non-setuid binary).
- Why not a watchdog pipe: llama-server cannot watch a pipe itself, so it would
  need a wrapper process between us and it (another Python interpreter: 11 MB
  resident and 0.1-0.2 s to start, measured on a 2-core machine; plus code to
  forward signals and exit codes) for a guarantee the kernel gives in one call,
  with no extra process left to go wrong.
- The race: if the parent dies after fork but before prctl, no signal ever
  comes. So after setting it the child checks that its parent is still the
  process that forked it, and exits at once if not.
- SIGKILL, not SIGTERM: a server with no parent holds nothing worth a graceful
  shutdown, and its port must be free at once (SIGKILL cannot be ignored).
- Caveat: the death signal follows the *thread* that forked the child. inferlab
  starts servers from the main thread; a library user starting one from a
  worker thread gets a server that stops when that thread ends.
- Other systems have no PDEATHSIG: there the ordinary stop paths still apply,
  but a SIGKILLed inferlab leaves its server running.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return fn


def die_with_parent() -> Callable[[], None] | None:
    """A Popen preexec_fn that kills the child when this process dies; None off Linux.

    libc is looked up here, in the parent, so the forked child only makes two
    system calls before exec (little can go wrong between fork and exec).
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    sig = ctypes.c_ulong(int(signal.SIGKILL))

    def preexec() -> None:
        if prctl(_PR_SET_PDEATHSIG, sig, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before the line above: nobody to serve
            os._exit(1)

    return preexec
