"""One mount, from lock to unmount: the daemon's whole life in one AsyncExitStack.

Every resource registers its own teardown the moment it exists, so a failure half-way
through startup undoes exactly what was done, in reverse:

    mount lock -> Repository -> FUSE session -> saver flush -> open files stored ->
    nursery (FUSE loop, saver timer, control socket, signal watcher, collector)

Shutdown is the same unwinding whatever started it (`fusermount3 -u`, `helix umount`,
SIGTERM/SIGINT, a crash of one task): the nursery ends, pending saves are committed,
the kernel connection is closed (unmounting if still mounted), the store is closed, and
the lock is released last, so `helix umount` can wait on it to know everything is on
disk.
"""

from __future__ import annotations

import contextlib
import errno
import faulthandler
import io
import logging
import math
import os
import resource
import signal
import stat
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import pyfuse3
import trio

from helixfs import config
from helixfs.daemon.branchmemory import follow_branch_ends
from helixfs.daemon.collector import DEFAULT_GROWTH, Collector
from helixfs.daemon.control_server import CommandRunner, ControlServer, command_name
from helixfs.daemon.fuseloop import use_quick_wait
from helixfs.daemon.lock import CLOSING, SERVING, MountLock, read_holder, same_path
from helixfs.daemon.memoryfiles import MemoryFiles
from helixfs.daemon.mounts import (
    abort_connection,
    abort_if_daemon_died,
    device_of,
    helix_mounts,
    points_of,
    tune_readahead,
)
from helixfs.daemon.syncer import RemoteSyncer
from helixfs.errors import Busy, HelixError, InvalidInput, NotADirectory, NotFound, is_failure
from helixfs.fs.saver import DEFAULT_WINDOW, Saver
from helixfs.vcs import remotes

if TYPE_CHECKING:
    from helixfs.fs.edge import Invalidator
    from helixfs.fs.operations import Operations
    from helixfs.memory import Memory
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)

# argv, the daemon's repository, stdout, stderr, its memory (opened on first use)
RepoCommandRunner = Callable[
    [Sequence[str], "Repository", TextIO, TextIO, Callable[[], "Memory"]], int
]
"""`helixfs.cli.main.run_in_process`, injected by the CLI: the daemon never imports it."""

# Options we set ourselves; `-o` cannot override them (the fs relies on them).
BASE_OPTIONS = frozenset({"subtype=helixfs", "default_permissions"})
# Options that only mean something to mount(8)/fstab, never to FUSE.
FSTAB_ONLY = frozenset(
    {
        "defaults",
        "user",
        "users",
        "nouser",
        "auto",
        "noauto",
        "_netdev",
        "nofail",
        "rw",
        "exec",
        "noexec",
        "suid",
        "nosuid",
        "dev",
        "nodev",
        "owner",
        "noowner",
        "group",
        "nogroup",
        "nousers",
    }
)
# Options that belong to HelixFS itself, given as -o NAME=VALUE (fstab has no other way).
HELIX_OPTIONS = ("quiet_window", "gc_growth")
# Read-driven atime, kept by HelixFS (the kernel leaves a FUSE file's atime to it): the
# default noatime, or relatime in memory only (ADR 0042). Not FUSE options.
ATIME_OPTIONS = {"noatime": 0.0, "relatime": 1.0}
# How long the mount waits, at most, for the hooks' imports it started (warm_hooks)
# before it says it is ready: ~15 ms, mostly beside the FUSE mount's own start.
WARM_HOOKS_WAIT = 2.0
# One reader task: handlers never await, so a second task could never run a request
# meanwhile; it only added a lock hand-over and task switch per request.
READER_TASKS = 1


