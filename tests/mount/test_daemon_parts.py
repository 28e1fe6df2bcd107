"""The daemon's parts that need no FUSE: options, config checks, lock, control socket.

The control socket is exercised for real: a ControlServer on a trio loop in a thread,
running the CLI's own `run_in_process` against a real Repository, reached through the
same `forward` the CLI uses.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import apsw
import pyfuse3
import pytest
import trio
from mount_harness import helix_mounts_under, wait_until

from helixfs.cli.main import run_in_process
from helixfs.daemon import memoryfiles
from helixfs.daemon.collector import DEFAULT_GROWTH, Collector
from helixfs.daemon.control import FRAME_LENGTH, addressable, forward
from helixfs.daemon.control_server import CommandRunner, ControlServer, command_name
from helixfs.daemon.lifecycle import (
    MountConfig,
    _close_fuse,
    answer_fuse,
    fuse_options,
    side_job,
    split_options,
)
from helixfs.daemon.liveness import STOPPED, WATCH_SECONDS, process_trouble
from helixfs.daemon.lock import CLOSING, SERVING, MountLock, is_locked, read_holder
from helixfs.daemon.memoryfiles import (
    BUSY_NOTE,
    LEXICAL_NOTE,
    LOADING_NOTE,
    MEMORY_DB,
    CommitTexts,
    MemoryFiles,
    recently_changed,
)
from helixfs.daemon.mounts import unmount, wait_released
from helixfs.errors import Busy, DaemonNotAnswering, HelixError, InvalidInput, NotFound, StoreLocked
from helixfs.fs import edge
from helixfs.fs.helixdir import QueryDir
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.memory import Memory
from helixfs.memory.db import fetch_one
from helixfs.memory.reader import Checkpointing
from helixfs.vcs.repo import Repository


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    Repository.init(path).close()
    return path


def test_split_options_keeps_fuse_drops_fstab_and_reads_helix_ones() -> None:
    fuse, helix = split_options(["defaults,user,noauto,allow_other", "quiet_window=150,ro"])
    assert fuse == {"allow_other", "ro"}
    assert helix == {"quiet_window": 150.0}
    with pytest.raises(InvalidInput, match="quiet_window"):
        split_options(["quiet_window=soon"])


def test_atime_options_are_helixfs_own_and_the_last_one_wins() -> None:
    """libfuse refuses `relatime`: it is kept by HelixFS (ADR 0042), noatime the default."""
    assert split_options(["relatime,ro"]) == (frozenset({"ro"}), {"relatime": 1.0})
    assert split_options(["relatime", "noatime"]) == (frozenset(), {"relatime": 0.0})


def test_split_options_drops_fstab_notes_for_other_programs() -> None:
    """mount(8) hands the helper every fstab option: systemd's x-systemd.automount,
    comment=..., owner/group were passed on to libfuse, which refused the mount."""
    fstab = "defaults,x-systemd.automount,X-mount.mkdir,comment=systemd.automount,owner,ro"
    assert split_options([fstab + ",group,nousers"]) == (frozenset({"ro"}), {})


def test_config_validates_before_anything_is_mounted(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "mnt"
    target.mkdir()
    config = MountConfig.build(store, target, None, ["quiet_window=0"])
    assert config.quiet_window == 0.0 and config.mountpoint == target
    assert MountConfig.build(store, target, 250, ["quiet_window=0"]).quiet_window == 0.25
    with pytest.raises(NotFound):
        MountConfig.build(tmp_path / "nope", target)
    with pytest.raises(NotFound, match="does not exist"):
        MountConfig.build(store, tmp_path / "nope")
    with pytest.raises(HelixError, match="not a directory"):
        (tmp_path / "file").write_text("")
        MountConfig.build(store, tmp_path / "file")
    with pytest.raises(InvalidInput, match="negative"):
        MountConfig.build(store, target, -1)
    with pytest.raises(InvalidInput, match="inside the store"):
        (store / "inner").mkdir()
        MountConfig.build(store, store / "inner")


def test_a_mount_point_that_holds_the_store_is_refused(tmp_path: Path) -> None:
    """Mounted over the store's own folder, the daemon hung for good (in D state) on its
    first path below the store: the request went to its own FUSE loop, not yet running."""
    outer = tmp_path / "outer"
    Repository.init(outer / "deep" / "store").close()
    for target in (outer, outer / "deep"):
        with pytest.raises(InvalidInput, match="cannot be inside the mount point"):
            MountConfig.build(outer / "deep" / "store", target)


def test_gc_growth_is_read_in_mib_and_checked(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "mnt"
    target.mkdir()
    assert MountConfig.build(store, target).gc_growth == DEFAULT_GROWTH
    assert MountConfig.build(store, target, None, ["gc_growth=0"]).gc_growth == 0
    assert MountConfig.build(store, target, None, ["gc_growth=1.5"]).gc_growth == 3 << 19
    config = MountConfig.build(store, target, None, ["gc_growth=1"])
    assert "gc_growth=1" not in fuse_options(config)
    with pytest.raises(InvalidInput, match="gc_growth"):
        MountConfig.build(store, target, None, ["gc_growth=-1"])


def test_collector_runs_gc_once_the_store_has_grown_enough(store: Path) -> None:
    """Due once the store grew by its size after the last gc (and by the floor). The gc
    then gives back a saved state a later save replaced before the commit, but keeps a
    deleted branch's recent commit (restorable by id for GRACE_SECONDS)."""
    with Repository.open(store) as repo:
        collector = Collector(repo, growth=1 << 20)
        assert not collector.due()
        repo.create_branch("scratch")
        deleted = repo.commit({"kept": os.urandom(1 << 20)}, "soon deleted", branch="scratch")
        repo.delete_branch("scratch")
        tree = repo.worktree()
        node = tree.create(tree.root, b"big")
        tree.set_content(node, os.urandom(4 << 20))
        tree.save()  # persisted, then replaced before any commit: garbage
        tree.set_content(node, b"final")
        tree.commit("final")
        assert collector.due()
        grown = repo.store.disk_bytes()
        collector.collect_if_due()
        assert repo.store.disk_bytes() < grown - (3 << 20) and not collector.due()
        assert repo.read("HEAD", "big") == b"final" and repo.fsck().ok
        assert len(repo.read(hex_id(deleted), "kept")) == 1 << 20


