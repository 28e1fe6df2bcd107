"""The daemon's lifecycle: readiness, single writer, control socket, clean shutdown."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pyfuse3
import pytest
from mount_harness import (
    HELIX,
    Mount,
    MountFactory,
    detach,
    helix,
    is_mounted,
    require_fuse,
    wait_until,
)

from helixfs.daemon.collector import CHECK_SECONDS
from helixfs.daemon.control import addressable, forward, socket_path
from helixfs.daemon.fuseloop import KNOWN_VERSIONS
from helixfs.daemon.lock import is_locked
from helixfs.vcs import Repository

pytestmark = [pytest.mark.mount, pytest.mark.timeout(180)]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    helix("init", path)
    return path


def test_background_mount_returns_ready_and_umount_waits_for_the_daemon(
    store: Path, tmp_path: Path
) -> None:
    require_fuse()
    target = tmp_path / "work"
    target.mkdir()
    try:
        done = helix("mount", "--quiet-window", "5000", store, target)
        assert "mounted" in done.stdout
        assert is_mounted(target)  # no sleep: returned only once the mount answers
        (target / "file.txt").write_text("kept\n")  # pending: the window is 5 s
        done = helix("umount", target)
        assert not is_mounted(target)
        assert not is_locked(store)  # umount returned once the daemon let go
        assert helix("--store", store, "cat", "HEAD", "file.txt").stdout == "kept\n"
    finally:
        detach(target)


def test_the_daemon_raises_its_open_files_limit_to_the_hard_one(
    store: Path, tmp_path: Path
) -> None:
    """Out of descriptors (soft limit 1,024 by default), RocksDB failed to open a file
    and refused every later save until a remount."""
    require_fuse()
    target = tmp_path / "work"
    target.mkdir()
    try:
        done = subprocess.run(
            ["prlimit", "--nofile=64:4096", *HELIX, "mount", str(store), str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        pid = int(done.stdout.rsplit("daemon pid ", 1)[1].split(")")[0])
        limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
        files = next(line for line in limits if line.startswith("Max open files")).split()
        assert files[3:5] == ["4096", "4096"]  # soft, hard
        helix("umount", target)
    finally:
        detach(target)


def test_second_mount_of_a_store_is_refused(make_mount: MountFactory, tmp_path: Path) -> None:
    first = make_mount(0)
    other = tmp_path / "other"
    other.mkdir()
    for extra in ([], ["--foreground"]):
        done = helix("mount", *extra, first.store, other, check=False)
        assert done.returncode == 1
        assert "already mounted at" in done.stderr
        assert str(first.path) in done.stderr
        assert not is_mounted(other)
    (first.path / "still.txt").write_text("fine")  # the first mount is undisturbed
    assert (first.path / "still.txt").read_text() == "fine"


def test_the_daemons_last_log_line_says_why_it_ended(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """Once serving, the daemon's log ends with why it ended (a death under load once
    left nothing to read); a mount that fails to start says so once, as an error."""
    mnt = make_mount(0)
    other = tmp_path / "other"
    other.mkdir()
    refused = helix("mount", "--foreground", mnt.store, other, check=False)
    assert refused.returncode == 1
    assert refused.stderr.count("already mounted at") == 1
    assert mnt.stop() == 0
    last = "".join(mnt.output).strip().splitlines()[-1]
    assert last.endswith(f"the daemon of {mnt.path} has exited cleanly")


def test_a_fatal_signal_prints_every_threads_stack_and_the_harness_names_it(
    make_mount: MountFactory,
) -> None:
    """A crash in a C extension (RocksDB, pyfuse3) leaves the Python stacks of every
    thread in the daemon's output, and a failing test's report says what killed it."""
    mnt = make_mount(0)
    (mnt.path / "file").write_text("x")
    os.kill(mnt.pid, signal.SIGSEGV)
    assert mnt.proc is not None
    assert mnt.proc.wait(30) == -signal.SIGSEGV
    mnt.stop()
    output = "".join(mnt.output)
    assert "Fatal Python error: Segmentation fault" in output
    assert "most recent call first" in output
    assert mnt.ended.startswith("killed by SIGSEGV, before the test's teardown")


def test_a_background_daemons_fatal_signal_lands_in_its_log(store: Path, tmp_path: Path) -> None:
    """In the background the daemon's stderr is STORE/daemon.log: the stacks go there."""
    require_fuse()
    target = tmp_path / "work"
    target.mkdir()
    try:
        done = helix("mount", store, target)
        pid = int(done.stdout.rsplit("daemon pid ", 1)[1].split(")")[0])
        os.kill(pid, signal.SIGSEGV)
        wait_until(lambda: not Path(f"/proc/{pid}").exists(), what="the daemon to die")
        log = (store / "daemon.log").read_text()
        assert "Fatal Python error: Segmentation fault" in log
        assert "most recent call first" in log
        helix("umount", target)  # a dead daemon's mount: detached, as after kill -9
    finally:
        detach(target)


