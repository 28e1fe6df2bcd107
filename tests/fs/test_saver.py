"""The commit policy: save at once, commit per operation (window 0) or when quiet."""

from __future__ import annotations

import errno
import math
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pyfuse3
import pytest
import trio
import trio.testing
from fs_client import CTX, ROOT, Client, Ctx, make_ops

from helixfs.errors import StoreFull
from helixfs.fs import saver
from helixfs.fs.helixdir import format_commit
from helixfs.fs.operations import Operations
from helixfs.store import space
from helixfs.store.rocks import RocksStore
from helixfs.vcs.node import SAVERS_KEPT, Savers, saved_by
from helixfs.vcs.repo import Repository


def commits(repo: Repository) -> int:
    return sum(1 for _ in repo.log("HEAD"))


def with_saver_running(ops: Operations, main: Callable[[], Awaitable[None]]) -> None:
    """Run `main` beside the saver's timer, on a clock that jumps over sleeps."""

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ops.saver.run)
            await main()
            nursery.cancel_scope.cancel()

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_window_zero_commits_every_operation(client: Client) -> None:
    repo = client.ops.repo
    start = commits(repo)
    await client.mkdir("d")
    assert commits(repo) == start + 1
    await client.write_file("d/f", b"x")  # create + close: two operations
    assert commits(repo) == start + 3
    assert repo.read("HEAD", b"d/f") == b"x"


async def test_commit_records_process_and_paths(client: Client) -> None:
    await client.write_file("who.txt", b"me")
    info = client.ops.repo.commit_info("HEAD")
    assert info.meta.get("pid") == os.getpid()
    assert info.meta.get("process")
    assert "who.txt" in str(info.meta)


async def test_a_file_opened_before_an_exec_is_saved_under_the_new_name(
    repo: Repository,
) -> None:
    """`cmd > out`: the shell's child opens out, then execs cmd, which writes it. The
    save at close names cmd (same pid), not the shell it was at open."""
    child = subprocess.Popen(
        ["sh", "-c", "read go; exec sleep 60"], stdin=subprocess.PIPE, text=True
    )
    try:
        wait_for_name(child.pid, "sh")
        ops = make_ops(repo)
        ctx = Ctx(pid=child.pid)
        fi, _ = await ops.create(ROOT, b"out", 0o644, os.O_WRONLY, ctx)
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        wait_for_name(child.pid, "sleep")
        await ops.write(fi.fh, 0, b"written by sleep")
        await ops.flush(fi.fh)
        await ops.release(fi.fh)
        info = repo.commit_info("HEAD")
        assert info.meta.get("changed") == ["out"]
        assert (info.meta.get("process"), info.meta.get("pid")) == ("sleep", child.pid)
    finally:
        child.kill()
        child.wait()


async def test_a_process_name_with_a_newline_stays_on_one_line(repo: Repository) -> None:
    """A process names itself (prctl, /proc/self/comm): a newline in it split the
    commit message, and `.helix/log`'s one line per commit, in two."""
    names_itself = "open('/proc/self/comm', 'wb').write(b'evil\\nname\\t[x 1]'); input()"
    child = subprocess.Popen([sys.executable, "-c", names_itself], stdin=subprocess.PIPE)
    try:
        wait_for_name(child.pid, "evil\nname\t[x 1]")
        ops = make_ops(repo)
        fi, _ = await ops.create(ROOT, b"f", 0o644, os.O_WRONLY, Ctx(pid=child.pid))
        await ops.release(fi.fh)
        info = repo.commit_info("HEAD")
        assert info.meta.get("process") == "evil?name?[x 1]"
        assert info.message == "evil?name?[x 1]: save f"
        first = (await Client(ops).read_file(".helix/log")).decode().splitlines()[0]
        assert first.endswith(f"[evil?name?[x 1] {child.pid}] {info.message}")
    finally:
        child.kill()
        child.wait()


