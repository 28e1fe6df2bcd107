"""The control socket served from a thread, by a process that holds a store but is not
a mount: `helix web` without a mount (ADR 0058). RocksDB has one writer, so while it
serves, every other `helix` command on the store is forwarded to it, as to a daemon."""

from __future__ import annotations

import contextlib
import threading

import trio

from helixfs.daemon.control_server import ControlServer
from helixfs.errors import HelixError

START_SECONDS = 10.0
STOP_SECONDS = 30.0


class ControlThread:
    def __init__(self, server: ControlServer) -> None:
        self.server = server
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="helix-control", daemon=True)

    def start(self) -> ControlThread:
        self._thread.start()
        if not self._ready.wait(START_SECONDS) or self._failure is not None:
            raise HelixError(f"cannot serve the control socket: {self._failure or 'timed out'}")
        return self

    def stop(self) -> None:
        """Once the command running (if any) has ended; no other starts after it."""
        if self._token is not None and self._thread.is_alive():
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run(self._wind_down, trio_token=self._token)
        self._thread.join(STOP_SECONDS)

    async def _wind_down(self) -> None:
        await self.server.stop_commands()
        if self._scope is not None:
            self._scope.cancel()

    def _run(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # reported by start(); the thread just ends
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            await nursery.start(self.server.serve)
            self._ready.set()
