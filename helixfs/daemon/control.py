"""The control socket `STORE/control.sock`: the CLI's argv, run by the daemon.

While a store is mounted its daemon holds RocksDB, so the CLI cannot open the store; it
sends its whole command line here instead and the daemon runs the very same command
handler against its own Repository (docs/decisions/0002). Ref moves made this way go
through the daemon's Repository, whose subscribers invalidate the kernel caches, so a
`helix reset --hard` shows up in the mount at once.

Wire format, one request per connection, every frame a 4-byte big-endian length + bytes:

- request:  one frame, JSON `{"v": 1, "argv": [...], "cwd": "..."}` (strings may hold
  lone surrogates: argv is what `os.fsdecode` gave the client, JSON keeps them as \\u
  escapes so non-UTF-8 arguments survive);
- response: three frames, JSON `{"v": 1, "code": N}`, then stdout bytes, then stderr
  bytes (raw, so a command may print binary content).

The socket is 0600: whoever can talk to it can do anything the store's owner can.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import trio

from helixfs.daemon.liveness import WATCH_SECONDS, Daemon
from helixfs.errors import HelixError

log = logging.getLogger(__name__)

SOCKET_NAME = "control.sock"
PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 30
_LENGTH = struct.Struct(">I")
# connect() errors meaning nobody serves the store: no socket (or no folder, a file or a
# symlink loop where the store folder should be), a dead daemon's leftover socket
_NO_DAEMON = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ECONNREFUSED, errno.ENOTSOCK)

CommandRunner = Callable[[list[str], TextIO, TextIO], int]
"""Runs one CLI command line in the daemon; the daemon binds it to its Repository."""


def socket_path(store: Path) -> Path:
    return store / SOCKET_NAME


@contextlib.contextmanager
def addressable(path: Path) -> Iterator[bytes]:
    """An address for a unix socket at `path`, even past the 107-byte sun_path limit.

    A long store path (deep home folders, pytest tmp dirs) would make bind/connect fail;
    the socket is then reached through its folder opened as /proc/self/fd/N, which is
    short and resolves to the same inode.
    """
    raw = os.fsencode(path)
    if len(raw) < 100:
        yield raw
        return
    folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{folder}/".encode() + os.fsencode(path.name)
    finally:
        os.close(folder)


# --- client ---------------------------------------------------------------------------


# What a Ctrl-C says once the daemon has the command: it cannot be told to stop, and a
# bare "interrupted" would suggest the command did not happen.
STILL_RUNNING = (
    "interrupted; the mount's daemon still finishes this command (`helix log` shows when it has)"
)


def forward(
    store_path: Path | str, argv: Sequence[str], stdout: TextIO, stderr: TextIO
) -> int | None:
    """Run `argv` in the daemon serving `store_path`; its exit code, or None if none runs.

    None means "no daemon": the socket is missing or nobody listens on it (a daemon
    killed with -9 leaves the file behind), and the caller opens the store itself.
    """
    path = socket_path(Path(store_path))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            with addressable(path) as address:
                _connect(sock, address, Path(store_path))
        except OSError as exc:
            if exc.errno in _NO_DAEMON:
                return None
            raise
        daemon = Daemon.serving(sock, Path(store_path))
        if daemon is not None:
            daemon.check(sent=False)
        request = {"v": PROTOCOL_VERSION, "argv": list(argv), "cwd": _client_cwd()}
        sent = False
        try:
            with _sigint_held():  # a Ctrl-C now is raised after `sent` tells the truth
                _send_frame(sock, json.dumps(request).encode("ascii"))
                sent = True
            if daemon is not None:  # no time limit (gc may take minutes), but a watch
                sock.settimeout(WATCH_SECONDS)
            header = json.loads(_recv_frame(sock, daemon))
            out, err = _recv_frame(sock, daemon), _recv_frame(sock, daemon)
        except KeyboardInterrupt:
            if not sent:
                raise  # the daemon never got the whole command: plainly interrupted
            raise KeyboardInterrupt(STILL_RUNNING) from None
    finally:
        sock.close()
    _write_bytes(stdout, out)
    _write_bytes(stderr, err)
    return int(header["code"])


def _connect(sock: socket.socket, address: bytes, store: Path) -> None:
    """connect(), which would wait for good while the daemon's listen backlog is full
    (a stopped daemon accepts nothing): that daemon is named instead, as its mount
    lock names it, and a busy one is waited for."""
    sock.settimeout(WATCH_SECONDS)  # a full backlog is then EAGAIN, at once
    while True:
        try:
            sock.connect(address)
            break
        except BlockingIOError:
            holder = Daemon.holding_lock(store)
            if holder is not None:
                holder.check(sent=False)
            time.sleep(WATCH_SECONDS)
    sock.settimeout(None)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """SIGINT held back by the kernel while the body runs, then delivered. sendall
    checks for signals after its last send, so a Ctrl-C right then came out of it as
    if nothing had been sent, while the daemon already ran the command. The request
    is small: the send never waits, so the Ctrl-C is held for microseconds."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _client_cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # deleted cwd: commands get absolute paths or none
        return "/"