@dataclass(frozen=True)
class MountConfig:
    """What to mount where. Paths are absolute and resolved before anything is mounted."""

    store: Path
    mountpoint: Path
    quiet_window: float = DEFAULT_WINDOW  # seconds; 0 = a commit per operation
    fuse_options: frozenset[str] = field(default_factory=frozenset)
    gc_growth: int = DEFAULT_GROWTH  # bytes of store growth that start a gc; 0 = never
    remote: str | None = None  # a remote kept in step in the background (daemon/syncer.py)
    relatime: bool = False  # reads set atime in memory (-o relatime); default noatime
    fuse_wait: str = "auto"  # mount.fuse_wait: how the loop waits for requests (ADR 0074)
    # config keys the command line set (--quiet-window, -o gc_growth): they win over the
    # config files, also when `helix config set` changes those on the running mount
    flags: tuple[tuple[str, float], ...] = ()

    @classmethod
    def build(
        cls,
        store: str | os.PathLike[str],
        mountpoint: str | os.PathLike[str],
        quiet_window_ms: float | None = None,
        options: Sequence[str] = (),
        remote: str | None = None,
    ) -> MountConfig:
        """Validate the user's arguments; raises a HelixError naming what is wrong."""
        store_path = Path(os.path.realpath(Path(store).expanduser()))
        # before any stat of the mount point: each would wait for a daemon stuck dying
        abort_if_daemon_died(Path(os.path.abspath(Path(mountpoint).expanduser())))
        target = Path(os.path.realpath(Path(mountpoint).expanduser()))
        if not store_path.is_dir():
            raise NotFound(f"no HelixFS store at {store_path} (create one with: helix init)")
        _check_mountpoint(target, store_path)
        if target == store_path or store_path in target.parents:
            raise InvalidInput("the mount point cannot be inside the store folder")
        if target in store_path.parents:
            # the mount would hide the store from its own daemon: every file RocksDB or
            # the control socket opens by path would be a request to itself (a hang)
            raise InvalidInput(f"the store {store_path} cannot be inside the mount point {target}")
        fuse, helix = split_options(options)
        window_ms = quiet_window_ms if quiet_window_ms is not None else helix.get("quiet_window")
        flags: dict[str, float] = {}
        if window_ms is not None:
            flags["mount.quiet_window"] = _window(window_ms)
        if "gc_growth" in helix:
            flags["gc.growth"] = _growth(helix["gc_growth"])
        settings = config.load(store_path).with_flags(flags)  # a bad config file: here
        if remote is not None:
            remotes.get(store_path, remote)  # an unknown name fails here, before mounting
        relatime = bool(helix.get("relatime", 0.0))
        window, growth = settings["mount.quiet_window"], settings["gc.growth"]
        return cls(
            store_path,
            target,
            window,
            fuse,
            growth,
            remote,
            relatime,
            settings["mount.fuse_wait"],
            tuple(flags.items()),
        )


def _check_mountpoint(target: Path, store: Path) -> None:
    try:
        mode = os.stat(target).st_mode
        # stat may be answered from attributes the kernel cached before the daemon died;
        # statfs always asks the daemon, so it is what finds a dead mount
        os.statvfs(target)
    except FileNotFoundError:
        raise NotFound(f"mount point {target} does not exist") from None
    except OSError as exc:
        if exc.errno == errno.ENOTCONN:  # the mount of a daemon that died (kill -9)
            raise Busy(
                f"{target} still holds the mount of a daemon that died;"
                f" detach it first with: helix umount {target}"
            ) from None
        raise
    if not stat.S_ISDIR(mode):
        raise NotADirectory(f"mount point {target} is not a directory")
    if target.resolve() in helix_mounts():
        raise Busy(_mounted_already(target, store))


def _mounted_already(target: Path, store: Path) -> str:
    """Why `target`, a HelixFS mount, cannot take `store`: this store is there (its
    daemon's lock names `target`), or another one, which the mount would hide until two
    unmounts."""
    holder = read_holder(store)
    if holder is not None and holder.pid and same_path(holder.mountpoint, target):
        return f"store {store} is already mounted there ({target}), daemon pid {holder.pid}"
    return (
        f"{target} is a HelixFS mount already (of another store);"
        f" unmount it first with: helix umount {target}"
    )