def test_a_commit_folding_saves_of_several_processes_names_each(repo: Repository) -> None:
    """`echo >> f; git status`: the quiet window folds both saves into one commit, which
    said that git wrote f. It now names each process, in the order they saved."""
    children = [subprocess.Popen(["sleep", "60"]), subprocess.Popen(["tail", "-f", "/dev/null"])]
    ops = make_ops(repo, window=0.5)
    try:
        for child, name in zip(children, ("sleep", "tail"), strict=True):
            wait_for_name(child.pid, name)

        async def save(path: bytes, pid: int) -> None:
            fi, _ = await ops.create(ROOT, path, 0o644, os.O_WRONLY, Ctx(pid=pid))
            await ops.write(fi.fh, 0, b"x")
            await ops.flush(fi.fh)
            await ops.release(fi.fh)

        async def main() -> None:
            await save(b"f", children[0].pid)
            await save(b"g", children[1].pid)
            await save(b"h", children[0].pid)
            await trio.sleep(1)

        with_saver_running(ops, main)
        info = repo.commit_info("HEAD")
        sleep_pid, tail_pid = (child.pid for child in children)
        assert info.meta["changed"] == ["f", "g", "h"]
        assert info.meta["savers"] == [
            {"process": "sleep", "pid": sleep_pid},
            {"process": "tail", "pid": tail_pid},
        ]
        assert info.message == "sleep, tail: save 3 paths"
        line = format_commit(info)
        assert f"[sleep {sleep_pid}, tail {tail_pid}] sleep, tail: save 3 paths" in line
    finally:
        for child in children:
            child.kill()
            child.wait()


async def test_a_save_by_a_worker_thread_names_its_process(repo: Repository) -> None:
    """FUSE gives the id of the thread that made a request: npm's saves (libuv's worker
    threads) showed as four npm processes, `[npm 21789, npm 21792, npm 21790, ...]`."""
    waits_in_a_thread = (
        "import threading, sys\n"
        "def work():\n    print(threading.get_native_id(), flush=True); sys.stdin.read()\n"
        "t = threading.Thread(target=work); t.start(); t.join()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", waits_in_a_thread],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        thread = int(child.stdout.readline())
        assert thread != child.pid
        ops = make_ops(repo)
        fi, _ = await ops.create(ROOT, b"f", 0o644, os.O_WRONLY, Ctx(pid=thread))
        await ops.write(fi.fh, 0, b"x")
        await ops.flush(fi.fh)
        await ops.release(fi.fh)
        assert repo.commit_info("HEAD").meta.get("pid") == child.pid
    finally:
        child.kill()
        child.wait()


def test_savers_are_named_up_to_a_limit_and_counted_past_it() -> None:
    savers = Savers()
    for pid in range(1, SAVERS_KEPT + 4):
        savers.add({"process": "cc1", "pid": pid})
        savers.add({"process": "cc1", "pid": pid})  # a process saving again is one saver
    info: dict[str, Any] = {}
    savers.record(info)
    assert len(info["savers"]) == SAVERS_KEPT and info["savers_more"] == 3
    assert saved_by(info).endswith(f"cc1 {SAVERS_KEPT} +3]")
    assert saved_by({"pid": 7}) == " [pid 7]" and saved_by({"savers": "junk"}) == ""
    assert saved_by({"process": "odd\ud800\n"}) == " [odd?\\n]"  # from the API: any text
    one: dict[str, Any] = {}
    savers.clear()
    savers.add({"process": "vim", "pid": 1})
    savers.record(one)
    assert one == {}  # one process: `process` and `pid` say it all


def wait_for_name(pid: int, name: str) -> None:
    deadline = time.monotonic() + 60  # a loaded host may not run it for seconds
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/comm").read_text().removesuffix("\n") == name:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never became {name!r}")


async def test_saves_committed_early_by_an_outside_move_keep_their_process(
    repo: Repository,
) -> None:
    """A reset or merge from the CLI commits the branch's pending saves before it moves
    the ref, inside the quiet window: that commit still names the process that saved."""
    ops = make_ops(repo, window=60)
    client = Client(ops)
    await client.write_file("pending.txt", b"typed")
    assert ops.saver.pending == 1
    before = repo.resolve("HEAD")
    repo.commit({"other.txt": b"x"}, "from the API")  # settles main first
    settled = repo.commit_info("HEAD~1")
    assert list(settled.parents) == [before]
    assert settled.meta.get("pid") == os.getpid()
    assert settled.meta.get("process")
    assert settled.meta.get("changed") == ["pending.txt"]
    ops.saver.flush_now()  # the window's own commit finds nothing left to commit
    assert repo.commit_info("HEAD").message == "from the API"
    # the process noted for those saves is not carried into a later, unrelated commit
    tree = repo.worktree("main")
    tree.set_content(tree.lookup(tree.root, b"pending.txt"), b"api")
    tree.commit("by the API")
    assert "pid" not in repo.commit_info("HEAD").meta


