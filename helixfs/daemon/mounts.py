"""Finding and detaching HelixFS mounts, for `helix umount` and `mount.helixfs`."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from helixfs.daemon.lock import CLOSING, Holder, detached_holder, is_locked, read_holder
from helixfs.daemon.mountinfo import SELF, helix_mounts_in
from helixfs.errors import Busy, HelixError, InvalidInput

STORE_MARKER = Path(".helix") / "store"
READAHEAD_KB = 1024
FUSECTL = Path("/sys/fs/fuse/connections")


def helix_mounts(mountinfo: Path = SELF) -> list[Path]:
    """Mount points of every HelixFS mount this process can see."""
    return list(_helix_devices(mountinfo))


def _helix_devices(mountinfo: Path = SELF) -> dict[Path, str]:
    """HelixFS mount point -> its device "major:minor", read without touching the mounts."""
    return {mount.point: mount.device for mount in helix_mounts_in(mountinfo)}


def device_of(mountpoint: Path) -> str | None:
    """The "major:minor" of the HelixFS mount at `mountpoint`, None if there is none."""
    return _helix_devices().get(mountpoint)


def points_of(device: str) -> list[Path]:
    """Where the HelixFS mount of `device` is now: a rename of a folder above it moves
    it (and its old path may hold another mount by then). Empty once it is unmounted."""
    return [mount.point for mount in helix_mounts_in(SELF) if mount.device == device]


def tune_readahead(mountpoint: Path, kilobytes: int = READAHEAD_KB) -> bool:
    """Let the kernel read ahead further than its 128 KiB default on this mount.

    Each FUSE read is a round trip through Python, so fewer, larger sequential reads
    are faster (measured: ~+25% on a cold 256 MB read). Root only (sysfs); best effort,
    and done from mountinfo + sysfs, never by stat()ing the mount (which this very
    daemon would have to answer).
    """
    device = _helix_devices().get(mountpoint)
    if device is None:
        return False
    try:
        Path(f"/sys/class/bdi/{device}/read_ahead_kb").write_text(f"{kilobytes}\n")
    except OSError:
        return False
    return True


def abort_if_daemon_died(mountpoint: Path) -> bool:
    """Abort the kernel connection of a mount whose daemon died but cannot exit.

    A daemon killed (kill -9) while its invalidation thread waits in the kernel for a
    page that a read of ours has locked never finishes dying: that thread waits for an
    answer the dead loop will not give, and the connection stays open as long as it
    waits. Everything that touches the mount then hangs (statfs, `.helix/store`), and the
    store stays locked. Aborting the connection fails those requests, and the daemon's
    last thread exits. Read from mountinfo, lock record and /proc only: never blocks.
    """
    mount = next((m for m in helix_mounts_in(SELF) if m.point == mountpoint), None)
    if mount is None:
        return False
    holder = read_holder(Path(mount.source))
    if holder is None or holder.pid == 0 or not _is_dead(holder.pid):
        return False
    abort = _abort_file(mount.device)
    try:
        abort_connection(mount.device)
    except OSError as exc:
        raise HelixError(
            f"the daemon of {mountpoint} (pid {holder.pid}) was killed but is stuck in the"
            f" kernel on its mount; as root, run: echo 1 > {abort} ({exc.strerror})"
        ) from None
    return True


def abort_connection(device: str) -> None:
    """Abort the FUSE connection of the mount of `device` ("major:minor"): every request
    it still waits for fails (ENOTCONN), and so does any later one. Raises OSError."""
    abort = _abort_file(device)
    if not abort.parent.is_dir():  # fusectl not mounted yet (systemd mounts it)
        subprocess.run(
            ["mount", "-t", "fusectl", "none", str(FUSECTL)], check=False, capture_output=True
        )
    abort.write_text("1\n")


def _abort_file(device: str) -> Path:
    major, minor = (int(n) for n in device.split(":"))
    return FUSECTL / str(major << 20 | minor) / "abort"  # named by the kernel's dev_t


def _is_dead(pid: int) -> bool:
    """Gone, or a zombie: killed, its threads may still be stuck in the kernel."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def store_of(mountpoint: Path) -> Path | None:
    """The store a live mount serves (its `.helix/store`), None if it does not answer."""
    try:
        text = (mountpoint / STORE_MARKER).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text) if text else None


