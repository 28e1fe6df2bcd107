"""`helix mount` without `--foreground`: fork a daemon, return once the mount answers.

A caller that gets its prompt back must find the mount ready (scripts do `helix mount
... && cd ~/work`), and a mount that fails must fail in the caller's terminal, not in a
log nobody reads. So the parent waits on a pipe: the daemon writes `ready` once the FUSE
session is up and its tasks run, or `error: MESSAGE` if startup fails, and the pipe's
end (EOF with nothing said) means it died. The fork happens before the store is opened:
RocksDB's threads would not survive it.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path
from typing import TextIO

from helixfs.daemon.lifecycle import MountConfig, RepoCommandRunner, run_foreground
from helixfs.errors import HelixError

LOG_NAME = "daemon.log"
READY = b"ready\n"


def log_path(store: Path) -> Path:
    return store / LOG_NAME


def start_background(config: MountConfig, runner: RepoCommandRunner) -> int:
    """Fork the daemon; return its pid once mounted, or raise its startup error."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the daemon process, observed by the mount tests
        os.close(read_end)
        os._exit(_daemon_main(config, runner, write_end))
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read()
    if message == READY:
        return pid
    os.waitpid(pid, 0)
    text = message.decode("utf-8", "replace").strip()
    if text.startswith("error: "):
        raise HelixError(text[len("error: ") :])
    raise HelixError(f"the helix daemon exited during startup; see {log_path(config.store)}")


def _daemon_main(config: MountConfig, runner: RepoCommandRunner, pipe_fd: int) -> int:
    """The daemon process: detach, serve, and report readiness or failure once."""
    pipe = os.fdopen(pipe_fd, "wb", buffering=0)
    try:
        _detach(config.store)
    except OSError as exc:
        pipe.write(f"error: cannot start the daemon: {exc}\n".encode())
        return 1

    def ready() -> None:
        pipe.write(READY)
        pipe.close()

    try:
        run_foreground(config, runner, ready)
    except HelixError as exc:
        _tell(pipe, f"error: {exc}\n")
        logging.getLogger(__name__).error("%s", exc)
        return 1
    except BaseException as exc:  # run_foreground logged why; this adds where
        traceback.print_exc()
        _tell(pipe, f"error: internal error in the helix daemon: {exc!r}\n")
        return 1
    return 0


def _tell(pipe: object, message: str) -> None:
    """Report to the waiting parent, unless it already heard `ready` and left."""
    write = getattr(pipe, "write", None)
    if write is not None and not getattr(pipe, "closed", True):
        write(message.encode())


def _detach(store: Path) -> None:
    """A session of its own (no terminal signals), stdio to the store's daemon log."""
    os.setsid()
    os.chdir("/")
    devnull = os.open(os.devnull, os.O_RDWR)
    log_fd = os.open(log_path(store), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(devnull)
    os.close(log_fd)
    configure_logging(sys.stderr)


def configure_logging(stream: TextIO, level: int = logging.INFO) -> None:
    logging.basicConfig(
        level=level,
        stream=stream,
        format="%(asctime)s helix[%(process)d] %(levelname)s %(name)s: %(message)s",
        force=True,
    )
