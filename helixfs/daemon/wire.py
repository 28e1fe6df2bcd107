"""The control socket's wire format, in the standard library only.

Shared by the CLI's client (control.py), the daemon's server (control_server.py) and
the hook launcher (cli/hook_launch.py), which must start in a few milliseconds and so
imports nothing it does not need (ADR 0052). The format itself is described in
control.py.
"""

from __future__ import annotations

import errno
import os
import struct

TYPE_CHECKING = False  # typing itself imports re: ~5 ms the launcher does not spend
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

SOCKET_NAME = "control.sock"
PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 30
FRAME_LENGTH = struct.Struct(">I")
# connect() errors meaning nobody serves the store: no socket (or no folder, a file or a
# symlink loop where the store folder should be), a dead daemon's leftover socket
NO_DAEMON = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ECONNREFUSED, errno.ENOTSOCK)
SHORT_ADDRESS = 100  # bytes: sun_path holds 107


def socket_path(store: Path) -> Path:
    return store / SOCKET_NAME


def address_of(path: str | os.PathLike[str]) -> tuple[bytes, int | None]:
    """An address for a unix socket at `path`, even past the 107-byte sun_path limit,
    and the folder descriptor to close once connected or bound (None: nothing to close).

    A long store path (deep home folders, pytest tmp dirs) would make bind/connect fail;
    the socket is then reached through its folder opened as /proc/self/fd/N, which is
    short and resolves to the same inode.
    """
    raw = os.fsencode(path)
    if len(raw) < SHORT_ADDRESS:
        return raw, None
    folder = os.open(os.path.dirname(raw), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    return f"/proc/self/fd/{folder}/".encode() + os.path.basename(raw), folder


def send_frame(sock: Any, payload: bytes) -> None:
    sock.sendall(FRAME_LENGTH.pack(len(payload)) + payload)