def split_options(options: Sequence[str]) -> tuple[frozenset[str], dict[str, float]]:
    """`-o a,b=c` values -> (options for FUSE, HelixFS's own numeric options)."""
    fuse: set[str] = set()
    helix: dict[str, float] = {}
    for group in options:
        for option in filter(None, (o.strip() for o in group.split(","))):
            name, _, value = option.partition("=")
            if name in HELIX_OPTIONS:
                helix[name] = _number(name, value or "1")
            elif option in ATIME_OPTIONS:
                helix["relatime"] = ATIME_OPTIONS[option]  # the last one given wins
            elif name == "comment" or name.startswith(("x-", "X-")):
                continue  # fstab notes for other programs (systemd's x-systemd.*)
            elif name not in FSTAB_ONLY and option not in BASE_OPTIONS:
                fuse.add(option)
    return frozenset(fuse), helix


def _number(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):  # nan/inf parse as floats, but no window or size is one
        raise InvalidInput(f"mount option {name} needs a number, not {value!r}")
    return number


def _window(ms: float) -> float:
    if not math.isfinite(ms):  # --quiet-window nan: every save would crash the saver
        raise InvalidInput(f"--quiet-window needs a number of ms, not {ms}")
    if ms < 0:
        raise InvalidInput("--quiet-window cannot be negative")
    return ms / 1000.0


def _growth(mib: float) -> int:
    if mib < 0:
        raise InvalidInput("mount option gc_growth (MiB; 0 = no automatic gc) cannot be negative")
    return int(mib * (1 << 20))


def fuse_options(config: MountConfig) -> set[str]:
    options = set(pyfuse3.default_options) | BASE_OPTIONS | set(config.fuse_options)
    # The store as the mount's source (what `mount` and `df` print); a bare "helixfs"
    # would be resolved by fusermount against the caller's cwd if such a file exists.
    if not any(option.startswith("fsname=") for option in options):
        options.add("fsname=" + _escape_option(str(config.store)))
    if os.getuid() == 0 and "allow_other" not in options and "noallow_other" not in options:
        # root mounts for users too (CI, fstab without `user`): let them in, and
        # default_permissions keeps the mode bits meaningful.
        options.add("allow_other")
    options.discard("noallow_other")
    return options


def _escape_option(value: str) -> str:
    """libfuse splits -o on commas; a backslash protects one."""
    return value.replace("\\", "\\\\").replace(",", "\\,")


