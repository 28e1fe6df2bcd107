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
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from helixfs.daemon.liveness import WATCH_SECONDS, Daemon
from helixfs.daemon.wire import (  # the wire format, which the hook launcher imports alone
    FRAME_LENGTH,
    NO_DAEMON,
    PROTOCOL_VERSION,
    address_of,
    send_frame,
    socket_path,
)
from helixfs.errors import HelixError

__all__ = ["FRAME_LENGTH", "addressable", "forward", "socket_path"]


@contextlib.contextmanager
def addressable(path: Path) -> Iterator[bytes]:
    """wire.address_of for the length of the body (see there)."""
    address, folder = address_of(path)
    try:
        yield address
    finally:
        if folder is not None:
            os.close(folder)


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
            if exc.errno in NO_DAEMON:
                return None
            raise
        daemon = Daemon.serving(sock, Path(store_path))
        if daemon is not None:
            daemon.check(sent=False)
        request = {"v": PROTOCOL_VERSION, "argv": list(argv), "cwd": _client_cwd()}
        sent = False
        try:
            with _sigint_held():  # a Ctrl-C now is raised after `sent` tells the truth
                send_frame(sock, json.dumps(request).encode("ascii"))
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


def _recv_frame(sock: socket.socket, daemon: Daemon | None = None) -> bytes:
    (size,) = FRAME_LENGTH.unpack(_recv_exact(sock, FRAME_LENGTH.size, daemon))
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
