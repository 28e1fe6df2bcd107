"""A cheaper wait for the next FUSE request (ADRs 0022, 0026).

pyfuse3's request loop waits for each request the same way: it takes a trio lock, then
registers /dev/fuse with epoll, sleeps in the scheduler, and unregisters it again, and
the kernel wakes the daemon for each request. Under a metadata workload (`tar x`, `git
status`, `rm -rf`) the next request comes a few microseconds after the last answer, and
that wait and wake-up cost more than most handlers. So the loop first polls /dev/fuse
without sleeping, for up to SPIN_SECONDS; a request found that way is read at once. It
yields to the other trio tasks (the saver's timer, the control socket, replies of
worker threads) at least every TURN_SECONDS while requests keep coming, and when none
comes in time it waits as pyfuse3 does.

How it waits before that is the setting `mount.fuse_wait` (ADR 0074): `spin` polls as
said; `block` sleeps in poll(2) on /dev/fuse for up to BLOCK_MS instead; `trio` goes to
pyfuse3's wait at once. `auto` (the default) spins while the host has a core to spare
(a load average under BUSY_LOAD per CPU) and goes to trio's wait at once when it has
not: on a loaded host the spin takes the CPU the client needs to send its next request.

This replaces `pyfuse3._wait_fuse_readable`, a private function that the loop looks up
by name on each request. That is only safe with one reader task (the lock it skips
orders several readers) and with the pyfuse3 versions it was read in; anything else
keeps pyfuse3's own wait.
"""

from __future__ import annotations

import logging
import os
import select
import time
from collections.abc import Awaitable, Callable

import pyfuse3
import trio

log = logging.getLogger(__name__)

KNOWN_VERSIONS = ("3.3.", "3.4.", "3.5.")
# The client usually sends its next request within tens of microseconds of our answer
# (a `tar x` or `rm -rf` between two syscalls): polling that long costs less than
# sleeping in epoll and being woken.
SPIN_SECONDS = 100e-6
# Other trio tasks wait at most this long behind a stream of requests.
TURN_SECONDS = 0.001
# `block`: the longest the thread sleeps in poll(2) (its unit) before trio's wait: other
# trio tasks wait no longer behind it than behind a stream of requests.
BLOCK_MS = 1
WAITS = ("auto", "spin", "block", "trio")
# `auto`: above this load average per CPU the loop does not spin. A tar x on an idle
# host adds about 1.5 by itself (the spinning loop and the client); the measured loss
# of the spin was at 3 to 4 per CPU (ADR 0074), its gain at about 1 (ADR 0026).
BUSY_LOAD = 1.5
LOAD_LOOK_SECONDS = 1.0  # how often `auto` reads the load average


def use_quick_wait(reader_tasks: int, how: str = "auto") -> bool:
    """Install the quick wait (`how`, one of WAITS) for the session `pyfuse3.init` just
    opened, to be served by `pyfuse3.main(max_tasks=reader_tasks)`; False (and
    pyfuse3's own wait kept) where it does not apply."""
    if how not in WAITS:
        raise ValueError(f"mount.fuse_wait is one of {', '.join(WAITS)}, not {how!r}")
    version = getattr(pyfuse3, "__version__", "")
    slow_wait: Callable[[], Awaitable[bool]] | None = getattr(pyfuse3, "_wait_fuse_readable", None)
    fd = _fuse_fd()
    known = version.startswith(KNOWN_VERSIONS)
    if reader_tasks != 1 or slow_wait is None or fd is None or not known:
        log.info("pyfuse3 %s: keeping its own wait for requests", version or "?")
        return False
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    next_turn = 0.0

    def request_spun() -> bool:
        """A request (or the unmount's error) is there, or comes within SPIN_SECONDS."""
        if waiting.poll(0):
            return True
        until = time.perf_counter() + SPIN_SECONDS
        while time.perf_counter() < until:
            if waiting.poll(0):
                return True
        return False

    def request_blocked() -> bool:
        """... or comes within BLOCK_MS, asleep meanwhile (poll releases the GIL)."""
        return bool(waiting.poll(BLOCK_MS))

    def request_there() -> bool:
        return bool(waiting.poll(0))

    busy = False
    next_look = 0.0

    def request_if_idle_host() -> bool:
        """Spun while the host has a core to spare, else only looked for."""
        nonlocal busy, next_look
        if waiting.poll(0):
            return True
        now = time.perf_counter()
        if now >= next_look:
            next_look = now + LOAD_LOOK_SECONDS
            busy = os.getloadavg()[0] > BUSY_LOAD * (os.cpu_count() or 1)
        return not busy and request_spun()

    request_soon = {
        "auto": request_if_idle_host,
        "spin": request_spun,
        "block": request_blocked,
        "trio": request_there,
    }[how]

    async def wait_for_request() -> bool:
        nonlocal next_turn
        if not request_soon():
            return await slow_wait()
        now = time.perf_counter()
        if now >= next_turn:
            next_turn = now + TURN_SECONDS
            await trio.lowlevel.cancel_shielded_checkpoint()
        return True

    setattr(pyfuse3, "_wait_fuse_readable", wait_for_request)  # noqa: B010 (untyped, private)
    log.info("pyfuse3 %s: a queued FUSE request is read without waiting (%s)", version, how)
    return True


def _fuse_fd() -> int | None:
    """The one /dev/fuse descriptor of this process (the session's), if exactly one."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "/dev/fuse":
                found.append(int(name))
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor, say)
    return found[0] if len(found) == 1 else None