def _raise_open_files_limit() -> None:
    """Allow the daemon as many open files as the system lets it have. Out of them,
    RocksDB fails to open a new log or table file, and then refuses every write until
    the store is opened again (a remount); the soft limit is often 1,024 of a far higher
    hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def serve(
    config: MountConfig,
    runner: RepoCommandRunner,
    ready: Callable[[], None] = lambda: None,
) -> None:
    """Mount and serve until unmounted or signalled; `ready()` once the mount answers."""
    _raise_open_files_limit()
    async with AsyncExitStack() as stack:
        lock = MountLock(config.store)
        lock.acquire(config.mountpoint)
        stack.callback(lock.release)

        repo = await trio.to_thread.run_sync(_open_repository, config.store)
        stack.callback(repo.close)
        repo.reconfigure(repo.settings.with_flags(dict(config.flags)))

        memory_files = MemoryFiles(config.store, repo)
        stack.callback(memory_files.close)
        warming = memory_files.warm_hooks(_quietly(runner, repo, memory_files))
        stack.callback(follow_branch_ends(repo, memory_files.memory))
        stack.callback(stop_web_views)  # before the store and memory they read close
        syncer = None
        if config.remote is not None:
            syncer = RemoteSyncer(repo, config.store, config.remote, memory_files.memory)
            stack.callback(syncer.finish)  # after the last saves' flush: pushes them too
        saver = Saver(config.quiet_window)
        operations = _operations(repo, saver, memory_files, config)
        _mount(operations, config)
        lock.note(SERVING)
        device = _device_of(config.mountpoint)
        stack.callback(_close_fuse, config.mountpoint, device, operations.invalidator)
        stack.callback(saver.flush_now)
        stack.callback(operations.close)  # stores open files; their saves go into the flush

        control = ControlServer(
            config.store,
            _command_runner(runner, repo, memory_files),
            operations.invalidator.drain,
        )
        nursery = await stack.enter_async_context(trio.open_nursery())
        nursery.start_soon(side_job, "the quiet-window timer", saver.run)
        nursery.start_soon(_watch_signals, control)
        await nursery.start(control.serve)
        nursery.start_soon(side_job, "read-ahead tuning", _tune_once_answering, config.mountpoint)
        nursery.start_soon(side_job, "the workspace index", memory_files.index_forever)
        nursery.start_soon(side_job, "opening the memory", memory_files.open_soon)
        collector = Collector(repo, config.gc_growth)
        stack.callback(repo.subscribe_settings(_live_settings(saver, collector)))
        nursery.start_soon(side_job, "automatic gc", collector.run)
        if syncer is not None:
            nursery.start_soon(side_job, "the remote sync", syncer.run)
        if repo.lazy:  # its remote opened before the first read of a content needs it
            nursery.start_soon(side_job, "opening the lazy clone's remote", _open_remote, repo)
        if warming is not None:
            await trio.to_thread.run_sync(warming.join, WARM_HOOKS_WAIT)
        ready()
        log.info("serving %s at %s", config.store, config.mountpoint)
        await answer_fuse(config.mountpoint)
        log.info("FUSE loop ended: committing and closing")
        lock.note(CLOSING)
        if syncer is not None:  # `helix umount` shows how far the push is while it waits
            syncer.closing(lambda progress: lock.note(CLOSING, progress))
        nursery.cancel_scope.cancel()


async def _open_remote(repo: Repository) -> None:
    await trio.to_thread.run_sync(repo.open_remote, abandon_on_cancel=True)


async def answer_fuse(mountpoint: Path) -> None:
    """Answer FUSE requests until the kernel ends the connection.

    An unmount shuts the connection down while the loop may be taking a request off
    its queue: the kernel then fails that read with ECONNABORTED, not the ENODEV libfuse
    takes for the end (seen after the last close of a lazily detached mount). Either
    way nothing more can be served, and everything answered is committed on the way out.
    """
    try:
        await pyfuse3.main(min_tasks=READER_TASKS, max_tasks=READER_TASKS)
    except* ConnectionAbortedError:
        log.warning(
            "the FUSE connection of %s was shut down while a request was being read"
            " (ECONNABORTED): the mount has ended",
            mountpoint,
        )


def _quietly(
    runner: RepoCommandRunner, repo: Repository, memory_files: MemoryFiles
) -> Callable[[list[str]], int]:
    """`runner` for a command of the daemon's own, its output dropped."""
    return lambda argv: runner(argv, repo, io.StringIO(), io.StringIO(), memory_files.memory)


def _command_runner(
    runner: RepoCommandRunner, repo: Repository, memory_files: MemoryFiles
) -> CommandRunner:
    """Forwarded commands run on the daemon's repository and its memory, whose vector
    indexes stay warm. A search of the workspace (`recall --workspace`) also starts the
    index the daemon keeps on HEAD. A hook never waits for the model: until the kept
    memory is open, it reads a lexical one (MemoryFiles.for_a_hook)."""

    def run(argv: list[str], out: TextIO, err: TextIO) -> int:
        if command_name(argv) == "recall" and "--workspace" in argv:
            note = memory_files.want_workspace()
            if note is not None:
                err.write(note + "\n")
        if command_name(argv) == "hook":
            with memory_files.for_a_hook() as memory:
                return runner(argv, repo, out, err, memory)
        return runner(argv, repo, out, err, memory_files.memory)

    return run


