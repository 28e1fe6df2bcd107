"""`kill -9` of the daemon during a write storm loses no file whose close() returned."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest
from mount_harness import HELIX, Mount, MountFactory, helix, is_mounted

from helixfs.store.rocks import RocksStore
from helixfs.vcs import Repository, journal
from helixfs.vcs.objects import FLAT_MAX, KIND_PAGED, kind_of

pytestmark = [pytest.mark.mount, pytest.mark.timeout(240)]

# Writes files until it fails (the mount dies under it); prints each one after close()
# returned, so what it printed is exactly what the filesystem promised to keep.
STORM = r"""
import hashlib, os, sys
folders = int(sys.argv[1])
i = 0
while True:
    name = f"storm/d{i % folders}/f{i:05d}"
    data = (f"{i}:" * (1 + i % 500)).encode()
    try:
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "wb") as f:
            f.write(data)
            if i % 5 == 0:
                f.write(os.urandom(70_000))  # some larger, chunked files too
                data = None
            if i % 40 == 20:  # and big ones, whose chunks skip the write-ahead log
                f.write(os.urandom(20 << 20))
        if data is None:
            data = open(name, "rb").read()
    except OSError:
        break
    print(name, hashlib.sha256(data).hexdigest(), flush=True)
    i += 1
"""


STORM_BEFORE_KILL = 20  # files a storm has closed when the kill comes


def storm_under_way(output: IO[str]) -> str:
    """The lines of a storm's first STORM_BEFORE_KILL closed files: the kill then falls
    in a storm of a size that does not depend on how loaded the machine is (a 1.5 s
    sleep saw a single file closed at load 19)."""
    lines = [output.readline() for _ in range(STORM_BEFORE_KILL)]
    assert all(lines), "the storm stopped before the kill"
    return "".join(lines)


@pytest.mark.parametrize("quiet_window_ms", [0, 60_000])
def test_kill9_during_write_storm_keeps_every_closed_file(
    make_mount: MountFactory, quiet_window_ms: int
) -> None:
    storm_and_recover(make_mount, quiet_window_ms, folders=8)


def test_kill9_during_a_storm_in_one_big_folder_keeps_every_closed_file(
    make_mount: MountFactory,
) -> None:
    """Saves there rewrite single pages of a paged tree (ADR 0015)."""
    storm_and_recover(make_mount, 0, folders=1, prefill=700)


def storm_and_recover(
    make_mount: MountFactory, quiet_window_ms: int, folders: int, prefill: int = 0
) -> None:
    mount = make_mount(quiet_window_ms)
    promised = {}
    for i in range(prefill):  # files the storm starts among: d0 is paged from the start
        path = mount.path / "storm" / "d0" / f"pre{i:04d}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"%d" % i)
        promised[f"storm/d0/pre{i:04d}"] = hashlib.sha256(b"%d" % i).hexdigest()
    writer = subprocess.Popen(
        [sys.executable, "-c", STORM, str(folders)],
        cwd=mount.path,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    first = storm_under_way(writer.stdout)
    mount.kill9()
    rest, _ = writer.communicate(timeout=60)
    stormed = dict(line.split(" ") for line in (first + rest).splitlines() if " " in line)
    assert len(stormed) > 10
    promised.update(stormed)

    remounted = make_mount(quiet_window_ms, store=mount.store)
    missing, wrong = [], []
    for name, digest in promised.items():
        try:
            data = (remounted.path / name).read_bytes()
        except FileNotFoundError:
            missing.append(name)
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            wrong.append(name)
    assert not missing and not wrong, f"missing {missing[:5]}, wrong {wrong[:5]}"
    # The recovered state is committed, not only visible.
    committed = json.loads(remounted.helix("ls", "HEAD", "storm/d0", "--json").stdout)
    names = {f"storm/d0/{entry['name']}" for entry in committed}
    assert {n for n in promised if n.startswith("storm/d0/")} <= names
    remounted.stop()
    fsck = helix("--store", mount.store, "fsck", check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    if prefill > FLAT_MAX:
        with Repository.open(mount.store) as repo:
            folder = repo.entry("HEAD", "storm/d0")
            assert folder is not None
            assert kind_of(repo.store.get(folder.oid)) == KIND_PAGED


# Hard links under write: each file gets two more names in other folders and is then
# written through the last one; every 7th loses its first name again. Printed once
# every close (and unlink) returned: its names, its link count and its content digest.
LINK_STORM = r"""
import hashlib, os
for folder in ("store", "a", "b"):
    os.makedirs(folder, exist_ok=True)
