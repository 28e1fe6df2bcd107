"""The daemon's side of the control socket (wire format in control.py): one command
at a time, run against the daemon's own Repository. Apart from control.py so that the
CLI, which only forwards, does not import trio (~80 ms of every forwarded command)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import trio

from helixfs.daemon.control import addressable
from helixfs.daemon.wire import FRAME_LENGTH, MAX_FRAME, PROTOCOL_VERSION, socket_path
from helixfs.errors import HelixError, is_failure

log = logging.getLogger(__name__)

CommandRunner = Callable[[list[str], TextIO, TextIO], int]
"""Runs one CLI command line in the daemon; the daemon binds it to its Repository."""


# Commands that run on a worker thread. Those that read or write files given on their
# command line, because the file may be inside this very mount, and the kernel would
# wait for the trio loop that the command was holding. And gc, which marks without the
# repository lock (maint.gc): on the trio thread it would stop the mount for its whole
# run. And the memory commands, which never touch the repository: the model they may
# load (~1 s), the vector indexes their first use builds (~2 s at 100,000 memories)
# and each query's embedding would otherwise stop the mount. Every other command runs
# on the trio thread, where the filesystem's inode tables live; ref moves from any
# thread reach those tables through the repository lock.
MEMORY_COMMANDS = frozenset(
    {"remember", "relate", "recall", "context", "memories", "history", "forget", "rollback"}
    | {"purge", "archive", "checkpoint", "resume", "brief", "edit", "confirm", "memory"}
)
# And the hooks (ADR 0052): the first after a mount imports the memory engine (~0.3 s
# under load), and on the trio thread the mount would stop for it.
HOOK_COMMANDS = frozenset({"hook"})
# And the long readers of history: a first blame of a long-edited file walks all of its
# versions (a blame cached since is quick, ADR 0066), and a comparison of experiments
# diffs each against their common base; on the trio thread either stalls the mount.
WORKER_COMMANDS = (
    frozenset({"import", "export", "demo", "commit", "gc", "blame"})
    | MEMORY_COMMANDS
    | HOOK_COMMANDS
)
WORKER_SUBCOMMANDS = {"experiment": frozenset({"compare"})}
REPLY_SECONDS = 10.0  # a stopping daemon waits this long at most to answer a command that ran


class ControlServer:
    """Serves `STORE/control.sock`, one command at a time.

    A command runs with the daemon's working directory set to the client's (relative
    paths mean what the user meant), and back to `/` afterwards, so the daemon never
    keeps its own mount busy.
    """

    def __init__(
        self, store: Path, runner: CommandRunner, drain: Callable[[], object] = lambda: None
    ) -> None:
        """`drain()`: blocks until what a command changed shows in the mount (the
        kernel's caches invalidated); its reply waits for it, off the FUSE loop."""
        self.path = socket_path(store)
        self.runner = runner
        self.drain = drain
        self._lock = trio.Lock()

    async def stop_commands(self) -> None:
        """Return once the running command (if any) has ended; none starts after it.

        The daemon stops its FUSE loop only then: a command may use this very mount
        (an export into it, an import or a commit from it), and on a stopped loop it
        would wait for an answer forever, and the daemon with it."""
        await self._lock.acquire()  # never released: the daemon is stopping

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listener = await self._listen()
        try:
            task_status.started()
            await trio.serve_listeners(self._handle, [listener])
        finally:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    async def _listen(self) -> trio.SocketListener:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # left by a daemon that died without cleaning up
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # born 0600: no window where others may connect
        try:
            with addressable(self.path) as address:
                await sock.bind(address)
        finally:
            os.umask(old_umask)
        sock.listen(16)
        return trio.SocketListener(sock)

    async def _handle(self, stream: trio.SocketStream) -> None:
        """Serve one connection. It runs in the mount's nursery: whatever fails here
        costs this connection (logged), never the mount."""
        async with stream:
            try:
                await self._answer(stream)
            except (ValueError, KeyError, TypeError, trio.BrokenResourceError) as exc:
                log.warning("bad control request: %s", exc)
            except BaseException as exc:  # a socket error, no thread for to_thread, a panic
                if not is_failure(exc):
                    raise
                log.exception("a control connection failed; the mount serves on")

    async def _answer(self, stream: trio.SocketStream) -> None:
        request = _parse_request(await _arecv_frame(stream))
        code, out, err = await self._execute(request)
        header = json.dumps({"v": PROTOCOL_VERSION, "code": code}).encode()
        with (
            contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError),
            trio.CancelScope(shield=True),  # see _execute: a command that ran is answered
            trio.move_on_after(REPLY_SECONDS),
        ):
            for frame in (header, out, err):
                await stream.send_all(FRAME_LENGTH.pack(len(frame)) + frame)

    async def _execute(self, request: dict[str, Any]) -> tuple[int, bytes, bytes]:
        if request.get("v") != PROTOCOL_VERSION:
            return 1, b"", b"helix: error: this helix CLI and the running daemon differ\n"
        argv = [str(arg) for arg in request["argv"]]
        cwd = str(request.get("cwd") or "/")
        async with self._lock:
            # chdir into the mount is a lookup this loop must answer: not on this thread.
            await trio.to_thread.run_sync(_enter, cwd)
            try:
                if runs_on_a_worker(argv):
                    result: tuple[int, bytes, bytes] = await trio.to_thread.run_sync(
                        self.run_command, argv
                    )
                else:
                    result = self.run_command(argv)
                # The command ran: it is answered even when the daemon is stopping
                # (an unmount waits for a worker command such as gc, then cancels us).
                # Told "connection closed", a user would retry a commit that was made.
                with trio.CancelScope(shield=True), trio.move_on_after(REPLY_SECONDS):
                    await trio.to_thread.run_sync(self.drain, abandon_on_cancel=True)
                return result
            finally:
                os.chdir("/")

    def run_command(self, argv: list[str]) -> tuple[int, bytes, bytes]:
        out, err = _capture(), _capture()
        try:
            code = self.runner(argv, out, err)
        except HelixError as exc:
            err.write(f"helix: error: {exc}\n")
            code = 1
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # a bug in one command must not take the mount down
            if not is_failure(exc):
                raise
            log.exception("command %r failed in the daemon", argv)
            err.write("helix: error: internal error in the helix daemon (see its log)\n")
            code = 1
        return code, _captured(out), _captured(err)


