"""Owners, devices, times and link counts through the Operations class (ADR 0042)."""

from __future__ import annotations

import os
import stat

import pyfuse3
from fs_client import CTX, ROOT, Client, Ctx, Fields, make_ops

from helixfs.vcs import attrs
from helixfs.vcs.repo import Repository

ME = (os.getuid(), os.getgid())
OTHER: object = Ctx(uid=1001, gid=1002)


def _attrs(**values: int) -> pyfuse3.EntryAttributes:
    entry = pyfuse3.EntryAttributes()
    for name, value in values.items():
        setattr(entry, name, value)
    return entry


async def _chown(client: Client, ino: int, uid: int, gid: int) -> pyfuse3.EntryAttributes:
    fields = Fields(update_uid=True, update_gid=True)
    return await client.ops.setattr(ino, _attrs(st_uid=uid, st_gid=gid), fields, None, CTX)


async def test_chown_is_stored_and_committed(client: Client) -> None:
    ino = await client.write_file("f", b"x")
    head = client.ops.repo.resolve("HEAD")
    got = await _chown(client, ino, 123, 456)
    assert (got.st_uid, got.st_gid) == (123, 456)
    client.ops.saver.flush_now()
    assert client.ops.repo.resolve("HEAD") != head  # a chown is a save
    entry = client.ops.repo.entry("HEAD", "f")
    assert entry is not None and attrs.entry_owner(entry.xattrs, ME) == (123, 456)
    assert attrs.user_xattrs(entry.xattrs) == ()
    assert await client.ops.listxattr(ino, CTX) == []


async def test_a_chown_back_to_the_mounting_user_stores_nothing(client: Client) -> None:
    ino = await client.write_file("f", b"x")
    plain = client.ops.repo.entry("HEAD", "f")
    await _chown(client, ino, 123, 456)
    await _chown(client, ino, *ME)
    client.ops.saver.flush_now()
    entry = client.ops.repo.entry("HEAD", "f")
    assert entry is not None and plain is not None
    assert attrs.lookup(entry.xattrs, attrs.OWNER) is None


async def test_one_id_of_minus_one_keeps_the_other(client: Client) -> None:
    ino = await client.write_file("f", b"x")
    await _chown(client, ino, 123, 456)
    got = await client.ops.setattr(ino, _attrs(st_gid=789), Fields(update_gid=True), None, CTX)
    assert (got.st_uid, got.st_gid) == (123, 789)


async def test_owners_survive_a_remount(repo: Repository, client: Client) -> None:
    ino = await client.write_file("f", b"x")
    await _chown(client, ino, 123, 456)
    client.ops.close()
    again = Client(make_ops(repo))
    try:
        got = await again.lookup(ROOT, b"f")
        assert (got.st_uid, got.st_gid) == (123, 456)
    finally:
        again.ops.close()


async def test_new_nodes_get_the_callers_owner_or_the_setgid_folders_group(
    client: Client,
) -> None:
    fi, made = await client.ops.create(ROOT, b"f", 0o644, os.O_WRONLY, OTHER)
    await client.ops.release(fi.fh)
    assert (made.st_uid, made.st_gid) == (1001, 1002)
    folder = await client.ops.mkdir(ROOT, b"shared", stat.S_IFDIR | 0o2775, CTX)
    await _chown(client, folder.st_ino, 0, 777)
    sub = await client.ops.mkdir(folder.st_ino, b"sub", stat.S_IFDIR | 0o755, OTHER)
    assert (sub.st_uid, sub.st_gid) == (1001, 777) and sub.st_mode & stat.S_ISGID
    link = await client.ops.symlink(folder.st_ino, b"l", b"target", OTHER)
    assert (link.st_uid, link.st_gid) == (1001, 777)
    pipe = await client.ops.mknod(ROOT, b"p", stat.S_IFIFO | 0o600, 0, OTHER)
    assert (pipe.st_uid, pipe.st_gid) == (1001, 1002)


async def test_the_roots_owner_and_mode_are_stored_and_versioned(
    repo: Repository, client: Client
) -> None:
    """The root has no entry: a root record holds its owner and mode (ADR 0044). They
    survive a remount, go with a branch made from it, and a reset takes them back."""
    before = repo.resolve("HEAD")
    got = await _chown(client, ROOT, 123, 456)
    assert (got.st_uid, got.st_gid) == (123, 456)
    mode = _attrs(st_mode=stat.S_IFDIR | 0o2770)
    await client.ops.setattr(ROOT, mode, Fields(update_mode=True), None, CTX)
    client.ops.saver.flush_now()
    chowned = repo.resolve("HEAD")
    assert chowned != before  # a chown of the root is a save like any other
    assert repo.commit_info(chowned).meta["changed"] == ["."]
    await client.mkdir(".helix/branches/copy")
    client.ops.close()
    again = Client(make_ops(repo))
    try:
        for ino in (ROOT, await again.ino(".helix/branches/copy")):
            got = await again.ops.getattr(ino, CTX)
            assert (got.st_uid, got.st_gid, got.st_mode) == (123, 456, stat.S_IFDIR | 0o2770)
        await again.write_file("f", b"x")  # a save on top keeps the root's record
        again.ops.saver.flush_now()
    finally:
        again.ops.close()
    repo.reset_hard(before.hex())
    back = Client(make_ops(repo))
    try:
        got = await back.ops.getattr(ROOT, CTX)
        assert (got.st_uid, got.st_gid, got.st_mode) == (*ME, stat.S_IFDIR | 0o755)
    finally:
        back.ops.close()
    assert repo.commit_info(before).tree == repo.commit_info(repo.resolve("HEAD")).tree