def _live_settings(saver: Saver, collector: Collector) -> Callable[[config.Settings], None]:
    """What `helix config set` changes in a running mount besides the store (whose
    caches and codec `Repository.reconfigure` sets): the quiet window, gc's growth.
    gc's retention and snapshot_ttl are read from the settings at each gc."""

    def apply(settings: config.Settings) -> None:
        saver.window = settings["mount.quiet_window"]
        collector.growth = settings["gc.growth"]

    return apply


def stop_web_views() -> None:
    """The web views this daemon serves (`helix web` while mounted, ADR 0058)."""
    from helixfs.web.running import stop_all  # light: no starlette unless one runs

    stop_all()


def _open_repository(store: Path) -> Repository:
    from helixfs.vcs.repo import Repository

    return Repository.open(store)  # recovery (a commit of pending state) happens here


def _operations(
    repo: Repository, saver: Saver, memory_files: MemoryFiles, config: MountConfig
) -> Operations:
    from helixfs.fs.operations import Operations

    return Operations(
        repo, saver=saver, helix_entries=memory_files.entries(), relatime=config.relatime
    )


def _mount(operations: Operations, config: MountConfig) -> None:
    with _stderr_captured() as said:
        try:
            pyfuse3.init(operations, str(config.mountpoint), fuse_options(config))
        except RuntimeError as exc:
            # libfuse (and the fusermount3 it runs) tell why on fd 2, which in the
            # background is daemon.log: put their words into the caller's error
            reason = "; ".join(line for line in said().splitlines() if line.strip())
            raise HelixError(
                f"cannot mount on {config.mountpoint}: "
                + (reason or f"{exc} (is /dev/fuse usable?)")
            ) from exc
    use_quick_wait(READER_TASKS, config.fuse_wait)


@contextlib.contextmanager
def _stderr_captured() -> Iterator[Callable[[], str]]:
    """Send file descriptor 2 to a temporary file meanwhile; yields a reader of what was
    written there. Unless the block raised (its error carries the text), the text is
    copied back to fd 2 afterwards, so no warning goes missing."""
    with tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)

        def said() -> str:
            capture.seek(0)
            return capture.read().decode(errors="replace")

        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        with contextlib.suppress(OSError):
            os.write(2, said().encode())


async def side_job(what: str, job: Callable[..., Awaitable[object]], *args: object) -> None:
    """Run one of the mount's side jobs in its nursery, where an error would end the
    mount: each job handles the failures it expects, and this is the last resort for
    the rest (a bug, a panic in a Rust extension, no thread to start). The job then
    stops alone, logged; the mount serves on without it, and saves still persist."""
    try:
        await job(*args)
    except BaseException as exc:
        if not is_failure(exc):
            raise
        log.exception("%s stopped on an error; the mount serves on without it", what)


async def _tune_once_answering(mountpoint: Path) -> None:
    """The kernel sets the mount's read-ahead when FUSE INIT is answered, so tune it
    after that: stat() the mount from a thread (this loop answers it), then write sysfs."""

    def stat_then_tune() -> None:
        with contextlib.suppress(OSError):
            os.stat(mountpoint)
            tune_readahead(mountpoint)

    await trio.to_thread.run_sync(stat_then_tune, abandon_on_cancel=True)


def _device_of(mountpoint: Path) -> str | None:
    with contextlib.suppress(OSError):
        return device_of(mountpoint)
    return None


def _close_fuse(mountpoint: Path, device: str | None, invalidator: Invalidator) -> None:
    """Unmount (if still mounted) and close the kernel connection.

    libfuse unmounts by the path it mounted at. Once a folder above the mount has been
    renamed, that path holds nothing, or another mount made there since, which it would
    detach while ours stayed dead; so a mount that has moved or gone is found by its
    device and detached where it is now."""
    moved = _moved_to(mountpoint, device)
    if not invalidator.stop():
        # Its call into the session waits in the kernel (for a page or a directory that
        # a request the ended loop never answers holds): closing would free the session
        # under it, and the call would return into freed memory.
        if _abort_under(mountpoint, device, invalidator):
            pyfuse3.close(unmount=False)  # libfuse takes it for unmounted: detached below
        else:
            log.error("the FUSE session of %s stays open until the daemon exits", mountpoint)
        for point in [mountpoint] if moved is None else moved:
            _detach_lazily(point)
        return
    if moved is not None:
        for point in moved:
            log.info("the mount of %s has moved to %s: detaching it there", mountpoint, point)
            _detach_lazily(point)
        pyfuse3.close(unmount=False)
        return
    try:
        pyfuse3.close(unmount=True)
    except Exception:  # still mounted (busy) or already gone: make sure it is detached
        log.warning("clean unmount of %s failed; detaching it lazily", mountpoint)
        _detach_lazily(mountpoint)