async def test_fsync_persists_without_cutting_a_commit(repo: Repository) -> None:
    ops = make_ops(repo, window=60)
    client = Client(ops)
    start = commits(repo)
    fi, attrs = await ops.create(ROOT, b"f", 0o644, os.O_WRONLY, CTX)
    await ops.write(fi.fh, 0, b"durable")
    await ops.fsync(fi.fh, False)
    assert commits(repo) == start
    assert ops.saver.pending == 1
    await ops.release(fi.fh)
    ops.saver.flush_now()
    assert commits(repo) == start + 1
    assert repo.read("HEAD", b"f") == b"durable"
    assert await client.read_file("f") == b"durable"


@pytest.mark.parametrize("window", [0, 60])
async def test_an_fsync_is_one_synced_store_write(repo: Repository, window: float) -> None:
    """An SQLite transaction in PERSIST mode fsyncs the journal twice, the database, and
    the journal's folder. Each fsync of a written file stored it (a write), then synced
    the store (a second WAL flush); the folder's fsync flushed a WAL already on disk."""
    store = repo.store
    assert isinstance(store, RocksStore)

    def durable() -> tuple[int, int]:
        return store.synced_writes, store.wal_flushes

    # Window 0 commits (an unsynced write of its own), then flushes the WAL once.
    one_fsync = (1, 0) if window else (0, 1)
    ops = make_ops(repo, window=window)
    fi, attrs = await ops.create(ROOT, b"db-journal", 0o644, os.O_RDWR, CTX)
    dir_fh = await ops.opendir(ROOT, CTX)
    for n in range(3):
        await ops.write(fi.fh, 0, b"page %d" % n)
        before = durable()
        await ops.fsync(fi.fh, False)
        after = tuple(b + d for b, d in zip(before, one_fsync, strict=True))
        assert durable() == after
        await ops.fsyncdir(dir_fh, False)  # nothing written since the fsync
        assert durable() == after
    await ops.fsync(fi.fh, False)  # nothing written: still durable, without a flush
    assert durable() == after
    await ops.releasedir(dir_fh)
    await ops.release(fi.fh)
    ops.saver.flush_now()
    assert repo.read("HEAD", b"db-journal") == b"page 2"


def test_quiet_window_folds_an_atomic_save_into_one_commit(repo: Repository) -> None:
    """vim-style save: write a temp file, fsync, rename over the target: one commit,
    and no commit tree ever holds the temp file."""
    ops = make_ops(repo, window=0.5)
    client = Client(ops)

    async def main() -> None:
        await client.write_file("app.py", b"v1\n")
        await trio.sleep(1)
        before = commits(repo)
        fi, attrs = await ops.create(ROOT, b".app.py.tmp", 0o644, os.O_WRONLY, CTX)
        await ops.write(fi.fh, 0, b"v2\n")
        await ops.fsync(fi.fh, False)
        await ops.flush(fi.fh)
        await ops.release(fi.fh)
        await ops.rename(ROOT, b".app.py.tmp", ROOT, b"app.py", 0, CTX)
        assert commits(repo) == before  # still inside the window
        await trio.sleep(1)
        assert commits(repo) == before + 1

    with_saver_running(ops, main)
    assert repo.read("HEAD", b"app.py") == b"v2\n"
    for commit in repo.log("HEAD"):
        names = [e.name for e in repo.ls(commit.id.hex())]
        assert b".app.py.tmp" not in names


def test_each_operation_restarts_the_quiet_window(repo: Repository) -> None:
    ops = make_ops(repo, window=0.5)
    client = Client(ops)

    async def main() -> None:
        before = commits(repo)
        await client.write_file("a", b"1")
        await trio.sleep(0.4)
        await client.write_file("b", b"2")
        await trio.sleep(0.4)  # 0.8 s after the first save, 0.4 s after the last
        assert commits(repo) == before
        await trio.sleep(0.2)
        assert commits(repo) == before + 1

    with_saver_running(ops, main)
    assert repo.read("HEAD", b"a") == b"1" and repo.read("HEAD", b"b") == b"2"


def test_a_branch_never_quiet_still_commits_every_max_wait(repo: Repository) -> None:
    """A loop that saves more often than the window (a build, an agent's script) used to
    hold every commit back until it stopped (QA soak: 200 rounds, ~30 commits)."""
    ops = make_ops(repo, window=0.5)
    client = Client(ops)

    async def main() -> None:
        before = commits(repo)
        for n in range(int(2.5 * saver.MAX_WAIT_SECONDS / 0.2)):  # 25 s, never quiet
            await client.write_file("busy.txt", f"round {n}".encode())
            await trio.sleep(0.2)
        assert commits(repo) == before + 2  # at 10 s and 20 s

    with_saver_running(ops, main)