def unmount(
    mountpoint: Path, *, lazy: bool = False, wait: float = 120.0, progress: Progress | None = None
) -> Path | None:
    """Detach a HelixFS mount and wait until its daemon has committed (and pushed, with
    `--remote`: `progress` hears how far) and let go.

    Returns the store it served (when it could still tell). Raises a HelixError if the
    path is not a HelixFS mount or the kernel refuses (busy without `lazy`).
    """
    if abort_if_daemon_died(mountpoint):
        lazy = True  # nothing is served there any more: files still open just fail
    if mountpoint not in helix_mounts():
        detached = detached_holder(mountpoint)
        if detached is None:
            raise InvalidInput(f"{mountpoint} is not a HelixFS mount")
        return _finish_detached(mountpoint, *detached, lazy=lazy, wait=wait, progress=progress)
    store = store_of(mountpoint)
    command = ["fusermount3", "-u", *(["-z"] if lazy else []), str(mountpoint)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        reason = done.stderr.strip() or f"fusermount3 exited with {done.returncode}"
        hint = _busy_hint(mountpoint) if "busy" in reason else ""
        raise HelixError(f"cannot unmount {mountpoint}: {reason}{hint}")
    if store is not None and not lazy:  # lazily: the daemon lives until files are closed
        wait_released(store, wait, progress)
    return store


def _finish_detached(
    mountpoint: Path,
    store: Path,
    holder: Holder,
    *,
    lazy: bool,
    wait: float,
    progress: Progress | None = None,
) -> Path:
    """`mountpoint` was detached lazily and its daemon still runs. Closing (every file
    closed, committing): wait for it as for any umount. Serving files still open there:
    a lazy umount is done already; any other cannot finish without them, so say why."""
    if holder.state == CLOSING:
        wait_released(store, wait, progress)
        return store
    if lazy:
        return store
    pid = holder.pid
    raise Busy(
        f"{mountpoint} is detached already (a lazy umount), but its daemon (pid {pid},"
        f" store {store}) still serves files open there and exits once they are closed;"
        f" close them (or end the processes holding them), or stop the daemon now with:"
        f" kill {pid} (it commits what they wrote first)"
    )


def _busy_hint(mountpoint: Path) -> str:
    """Why a mount is busy, as far as this process can tell: its own working folder
    inside it is the usual cause of `helix umount .`."""
    try:
        cwd = Path(os.getcwd())
    except OSError:
        cwd = Path("/")
    if cwd == mountpoint or mountpoint in cwd.parents:
        return " (your current folder is inside it: cd out of it first, or use --lazy)"
    return " (a process has a file or its current folder in it: close or leave it, or use --lazy)"


Progress = Callable[[str], None]


def wait_released(store: Path, timeout: float, progress: Progress | None = None) -> None:
    """Until the daemon of `store` has exited (its lock is released last). What it says
    it is finishing (a push, daemon/syncer.py) goes to `progress` as it changes, and
    each change gives it `timeout` seconds more: a push that moves is waited for, one
    that stands still for `timeout` is left to the daemon. Ctrl-C stops the wait, not
    the daemon: what it has not pushed stays in the store either way."""
    deadline = time.monotonic() + timeout
    said = ""
    try:
        while is_locked(store):
            holder = read_holder(store)
            doing = holder.detail if holder is not None else ""
            if doing and doing != said:
                said = doing
                deadline = time.monotonic() + timeout
                if progress is not None:
                    progress(doing)
            if time.monotonic() > deadline:
                raise HelixError(
                    f"unmounted, but the daemon of {store} is still finishing after "
                    f"{timeout:.0f} s{_still(holder)}"
                )
            time.sleep(0.02)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(
            f"unmounted; stopped waiting for the daemon of {store}{_still(read_holder(store))}"
        ) from None


def _still(holder: Holder | None) -> str:
    """What a daemon left to finish is doing, and that nothing is lost by not waiting."""
    if holder is None or not holder.detail:
        return ""
    return (
        f" ({holder.detail}); it goes on in the background (pid {holder.pid}), and a "
        "push cut short loses nothing: the commits stay in the store for the next push"
    )