i = 0
while True:
    names = [f"store/f{i:05d}", f"a/f{i:05d}", f"b/f{i:05d}"]
    data = (f"{i}:" * (1 + i % 300)).encode()
    try:
        with open(names[0], "wb") as f:
            f.write(data)
        os.link(names[0], names[1])
        os.link(names[1], names[2])
        with open(names[2], "ab") as f:
            f.write(b"through the third name")
        data += b"through the third name"
        if i % 7 == 0:
            os.unlink(names.pop(0))
    except OSError:
        break
    print(",".join(names), len(names), hashlib.sha256(data).hexdigest(), flush=True)
    i += 1
"""


@pytest.mark.parametrize("quiet_window_ms", [0, 60_000])
def test_kill9_during_a_storm_of_hard_links_keeps_every_closed_file(
    make_mount: MountFactory, quiet_window_ms: int
) -> None:
    """Every name of a linked file whose close returned is there after the kill, all
    one file (one inode, the link count of its names) with the last content."""
    mount = make_mount(quiet_window_ms)
    writer = subprocess.Popen(
        [sys.executable, "-c", LINK_STORM], cwd=mount.path, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    first = storm_under_way(writer.stdout)
    mount.kill9()
    rest, _ = writer.communicate(timeout=60)
    promised = [line.split(" ") for line in (first + rest).splitlines() if line.count(" ") == 2]
    assert len(promised) > 10
    remounted = make_mount(quiet_window_ms, store=mount.store)
    wrong = []
    for names, count, digest in promised:
        paths = [remounted.path / name for name in names.split(",")]
        try:
            shown = {(p.stat().st_ino, p.stat().st_nlink) for p in paths}
            same = {hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}
        except FileNotFoundError:
            wrong.append(names)
            continue
        if len(shown) != 1 or next(iter(shown))[1] != int(count) or same != {digest}:
            wrong.append(names)
    assert not wrong, f"{len(wrong)} linked files lost or split: {wrong[:5]}"
    remounted.stop()
    fsck = helix("--store", mount.store, "fsck", check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def test_dead_mount_after_kill9_is_reported_and_umount_clears_it(
    make_mount: MountFactory,
) -> None:
    mount = make_mount(0)
    (mount.path / "kept.txt").write_text("kept\n")
    mount.kill9(leave_dead_mount=True)
    again = helix("mount", mount.store, mount.path, check=False)
    assert again.returncode == 1
    assert "helix umount" in again.stderr
    helix("umount", mount.path)
    assert not is_mounted(mount.path)
    mount.start("--quiet-window", "0")
    assert (mount.path / "kept.txt").read_text() == "kept\n"


# A database the size of a real app's: every commit writes a few pages and fsyncs, and
# each fsync stores only the chunks around them (ADR 0016). Prints each committed row.
# journal_mode=PERSIST: the commit point is the zeroed journal header, fsynced, so a commit
# that returned is durable. In the default DELETE mode it is the journal's unlink, made
# durable by an fsync of the folder (with synchronous=EXTRA) that SQLite skips without an
# error when it cannot open the folder, as when the daemon died just after the unlink:
# the last commit then came back rolled back, here as on a local disk after a crash.
DATABASE = r"""
import sqlite3, sys
db = sqlite3.connect("app.db")
db.execute("pragma journal_mode = persist")
db.execute("create table if not exists t(id integer primary key, v text)")
db.executemany("insert into t(v) values (?)", [("x" * 400,)] * 20000)
db.commit()
print("loaded", flush=True)
i = 0
while True:
    try:
        db.execute("update t set v = ? where id = ?", (f"v{i}" * 50, i * 37 % 20000 + 1))
        db.execute("insert into t(v) values (?)", (f"new {i}",))
        db.commit()
    except sqlite3.Error:
        break
    print(i, flush=True)
    i += 1