def test_vim_swap_files_never_reach_a_commit(repo: Repository) -> None:
    ops = make_ops(repo, window=0)
    client = Client(ops)

    async def main() -> None:
        await client.write_file(".notes.txt.swp", b"swap")
        await client.write_file("notes.txt", b"text")
        await client.write_file("notes.txt~", b"backup")

    trio.run(main)
    names = [e.name for e in repo.ls("HEAD")]
    assert b"notes.txt" in names
    assert b".notes.txt.swp" not in names and b"notes.txt~" not in names


def test_closed_files_survive_a_crash(store: Path) -> None:
    """The save is in the store when close() returns: reopening (as after kill -9,
    nothing flushed or closed) finds it and commits it as recovered state."""
    repo = Repository.init(store)
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    trio.run(client.write_file, "precious.txt", b"do not lose me")
    assert ops.saver.pending == 1
    repo.store.close()  # no commit, no Repository.close(): like the process dying
    reopened = Repository.open(store)
    try:
        assert reopened.read("HEAD", b"precious.txt") == b"do not lose me"
        assert reopened.commit_info("HEAD").message == "recovered pending changes"
    finally:
        reopened.close()


def crash_and_reopen(repo: Repository, store: Path) -> Repository:
    """What the next mount sees after kill -9: only what is in the store."""
    repo.store.close()  # no commit, no Repository.close(): like the process dying
    return Repository.open(store)


def test_an_empty_created_file_survives_a_crash_once_closed(store: Path) -> None:
    """`touch new`: create + close, nothing written; close() returned, so it is stored."""
    repo = Repository.init(store)
    ops = make_ops(repo, window=3600)

    async def touch() -> None:
        fi, _ = await ops.create(ROOT, b"empty", 0o600, os.O_WRONLY, CTX)
        await ops.flush(fi.fh)
        await ops.release(fi.fh)

    trio.run(touch)
    reopened = crash_and_reopen(repo, store)
    try:
        entry = reopened.entry("HEAD", b"empty")
        assert entry is not None and entry.size == 0
    finally:
        reopened.close()


def test_changes_are_persisted_by_the_next_close_not_on_their_own(store: Path) -> None:
    """mkdir, unlink, chmod wait for the next save (docs/decisions/0006); the close
    of any file persists them with it."""
    repo = Repository.init(store)
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    saved = repo.store.ref("work/main")

    async def work() -> None:
        await client.mkdir("d")
        assert repo.store.ref("work/main") == saved  # not persisted yet
        await client.write_file("d/f", b"data")

    trio.run(work)
    reopened = crash_and_reopen(repo, store)
    try:
        assert reopened.read("HEAD", b"d/f") == b"data"
    finally:
        reopened.close()


async def test_an_unlink_is_committed_with_the_quiet_window(repo: Repository) -> None:
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    await client.write_file("gone.txt", b"x")
    ops.saver.flush_now()
    before = commits(repo)
    await ops.unlink(ROOT, b"gone.txt", CTX)
    assert ops.saver.pending == 1 and commits(repo) == before
    ops.saver.flush_now()
    assert commits(repo) == before + 1
    assert b"gone.txt" not in [e.name for e in repo.ls("HEAD")]


async def test_ops_close_commits_pending(repo: Repository) -> None:
    ops: Operations = make_ops(repo, window=3600)
    await Client(ops).write_file("late.txt", b"x")
    ops.close()
    assert repo.read("HEAD", b"late.txt") == b"x"


async def test_same_mode_and_owner_changes_are_not_saves(repo: Repository) -> None:
    """tar and cp re-apply the mode a file already has, and chown as root: no commit."""
    import pyfuse3
    from fs_client import Fields

    client = Client(make_ops(repo, window=0))
    ino = await client.write_file("f", b"x")
    before = commits(repo)
    attrs = pyfuse3.EntryAttributes()
    attrs.st_mode = 0o100644
    await client.ops.setattr(ino, attrs, Fields(update_mode=True, update_uid=True), None, CTX)
    assert commits(repo) == before
    attrs.st_mode = 0o100600
    await client.ops.setattr(ino, attrs, Fields(update_mode=True), None, CTX)
    assert commits(repo) == before + 1