def test_a_failing_automatic_gc_is_logged_and_the_mount_lives_on(
    store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Any error of the automatic gc ended the daemon (it runs in the mount's nursery):
    the mount went 'Transport endpoint is not connected' mid-workload."""
    with Repository.open(store) as repo:
        collector = Collector(repo, growth=1)
        repo.commit({"f": os.urandom(4 << 20)}, "grow")
        assert collector.due()

        def broken_gc(**_: object) -> None:
            raise FileNotFoundError(2, "No such file or directory", "objects/001601.blob")

        monkeypatch.setattr(repo, "gc", broken_gc)
        collector.collect_if_due()  # no exception
        assert "automatic gc failed" in caplog.text and "001601.blob" in caplog.text
        monkeypatch.undo()
        assert repo.fsck().ok


def test_an_automatic_gc_that_cannot_start_a_thread_is_tried_again(
    store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A process out of threads: trio.to_thread raised "can't start new thread" outside
    the collector's try, into the mount's nursery, and the whole mount ended. It is
    logged now, and the gc runs at a later check."""
    real_run_sync = trio.to_thread.run_sync
    calls: list[object] = []

    async def out_of_threads_once(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(fn)
        if len(calls) == 1:
            raise RuntimeError("can't start new thread")
        return await real_run_sync(fn, *args, **kwargs)

    with Repository.open(store) as repo:
        collector = Collector(repo, growth=1, check_seconds=0.01)
        repo.commit({"f": os.urandom(4 << 20)}, "grow")
        monkeypatch.setattr(trio.to_thread, "run_sync", out_of_threads_once)

        async def collect_until_done() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(collector.run)
                while collector.due():
                    await trio.sleep(0.01)
                nursery.cancel_scope.cancel()

        trio.run(collect_until_done)
        assert len(calls) >= 2 and "can't start new thread" in caplog.text
        assert repo.fsck().ok


def test_a_side_job_that_fails_ends_alone_not_the_mount(caplog: pytest.LogCaptureFixture) -> None:
    """The workspace index, read-ahead tuning, the gc and the quiet-window timer run in
    the mount's nursery: an error one of them did not expect ended the whole daemon."""

    async def broken() -> None:
        raise RuntimeError("a bug")

    async def cancelled_side_by_side() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(side_job, "the failing job", broken)
            nursery.start_soon(side_job, "a job that runs on", trio.sleep_forever)
            await trio.sleep(0.05)
            nursery.cancel_scope.cancel()  # trio.Cancelled still ends a side job

    trio.run(cancelled_side_by_side)
    assert "the failing job stopped on an error" in caplog.text and "a bug" in caplog.text
    assert "runs on stopped" not in caplog.text


def test_fuse_options_name_the_store_and_keep_permissions(store: Path, tmp_path: Path) -> None:
    odd = tmp_path / "a,b"
    odd.mkdir()
    options = fuse_options(MountConfig.build(store, odd, None, ["ro"]))
    assert {"default_permissions", "subtype=helixfs", "ro"} <= options
    assert f"fsname={store}" in options
    with_comma = fuse_options(MountConfig(odd, odd))
    assert "fsname=" + str(odd).replace(",", "\\,") in with_comma


def test_mount_lock_is_exclusive_and_names_its_holder(store: Path) -> None:
    first = MountLock(store)
    first.acquire(Path("/mnt/work"))
    try:
        assert is_locked(store)
        holder = read_holder(store)
        assert holder is not None and holder.pid == os.getpid()
        with pytest.raises(StoreLocked, match="already mounted at /mnt/work"):
            MountLock(store).acquire(Path("/elsewhere"))
    finally:
        first.release()
    assert not is_locked(store) and read_holder(store) is None
    again = MountLock(store)
    again.acquire(Path("/elsewhere"))
    again.release()


def test_the_lock_refusal_follows_the_state_its_holder_recorded(store: Path) -> None:
    """Starting, serving at a mount point that is gone (a lazy umount with files still
    open: not one to `helix umount`), and closing after its FUSE loop ended."""
    first = MountLock(store)
    first.acquire(Path("/mnt/not-mounted"))
    try:
        with pytest.raises(StoreLocked, match="starting up"):
            MountLock(store).acquire(Path("/elsewhere"))
        first.note(SERVING)
        with pytest.raises(StoreLocked) as refused:
            MountLock(store).acquire(Path("/elsewhere"))
        assert f"still held by helix daemon pid {os.getpid()}" in str(refused.value)
        assert "detached lazily" in str(refused.value)
        assert "helix umount" not in str(refused.value)
        first.note(CLOSING)
        with pytest.raises(StoreLocked, match="still committing and closing"):
            MountLock(store).acquire(Path("/elsewhere"))
    finally:
        first.release()


def test_umount_finds_the_daemon_of_a_mount_point_detached_lazily(
    store: Path, tmp_path: Path
) -> None:
    """The daemon (here: this process, holding the lock) still serves files open under
    a mount point no table shows: umount names it; --lazy is done already; once it is
    closing, umount waits for it to let go, as any umount does (here: not at all, so
    it says the daemon is still finishing)."""
    point = tmp_path / "detached"
    point.mkdir()
    lock = MountLock(store)
    lock.acquire(point)
    lock.note(SERVING)
    try:
        with pytest.raises(Busy, match=f"detached already .*kill {os.getpid()}"):
            unmount(point)
        assert os.path.realpath(unmount(point, lazy=True) or "") == os.path.realpath(store)
        lock.note(CLOSING)
        with pytest.raises(HelixError, match="still finishing"):  # it waited for it
            unmount(point, wait=0)
    finally:
        lock.release()
    with pytest.raises(InvalidInput, match="not a HelixFS mount"):
        unmount(point)


def test_command_name_skips_global_options() -> None:
    assert command_name(["--json", "log", "-n", "3"]) == "log"
    assert command_name(["--version"]) is None


def test_long_readers_of_history_run_off_the_fuse_thread(store: Path) -> None:
    """`experiment compare` and `blame` can read history for seconds, and the first hook
    after a mount imports the memory engine: on the trio thread (the FUSE loop's) they
    stalled the mount meanwhile. `log` stays there."""
    threads: dict[str, threading.Thread] = {}

    def record(argv: list[str], out: TextIO, err: TextIO) -> int:
        threads[" ".join(argv)] = threading.current_thread()
        return 0

    commands = [["--json", "experiment", "compare", "a", "b"], ["blame", "f"], ["log"]]
    commands += [["experiment", "list"], ["hook", "SessionStart", "--input", "{}"]]
    with ServedStore(store, record) as running:
        for argv in commands:
            assert forward(store, argv, io.StringIO(), io.StringIO()) == 0
        loop = running._thread
    assert threads["--json experiment compare a b"] is not loop
    assert threads["blame f"] is not loop
    assert threads["hook SessionStart --input {}"] is not loop
    assert threads["log"] is loop and threads["experiment list"] is loop


class ServedStore:
    """A ControlServer for `store` on a trio loop in a background thread."""

    def __init__(self, store: Path, runner: CommandRunner | None = None) -> None:
        self.repo = Repository.open(store)
        self.server = ControlServer(
            store, runner or (lambda argv, out, err: run_in_process(argv, self.repo, out, err))
        )
        self._started = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as scope:
            self._cancel = scope
            async with trio.open_nursery() as nursery:
                await nursery.start(self.server.serve)
                self._started.set()

    def __enter__(self) -> ServedStore:
        self._thread.start()
        assert self._started.wait(60)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None and self._cancel is not None
        trio.from_thread.run_sync(self._cancel.cancel, trio_token=self._token)
        self._thread.join(10)
        self.repo.close()


@pytest.fixture
def served(store: Path) -> Iterator[ServedStore]:
    with ServedStore(store) as running:
        yield running


def test_forwarded_commands_run_in_the_daemon_process(served: ServedStore, store: Path) -> None:
    served.repo.commit({b"a.txt": b"one\n"}, "add a")
    out, err = io.StringIO(), io.StringIO()
    assert forward(store, ["cat", "HEAD", "a.txt"], out, err) == 0
    assert out.getvalue() == "one\n" and err.getvalue() == ""
    assert forward(store, ["log", "--json"], out := io.StringIO(), io.StringIO()) == 0
    assert '"add a"' in out.getvalue()


def test_forwarded_errors_and_usage_keep_their_exit_codes(served: ServedStore, store: Path) -> None:
    err = io.StringIO()
    assert forward(store, ["cat", "HEAD", "missing"], io.StringIO(), err) == 1
    assert err.getvalue().startswith("helix: error:")
    assert forward(store, ["bogus-command"], io.StringIO(), io.StringIO()) == 2


def test_forwarded_ref_moves_reach_the_daemons_repository(served: ServedStore, store: Path) -> None:
    first = served.repo.commit({b"f": b"1"}, "one")
    served.repo.commit({b"f": b"2"}, "two")
    moved: list[str] = []
    served.repo.subscribe(moved.append)
    served.repo.worktree()  # a live worktree, as the mount has
    assert forward(store, ["reset", "--hard", first.hex()], io.StringIO(), io.StringIO()) == 0
    assert served.repo.read("HEAD", b"f") == b"1"
    assert moved == ["main"]


def test_binary_output_survives_the_socket(served: ServedStore, store: Path) -> None:
    blob = bytes(range(256))
    served.repo.commit({b"bin": blob}, "binary")

    class Binary(io.TextIOWrapper):
        pass

    raw = io.BytesIO()
    out = Binary(raw, encoding="utf-8")
    assert forward(store, ["cat", "HEAD", "bin"], out, io.StringIO()) == 0
    out.flush()
    assert raw.getvalue() == blob


def test_socket_is_removed_when_the_server_stops(store: Path) -> None:
    with ServedStore(store):
        assert (store / "control.sock").exists()
    assert not (store / "control.sock").exists()
    assert forward(store, ["log"], io.StringIO(), io.StringIO()) is None


def test_a_control_request_that_breaks_the_server_costs_only_its_connection(
    served: ServedStore, store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A request nested too deep for json (a RecursionError, no ValueError) escaped the
    connection's handler into the mount's nursery: one bad client ended the mount."""
    frame = b"[" * 100_000
    with socket.socket(socket.AF_UNIX) as client, addressable(store / "control.sock") as at:
        client.connect(at)
        client.sendall(FRAME_LENGTH.pack(len(frame)) + frame)
        assert client.recv(1) == b""  # closed without an answer
    assert "control connection failed" in caplog.text
    out = io.StringIO()
    assert forward(store, ["log", "--json"], out, io.StringIO()) == 0


def test_a_command_that_panics_is_an_internal_error_not_the_end_of_the_mount(
    store: Path,
) -> None:
    """A Rust panic (rocksdict, blake3) is a BaseException: it went past the command's
    `except Exception` and ended the daemon. The client is told now, as of any bug."""
    panic = next(c for c in BaseException.__subclasses__() if c.__module__ == "pyo3_runtime")

    def panicking(argv: list[str], out: TextIO, err: TextIO) -> int:
        if argv == ["gc"]:
            raise panic("index out of bounds")
        out.write("alive\n")
        return 0

    with ServedStore(store, panicking):
        err = io.StringIO()
        assert forward(store, ["gc"], io.StringIO(), err) == 1
        assert "internal error in the helix daemon" in err.getvalue()
        out = io.StringIO()
        assert forward(store, ["log"], out, io.StringIO()) == 0 and out.getvalue() == "alive\n"


def test_the_session_cleanup_detaches_its_own_mounts_only(tmp_path: Path) -> None:
    """The conftest's last-resort unmount took every HelixFS mount whose path merely
    started with pytest's base folder: pytest-79 detached pytest-795's live mounts too,
    under a test session running beside it."""
    base = Path("/tmp/pytest-of-u/pytest-79")
    mine, beside = base / "t0" / "mnt0", Path("/tmp/pytest-of-u/pytest-795/t0/mnt0")
    table = tmp_path / "mountinfo"
    table.write_text(
        f"61 1 0:50 / {mine} rw - fuse.helixfs /s0 rw\n"
        f"62 1 0:51 / {beside} rw - fuse.helixfs /s1 rw\n"
        f"63 1 0:52 / {base}/t1 rw - tmpfs tmpfs rw\n"
    )
    assert helix_mounts_under(base, table) == [mine]


def test_the_fuse_session_is_not_closed_under_a_running_invalidation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An invalidation can wait in the kernel for as long as a request the ended loop
    never answers holds a page or a directory. The unmount gave it 5 s, then closed the
    FUSE session anyway: libfuse freed it with the call still inside, to return into
    freed memory. The session now stays open (the process's exit closes it), and the
    mount is detached. Here the kernel's wait is an event the test sets, and there is
    no device to abort (test_mount_daemon stages the real wait, which an abort ends).
    Operations.close() and the unmount both stop the thread: they share one wait."""
    kernel_done, inside = threading.Event(), threading.Event()

    def waiting_in_the_kernel(ino: int) -> None:
        inside.set()
        kernel_done.wait(60)

    closed: list[bool] = []
    monkeypatch.setattr(pyfuse3, "invalidate_inode", waiting_in_the_kernel)
    monkeypatch.setattr(pyfuse3, "close", lambda unmount=True: closed.append(unmount))
    monkeypatch.setattr(edge, "STOP_SECONDS", 0.1)
    invalidator = edge.Invalidator()
    invalidator.start()
    invalidator.inode(2)
    assert inside.wait(60)
    try:
        assert not invalidator.stop()  # Operations.close() stops it first
        # the unmount asks again, within the same STOP_SECONDS: no second wait
        monkeypatch.setattr(edge, "STOP_SECONDS", 3600.0)
        _close_fuse(tmp_path / "mnt", None, invalidator)
        assert closed == [] and "stays open until the daemon exits" in caplog.text
    finally:
        kernel_done.set()
    assert invalidator.ended()  # once the call returned, the thread ends
    _close_fuse(tmp_path / "mnt", None, invalidator)
    assert closed == [True]


def test_a_read_that_races_the_end_of_the_connection_ends_the_loop_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """CI: the last close of a lazily detached mount ended the daemon with status 1.
    The kernel shuts the connection down as the sb goes; a read that had just taken a
    request off the queue fails with ECONNABORTED, which pyfuse3 raises out of its
    nursery (libfuse treats only ENODEV as the end). The race is too narrow to stage
    here, so the kernel's answer is raised where pyfuse3 raises it."""

    async def loop_whose_read_races_the_abort(**_: int) -> None:
        async def session_loop() -> None:
            raise ConnectionAbortedError(errno.ECONNABORTED, "fuse_session_receive_buf failed")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(session_loop)

    monkeypatch.setattr(pyfuse3, "main", loop_whose_read_races_the_abort)
    trio.run(answer_fuse, tmp_path)
    assert "was shut down while a request was being read (ECONNABORTED)" in caplog.text

    async def loop_that_fails(**_: int) -> None:
        raise OSError(errno.EIO, "a device that fails")

    monkeypatch.setattr(pyfuse3, "main", loop_that_fails)
    with pytest.raises(OSError, match="a device that fails"):  # any other still ends it
        trio.run(answer_fuse, tmp_path)


def _index_rows(db: Path) -> tuple[set[tuple[str, str]], set[tuple[str, int, int, str]]]:
    conn = apsw.Connection(str(db))
    try:
        files = {
            (str(p), str(h)) for p, h in conn.execute("SELECT path, file_hash FROM workspace_files")
        }
        chunks = {
            (str(p), int(a), int(b), str(h))
            for p, a, b, h in conn.execute("SELECT path, start_line, end_line, hash FROM chunks")
        }
        return files, chunks
    finally:
        conn.close()


def test_a_commits_texts_are_read_when_asked_for_and_only_then(tmp_path: Path) -> None:
    """A full index pass gets the commit's text files as a lazy mapping; asking whether
    a path is among them read the file (Mapping's `in` reads the value), once per path
    the index knew, at every full pass."""
    with Repository.init(tmp_path / "store") as repo:
        repo.commit({"a.py": b"print(1)\n", "b.bin": b"\x00\x01", "c.md": b"# C\n"}, "one")
        texts = CommitTexts(repo, hex_id(repo.resolve()))
        reads: list[bytes] = []
        read = repo.read

        def counted(rev: str, path: bytes | str) -> bytes:
            reads.append(bytes(path, "utf-8") if isinstance(path, str) else path)
            return read(rev, path)

        repo.read = counted  # type: ignore[method-assign]
        assert sorted(texts) == ["a.py", "c.md"] and len(texts) == 2  # no binary
        assert "a.py" in texts and "b.bin" not in texts and "zz" not in texts
        assert reads == []
        assert texts["c.md"] == b"# C\n" and reads == [b"c.md"]


def test_the_workspace_index_follows_a_diff_as_a_full_pass_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")
    text = b"def handler(request):\n    return request.body\n"
    with Repository.init(tmp_path / "store") as repo:
        repo.commit(
            {f"src/m{i}.py": text + b"# %d\n" % i for i in range(40)}
            | {"docs/a.md": b"# A\n", "grows.txt": b"small\n", "turns.bin": b"text\n"},
            "one",
        )
        daemon_side = MemoryFiles(tmp_path / "store", repo)
        first = daemon_side.index_commit(repo.resolve())
        assert first.files_seen == 43
        repo.commit(
            {
                "src/m1.py": text + b"# changed\n",
                "src/m2.py": None,
                "docs/b.md": b"# B\n",
                "node_modules/x.js": b"ignored\n",
                "grows.txt": b"x" * (600 << 10),  # past the size limit: leaves the index
                "turns.bin": b"\x00binary",
            },
            "two",
        )
        diffed = daemon_side.index_commit(repo.resolve())
        assert diffed.files_seen == 2  # m1.py and b.md were read, not the 40 others
        daemon_side.close()
        (tmp_path / "full").mkdir()
        full_side = MemoryFiles(tmp_path / "full", repo)
        full_side.index_commit(repo.resolve())
        full_side.close()
    assert _index_rows(tmp_path / "store" / MEMORY_DB) == _index_rows(tmp_path / "full" / MEMORY_DB)


def test_a_first_index_starts_with_the_files_of_the_last_commits(tmp_path: Path) -> None:
    """Issue 30: the files an agent works on (every save is a commit) are embedded before
    the rest of the workspace, so a search finds them first."""
    with Repository.init(tmp_path / "store") as repo:
        repo.commit({f"src/m{i}.py": b"x = %d\n" % i for i in range(30)}, "many")
        repo.commit({"src/m3.py": b"x = 33\n"}, "edit m3")
        repo.commit({"docs/new.md": b"# new\n", "src/m5.py": None}, "add a doc")
        assert recently_changed(repo, repo.resolve()) == ["docs/new.md", "src/m3.py"] + [
            p for p in sorted(f"src/m{i}.py" for i in range(30)) if p != "src/m3.py"
        ]
        assert recently_changed(repo, repo.resolve(), depth=1) == ["docs/new.md"]


def test_the_quick_request_wait_applies_only_where_it_was_read() -> None:
    """ADR 0022: it replaces a private pyfuse3 function, so it refuses every case it
    was not written for (pyfuse3's own wait stays)."""
    import pyfuse3

    from helixfs.daemon.fuseloop import use_quick_wait

    own_wait = pyfuse3._wait_fuse_readable
    assert not use_quick_wait(2)  # several readers: the lock it skips orders them
    assert not use_quick_wait(1)  # no FUSE session in this process
    assert pyfuse3._wait_fuse_readable is own_wait


@pytest.mark.timeout(60)
def test_a_command_that_ran_is_answered_even_if_the_daemon_stops_meanwhile(store: Path) -> None:
    """Unmounting while `helix gc` runs on its worker thread: the daemon waits for the
    gc to end, and must then still send its answer. It used to drop the connection
    (the client said "closed the control connection mid-answer", exit 1) although the
    gc had run to its end; a `helix commit` caught the same way would be retried."""
    served = ServedStore(store).__enter__()  # this test stops its server itself
    try:
        served.repo.create_branch("gone")
        served.repo.commit({b"g": os.urandom(4096)}, "garbage", branch="gone")
        served.repo.delete_branch("gone")
        stopped: list[bool] = []

        def stop_the_daemon() -> list[ObjectId]:  # gc's first hold of the lock: it is running
            if not stopped:
                stopped.append(True)
                assert served._token is not None and served._cancel is not None
                trio.from_thread.run_sync(served._cancel.cancel, trio_token=served._token)
            return []

        served.repo.keep_in_use(stop_the_daemon)
        out, err = io.StringIO(), io.StringIO()
        code = forward(store, ["gc", "--json"], out, err)
        assert stopped and (code, err.getvalue()) == (0, "")
        assert '"dry_run": false' in out.getvalue()
    finally:
        served._thread.join(10)
        served.repo.close()


def test_options_that_are_not_finite_numbers_are_refused(store: Path, tmp_path: Path) -> None:
    """float() reads "nan" and "inf": a nan window crashed the daemon on the first save
    (trio refuses a nan deadline), an infinite gc_growth was an OverflowError traceback."""
    target = tmp_path / "mnt"
    target.mkdir()
    for option in ("gc_growth=inf", "gc_growth=nan", "quiet_window=nan", "quiet_window=-inf"):
        with pytest.raises(InvalidInput, match="needs a number"):
            MountConfig.build(store, target, None, [option])
    for window in (math.nan, math.inf):
        with pytest.raises(InvalidInput, match="quiet-window"):
            MountConfig.build(store, target, window)


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_while_the_daemon_runs_a_command_says_it_goes_on(store: Path, as_json: bool) -> None:
    """The daemon cannot be told to stop a command it has started: a client interrupted
    while waiting said only "interrupted", as if the command had not happened (an
    import landed later). It now says the daemon finishes it, and exits 130; under
    --json as an error document too."""
    started, release = threading.Event(), threading.Event()

    def slow_command(argv: list[str], out: TextIO, err: TextIO) -> int:
        started.set()
        release.wait(30)
        return 0

    with ServedStore(store, slow_command):
        client = subprocess.Popen(
            [sys.executable, "-m", "helixfs.cli.main", "--store", str(store), "log"]
            + ["--json"] * as_json,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        try:
            assert started.wait(30)
            client.send_signal(signal.SIGINT)
            out, err = client.communicate(timeout=30)
        finally:
            release.set()
            client.kill()
    assert client.returncode == 130
    assert "still finishes this command" in err and "Traceback" not in err
    if as_json:
        error = json.loads(out)["error"]
        assert error["kind"] == "Interrupted" and "still finishes" in error["message"]
    else:
        assert out == ""


def test_a_search_name_that_is_not_utf8_is_invalid_not_an_io_error(store: Path) -> None:
    """`cat .helix/search/$'caf\\xe9'` was EIO (the engine's UnicodeEncodeError, or the
    tokenizer's TypeError with the model); bad input is EINVAL and writes nothing."""
    files = MemoryFiles(store)
    try:
        answer = files.entries()[b"search"]
        assert isinstance(answer, QueryDir)
        with pytest.raises(InvalidInput, match="UTF-8") as refused:
            answer.child(b"caf\xe9").render()  # type: ignore[attr-defined]
        assert refused.value.errno == errno.EINVAL
    finally:
        files.close()


def test_a_hook_reads_a_lexical_memory_until_the_kept_one_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADR 0052: the first hook after a mount opened the daemon's kept memory itself: the
    model (1.3 s here), the vector indexes. It now reads memory.db through a reader of
    its own (ADR 0083: not the engine, whose imports alone are ~100 ms), the kept one
    opening in the next pause of the hooks, and the kept one once it is open."""
    monkeypatch.setattr(memoryfiles, "HOOK_PAUSE", 0.0)
    store = tmp_path / "store"
    store.mkdir()
    with Memory.open(store / MEMORY_DB, None, warn_lexical=False) as memory:
        memory.remember("the parser holds the session lock", type="gotcha")
    files = MemoryFiles(store)
    try:
        with files.for_a_hook() as source:
            interim = source()
            assert isinstance(interim, Checkpointing) and interim.lexical_only
            assert "session lock" in interim.context().text
        kept = files._kept()
        wait_until(lambda: kept.ready() is not None)  # opened in the pause after the hook
        assert files.memory() is kept.ready()
        with files.for_a_hook() as source:
            assert source() is kept.ready()
    finally:
        files.close()


def test_the_kept_memory_does_not_open_beside_a_burst_of_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its opening (the engine's imports, the model) shares the interpreter with the
    hooks: it waits for a pause of HOOK_PAUSE in them (here longer than the test)."""
    monkeypatch.setattr(memoryfiles, "HOOK_PAUSE", 3600.0)
    store = tmp_path / "store"
    store.mkdir()
    Memory.open(store / MEMORY_DB, None, warn_lexical=False).close()
    files = MemoryFiles(store)
    try:
        for _ in range(3):
            with files.for_a_hook() as source:
                assert isinstance(source(), Checkpointing)
        trio.run(files.open_soon, 0)
        assert files._kept().ready() is None
        assert files.memory() is files._kept().ready()  # a command that needs it opens it
    finally:
        files.close()


def test_a_mount_imports_what_hooks_run_before_it_is_ready(tmp_path: Path) -> None:
    """warm_hooks runs `hook SessionStart --warm` through the daemon's runner, on a
    thread the mount joins before it says it is ready; not for a store without memory."""
    ran: list[list[str]] = []
    unused, used = tmp_path / "unused", tmp_path / "used"
    unused.mkdir()
    used.mkdir()
    Memory.open(used / MEMORY_DB, None, warn_lexical=False).close()
    assert MemoryFiles(unused).warm_hooks(lambda argv: ran.append(argv)) is None
    files = MemoryFiles(used)
    try:
        warming = files.warm_hooks(lambda argv: ran.append(argv))
        assert warming is not None
        warming.join(10)
        assert ran == [["hook", "SessionStart", "--warm"]]
        assert files._kept().ready() is None  # imported, not opened
    finally:
        files.close()


def test_a_mount_opens_its_memory_soon_only_if_the_store_has_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So an agent's first hook finds the model loaded; a store that never used memory
    gets no memory.db and loads no model."""
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")  # the opening, not the model, is tested
    unused, used = tmp_path / "unused", tmp_path / "used"
    unused.mkdir()
    used.mkdir()
    Memory.open(used / MEMORY_DB, None, warn_lexical=False).close()
    for store in (unused, used):
        files = MemoryFiles(store)
        try:
            trio.run(files.open_soon, 0)
            kept = files._kept()
            if store is used:
                wait_until(lambda: kept.ready() is not None)  # noqa: B023 - called here
        finally:
            files.close()
    assert not (unused / MEMORY_DB).exists()


@pytest.fixture
def workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Repository, MemoryFiles]]:
    """A store's repository and the daemon's memory files over it, search lexical."""
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")
    with Repository.init(tmp_path / "store") as repo:
        files = MemoryFiles(tmp_path / "store", repo)
        try:
            yield repo, files
        finally:
            files.close()


def test_the_workspace_index_survives_a_gc_of_the_commit_it_was_on(
    workspace: tuple[Repository, MemoryFiles],
) -> None:
    """`helix reset --hard OLD` then `helix gc` drops the commit the index was on: the
    diff from it failed (NotFound), the daemon gave up on that HEAD, and a search kept
    finding the reset-away file until the next commit. It now walks the tree anew."""
    repo, files = workspace
    old = repo.commit({"a.txt": b"alpha apples\n"}, "old")
    files.index_commit(old)
    repo.commit({"gone.txt": b"charlie cherries\n"}, "reset away")
    files.index_commit(repo.resolve())
    assert "gone.txt" in files.search("cherries")
    repo.reset_hard(hex_id(old))
    repo.gc()
    files.index_commit(repo.resolve())
    assert "gone.txt" not in files.search("cherries")
    assert "a.txt" in files.search("apples")


def test_a_lexical_search_file_says_it_is_lexical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.helix/search/QUERY` is all a mount's user sees: the warning is in it."""
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")
    (tmp_path / "store").mkdir()
    files = MemoryFiles(tmp_path / "store")
    try:
        files.memory().remember("The deploy runs from the release branch")
        answer = files.search("deploy")
        assert answer.startswith(LEXICAL_NOTE) and "release branch" in answer
    finally:
        files.close()


def test_the_first_search_is_answered_while_the_memory_opens_on_its_own_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA: the first `.helix/search` or `.helix/context` read of a daemon's life loaded
    the embedding model and built the vector indexes on the FUSE loop, and every process
    using the mount waited (0.75 s for a `stat` with 3 memories, 3-4 s at 100,000). Until
    the kept memory is open, reads are answered lexically and say so. Here the model
    loads until the test lets it: a read that waited for it would never return."""
    (tmp_path / "store").mkdir()
    with Memory.open(tmp_path / "store" / MEMORY_DB, warn_lexical=False) as setup:
        setup.remember("The deploy runs from the release branch")
    loading, loaded = threading.Event(), threading.Event()

    def slow_model(store: Path) -> None:
        loading.set()
        loaded.wait(60)

    monkeypatch.setattr(memoryfiles, "_embedder", slow_model)
    files = MemoryFiles(tmp_path / "store")
    try:
        answers: list[str] = []
        reader = threading.Thread(target=lambda: answers.append(files.search("deploy")))
        reader.start()
        reader.join(30)
        assert answers, "the search waited for the model"
        assert answers[0].startswith(LOADING_NOTE) and "release branch" in answers[0]
        assert "release branch" in files.context()
        assert loading.wait(30)  # the kept memory opens meanwhile, on its own thread
        loaded.set()
        wait_until(lambda: LOADING_NOTE not in files.search("deploy"), 30, "the kept memory")
        answer = files.search("deploy")  # the kept memory (lexical: this model is None)
        assert answer.startswith(LEXICAL_NOTE) and "release branch" in answer
    finally:
        loaded.set()
        files.close()


def test_a_search_while_a_command_holds_the_memory_is_answered_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forwarded memory command holds the kept memory on a worker thread, for seconds
    if it is long (an import of 100,000 memories) or waits for another process's write.
    A `.helix/search` meanwhile waited on the FUSE loop, and the whole mount with it.
    Here the command is a `remember` that waits for another process's write."""
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")
    (tmp_path / "store").mkdir()
    files = MemoryFiles(tmp_path / "store")
    memory = files.memory()
    memory.remember("The deploy runs from the release branch")
    other = apsw.Connection(str(tmp_path / "store" / MEMORY_DB))
    other.execute("BEGIN IMMEDIATE")  # another process, writing
    try:
        command = threading.Thread(target=lambda: memory.remember("CI runs on two cores"))
        command.start()

        def held() -> bool:
            with memory.unless_busy(0) as free:
                return not free

        wait_until(held, 30, "the command holding the memory")
        answer = files.search("deploy")
        assert answer.startswith(BUSY_NOTE) and "release branch" in answer
        assert command.is_alive(), "the search waited for the command"
    finally:
        other.execute("COMMIT")
        other.close()
    command.join(30)
    answer = files.search("cores")
    assert answer.startswith(LEXICAL_NOTE) and "two cores" in answer  # the kept memory
    files.close()


def _full_memory_db_and_a_new_head(
    files: MemoryFiles, repo: Repository
) -> tuple[apsw.Connection, CommitId]:
    """The memory database held at its size (SQLite's max_page_count: a full disk for
    it), then a commit of 50 files for the workspace indexer to fail on."""
    files.search("anything")  # opens the database; the indexer may start
    conn = files.memory()._conn
    pages = fetch_one(conn, "PRAGMA page_count")
    assert pages is not None
    conn.execute(f"PRAGMA max_page_count = {pages[0]}")
    head = repo.commit({f"f{i}.txt": b"words %d\n" % i * 400 for i in range(50)}, "big")
    return conn, head


def test_a_workspace_index_that_fails_in_sqlite_does_not_end_the_mount(
    workspace: tuple[Repository, MemoryFiles],
) -> None:
    """A full disk under memory.db (apsw.FullError, not a HelixError) escaped the
    indexer task, whose nursery is the daemon's: the whole mount went down. The
    database is held at its size here with max_page_count, SQLite's own limit."""
    repo, files = workspace
    conn, head = _full_memory_db_and_a_new_head(files, repo)

    async def index_until_tried() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(files.index_forever, 0.01)
            while files.indexed != head:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()

    trio.run(index_until_tried)
    assert "f1.txt" not in files.search("words")  # that pass failed; search goes on


def test_a_failed_workspace_index_pass_is_tried_again_without_a_save(
    workspace: tuple[Repository, MemoryFiles],
) -> None:
    """A pass that failed (a full disk, a locked database) was tried again only when
    HEAD moved: once the disk had room again, search missed the workspace's files
    until the next save. It is now retried on its own, after a growing pause."""
    repo, files = workspace
    conn, head = _full_memory_db_and_a_new_head(files, repo)

    async def index_until_found() -> bool:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(files.index_forever, 0.01)
            while files.indexed != head:  # the first pass, which fails
                await trio.sleep(0.01)
            assert "f1.txt" not in files.search("words")
            conn.execute("PRAGMA max_page_count = 1073741823")  # room again
            with trio.move_on_after(60):  # only against a hang: retries are quick
                while "f1.txt" not in files.search("words"):
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        return "f1.txt" in files.search("words")

    assert trio.run(index_until_found)
    assert repo.resolve("HEAD") == head  # found with no save in between


def test_a_slow_command_of_a_running_daemon_is_waited_for(store: Path) -> None:
    """The client looks at the daemon while it waits (a stopped one never answers): a
    daemon that runs on, only slowly, is no alarm; its answer is waited for."""

    def slow_command(argv: list[str], out: TextIO, err: TextIO) -> int:
        threading.Event().wait(3 * WATCH_SECONDS)  # several looks at the daemon
        out.write("done\n")
        return 0

    with ServedStore(store, slow_command):
        out, err = io.StringIO(), io.StringIO()
        assert forward(store, ["gc"], out, err) == 0
    assert (out.getvalue(), err.getvalue()) == ("done\n", "")


# A daemon in a process of its own, so that the test can stop it: its one command
# says it has started, then takes as long as it likes.
STOPPABLE_DAEMON = """
import sys, threading, trio
from pathlib import Path
from helixfs.daemon.control_server import ControlServer
from helixfs.daemon.lock import MountLock

store, started = Path(sys.argv[1]), Path(sys.argv[2])
MountLock(store).acquire(store.parent / "mnt")

def command(argv, out, err):
    started.touch()
    threading.Event().wait(600)
    return 0

async def main():
    async with trio.open_nursery() as nursery:
        await nursery.start(ControlServer(store, command).serve)
        print("serving", flush=True)

trio.run(main)
"""


def _stoppable_daemon(store: Path, started: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", STOPPABLE_DAEMON, str(store), str(started)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def _forwarding(store: Path, times: int) -> tuple[threading.Thread, list[BaseException]]:
    """A thread (not started) that forwards `helix log` `times` times, one after the
    other, and the list where it puts what each raised."""
    failures: list[BaseException] = []

    def clients() -> None:
        for _ in range(times):
            try:
                forward(store, ["log"], io.StringIO(), io.StringIO())
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                failures.append(exc)

    return threading.Thread(target=clients, daemon=True), failures


@pytest.mark.timeout(60)
def test_a_daemon_stopped_while_it_runs_the_command_is_named(store: Path, tmp_path: Path) -> None:
    """The client waited for the answer of a daemon stopped with SIGSTOP forever. It now
    notices, and says the command runs once the daemon is resumed."""
    started = tmp_path / "started"
    daemon = _stoppable_daemon(store, started)
    waiting, failures = _forwarding(store, times=1)
    try:
        assert daemon.stdout is not None and daemon.stdout.readline() == "serving\n"
        waiting.start()
        wait_until(started.exists, what="the command to start")
        os.kill(daemon.pid, signal.SIGSTOP)
        waiting.join(50)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
        daemon.kill()
        daemon.wait()
    assert not waiting.is_alive(), "the client still waits for a stopped daemon"
    assert len(failures) == 1 and isinstance(failures[0], DaemonNotAnswering), failures
    message = str(failures[0])
    assert f"(pid {daemon.pid}) is stopped" in message and "then runs this command" in message


@pytest.mark.timeout(60)
def test_clients_of_a_stopped_daemon_are_refused_past_its_listen_backlog(
    store: Path, tmp_path: Path
) -> None:
    """A stopped daemon accepts no connection: once its listen backlog was full, the
    next client waited in connect() for good. Every one is now told, and none of
    them sent its command."""
    daemon = _stoppable_daemon(store, tmp_path / "started")
    waiting, failures = _forwarding(store, times=24)  # past the daemon's backlog of 16
    try:
        assert daemon.stdout is not None and daemon.stdout.readline() == "serving\n"
        os.kill(daemon.pid, signal.SIGSTOP)
        wait_until(lambda: process_trouble(daemon.pid) == STOPPED, what="the stop")
        waiting.start()
        waiting.join(50)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
        daemon.kill()
        daemon.wait()
    assert not waiting.is_alive(), f"a client still waits, after {len(failures)} were told"
    assert len(failures) == 24, failures
    assert all(isinstance(f, DaemonNotAnswering) for f in failures), failures
    assert all("this command was not sent" in str(f) for f in failures), failures
    assert f"the daemon of {tmp_path / 'mnt'} (pid {daemon.pid})" in str(failures[-1])


def test_umount_shows_what_a_closing_daemon_finishes_and_waits_while_it_moves(
    tmp_path: Path,
) -> None:
    """ADR 0082: a closing daemon's notes (its push's progress) reach `helix umount`'s
    wait, each one as it comes, and the wait ends when the lock is released."""
    lock = MountLock(tmp_path)
    lock.acquire(tmp_path / "mnt")
    lock.note(CLOSING)
    heard: list[str] = []
    got = threading.Event()
    notes = ["pushing main to origin: 0 objects sent", "pushing main to origin: 1,024 objects sent"]

    def daemon() -> None:
        for text in notes:
            got.clear()
            lock.note(CLOSING, text)
            got.wait(30)
        lock.note(CLOSING, "")
        lock.release()

    def progress(text: str) -> None:
        heard.append(text)
        got.set()

    holder = threading.Thread(target=daemon)
    holder.start()
    wait_released(tmp_path, 60, progress)
    holder.join()
    assert heard == notes
    assert not is_locked(tmp_path)


def test_a_holder_record_is_whole_while_its_notes_change(tmp_path: Path) -> None:
    """Notes rewrite the lock file in place (no moment of an empty record)."""
    lock = MountLock(tmp_path)
    lock.acquire(tmp_path / "mnt")
    try:
        for text in ("a long note " * 20, "short", ""):
            lock.note(CLOSING, text)
            holder = read_holder(tmp_path)
            assert holder is not None and (holder.state, holder.detail) == (CLOSING, text)
    finally:
        lock.release()


def test_the_automatic_gc_gives_way_while_the_loop_thread_is_busy() -> None:
    """collector.Pacer pauses gc while the thread it watches uses a core, never while
    that thread sleeps, and never for more than MOST_PAUSED times gc's own work."""
    from helixfs.daemon import collector

    def watched(busy: bool, started: threading.Event, stop: threading.Event) -> None:
        started.set()
        while not stop.is_set():
            if not busy:
                stop.wait(0.01)

    for busy in (True, False):
        started, stop = threading.Event(), threading.Event()
        thread = threading.Thread(target=watched, args=(busy, started, stop))
        thread.start()
        started.wait(5)
        try:
            assert thread.ident is not None
            pacer = collector.Pacer(thread.ident, busy_share=0.05)
            for _ in range(100):  # 100 slices of gc's work, 2 ms each
                time.sleep(0.002)
                pacer(0, 0)
        finally:
            stop.set()
            thread.join(5)
        if busy:
            assert pacer.pauses > 0
            assert pacer._paused <= collector.MOST_PAUSED * (time.monotonic() - pacer._started)
        else:
            assert pacer.pauses == 0
