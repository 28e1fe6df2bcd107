"""A cheaper wait for the next FUSE request, when one is already there (ADR 0022).

pyfuse3's request loop waits for each request the same way: it takes a trio lock, then
registers /dev/fuse with epoll, sleeps in the scheduler, and unregisters it again. Under
a metadata workload the next request is almost always queued by the time the last one
is answered, and that wait was a third of the daemon's CPU time (`git status`, `rm -rf`).
So when a poll with no timeout finds a request waiting, the loop only yields to the
other trio tasks once (the saver's timer, the control socket) and reads it at once;
otherwise it waits as before.

This replaces `pyfuse3._wait_fuse_readable`, a private function that the loop looks up
by name on each request. That is only safe with one reader task (the lock it skips
orders several readers) and with the pyfuse3 versions it was read in; anything else
keeps pyfuse3's own wait.
"""

from __future__ import annotations

import logging
import os
import select
from collections.abc import Awaitable, Callable

import pyfuse3
import trio

log = logging.getLogger(__name__)

KNOWN_VERSIONS = ("3.3.", "3.4.", "3.5.")


def use_quick_wait(reader_tasks: int) -> bool:
    """Install the quick wait for the session `pyfuse3.init` just opened, to be served
    by `pyfuse3.main(max_tasks=reader_tasks)`; False (and pyfuse3's own wait kept)
    where it does not apply."""
    version = getattr(pyfuse3, "__version__", "")
    slow_wait: Callable[[], Awaitable[bool]] | None = getattr(pyfuse3, "_wait_fuse_readable", None)
    fd = _fuse_fd()
    known = version.startswith(KNOWN_VERSIONS)
    if reader_tasks != 1 or slow_wait is None or fd is None or not known:
        log.info("pyfuse3 %s: keeping its own wait for requests", version or "?")
        return False
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)

    async def wait_for_request() -> bool:
        if waiting.poll(0):  # a request (or the unmount's error) is already there
            await trio.lowlevel.cancel_shielded_checkpoint()
            return True
        return await slow_wait()

    setattr(pyfuse3, "_wait_fuse_readable", wait_for_request)  # noqa: B010 (untyped, private)
    log.info("pyfuse3 %s: a queued FUSE request is read without waiting", version)
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