def _send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def _recv_frame(sock: socket.socket, daemon: Daemon | None = None) -> bytes:
    (size,) = _LENGTH.unpack(_recv_exact(sock, _LENGTH.size, daemon))
    return _recv_exact(sock, size, daemon)


def _recv_exact(sock: socket.socket, size: int, daemon: Daemon | None = None) -> bytes:
    """`size` bytes; while none come, `daemon` (if known) is checked at each timeout."""
    chunks: list[bytes] = []
    while size:
        try:
            chunk = sock.recv(min(size, 1 << 20))
        except TimeoutError:
            if daemon is None:
                raise
            daemon.check(sent=True)  # stopped or gone: it would never answer
            continue
        if not chunk:
            raise HelixError(
                "the helix daemon closed the control connection before it answered: the "
                "command may have run in part or in full (`helix log` shows what landed)"
            )
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_bytes(stream: TextIO, data: bytes) -> None:
    if not data:
        return
    stream.flush()
    buffer: BinaryIO | None = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "surrogateescape"))


# --- server ---------------------------------------------------------------------------


# Commands that run on a worker thread. Those that read or write files given on their
# command line, because the file may be inside this very mount, and the kernel would
# wait for the trio loop that the command was holding. And gc, which marks without the
# repository lock (maint.gc): on the trio thread it would stop the mount for its whole
# run. Every other command runs on the trio thread, where the filesystem's inode tables
# live; ref moves from any thread reach those tables through the repository lock.
WORKER_COMMANDS = frozenset({"import", "export", "demo", "commit", "gc"})
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
        async with stream:
            try:
                request = _parse_request(await _arecv_frame(stream))
                code, out, err = await self._execute(request)
            except (ValueError, KeyError, TypeError, trio.BrokenResourceError) as exc:
                log.warning("bad control request: %s", exc)
                return
            header = json.dumps({"v": PROTOCOL_VERSION, "code": code}).encode()
            with (
                contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError),
                trio.CancelScope(shield=True),  # see _execute: a command that ran is answered
                trio.move_on_after(REPLY_SECONDS),
            ):
                for frame in (header, out, err):
                    await stream.send_all(_LENGTH.pack(len(frame)) + frame)

    async def _execute(self, request: dict[str, Any]) -> tuple[int, bytes, bytes]:
        if request.get("v") != PROTOCOL_VERSION:
            return 1, b"", b"helix: error: this helix CLI and the running daemon differ\n"
        argv = [str(arg) for arg in request["argv"]]
        cwd = str(request.get("cwd") or "/")
        async with self._lock:
            # chdir into the mount is a lookup this loop must answer: not on this thread.
            await trio.to_thread.run_sync(_enter, cwd)
            try:
                if command_name(argv) in WORKER_COMMANDS:
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
        except Exception:  # a bug in one command must not take the mount down
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
    (size,) = _LENGTH.unpack(await _arecv_exact(stream, _LENGTH.size))
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
