"""The web servers this process runs in threads (a mount's daemon serves `helix web`).

Apart from server.py so that the daemon can stop them on unmount without importing
starlette and uvicorn (a mount that never served the web view never loads them).
"""

from __future__ import annotations

import threading
from typing import Protocol


class Stoppable(Protocol):
    def stop(self) -> None: ...


_lock = threading.Lock()
_running: list[Stoppable] = []


def register(server: Stoppable) -> None:
    with _lock:
        _running.append(server)


def unregister(server: Stoppable) -> None:
    with _lock:
        if server in _running:
            _running.remove(server)


def running() -> list[Stoppable]:
    with _lock:
        return list(_running)


def stop_all() -> None:
    """Before the repository closes: a page half-read from a closed store would fail."""
    for server in running():
        server.stop()
