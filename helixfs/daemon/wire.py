"""The control socket's wire format, in the standard library only.

Shared by the CLI's client (control.py), the daemon's server (control_server.py) and
the hook launcher (agents/launch.py), which must start in a few milliseconds and so
imports nothing it does not need (ADR 0052). The format itself is described in
control.py.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

SOCKET_NAME = "control.sock"
PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 30
FRAME_LENGTH = struct.Struct(">I")
# connect() errors meaning nobody serves the store: no socket (or no folder, a file or a
# symlink loop where the store folder should be), a dead daemon's leftover socket
NO_DAEMON = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ECONNREFUSED, errno.ENOTSOCK)


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


def send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(FRAME_LENGTH.pack(len(payload)) + payload)
