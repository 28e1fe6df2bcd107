"""Whether the daemon at the other end of a control connection can still answer.

A client waits for its answer without a time limit: gc or an import may rightly run
for minutes (ADR 0002). A daemon that was stopped (SIGSTOP, Ctrl-Z of a foreground
mount) or is gone never answers, though, so while it waits the client looks at the
process now and then, and says what is wrong instead of hanging.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from pathlib import Path

from helixfs.daemon.lock import read_holder
from helixfs.errors import DaemonNotAnswering

WATCH_SECONDS = 0.5  # how often a waiting client looks at the daemon process
_PEER_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid
STOPPED, GONE = "stopped", "gone"


@dataclass(frozen=True)
class Daemon:
    pid: int
    where: str  # what the user knows it by: its mount point, or the store

    @classmethod
    def serving(cls, sock: socket.socket, store: Path) -> Daemon | None:
        """The process listening at the other end of `sock` (the one that must answer:
        the kernel says who, so no pid file can be stale), or None if this pid
        namespace cannot see it."""
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER_CREDENTIALS.size)
        pid = _PEER_CREDENTIALS.unpack(raw)[0]
        if pid <= 0:
            return None
        holder = read_holder(store)  # the lock file, outside the mount: never waits on it
        where = holder.mountpoint if holder and holder.pid == pid else f"store {store}"
        return cls(pid, where)

    @classmethod
    def holding_lock(cls, store: Path) -> Daemon | None:
        """The daemon the mount lock of `store` names (before a connection exists)."""
        holder = read_holder(store)
        if holder is None or holder.pid <= 0:
            return None
        return cls(holder.pid, holder.mountpoint)

    def check(self, *, sent: bool) -> None:
        """DaemonNotAnswering if the process is stopped or gone; `sent`: whether it
        has the command already (it then runs it once resumed)."""
        trouble = process_trouble(self.pid)
        if trouble == STOPPED:
            raise DaemonNotAnswering(
                f"the daemon of {self.where} (pid {self.pid}) is stopped (SIGSTOP?) and "
                f"cannot answer; `kill -CONT {self.pid}` resumes it"
                + (", and it then runs this command" if sent else "; this command was not sent")
            )
        if trouble == GONE:
            raise DaemonNotAnswering(
                f"the daemon of {self.where} (pid {self.pid}) has exited"
                + (
                    ": the command may have run in part or in full (`helix log` shows what landed)"
                    if sent
                    else "; this command was not sent"
                )
            )


def process_trouble(pid: int) -> str | None:
    """STOPPED, GONE, or None while the process runs or sleeps (a slow daemon is fine)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return GONE
    state = stat.rpartition(b")")[2].split()[0]  # the name in parentheses may hold anything
    if state == b"T":
        return STOPPED
    if state in (b"Z", b"X"):
        return GONE
    return None