async def test_a_devices_number_is_stored(repo: Repository, client: Client) -> None:
    rdev = os.makedev(4, 64)
    made = await client.ops.mknod(ROOT, b"tty", stat.S_IFCHR | 0o620, rdev, CTX)
    assert made.st_rdev == rdev
    client.ops.close()
    again = Client(make_ops(repo))
    try:
        got = await again.lookup(ROOT, b"tty")
        assert (got.st_mode, got.st_rdev) == (stat.S_IFCHR | 0o620, rdev)
    finally:
        again.ops.close()


async def test_explicit_atime_is_kept_and_ctime_stored(repo: Repository, client: Client) -> None:
    ino = await client.write_file("f", b"x")
    times = _attrs(st_atime_ns=1_000_000_000, st_mtime_ns=2_000_000_000)
    got = await client.ops.setattr(
        ino, times, Fields(update_atime=True, update_mtime=True), None, CTX
    )
    assert (got.st_atime_ns, got.st_mtime_ns) == (1_000_000_000, 2_000_000_000)
    ctime = got.st_ctime_ns
    assert ctime > 2_000_000_000
    only_atime = _attrs(st_atime_ns=5_000_000_000)  # UTIME_OMIT for the mtime
    got = await client.ops.setattr(ino, only_atime, Fields(update_atime=True), None, CTX)
    assert (got.st_atime_ns, got.st_mtime_ns) == (5_000_000_000, 2_000_000_000)
    ctime = got.st_ctime_ns
    client.ops.close()
    again = Client(make_ops(repo))
    try:
        got = await again.lookup(ROOT, b"f")
        assert (got.st_atime_ns, got.st_mtime_ns, got.st_ctime_ns) == (
            5_000_000_000,
            2_000_000_000,
            ctime,
        )
    finally:
        again.ops.close()


async def test_a_plain_write_stores_no_times(client: Client) -> None:
    """A new file's atime and ctime are its mtime: its entry is as before ADR 0042."""
    await client.write_file("f", b"x")
    client.ops.saver.flush_now()
    entry = client.ops.repo.entry("HEAD", "f")
    assert entry is not None and entry.xattrs == ()


async def test_a_folders_nlink_counts_its_subfolders(repo: Repository, client: Client) -> None:
    top = await client.mkdir("top")
    for name in ("a", "b", "c"):
        await client.mkdir(f"top/{name}")
    await client.write_file("top/file", b"x")
    assert (await client.ops.getattr(top, CTX)).st_nlink == 5
    await client.ops.rmdir(top, b"c", CTX)
    await client.ops.rename(top, b"b", ROOT, b"b", 0, CTX)
    assert (await client.ops.getattr(top, CTX)).st_nlink == 3
    assert (await client.ops.getattr(ROOT, CTX)).st_nlink == 4  # top, b (and .helix: no)
    client.ops.close()
    again = Client(make_ops(repo))
    try:
        got = await again.lookup(ROOT, b"top")
        assert got.st_nlink == 3
        # the count is stored with the folder's entry: a stat needs no listing of it
        entry = repo.entry("HEAD", "top")
        assert entry is not None and attrs.subdirs_of(entry.xattrs) == 1
    finally:
        again.ops.close()


async def test_relatime_reads_move_atime_in_memory_only(repo: Repository) -> None:
    client = Client(make_ops(repo, relatime=True))
    try:
        ino = await client.write_file("f", b"x")
        times = _attrs(st_atime_ns=1_000_000_000)
        await client.ops.setattr(ino, times, Fields(update_atime=True), None, CTX)
        head = repo.resolve("HEAD")
        assert await client.read_file("f") == b"x"
        assert (await client.ops.getattr(ino, CTX)).st_atime_ns > 1_000_000_000
        assert repo.resolve("HEAD") == head
        entry = repo.entry("HEAD", "f")
        assert entry is not None
        assert attrs.time_of(attrs.lookup(entry.xattrs, attrs.ATIME), 0) == 1_000_000_000
    finally:
        client.ops.close()


async def test_without_relatime_reads_leave_atime_alone(client: Client) -> None:
    ino = await client.write_file("f", b"x")
    before = (await client.ops.getattr(ino, CTX)).st_atime_ns
    assert await client.read_file("f") == b"x"
    assert (await client.ops.getattr(ino, CTX)).st_atime_ns == before