"""


def test_kill9_during_database_commits_keeps_every_committed_transaction(
    make_mount: MountFactory,
) -> None:
    mount = make_mount(300)
    writer = subprocess.Popen(
        [sys.executable, "-c", DATABASE], cwd=mount.path, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == "loaded\n"
    assert writer.stdout.readline()  # commits are under way
    time.sleep(1.5)  # not a timing assertion: only how many commits happen
    mount.kill9()
    rest, _ = writer.communicate(timeout=60)
    committed = [int(line) for line in rest.split() if line.isdigit()]
    assert len(committed) > 5

    remounted = make_mount(300, store=mount.store)
    check = (
        "import sqlite3; db = sqlite3.connect('app.db');"
        "print(db.execute('pragma integrity_check').fetchone()[0]);"
        "print(max(int(v[4:]) for (v,) in db.execute(\"select v from t where v like 'new %'\")))"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=remounted.path, capture_output=True, text=True
    )
    lines = done.stdout.split()
    assert lines[0] == "ok", done.stdout + done.stderr
    assert int(lines[1]) >= max(committed)  # every transaction whose commit returned
    remounted.stop()
    fsck = helix("--store", mount.store, "fsck", check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def test_kill9_between_journal_saves_keeps_every_closed_file(make_mount: MountFactory) -> None:
    """A save persists a journal on the saved tree, not trees (ADR 0032): killed between
    two, the remount replays the last one. Few changes and a long window, so neither a
    commit nor a fold can have written them as trees before the kill."""
    mount = make_mount(60_000)
    promised = {}
    (mount.path / "tmp").mkdir()
    for i in range(4):
        (mount.path / "tmp" / f"f{i}").write_bytes(b"file %d" % i)
        promised[f"moved/f{i}"] = b"file %d" % i
    (mount.path / "tmp").rename(mount.path / "moved")  # a folder whose content is unsaved
    (mount.path / "top").write_bytes(b"top")
    promised["top"] = b"top"
    (mount.path / "moved" / "f0").chmod(0o600)
    (mount.path / "moved" / "f1").unlink()
    del promised["moved/f1"]
    (mount.path / "moved" / "f2").write_bytes(b"rewritten")
    promised["moved/f2"] = b"rewritten"
    mount.kill9()
    raw = RocksStore(mount.store / "objects")
    try:
        saved = raw.ref("work/main")
    finally:
        raw.close()
    assert saved is not None and journal.has_journal(saved)

    remounted = make_mount(60_000, store=mount.store)
    found = {
        str(path.relative_to(remounted.path)): path.read_bytes()
        for path in remounted.path.rglob("*")
        if path.is_file()
    }
    assert found == promised
    assert (remounted.path / "moved" / "f0").stat().st_mode & 0o777 == 0o600
    remounted.stop()
    fsck = helix("--store", mount.store, "fsck", check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


# Reads a file again and again from a cold cache (each read asks the daemon).
COLD_READER = r"""
import os, sys
while True:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    while os.read(fd, 1 << 20):
        pass
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
"""
SWITCHER = r"""
import sys
while True:
    for branch in ("other", "main"):
        open(sys.argv[1] + "/.helix/HEAD", "w").write(branch)
"""


def test_kill9_while_a_switch_invalidates_read_pages_leaves_a_mount_umount_clears(
    make_mount: MountFactory,
) -> None:
    """A switch tells the kernel to drop pages, from a thread beside the FUSE loop; a
    page being read stays locked until the loop answers. Killed then, that thread
    waits in the kernel for ever, so the daemon cannot finish dying, the store stays
    locked and anything touching the mount hangs, until its connection is aborted:
    `helix umount` does that for a mount whose daemon is dead."""
    mount = make_mount(0)
    device = os.stat(mount.path).st_dev
    connection = os.major(device) << 20 | os.minor(device)  # how fusectl names it
    try:
        kill_during_switches_then_umount(mount)
    finally:  # a daemon left stuck would outlive the test: free it as umount should
        abort = Path(f"/sys/fs/fuse/connections/{connection}/abort")
        if mount.proc is not None and mount.proc.poll() is None and abort.exists():
            abort.write_text("1")


def kill_during_switches_then_umount(mount: Mount) -> None:
    data = os.urandom(40 << 20)
    (mount.path / "big").write_bytes(data)
    (mount.path / ".helix" / "branches" / "other").mkdir()
    stuck = False
    for _ in range(8):  # the kill must fall inside an invalidation: most do
        busy = [
            subprocess.Popen(
                [sys.executable, "-c", COLD_READER, f"{mount.path}/.helix/branches/main/big"],
                stderr=subprocess.DEVNULL,
            )
            for _ in range(2)
        ]
        busy.append(
            subprocess.Popen(
                [sys.executable, "-c", SWITCHER, str(mount.path)], stderr=subprocess.DEVNULL
            )
        )
        time.sleep(1)  # not a timing assertion: only lets the switches and reads run
        assert mount.proc is not None
        daemon = mount.proc
        daemon.kill()
        try:
            daemon.wait(5)
        except subprocess.TimeoutExpired:
            stuck = True  # killed, but one of its threads cannot leave the kernel
            again = subprocess.run(
                [*HELIX, "mount", str(mount.store), str(mount.path)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert again.returncode == 1 and "helix umount" in again.stderr, again.stderr
        umount = subprocess.run(
            [*HELIX, "umount", str(mount.path)], capture_output=True, text=True, timeout=60
        )
        for proc in busy:
            proc.kill()
            proc.wait()
        assert umount.returncode == 0, umount.stderr
        daemon.wait(30)
        mount.proc = None
        mount.start("--quiet-window", "0")
        assert (mount.path / "big").read_bytes() == data
        if stuck:
            break