def _parse_request(frame: bytes) -> dict[str, Any]:
    """A request's JSON object; anything else (a list, a number) is a ValueError, so a
    stray or foreign client gets its connection closed instead of ending the daemon."""
    request = json.loads(frame)
    if not isinstance(request, dict):
        raise ValueError(f"a control request is a JSON object, not {type(request).__name__}")
    return request


def command_name(argv: Sequence[str]) -> str | None:
    """The subcommand of a helix command line (global options come first)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def runs_on_a_worker(argv: Sequence[str]) -> bool:
    """Whether a forwarded command runs off the trio thread (see WORKER_COMMANDS)."""
    words = [arg for arg in argv if not arg.startswith("-")][:2]
    if not words or words[0] in WORKER_COMMANDS:
        return bool(words)
    return len(words) == 2 and words[1] in WORKER_SUBCOMMANDS.get(words[0], ())


def _enter(cwd: str) -> None:
    try:
        os.chdir(cwd)
    except OSError:
        os.chdir("/")


def _capture() -> io.TextIOWrapper:
    """A text stream with a `.buffer`, so commands may write str or raw bytes."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape", newline="")


def _captured(stream: io.TextIOWrapper) -> bytes:
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue()


async def _arecv_frame(stream: trio.SocketStream) -> bytes:
    (size,) = FRAME_LENGTH.unpack(await _arecv_exact(stream, FRAME_LENGTH.size))
    if size > MAX_FRAME:
        raise ValueError(f"control frame of {size} bytes is too large")
    return await _arecv_exact(stream, size)


async def _arecv_exact(stream: trio.SocketStream, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = await stream.receive_some(size - len(buf))
        if not chunk:
            raise ValueError("control connection closed mid-request")
        buf += chunk
    return bytes(buf)