async def test_utimens_is_committed_with_the_quiet_window(repo: Repository) -> None:
    import pyfuse3
    from fs_client import Fields

    ops = make_ops(repo, window=3600)
    client = Client(ops)
    ino = await client.write_file("f", b"x")
    ops.saver.flush_now()
    before = commits(repo)
    attrs = pyfuse3.EntryAttributes()
    attrs.st_mtime_ns = 1_500_000_000_000_000_000
    await ops.setattr(ino, attrs, Fields(update_mtime=True), None, CTX)
    assert ops.saver.pending == 1 and commits(repo) == before
    ops.saver.flush_now()
    assert commits(repo) == before + 1
    entry = repo.entry("HEAD", b"f")
    assert entry is not None and entry.mtime_ns == 1_500_000_000_000_000_000


async def test_close_stores_files_still_open_and_is_idempotent(repo: Repository) -> None:
    ops = make_ops(repo, window=3600)
    fi, attrs = await ops.create(ROOT, b"open.txt", 0o644, os.O_WRONLY, CTX)
    await ops.write(fi.fh, 0, b"unflushed")
    ops.close()
    ops.close()
    assert repo.read("HEAD", b"open.txt") == b"unflushed"


@pytest.fixture
def disk_free(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The free bytes the store's disk reports, as the test sets them (10 GiB at
    first), looked at on every write."""
    free = {"bytes": 10 << 30}
    real_statvfs = os.statvfs

    def statvfs(path: str | Path) -> os.statvfs_result:
        found = list(real_statvfs(path))
        found[4] = free["bytes"] // found[1]  # f_bavail, in f_frsize units
        return os.statvfs_result(found)

    monkeypatch.setattr(os, "statvfs", statvfs)
    monkeypatch.setattr(space, "RECHECK_SECONDS", 0.0)
    return free


async def test_saves_a_full_disk_kept_from_an_early_commit_stay_pending(
    repo: Repository, disk_free: dict[str, int]
) -> None:
    """A settle (before a branch, snapshot or switch) that the full disk refuses used to
    drop the pending entry: the unlink below, not yet persisted, was then neither
    retried nor committed at unmount, and the next mount showed the file again."""
    ops = make_ops(repo, window=3600)
    await Client(ops).write_file("gone.txt", b"x")
    ops.saver.flush_now()
    await ops.unlink(ROOT, b"gone.txt", CTX)
    disk_free["bytes"] = space.RESERVE_BYTES
    with pytest.raises(StoreFull):
        ops.settle()
    assert ops.saver.pending == 1
    disk_free["bytes"] = 10 << 30
    ops.close()
    assert b"gone.txt" not in [e.name for e in repo.ls("HEAD")]


def test_a_commit_the_full_disk_refuses_is_tried_again_once_there_is_room(
    repo: Repository, disk_free: dict[str, int]
) -> None:
    """The timer task used to die with the refused commit, and the whole mount with it."""
    ops = make_ops(repo, window=0.5)
    client = Client(ops)

    async def main() -> None:
        before = commits(repo)
        await client.write_file("a", b"saved while there was room")
        disk_free["bytes"] = space.RESERVE_BYTES  # full before the quiet window ends
        with pytest.raises(pyfuse3.FUSEError) as refused:
            await client.write_file("b", b"no room for me")
        assert refused.value.errno == errno.ENOSPC
        await trio.sleep(1)
        assert commits(repo) == before and ops.saver.pending == 1
        disk_free["bytes"] = 10 << 30
        await trio.sleep(saver.RETRY_SECONDS)
        assert commits(repo) == before + 1 and ops.saver.pending == 0

    with_saver_running(ops, main)
    assert repo.read("HEAD", b"a") == b"saved while there was room"


def test_a_commit_that_fails_unexpectedly_is_tried_again_not_the_end_of_the_mount(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a HelixError was caught around a quiet-window commit: a bug, or a panic in
    rocksdict (a BaseException), ended the timer task and the mount with it."""
    panic = next(c for c in BaseException.__subclasses__() if c.__module__ == "pyo3_runtime")
    ops = make_ops(repo, window=60)

    async def save() -> None:
        await Client(ops).write_file("a", b"pending\n")

    trio.run(save)
    before = commits(repo)

    def panicking(*args: object, **kwargs: object) -> None:
        raise panic("called `Option::unwrap()` on a `None` value")

    with monkeypatch.context() as patch:
        patch.setattr(repo.store, "_apply", panicking)
        ops.saver.commit_due(math.inf)  # no exception
    assert commits(repo) == before and ops.saver.pending == 1
    ops.saver.commit_due(math.inf)
    assert commits(repo) == before + 1 and repo.read("HEAD", b"a") == b"pending\n"
    ops.close()