def test_a_mount_over_another_stores_mount_is_refused(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """It used to succeed and hide the first store until two unmounts (found by QA)."""
    first = make_mount(0)
    second = tmp_path / "second-store"
    helix("init", second)
    for extra in ([], ["--foreground"]):
        done = helix("mount", *extra, second, first.path, check=False)
        assert done.returncode == 1
        assert "is a HelixFS mount already" in done.stderr
    (first.path / "still.txt").write_text("fine")  # the first store is still what shows
    assert (first.path / "still.txt").read_text() == "fine"
    assert "still.txt" in helix("--store", first.store, "ls", "HEAD").stdout


def test_mounting_a_store_where_it_is_mounted_says_so(make_mount: MountFactory) -> None:
    """It said "a HelixFS mount already (of another store)" of its own mount."""
    first = make_mount(0)
    assert first.proc is not None
    for extra in ([], ["--foreground"]):
        done = helix("mount", *extra, first.store, first.path, check=False)
        assert done.returncode == 1
        assert f"already mounted there ({first.path}), daemon pid {first.proc.pid}" in done.stderr
        assert "another store" not in done.stderr
    (first.path / "still.txt").write_text("fine")  # the mount goes on, untouched
    assert "still.txt" in helix("--store", first.store, "ls", "HEAD").stdout


def test_mount_errors_are_reported_to_the_caller(store: Path, tmp_path: Path) -> None:
    require_fuse()
    missing = helix("mount", store, tmp_path / "nope", check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    not_a_store = tmp_path / "empty"
    not_a_store.mkdir()
    target = tmp_path / "t"
    target.mkdir()
    bad = helix("mount", not_a_store, target, check=False)
    assert bad.returncode == 1 and "helix init" in bad.stderr
    assert not is_mounted(target)
    usage = helix("mount", store, target, "--quiet-window", "-5", check=False)
    assert usage.returncode in (1, 2)
    assert not is_mounted(target)


def test_an_unknown_fuse_option_is_named_in_the_error(store: Path, tmp_path: Path) -> None:
    """libfuse says which option it refused on fd 2 (daemon.log in the background); the
    caller got only "fuse_session_new() failed (is /dev/fuse usable ...?)"."""
    require_fuse()
    target = tmp_path / "t"
    target.mkdir()
    for extra in ([], ["--foreground"]):
        done = helix("mount", *extra, store, target, "-o", "no_such_option", check=False)
        assert done.returncode == 1
        assert "no_such_option" in done.stderr and "/dev/fuse" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not is_mounted(target)


def test_umount_of_something_else_is_a_clear_error(tmp_path: Path) -> None:
    done = helix("umount", tmp_path, check=False)
    assert done.returncode == 1
    assert "not a HelixFS mount" in done.stderr


def test_control_socket_is_private_and_forwards_commands(mnt: Mount) -> None:
    sock = mnt.store / "control.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    (mnt.path / "a.txt").write_text("one\n")
    out, err = io.StringIO(), io.StringIO()
    code = forward(mnt.store, ["cat", "HEAD", "a.txt"], out, err)
    assert (code, out.getvalue(), err.getvalue()) == (0, "one\n", "")
    code = forward(mnt.store, ["cat", "HEAD", "missing.txt"], out, err)
    assert code == 1 and "helix: error" in err.getvalue()
    code = forward(mnt.store, ["no-such-command"], io.StringIO(), io.StringIO())
    assert code == 2


@pytest.mark.parametrize("argv", [["log", "-n", "1"], ["memories"]])
def test_a_forwarded_command_imports_neither_trio_nor_the_memory_engine(
    mnt: Mount, argv: list[str]
) -> None:
    """A command run in the daemon costs the CLI only its own start: trio (~80 ms), the
    memory engine (~150-300 ms with numpy and SQLite) and the repository (~50 ms) are
    the daemon's business. A memory command loaded the engine to parse its line."""
    (mnt.path / "a.txt").write_text("one\n")
    heavy = ("trio", "numpy", "apsw", "helixfs.memory.engine", "helixfs.vcs")
    probe = (
        f"import sys; from helixfs.cli.main import main; code = main({argv!r}); "
        f"print(code, sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=mnt.path, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr


def test_forwarded_memory_commands_share_the_daemons_open_memory(
    make_mount: MountFactory,
) -> None:
    """Each forwarded memory command opened memory.db for itself, and so threw the
    warm vector indexes away: at 100,000 memories ~0.3 s per recall against ~30 ms.
    They now run on the daemon's own memory, open from the first to the last."""
    mnt = make_mount(0, env={**os.environ, "HELIX_MEMORY_LEXICAL": "1"})

    def memory_db_opened() -> int:
        fds = Path(f"/proc/{mnt.pid}/fd")
        return sum(1 for fd in fds.iterdir() if os.readlink(fd).endswith("/memory.db"))

    assert memory_db_opened() == 0
    out, err = io.StringIO(), io.StringIO()
    assert forward(mnt.store, ["remember", "--", "The deploy runs on Mondays"], out, err) == 0
    assert memory_db_opened() == 1
    for _ in range(3):
        out = io.StringIO()
        assert forward(mnt.store, ["recall", "deploy"], out, err) == 0, err.getvalue()
        assert "Mondays" in out.getvalue()
    assert memory_db_opened() == 1


def test_a_control_request_that_is_not_a_json_object_leaves_the_daemon_serving(
    mnt: Mount,
) -> None:
    """A frame of valid JSON that is not an object (a list, a number) raised
    AttributeError in the server: the daemon died and the mount went away."""
    (mnt.path / "a.txt").write_text("kept\n")
    for payload in (b"[1]", b"42", b'"log"', b"null"):
        with socket.socket(socket.AF_UNIX) as client:
            with addressable(socket_path(mnt.store)) as address:
                client.connect(address)
            client.sendall(struct.pack(">I", len(payload)) + payload)
            assert client.recv(64) == b""  # the connection is closed, without a reply
    assert mnt.proc is not None and mnt.proc.poll() is None
    assert (mnt.path / "a.txt").read_text() == "kept\n"
    assert mnt.helix("cat", "HEAD", "a.txt").stdout == "kept\n"


def test_forward_without_a_daemon_returns_none(store: Path) -> None:
    assert forward(store, ["log"], io.StringIO(), io.StringIO()) is None
    (store / "control.sock").write_text("")  # stale leftover of a kill -9
    assert forward(store, ["log"], io.StringIO(), io.StringIO()) is None


def test_relative_paths_of_forwarded_commands_mean_the_callers_cwd(
    mnt: Mount, tmp_path: Path
) -> None:
    (mnt.path / "src.txt").write_text("exported\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    helix("--store", mnt.store, "export", "HEAD", "out", cwd=outside)
    assert (outside / "out" / "src.txt").read_text() == "exported\n"
    # ... and a path inside the mount itself works (no deadlock of the daemon).
    helix("--store", mnt.store, "export", "HEAD", "copy", cwd=mnt.path)
    assert (mnt.path / "copy" / "src.txt").read_text() == "exported\n"


def test_commit_of_a_file_inside_the_mount_does_not_deadlock_the_daemon(mnt: Mount) -> None:
    """`helix commit PATH=FILE` reads FILE in the daemon; it ran on the trio thread, so a
    FILE inside the mount waited for the loop the command held: both hung for good."""
    (mnt.path / "in.txt").write_text("from the mount\n")
    helix("--store", mnt.store, "commit", "-m", "m", "copy.txt=in.txt", cwd=mnt.path)
    assert (mnt.path / "copy.txt").read_text() == "from the mount\n"
    assert "copy.txt" in helix("--store", mnt.store, "ls", "HEAD").stdout


def test_out_of_band_reset_shows_in_the_mount_at_once(mnt: Mount) -> None:
    (mnt.path / "f.txt").write_text("v1\n")
    first = mnt.head()
    (mnt.path / "f.txt").write_text("v2\n")
    (mnt.path / "new.txt").write_text("new\n")
    assert (mnt.path / "f.txt").read_text() == "v2\n"
    mnt.helix("reset", "--hard", first)
    assert (mnt.path / "f.txt").read_text() == "v1\n"
    assert not (mnt.path / "new.txt").exists()
    assert sorted(os.listdir(mnt.path)) == ["f.txt"]


def test_an_open_database_keeps_working_across_an_outside_commit(
    mnt: Mount, tmp_path: Path
) -> None:
    """QA: a long-lived SQLite connection got `disk I/O error` (ESTALE at its fsync)
    after `helix commit other=FILE`, and lost that transaction."""
    import sqlite3

    db = sqlite3.connect(mnt.path / "app.db")
    db.execute("create table t(v text)")
    db.execute("insert into t values ('before')")
    db.commit()
    (tmp_path / "o.txt").write_text("o\n")
    mnt.helix("commit", "-m", "from outside", f"other.txt={tmp_path / 'o.txt'}")
    db.execute("insert into t values ('after')")
    db.commit()
    db.close()
    check = sqlite3.connect(mnt.path / "app.db")
    assert [r[0] for r in check.execute("select v from t")] == ["before", "after"]
    check.close()
    assert (mnt.path / "other.txt").read_text() == "o\n"


def test_out_of_band_checkout_and_merge_show_in_the_mount(mnt: Mount) -> None:
    (mnt.path / "base.txt").write_text("base\n")
    mnt.helix("branch", "feature")
    mnt.helix("checkout", "feature")
    assert (mnt.path / ".helix" / "HEAD").read_text().strip() == "feature"
    (mnt.path / "feature.txt").write_text("feature work\n")
    mnt.helix("checkout", "main")
    assert not (mnt.path / "feature.txt").exists()
    mnt.helix("merge", "feature")
    assert (mnt.path / "feature.txt").read_text() == "feature work\n"


def test_a_read_of_head_sees_a_file_saved_within_the_quiet_window(
    make_mount: MountFactory,
) -> None:
    """`helix log HEAD FILE` right after saving FILE said it was in no commit: the
    save waited for the quiet window, and the read forwarded to the daemon did not."""
    mount = make_mount(5000)
    (mount.path / "docs").mkdir()
    (mount.path / "docs" / "notes.txt").write_text("just saved\n")
    commits = json.loads(mount.helix("log", "HEAD", "docs/notes.txt", "--json").stdout)
    assert len(commits) == 1 and "docs/notes.txt" in commits[0]["meta"]["changed"]
    assert commits[0]["meta"]["process"]  # the commit the window would have cut
    (mount.path / "docs" / "more.txt").write_text("more\n")
    assert mount.helix("cat", "HEAD", "docs/more.txt").stdout == "more\n"
    (mount.path / "docs" / "last.txt").write_text("last\n")
    assert "last.txt" in mount.helix("ls", "HEAD", "docs").stdout
    head = mount.head()
    assert mount.stop() == 0
    assert helix("--store", mount.store, "rev-parse", "HEAD").stdout.strip() == head


def test_sigterm_commits_pending_saves_and_closes_the_store(make_mount: MountFactory) -> None:
    mount = make_mount(60_000)  # nothing would be committed by the timer in this test
    (mount.path / "pending.txt").write_text("saved before SIGTERM\n")
    assert mount.proc is not None
    mount.proc.send_signal(signal.SIGTERM)
    mount.assert_exits_cleanly()
    mount.proc = None
    assert not is_mounted(mount.path)
    assert not is_locked(mount.store)
    assert not (mount.store / "control.sock").exists()
    log = helix("--store", mount.store, "log", "--json").stdout
    assert "pending.txt" in log
    assert helix("--store", mount.store, "cat", "HEAD", "pending.txt").stdout.startswith("saved")


def test_fusermount_unmount_ends_the_daemon_cleanly(make_mount: MountFactory) -> None:
    mount = make_mount(60_000)
    (mount.path / "x.txt").write_text("x")
    assert mount.stop() == 0
    assert helix("--store", mount.store, "cat", "HEAD", "x.txt").stdout == "x"
    assert helix("--store", mount.store, "fsck").returncode == 0


def test_foreground_ctrl_c_unmounts(store: Path, tmp_path: Path) -> None:
    require_fuse()
    target = tmp_path / "fg"
    target.mkdir()
    proc = subprocess.Popen(
        [*HELIX, "mount", "-f", str(store), str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("mounted")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        assert not is_mounted(target)
    finally:
        detach(target)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_control_socket_works_for_a_store_with_a_very_long_path(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / ("and-another-one-" * 3) / "store"
    deep.parent.mkdir(parents=True)
    helix("init", deep)
    mount = make_mount(0, store=deep)
    assert len(str(mount.store / "control.sock")) > 108
    (mount.path / "f.txt").write_text("deep\n")
    assert mount.helix("cat", "HEAD", "f.txt").stdout == "deep\n"


def _hold_open(folder: Path) -> subprocess.Popen[str]:
    """A shell that opens held.txt in `folder`, writes a line, and holds it open until
    a line on its stdin, then writes another."""
    return subprocess.Popen(
        ["bash", "-c", "exec 3>held.txt; echo held >&3; read line; echo more >&3"],
        cwd=folder,
        stdin=subprocess.PIPE,
        text=True,
    )


def test_umount_of_a_busy_mount_names_lazy_and_lazy_detaches(
    make_mount: MountFactory,
) -> None:
    mount = make_mount(0)
    holder = _hold_open(mount.path)
    try:
        assert mount.proc is not None
        wait_for = mount.path / "held.txt"
        wait_until(wait_for.exists, what="the holder to open its file")
        busy = helix("umount", mount.path, check=False)
        assert busy.returncode == 1 and "--lazy" in busy.stderr
        assert is_mounted(mount.path)
        helix("umount", "--lazy", mount.path)
        assert not is_mounted(mount.path)
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.close()
        assert holder.wait(30) == 0  # the open file kept working after the detach
        mount.assert_exits_cleanly()  # and the daemon ended once it was closed
        mount.proc = None
    finally:
        if holder.poll() is None:
            holder.kill()
    assert helix("--store", mount.store, "cat", "HEAD", "held.txt").stdout == "held\nmore\n"


def test_a_mount_of_a_store_whose_daemon_outlives_a_lazy_umount_says_so(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """QA: after `umount -z` with a file still open, the daemon serves that file on and
    holds the store; a new mount was refused (one writer per store) but told the user
    to `helix umount` a mount point that was no longer mounted."""
    mount = make_mount(0)
    holder = _hold_open(mount.path)
    again = tmp_path / "again"
    again.mkdir()
    try:
        assert mount.proc is not None
        wait_until((mount.path / "held.txt").exists, what="the holder to open its file")
        subprocess.run(["fusermount3", "-u", "-z", str(mount.path)], check=True)
        refused = helix("mount", mount.store, again, check=False)
        assert refused.returncode == 1 and not is_mounted(again)
        assert "helix umount" not in refused.stderr, refused.stderr
        assert f"still held by helix daemon pid {mount.proc.pid}" in refused.stderr
        assert "detached lazily" in refused.stderr and f"kill {mount.proc.pid}" in refused.stderr
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.close()
        assert holder.wait(30) == 0
        mount.assert_exits_cleanly()  # the last close let it go
        mount.proc = None
    finally:
        if holder.poll() is None:
            holder.kill()
    helix("mount", mount.store, again)  # the store is free again
    try:
        assert (again / "held.txt").read_text() == "held\nmore\n"
    finally:
        helix("umount", again)
        detach(again)


def test_umount_of_a_lazily_detached_mount_names_its_daemon(make_mount: MountFactory) -> None:
    """QA: after `fusermount3 -u -z` with a file still open, `helix umount MNT` said
    "not a HelixFS mount" while the daemon served on. It now names the daemon and how
    to stop it; `--lazy` is done already; once the file is closed, it waits for the
    daemon like any umount."""
    mount = make_mount(0)
    holder = _hold_open(mount.path)
    try:
        assert mount.proc is not None
        pid = mount.proc.pid
        wait_until((mount.path / "held.txt").exists, what="the holder to open its file")
        subprocess.run(["fusermount3", "-u", "-z", str(mount.path)], check=True)
        told = helix("umount", mount.path, check=False)
        assert told.returncode == 1 and "not a HelixFS mount" not in told.stderr, told.stderr
        assert "detached already" in told.stderr and f"kill {pid}" in told.stderr
        assert str(mount.store) in told.stderr
        assert is_locked(mount.store)
        assert "unmounted" in helix("umount", "--lazy", mount.path).stdout
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.close()
        assert holder.wait(30) == 0
        mount.assert_exits_cleanly()
        mount.proc = None
    finally:
        if holder.poll() is None:
            holder.kill()
    gone = helix("umount", mount.path, check=False)
    assert gone.returncode == 1 and "not a HelixFS mount" in gone.stderr


def test_the_daemon_reads_queued_requests_without_waiting(make_mount: MountFactory) -> None:
    """ADR 0022 is in force in the real daemon (its log says so), and a metadata burst
    through it behaves: every file made is listed, read back and removed."""
    mnt = make_mount(300)
    mnt.sh("mkdir t && for i in $(seq 300); do echo $i > t/f$i; done")
    assert mnt.sh("cat t/f* | wc -l").stdout.strip() == "300"
    mnt.sh("rm -rf t")
    assert mnt.stop() == 0
    known = pyfuse3.__version__.startswith(KNOWN_VERSIONS)  # a newer one keeps its own wait
    said = "a queued FUSE request is read without waiting" if known else "keeping its own wait"
    assert said in "".join(mnt.output)


def test_the_mount_runs_gc_on_its_own(make_mount: MountFactory) -> None:
    """A long-lived mount must not fill its disk with garbage: with gc_growth=1 (MiB)
    the daemon's own gc gives back 8 MiB saved and then replaced before its commit
    (a 3 s quiet window), within a few checks, and the mount goes on saving."""
    mnt = make_mount(3000, "-o", "gc_growth=1")
    objects = mnt.store / "objects"

    def store_bytes() -> int:
        # RocksDB renames and deletes its files (LOG rotation, compaction) meanwhile
        total = 0
        for entry in os.scandir(objects):
            with contextlib.suppress(FileNotFoundError):
                total += entry.stat().st_size if entry.is_file() else 0
        return total

    (mnt.path / "kept.txt").write_bytes(b"kept\n")
    big = mnt.path / "big.bin"
    big.write_bytes(os.urandom(8 << 20))  # saved on close: it must survive a crash
    big.write_bytes(b"replaced\n")  # in the same quiet window: one commit, of this
    wait_until(lambda: len(mnt.log()) >= 2, timeout=30, what="the commit")
    grown = store_bytes()
    wait_until(lambda: store_bytes() < grown - (6 << 20), timeout=60, what="the automatic gc")
    (mnt.path / "after.txt").write_bytes(b"saved after the gc\n")
    assert big.read_bytes() == b"replaced\n" and (mnt.path / "kept.txt").read_bytes() == b"kept\n"
    assert mnt.stop() == 0
    assert mnt.helix("fsck").returncode == 0
    assert mnt.helix("cat", "HEAD", "after.txt").stdout == "saved after the gc\n"


def test_the_automatic_gc_repacks_during_a_save_storm_and_old_commits_read_the_same(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """Saves go on through the mount while its own gc re-encodes the trees they wrote;
    afterwards the store is clean and each old commit reads through .helix/commits/ID
    exactly as `helix ls` and `helix cat` read it from the store."""
    mnt = make_mount(0, "-o", "gc_growth=1")
    mnt.sh("mkdir src && for n in $(seq 0 99); do echo $n > src/m$n.py; done")
    storm = "for i in $(seq {0} {1}); do echo $i > src/m$((i % 100)).py; done; sleep 1"
    until, start = time.monotonic() + 3 * CHECK_SECONDS, 0
    while time.monotonic() < until:  # the store grows past gc_growth at once
        mnt.sh(storm.format(start, start + 99))
        start += 100
    commits = [c["id"] for c in mnt.log()][:-2]  # not the empty first commit, nor mkdir's
    assert mnt.stop() == 0
    assert mnt.helix("fsck").returncode == 0
    sample = commits[:: max(1, len(commits) // 10)]
    with Repository.open(mnt.store) as repo:  # the files are too small for blob deltas
        assert repo.store.stats().extra["delta_objects"], "no gc repacked a tree"
        files = {
            cid: {e.name: repo.read(cid, b"src/" + e.name) for e in repo.ls(cid, "src")}
            for cid in sample
        }
    again = make_mount(0, store=mnt.store)
    for cid in sample:
        view = again.path / ".helix" / "commits" / cid / "src"
        listed = json.loads(again.helix("ls", cid, "src", "--json").stdout)
        assert sorted(p.name for p in view.iterdir()) == sorted(e["name"] for e in listed)
        assert {p.name.encode(): p.read_bytes() for p in view.iterdir()} == files[cid]
        name = listed[len(cid) % len(listed)]["name"]
        assert again.helix("cat", cid, f"src/{name}").stdout == (view / name).read_text()
    assert again.stop() == 0


def test_sigterm_after_the_mount_moved_detaches_it_and_not_the_mount_now_at_its_old_path(
    tmp_path: Path,
) -> None:
    """A rename of a folder above a mount moves the mount. libfuse unmounts by the path
    it mounted at: SIGTERM used to detach whatever was mounted there since (another
    store's mount) and leave this one dead ('Transport endpoint is not connected')."""
    require_fuse()
    stores = {name: tmp_path / name for name in ("a", "b")}
    for store in stores.values():
        helix("init", store)
    (tmp_path / "old" / "mnt").mkdir(parents=True)
    first = Mount(stores["a"], tmp_path / "old" / "mnt")
    second = Mount(stores["b"], tmp_path / "old" / "mnt")
    try:
        first.start("--quiet-window", "60000")
        (first.path / "a.txt").write_text("pending at SIGTERM\n")
        (tmp_path / "old").rename(tmp_path / "new")
        first.path = tmp_path / "new" / "mnt"
        (tmp_path / "old" / "mnt").mkdir(parents=True)
        second.start("--quiet-window", "0")
        (second.path / "b.txt").write_text("b\n")
        assert first.proc is not None
        first.proc.send_signal(signal.SIGTERM)
        assert first.proc.wait(60) == 0
        first.proc = None
        assert not is_mounted(first.path)  # detached where it had moved to
        assert is_mounted(second.path)  # the other store's mount is left alone
        assert (second.path / "b.txt").read_text() == "b\n"
        assert helix("--store", stores["a"], "cat", "HEAD", "a.txt").stdout.startswith("pending")
    finally:
        first.stop()
        second.stop()


def test_a_foreground_mount_tells_systemd_it_is_ready_once_mounted(
    store: Path, tmp_path: Path
) -> None:
    """helixfs@.service is Type=notify: `systemctl start` (and units After= it) wait
    for READY=1, which must come once the mount answers, not when the process starts."""
    require_fuse()
    target = tmp_path / "work"
    target.mkdir()
    name = f"helix-notify-test-{os.getpid()}-{id(tmp_path)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind("\0" + name)
        listener.settimeout(60)
        env = {**os.environ, "NOTIFY_SOCKET": "@" + name}
        proc = subprocess.Popen(
            [*HELIX, "mount", "-f", str(store), str(target)], stdout=subprocess.DEVNULL, env=env
        )
        try:
            message = listener.recv(4096).decode()
            assert "READY=1" in message.splitlines()
            assert f"MAINPID={proc.pid}" in message.splitlines()
            assert is_mounted(target)
            (target / "f.txt").write_text("ready\n")
        finally:
            detach(target)
            try:
                proc.wait(60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert helix("--store", store, "cat", "HEAD", "f.txt").stdout == "ready\n"


def _read_until(proc: subprocess.Popen[str], needle: str) -> None:
    """Read the daemon's merged output until `needle` shows up (or it ends)."""
    assert proc.stdout is not None
    text = ""
    while needle not in text:
        chunk = os.read(proc.stdout.fileno(), 65536).decode(errors="replace")
        assert chunk, f"the daemon ended before saying {needle!r}:\n{text}"
        text += chunk


def test_sigterm_during_a_command_that_reads_the_mount_lets_it_finish(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """A forwarded command may read or write in this very mount (an export into it, a
    commit of a file in it). SIGTERM stopped the FUSE loop at once: the command waited
    for an answer forever, and the daemon (and the mount) with it."""
    mount = make_mount(0)
    (mount.path / "inside.txt").write_text("read through the mount\n")
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    command = subprocess.Popen(
        [*HELIX, "--store", str(mount.store), "commit", "-m", "both",
         f"gate.txt={fifo}", f"copy.txt={mount.path / 'inside.txt'}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with open(fifo, "w") as gate:  # the daemon's command now waits on the gate
            assert mount.proc is not None
            mount.proc.send_signal(signal.SIGTERM)
            _read_until(mount.proc, "signal SIGTERM")
            gate.write("opened\n")
        out, err = command.communicate(timeout=60)  # then reads inside.txt in the mount
        assert command.returncode == 0, err
        mount.assert_exits_cleanly()
        mount.proc = None
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert not is_mounted(mount.path)
    copy = helix("--store", mount.store, "cat", "HEAD", "copy.txt").stdout
    assert copy == "read through the mount\n"


def test_umount_from_inside_the_mount_says_to_cd_out(mnt: Mount) -> None:
    """`helix umount .` is busy because of the caller's own folder, not open files."""
    busy = helix("umount", ".", check=False, cwd=mnt.path)
    assert busy.returncode == 1
    assert busy.stderr.count("\n") == 1 and "cd out of it" in busy.stderr
    assert is_mounted(mnt.path)
    helix("umount", mnt.path)
    assert not is_mounted(mnt.path)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_command_run_in_the_mount_of_a_stopped_daemon_names_it(mnt: Mount, as_json: bool) -> None:
    """`helix log` inside the mount of a daemon stopped with SIGSTOP hung for good (in
    the kernel reading `.helix/store`, then waiting for the answer). It now exits 1
    with one line naming the daemon's pid and how to resume it; under --json as an
    error document too."""
    worktree = Path(__file__).resolve().parents[2]
    # -P: `python -m` would put the cwd (the stopped mount) on sys.path, and its first
    # import would hang in the kernel. The installed `helix` script does not do that.
    # Run once before the stop: an editable install's relative sys.path entry
    # ("__editable__...__path_hook__") is looked up in the cwd; the kernel then keeps
    # that it is not there (ADR 0033), as it does for a user who ran helix there before.
    command = [sys.executable, "-P", "-m", "helixfs.cli.main", "log"] + ["--json"] * as_json
    shell = subprocess.Popen(  # in the mount before the daemon stops
        ["bash", "-c", '"$@" >/dev/null && echo ready; read -r; exec "$@"', "shell", *command],
        cwd=mnt.path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(worktree)},
    )
    assert shell.stdout is not None and shell.stdout.readline() == "ready\n"
    os.kill(mnt.pid, signal.SIGSTOP)
    try:
        out, err = shell.communicate("go\n", timeout=60)
    finally:
        os.kill(mnt.pid, signal.SIGCONT)  # always, before the fixture unmounts
        if shell.poll() is None:
            shell.kill()
            shell.wait()
    assert shell.returncode == 1, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"(pid {mnt.pid}) is stopped" in err and f"kill -CONT {mnt.pid}" in err
    if as_json:
        error = json.loads(out)["error"]
        assert error["kind"] == "DaemonNotAnswering" and f"pid {mnt.pid}" in error["message"]
    else:
        assert out == ""
    assert mnt.helix("log", "-n", "1").returncode == 0  # resumed: it answers again


# A daemon's unmount with its invalidation thread stuck in the kernel, staged for real:
# the real Operations are mounted and served until a reader has the file open, the loop
# ends (as SIGTERM ends it), the reader then reads (its page stays locked for an answer
# the ended loop never gives), and the file is invalidated (the kernel waits for that
# page), then the daemon's own teardown runs. Prints what happened, one line each.
STUCK_UNMOUNT = r"""
import os, subprocess, sys, time
from pathlib import Path
import pyfuse3, trio
from helixfs.daemon.lifecycle import (
    READER_TASKS, MountConfig, _close_fuse, _device_of, _mount, _operations
)
from helixfs.daemon.memoryfiles import MemoryFiles
from helixfs.fs import edge
from helixfs.fs.saver import Saver
from helixfs.vcs.repo import Repository

READER = '''
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
print("open", flush=True)
sys.stdin.readline()
try:
    print("read", len(os.pread(fd, 1 << 20, 0)), flush=True)
except OSError as exc:
    print("failed", exc.errno, flush=True)
'''
edge.STOP_SECONDS = 1.0
store, mnt = Path(sys.argv[1]), Path(sys.argv[2])
repo = Repository.init(store)
saver, files = Saver(0), MemoryFiles(store, repo)
config = MountConfig.build(store, mnt)
ops = _operations(repo, saver, files, config)
_mount(ops, config)
device = _device_of(mnt)
print("device", device, flush=True)
big = mnt / "big"
opened = {}

def open_reader():
    big.write_bytes(os.urandom(2 << 20))
    opened["ino"] = os.stat(big).st_ino
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(big)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert reader.stdout.readline() == "open\n"
    opened["reader"] = reader

async def serve_until_open():
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: pyfuse3.main(min_tasks=READER_TASKS, max_tasks=READER_TASKS))
        await trio.to_thread.run_sync(open_reader)
        pyfuse3.terminate()

trio.run(serve_until_open)
reader = opened["reader"]
reader.stdin.write("go\n")
reader.stdin.flush()
while not any(w in Path(f"/proc/{reader.pid}/wchan").read_text() for w in ("folio", "fuse")):
    time.sleep(0.01)  # until its read waits in the kernel
ops.invalidator.inode(opened["ino"])
ops.close()  # the daemon's teardown, in its order
saver.flush_now()
_close_fuse(mnt, device, ops.invalidator)
try:
    print("reader", reader.communicate(timeout=30)[0].strip(), flush=True)
except subprocess.TimeoutExpired:
    print("reader still waiting", flush=True)
files.close()
repo.close()
print("closed", flush=True)
"""


def test_an_unmount_aborts_the_connection_under_a_stuck_invalidation(tmp_path: Path) -> None:
    """At unmount the invalidation thread can be inside the kernel, waiting for a page
    that a read the ended loop never answers holds locked. The unmount left the session
    open then (closing it would free it under the call) and detached the mount: the
    reader waited until killed, and the daemon could not exit, its thread stuck. It now
    aborts the connection: the read fails (ENOTCONN), the invalidation returns, the
    session is closed and the mount detached, and the daemon exits."""
    require_fuse()
    store, mountpoint = tmp_path / "store", tmp_path / "mnt"
    mountpoint.mkdir()
    daemon = subprocess.Popen(
        [sys.executable, "-c", STUCK_UNMOUNT, str(store), str(mountpoint)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert daemon.stdout is not None
    first = daemon.stdout.readline()
    try:
        assert first.startswith("device "), first
        try:
            said, _ = daemon.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            said = "the daemon cannot exit: its invalidation thread is stuck in the kernel"
    finally:  # a daemon left stuck would outlive the test: free it
        if daemon.poll() is None and first.startswith("device "):
            major, minor = (int(n) for n in first.split()[1].split(":"))
            Path(f"/sys/fs/fuse/connections/{major << 20 | minor}/abort").write_text("1")
            daemon.wait(30)
        detach(mountpoint)
    assert f"reader failed {errno.ENOTCONN}" in said, said
    assert "aborted the FUSE connection" in said and said.endswith("closed\n"), said
    assert daemon.returncode == 0 and not is_mounted(mountpoint), said