def _abort_under(mountpoint: Path, device: str | None, invalidator: Invalidator) -> bool:
    """Abort the connection under a stuck invalidation: the request it waits behind
    fails (its process gets ENOTCONN, not a wait until killed), the invalidation
    returns, and the session can be closed. True once the invalidation thread ended."""
    if device is None:
        return False
    try:
        abort_connection(device)
    except OSError as exc:
        log.error("cannot abort the FUSE connection of %s: %s", mountpoint, exc)
        return False
    log.warning(
        "aborted the FUSE connection of %s: an invalidation was stuck behind a request"
        " the ended loop never answered (that request fails with ENOTCONN)",
        mountpoint,
    )
    return invalidator.ended()


def _moved_to(mountpoint: Path, device: str | None) -> list[Path] | None:
    """Where our mount is now if not at `mountpoint` ([] once unmounted); None if it
    is still there, or unknown."""
    if device is None:
        return None
    try:
        points = points_of(device)
    except OSError:
        return None
    return None if mountpoint in points else points


def _detach_lazily(mountpoint: Path) -> None:
    subprocess.run(
        ["fusermount3", "-u", "-z", str(mountpoint)],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _watch_signals(control: ControlServer) -> None:
    """SIGTERM/SIGINT/SIGHUP end the FUSE loop, once a running command has ended (it
    may need the mount); the exit stack then shuts down cleanly."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("signal %s: unmounting", signal.Signals(signum).name)
            break
        await control.stop_commands()  # signals meanwhile are caught, and ignored
        with contextlib.suppress(Exception):
            pyfuse3.terminate()


def run_foreground(
    config: MountConfig, runner: RepoCommandRunner, ready: Callable[[], None] = lambda: None
) -> None:
    """Serve in this process (the background daemon too, once detached). Once it has
    served, the log's last line says why the daemon ended, whatever ended it; a mount
    that fails to start raises its error for the caller to report, once."""
    report_fatal_signals()
    served = False

    def ready_and_serving() -> None:
        nonlocal served
        served = True
        ready()

    try:
        trio.run(serve, config, runner, ready_and_serving)
    except HelixError as exc:
        if served:
            log.critical("the daemon of %s is exiting: %s", config.mountpoint, exit_reason(exc))
        raise
    except BaseException as exc:
        log.critical("the daemon of %s is exiting: %s", config.mountpoint, exit_reason(exc))
        raise
    log.info("the daemon of %s has exited cleanly", config.mountpoint)


def report_fatal_signals() -> None:
    """On SIGSEGV, SIGABRT, SIGBUS, SIGFPE or SIGILL (a crash in RocksDB, pyfuse3 or
    another C extension), print every thread's Python stack to stderr: the terminal or
    journal of a --foreground mount, daemon.log of a background one. To a copy of fd 2,
    so a crash while fd 2 is captured (_stderr_captured) is not lost with the capture."""
    if faulthandler.is_enabled():
        return
    faulthandler.enable(os.fdopen(os.dup(2), "w", closefd=True), all_threads=True)


def exit_reason(exc: BaseException) -> str:
    """One line for the log: the exception, or each one of a group (a nursery's)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(exit_reason(inner) for inner in exc.exceptions)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (SIGINT before the signal watcher ran)"
    if isinstance(exc, HelixError):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc}"
