"""Files and directories through the Operations class: POSIX semantics real tools need."""

from __future__ import annotations

import errno
import os
import random
import stat
from collections.abc import Iterator
from typing import Any

import pyfuse3
import pytest
from fs_client import CTX, ROOT, Client, Ctx, Fields, expect_errno, make_ops

from helixfs.fs import spool
from helixfs.fs.operations import Operations
from helixfs.fs.saver import Saver
from helixfs.vcs import attrs as attrs_codec
from helixfs.vcs import content
from helixfs.vcs.content import pack_bytes
from helixfs.vcs.objects import TreeEntry
from helixfs.vcs.repo import Repository


async def test_write_then_read_back(client: Client) -> None:
    await client.write_file("hello.txt", b"hello world\n")
    assert await client.read_file("hello.txt") == b"hello world\n"
    attrs = await client.ops.getattr(await client.ino("hello.txt"), CTX)
    assert attrs.st_size == 12
    assert stat.S_ISREG(attrs.st_mode) and stat.S_IMODE(attrs.st_mode) == 0o644


async def test_closed_file_is_in_the_store(client: Client) -> None:
    await client.write_file("a.txt", b"stored")
    repo = client.ops.repo
    assert repo.read("HEAD", b"a.txt") == b"stored"


async def test_directories_nest_and_list_sorted(client: Client) -> None:
    await client.mkdir("src")
    await client.mkdir("src/pkg")
    await client.write_file("src/pkg/b.py", b"b")
    await client.write_file("src/pkg/a.py", b"a")
    assert await client.names("src/pkg") == [b"a.py", b"b.py"]
    assert await client.names() == [b"src"]


async def test_readdir_offsets_resume_where_they_stopped(client: Client) -> None:
    for index in range(7):
        await client.write_file(f"f{index}", b"x")
    first = await client.listdir(ROOT, 0, limit=3)
    rest = await client.listdir(ROOT, first[-1][2])
    names = [name for name, _, _ in first + rest]
    assert names == [f"f{i}".encode() for i in range(7)]


async def test_readdir_resumed_after_changes_lists_only_what_names_lead_to(
    client: Client,
) -> None:
    """readdirplus makes the kernel cache each listed name: a name removed, moved away
    or replaced since opendir must not come back pointing at its old file."""
    for name in ("0", "a", "b", "c", "d"):
        await client.write_file(name, name.encode())
    old_d = await client.ino("d")
    got: list[tuple[bytes, int]] = []
    resume_at: list[int] = []

    def reply(token: Any, name: bytes, attrs: pyfuse3.EntryAttributes, next_id: int) -> bool:
        if name in (b".", b".."):
            return True
        got.append((name, attrs.st_ino))
        resume_at.append(next_id)
        return name != b"0"  # the kernel's buffer is full after the first name

    client.ops.readdir_reply = reply
    fh = await client.ops.opendir(ROOT, CTX)
    await client.ops.readdir(fh, 0, None)  # type: ignore[arg-type]
    assert got == [(b"0", await client.ino("0"))]
    got.clear()
    await client.ops.unlink(ROOT, b"a", CTX)
    await client.ops.rename(ROOT, b"b", ROOT, b"z", 0, CTX)
    await client.ops.rename(ROOT, b"c", ROOT, b"d", 0, CTX)  # d is now c's file
    await client.ops.readdir(fh, resume_at[0], None)  # type: ignore[arg-type]  # resumed
    await client.ops.releasedir(fh)
    assert got == [(b"d", await client.ino("d"))]
    assert await client.ino("d") != old_d


def names_listed(client: Client) -> list[bytes]:
    """The list readdir replies append each name to from now on."""
    got: list[bytes] = []

    def reply(token: Any, name: bytes, attrs: pyfuse3.EntryAttributes, next_id: int) -> bool:
        if name not in (b".", b".."):
            got.append(name)
        return True

    client.ops.readdir_reply = reply
    return got


async def test_every_listing_starts_with_dot_and_dotdot(client: Client) -> None:
    """`ls -a` on a local disk shows `.` and `..`: readdir lists them first, with the
    folder's and its parent's numbers, and a listing resumed after either goes on
    from there (the root's `..` is the root itself)."""
    await client.mkdir("d")
    await client.write_file("d/f", b"")
    d = await client.ino("d")
    listed = await client.listdir(d, dots=True)
    assert [(name, ino) for name, ino, _ in listed] == [
        (b".", d),
        (b"..", ROOT),
        (b"f", await client.ino("d/f")),
    ]
    assert [name for name, _, _ in await client.listdir(d, listed[0][2], dots=True)] == [
        b"..",
        b"f",
    ]
    assert [name for name, _, _ in await client.listdir(d, listed[1][2], dots=True)] == [b"f"]
    root = await client.listdir(ROOT, dots=True)
    assert [(name, ino) for name, ino, _ in root[:2]] == [(b".", ROOT), (b"..", ROOT)]


async def test_rewinddir_lists_the_directory_as_it_is_now(client: Client) -> None:
    """POSIX: after rewinddir (readdir from offset 0 again on the same handle) the stream
    refers to the directory's current state, as on a local disk."""
    await client.write_file("old", b"")
    got = names_listed(client)
    fh = await client.ops.opendir(ROOT, CTX)
    await client.ops.readdir(fh, 0, None)  # type: ignore[arg-type]
    await client.write_file("new", b"")
    await client.ops.unlink(ROOT, b"old", CTX)
    got.clear()
    await client.ops.readdir(fh, 0, None)  # type: ignore[arg-type]
    await client.ops.releasedir(fh)
    assert got == [b"new"]


async def test_a_directory_opened_before_a_rename_lists_it_at_its_first_read(
    client: Client,
) -> None:
    """`dfd = os.open(dir)`, a rename in it, then `os.listdir(dfd)`: the first readdir
    of a handle lists the directory as it is then, as a local disk does. A listing taken
    at opendir listed the renamed file under neither name."""
    await client.write_file("old", b"x")
    got = names_listed(client)
    fh = await client.ops.opendir(ROOT, CTX)
    await client.ops.rename(ROOT, b"old", ROOT, b"new", 0, CTX)
    await client.write_file("created", b"")
    await client.ops.readdir(fh, 0, None)  # type: ignore[arg-type]
    await client.ops.releasedir(fh)
    assert got == [b"created", b"new"]


async def test_helix_is_reachable_but_not_listed(client: Client) -> None:
    await client.write_file("x", b"")
    assert b".helix" not in await client.names()
    attrs = await client.ops.lookup(ROOT, b".helix", CTX)
    assert stat.S_ISDIR(attrs.st_mode)
    await expect_errno(errno.EBUSY, client.ops.mkdir(ROOT, b".helix", 0o755, CTX))


async def test_no_helix_is_made_at_the_top_of_a_branch_folder(client: Client) -> None:
    """Once that branch is HEAD, the control folder would hide it. In a subfolder, and
    removing one already there, stay ordinary."""
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"b", 0o755, CTX)
    top = await client.ino(".helix/branches/b")
    busy = errno.EBUSY
    await expect_errno(busy, client.ops.create(top, b".helix", 0o644, os.O_WRONLY, CTX))
    await expect_errno(busy, client.ops.mkdir(top, b".helix", 0o755, CTX))
    await expect_errno(busy, client.ops.symlink(top, b".helix", b"x", CTX))
    await client.write_file(".helix/branches/b/f", b"")
    await expect_errno(busy, client.ops.rename(top, b"f", top, b".helix", 0, CTX))
    sub = await client.ops.mkdir(top, b"sub", 0o755, CTX)
    await client.write_file(".helix/branches/b/sub/.helix", b"ordinary")
    await client.ops.rename(sub.st_ino, b".helix", top, b"g", 0, CTX)


async def test_inode_numbers_are_stable(client: Client) -> None:
    ino = await client.write_file("keep.txt", b"1")
    await client.write_file("keep.txt", b"22")
    assert await client.ino("keep.txt") == ino
    await client.mkdir("d")
    await client.ops.rename(ROOT, b"keep.txt", await client.ino("d"), b"moved.txt", 0, CTX)
    assert await client.ino("d/moved.txt") == ino


async def test_sparse_write_reads_zeros_in_the_hole(client: Client) -> None:
    fi, attrs = await client.ops.create(ROOT, b"sparse", 0o644, os.O_RDWR, CTX)
    await client.ops.write(fi.fh, 1 << 20, b"end")
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    data = await client.read_file("sparse")
    assert len(data) == (1 << 20) + 3
    assert data[: 1 << 20] == bytes(1 << 20) and data.endswith(b"end")


async def test_overwrite_in_the_middle_keeps_the_rest(client: Client) -> None:
    await client.write_file("f", b"0123456789")
    ino = await client.ino("f")
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    await client.ops.write(fi.fh, 3, b"abc")
    assert await client.ops.read(fi.fh, 0, 100) == b"012abc6789"
    await client.ops.release(fi.fh)
    assert await client.read_file("f") == b"012abc6789"


async def test_o_append_writes_where_the_kernel_says(client: Client) -> None:
    """The kernel turns O_APPEND into the offset of the end before it sends a write; it
    also writes a shared mmap's dirty pages back through any writable handle, O_APPEND
    ones included, at the pages' own offsets (they were appended once more)."""
    await client.write_file("log", b"one\n")
    fi = await client.ops.open(await client.ino("log"), os.O_RDWR | os.O_APPEND, CTX)
    await client.ops.write(fi.fh, 4, b"two\n")  # write(2): the kernel's end of file
    await client.ops.write(fi.fh, 0, b"ONE\n")  # a shared mmap's page written back
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert await client.read_file("log") == b"ONE\ntwo\n"


async def test_o_trunc_empties_on_open(client: Client) -> None:
    await client.write_file("t", b"long content")
    fi = await client.ops.open(await client.ino("t"), os.O_WRONLY | os.O_TRUNC, CTX)
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert await client.read_file("t") == b""


async def test_o_trunc_with_o_rdonly_truncates_as_linux_does(client: Client) -> None:
    """Linux truncates on open(O_RDONLY | O_TRUNC) when the caller may write the file
    (the kernel checks that, default_permissions); the close saves it."""
    await client.write_file("t", b"long content")
    fi = await client.ops.open(await client.ino("t"), os.O_RDONLY | os.O_TRUNC, CTX)
    assert (await client.ops.getattr(await client.ino("t"), CTX)).st_size == 0
    assert await client.ops.read(fi.fh, 0, 100) == b""
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert await client.read_file("t") == b""
    assert client.ops.repo.read("HEAD", b"t") == b""


async def test_names_over_255_bytes_are_enametoolong(client: Client) -> None:
    long, ok = b"y" * 256, b"y" * 255
    await client.write_file("f", b"")
    await client.mkdir("d")
    too_long = errno.ENAMETOOLONG
    await expect_errno(too_long, client.ops.create(ROOT, long, 0o644, os.O_WRONLY, CTX))
    await expect_errno(too_long, client.ops.mkdir(ROOT, long, 0o755, CTX))
    await expect_errno(too_long, client.ops.symlink(ROOT, long, b"f", CTX))
    await expect_errno(too_long, client.ops.mknod(ROOT, long, stat.S_IFREG | 0o644, 0, CTX))
    await expect_errno(too_long, client.ops.rename(ROOT, b"f", ROOT, long, 0, CTX))
    await expect_errno(too_long, client.ops.rename(ROOT, long, ROOT, b"g", 0, CTX))
    await expect_errno(too_long, client.ops.lookup(ROOT, long, CTX))  # stat, open...
    await expect_errno(too_long, client.ops.unlink(ROOT, long, CTX))
    await expect_errno(too_long, client.ops.rmdir(ROOT, long, CTX))
    await expect_errno(
        too_long, client.ops.mkdir(await client.ino(".helix/branches"), long, 0o755, CTX)
    )
    await client.ops.rename(ROOT, b"f", ROOT, ok, 0, CTX)  # NAME_MAX itself is fine
    assert sorted(await client.names()) == [b"d", ok]


async def test_create_existing_name_is_eexist_with_o_excl(client: Client) -> None:
    await client.write_file("e", b"")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    await expect_errno(errno.EEXIST, client.ops.create(ROOT, b"e", 0o644, flags, CTX))
    await client.ops.symlink(ROOT, b"l", b"e", CTX)
    await expect_errno(errno.EEXIST, client.ops.create(ROOT, b"l", 0o644, os.O_WRONLY, CTX))


async def test_create_of_a_name_that_appeared_meanwhile_opens_it(client: Client) -> None:
    """open(O_CREAT) without O_EXCL never fails with EEXIST: when the name appeared
    between the kernel's lookup and its create (a HEAD switch swaps the tree), the
    create opens the file that is there, truncating it for O_TRUNC."""
    ino = await client.write_file("e", b"old content")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fi, attrs = await client.ops.create(ROOT, b"e", 0o644, flags, CTX)
    assert attrs.st_ino == ino
    assert await client.ops.write(fi.fh, 0, b"new") == 3
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert await client.read_file("e") == b"new"
    await client.mkdir("d")
    await expect_errno(errno.EISDIR, client.ops.create(ROOT, b"d", 0o644, os.O_WRONLY, CTX))


async def test_create_meanwhile_keeps_a_read_only_file_closed_to_others(client: Client) -> None:
    await client.write_file("ro", b"keep", mode=0o444)
    other = Ctx(uid=1000, gid=1000)
    await expect_errno(
        errno.EACCES, client.ops.create(ROOT, b"ro", 0o644, os.O_WRONLY | os.O_TRUNC, other)
    )
    assert await client.read_file("ro") == b"keep"


async def test_truncate_and_extend_by_path(client: Client) -> None:
    await client.write_file("t", b"0123456789")
    ino = await client.ino("t")
    attrs = pyfuse3.EntryAttributes()
    attrs.st_size = 4
    await client.ops.setattr(ino, attrs, Fields(update_size=True), None, CTX)
    assert await client.read_file("t") == b"0123"
    attrs.st_size = 6
    await client.ops.setattr(ino, attrs, Fields(update_size=True), None, CTX)
    assert await client.read_file("t") == b"0123\0\0"


async def test_ftruncate_of_an_open_file(client: Client) -> None:
    await client.write_file("t", b"0123456789")
    ino = await client.ino("t")
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    attrs = pyfuse3.EntryAttributes()
    attrs.st_size = 2
    got = await client.ops.setattr(ino, attrs, Fields(update_size=True), fi.fh, CTX)
    assert got.st_size == 2
    assert await client.ops.read(fi.fh, 0, 100) == b"01"
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert await client.read_file("t") == b"01"


async def test_a_size_past_the_largest_file_is_refused_with_efbig(client: Client) -> None:
    """`truncate -s 8E` (the kernel lets a FUSE file reach 2**63 - 1) made the daemon
    list every 256 KiB of zeros: it took all the host's memory and never answered. Past
    MAX_FILE_SIZE a size change or a write gets EFBIG, as past a local disk's limit, and
    changes nothing; a write crossing it is cut short there, as write(2) is."""
    ino = await client.write_file("t", b"keep")
    attrs = pyfuse3.EntryAttributes()
    attrs.st_size = content.MAX_FILE_SIZE + 1
    size_change = Fields(update_size=True)
    await expect_errno(errno.EFBIG, client.ops.setattr(ino, attrs, size_change, None, CTX))
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    await expect_errno(errno.EFBIG, client.ops.setattr(ino, attrs, size_change, fi.fh, CTX))
    await expect_errno(errno.EFBIG, client.ops.write(fi.fh, content.MAX_FILE_SIZE, b"x"))
    assert (await client.ops.getattr(ino, CTX)).st_size == 4
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert await client.read_file("t") == b"keep"
    assert client.ops.repo.read("HEAD", b"t") == b"keep"


async def test_a_write_across_the_largest_file_size_is_cut_short(client: Client) -> None:
    fi, attrs = await client.ops.create(ROOT, b"edge", 0o644, os.O_RDWR, CTX)
    assert await client.ops.write(fi.fh, content.MAX_FILE_SIZE - 2, b"abcd") == 2
    assert (await client.ops.getattr(attrs.st_ino, CTX)).st_size == content.MAX_FILE_SIZE
    attrs.st_size = 0  # a 1 TiB save is not this test's business
    await client.ops.setattr(attrs.st_ino, attrs, Fields(update_size=True), fi.fh, CTX)
    await client.ops.release(fi.fh)


async def test_chmod_and_utimens(client: Client) -> None:
    ino = await client.write_file("m", b"x")
    attrs = pyfuse3.EntryAttributes()
    attrs.st_mode = stat.S_IFREG | 0o600
    attrs.st_mtime_ns = 1_234_567_890_123_456_789
    got = await client.ops.setattr(
        ino, attrs, Fields(update_mode=True, update_mtime=True), None, CTX
    )
    assert stat.S_IMODE(got.st_mode) == 0o600 and stat.S_ISREG(got.st_mode)
    assert got.st_mtime_ns == 1_234_567_890_123_456_789


async def test_the_root_takes_a_mode_and_time_for_the_life_of_the_mount(
    repo: Repository,
) -> None:
    """chmod and touch of the mount root or of a branch folder are accepted and shown,
    so `tar x` of an archive holding "./" and `rsync -a SRC/ MNT/` succeed as on a disk
    (ADR 0030). The mode is versioned in the root's record (ADR 0044), the time not."""
    ops = Operations(repo, saver=Saver(0))
    client = Client(ops)
    await client.mkdir(".helix/branches/b")
    for ino in (ROOT, await client.ino(".helix/branches/b")):
        attrs = pyfuse3.EntryAttributes()
        attrs.st_mode = stat.S_IFDIR | 0o700
        attrs.st_mtime_ns = 1_000_000_000_000_000_000
        await ops.setattr(ino, attrs, Fields(update_mode=True, update_mtime=True), None, CTX)
        got = await ops.getattr(ino, CTX)
        assert (got.st_mode, got.st_mtime_ns) == (stat.S_IFDIR | 0o700, 10**18)


async def test_utimens_while_writing_survives_close(client: Client) -> None:
    """`cp -p` sets times on the fd before closing it; close must not clobber them."""
    fi, attrs = await client.ops.create(ROOT, b"p", 0o644, os.O_WRONLY, CTX)
    await client.ops.write(fi.fh, 0, b"data")
    times = pyfuse3.EntryAttributes()
    times.st_mtime_ns = 1_000_000_000_000_000_000
    await client.ops.setattr(attrs.st_ino, times, Fields(update_mtime=True), fi.fh, CTX)
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    got = await client.ops.getattr(attrs.st_ino, CTX)
    assert got.st_mtime_ns == 1_000_000_000_000_000_000
    assert await client.read_file("p") == b"data"


async def test_utimens_of_a_written_open_file_waits_for_its_close(repo: Repository) -> None:
    """`tar x` sets a file's times on its fd before it closes it: with writes unstored,
    the time waits on the spool for the close, which stores it with the bytes. stat
    shows it (and the moved ctime) at once; a commit in between takes the file as the
    tree has it, times and bytes of before; an atime equal to the new mtime is not
    stored apart."""
    ops = make_ops(repo, window=300)
    fi, attrs = await ops.create(ROOT, b"t", 0o644, os.O_WRONLY | os.O_EXCL, CTX)
    ino = attrs.st_ino
    await ops.flush(fi.fh)  # an empty file in the tree (as a `touch` before the writes)
    await ops.write(fi.fh, 0, b"bytes")
    before = await ops.getattr(ino, CTX)
    times = pyfuse3.EntryAttributes()
    times.st_mtime_ns = times.st_atime_ns = 1_600_000_000 * 10**9
    await ops.setattr(ino, times, Fields(update_mtime=True, update_atime=True), fi.fh, CTX)
    shown = await ops.getattr(ino, CTX)
    assert (shown.st_mtime_ns, shown.st_atime_ns) == (times.st_mtime_ns, times.st_mtime_ns)
    assert shown.st_ctime_ns >= before.st_ctime_ns
    ops.saver.commit_now(ops.views.root.worktree)
    assert repo.read("HEAD", b"t") == b""
    assert _entry(repo, b"t").mtime_ns != times.st_mtime_ns
    await ops.flush(fi.fh)
    await ops.release(fi.fh)
    ops.saver.commit_now(ops.views.root.worktree)
    stored = _entry(repo, b"t")
    assert (repo.read("HEAD", b"t"), stored.mtime_ns) == (b"bytes", times.st_mtime_ns)
    assert all(key != attrs_codec.ATIME for key, _ in stored.xattrs)
    after = await ops.getattr(ino, CTX)
    assert (after.st_mtime_ns, after.st_atime_ns) == (times.st_mtime_ns, times.st_mtime_ns)
    assert after.st_ctime_ns == shown.st_ctime_ns
    ops.close()


def _entry(repo: Repository, path: bytes) -> TreeEntry:
    entry = repo.entry("HEAD", path)
    assert entry is not None
    return entry


async def test_a_file_without_xattrs_has_none_to_get(client: Client) -> None:
    """The kernel asks security.capability before each write and chown: answered at
    once for a file with no xattrs, as for one with a user xattr; the computed names
    still answer."""
    ino = await client.write_file("plain", b"abc")
    await expect_errno(errno.ENODATA, client.ops.getxattr(ino, b"security.capability", CTX))
    await expect_errno(errno.ENODATA, client.ops.getxattr(ino, b"user.other", CTX))
    assert len(await client.ops.getxattr(ino, b"user.helix.hash", CTX)) == 64
    await client.ops.setxattr(ino, b"user.k", b"v", CTX)
    assert await client.ops.getxattr(ino, b"user.k", CTX) == b"v"
    await expect_errno(errno.ENODATA, client.ops.getxattr(ino, b"security.capability", CTX))


async def test_unlinked_open_file_stays_readable(client: Client) -> None:
    await client.write_file("gone", b"still here")
    ino = await client.ino("gone")
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    assert (await client.ops.getattr(ino, CTX)).st_nlink == 1
    await client.ops.unlink(ROOT, b"gone", CTX)
    await expect_errno(errno.ENOENT, client.ops.lookup(ROOT, b"gone", CTX))
    assert (await client.ops.getattr(ino, CTX)).st_nlink == 0  # fstat: no name links it
    assert await client.ops.read(fi.fh, 0, 100) == b"still here"
    await client.ops.write(fi.fh, 10, b"!")
    await client.ops.flush(fi.fh)
    assert await client.ops.read(fi.fh, 0, 100) == b"still here!"
    await client.ops.release(fi.fh)
    await client.ops.forget([(ino, 2)])  # create + lookup
    assert await client.names() == []
    await expect_errno(errno.ESTALE, client.ops.getattr(ino, CTX))  # a number now unknown


async def test_rename_over_an_existing_file(client: Client) -> None:
    await client.write_file("a", b"new")
    await client.write_file("b", b"old")
    await client.ops.rename(ROOT, b"a", ROOT, b"b", 0, CTX)
    assert await client.names() == [b"b"]
    assert await client.read_file("b") == b"new"


async def test_rename_noreplace_refuses(client: Client) -> None:
    await client.write_file("a", b"1")
    await client.write_file("b", b"2")
    await expect_errno(
        errno.EEXIST, client.ops.rename(ROOT, b"a", ROOT, b"b", pyfuse3.RENAME_NOREPLACE, CTX)
    )
    assert await client.read_file("b") == b"2"


async def test_rename_exchange_swaps(client: Client) -> None:
    await client.write_file("a", b"1")
    await client.write_file("b", b"2")
    ino_a, ino_b = await client.ino("a"), await client.ino("b")
    await client.ops.rename(ROOT, b"a", ROOT, b"b", pyfuse3.RENAME_EXCHANGE, CTX)
    assert await client.read_file("a") == b"2"
    assert await client.read_file("b") == b"1"
    assert await client.ino("a") == ino_b and await client.ino("b") == ino_a


async def test_rename_whiteout_is_refused_and_changes_nothing(client: Client) -> None:
    """RENAME_WHITEOUT (overlayfs) asks for a whiteout device left at the old name; the
    mount has no devices, so it must refuse (EINVAL, as a filesystem without whiteouts
    does), not quietly do a plain rename."""
    await client.write_file("a", b"1")
    whiteout = 4  # RENAME_WHITEOUT (linux/fs.h); pyfuse3 has no name for it
    await expect_errno(errno.EINVAL, client.ops.rename(ROOT, b"a", ROOT, b"b", whiteout, CTX))
    assert await client.names() == [b"a"]
    assert await client.read_file("a") == b"1"


async def test_rename_directory_keeps_children(client: Client) -> None:
    await client.mkdir("d")
    await client.write_file("d/f", b"inside")
    await client.ops.rename(ROOT, b"d", ROOT, b"e", 0, CTX)
    assert await client.read_file("e/f") == b"inside"


async def test_rmdir_of_non_empty_is_enotempty(client: Client) -> None:
    await client.mkdir("d")
    await client.write_file("d/f", b"")
    await expect_errno(errno.ENOTEMPTY, client.ops.rmdir(ROOT, b"d", CTX))
    await client.ops.unlink(await client.ino("d"), b"f", CTX)
    await client.ops.rmdir(ROOT, b"d", CTX)
    assert await client.names() == []


async def test_errors_map_to_errno(client: Client) -> None:
    await client.write_file("file", b"")
    ino = await client.ino("file")
    await expect_errno(errno.ENOENT, client.ops.lookup(ROOT, b"missing", CTX))
    await expect_errno(errno.ENOTDIR, client.ops.lookup(ino, b"x", CTX))
    await expect_errno(errno.ENOTDIR, client.ops.rmdir(ROOT, b"file", CTX))
    await expect_errno(errno.EISDIR, client.ops.open(ROOT, os.O_RDONLY, CTX))
    await client.mkdir("dir")
    await expect_errno(errno.EISDIR, client.ops.unlink(ROOT, b"dir", CTX))
    await expect_errno(errno.EEXIST, client.ops.mkdir(ROOT, b"dir", 0o755, CTX))
    await expect_errno(errno.ESTALE, client.ops.getattr(999_999_999, CTX))  # a number never given


async def test_bad_input_changes_nothing(client: Client) -> None:
    await client.write_file("a", b"1")
    before = client.ops.repo.resolve("HEAD")
    await expect_errno(errno.ENOENT, client.ops.unlink(ROOT, b"nope", CTX))
    await expect_errno(errno.ENOENT, client.ops.rename(ROOT, b"nope", ROOT, b"x", 0, CTX))
    assert client.ops.repo.resolve("HEAD") == before
    assert await client.names() == [b"a"]


async def test_symlinks(client: Client) -> None:
    attrs = await client.ops.symlink(ROOT, b"link", b"target/file", CTX)
    assert stat.S_ISLNK(attrs.st_mode)
    assert await client.ops.readlink(attrs.st_ino, CTX) == b"target/file"


async def test_pipes_sockets_and_devices_are_stored(client: Client) -> None:
    """mkfifo, a unix socket's bind() and mknod of a device: each is kept with its kind,
    mode and times (the empty blob as content), a device with its number too."""
    repo = client.ops.repo
    kinds = {
        b"pipe": (stat.S_IFIFO, 0),
        b"sock": (stat.S_IFSOCK, 0),
        b"null": (stat.S_IFCHR, os.makedev(1, 3)),
        b"disk": (stat.S_IFBLK, os.makedev(8, 17)),
    }
    for name, (kind, rdev) in kinds.items():
        attrs = await client.ops.mknod(ROOT, name, kind | 0o640, rdev, CTX)
        assert attrs.st_mode == kind | 0o640 and attrs.st_size == 0
        again = await client.ops.getattr(attrs.st_ino, CTX)
        assert (again.st_mode, again.st_rdev) == (kind | 0o640, rdev)
    stored = {entry.name: entry.mode for entry in repo.ls("HEAD")}
    assert stored == {name: kind | 0o640 for name, (kind, _) in kinds.items()}
    assert await client.names() == sorted(kinds)


async def test_any_linux_name_round_trips(client: Client) -> None:
    name = b"caf\xe9 \xff\x01 name"  # invalid UTF-8 on purpose
    fi, attrs = await client.ops.create(ROOT, name, 0o644, os.O_WRONLY, CTX)
    await client.ops.write(fi.fh, 0, b"bytes")
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert [n for n, _, _ in await client.listdir()] == [name]
    assert (await client.ops.lookup(ROOT, name, CTX)).st_ino == attrs.st_ino


async def test_two_handles_share_pending_writes(client: Client) -> None:
    """A shared mmap and another fd see one content: one spool per node."""
    ino = await client.write_file("shared", b"aaaa")
    writer = await client.ops.open(ino, os.O_RDWR, CTX)
    reader = await client.ops.open(ino, os.O_RDONLY, CTX)
    await client.ops.write(writer.fh, 0, b"bb")
    assert await client.ops.read(reader.fh, 0, 10) == b"bbaa"
    await client.ops.flush(writer.fh)
    await client.ops.write(writer.fh, 2, b"cc")  # mmap pages written back after close()
    await client.ops.release(writer.fh)
    await client.ops.release(reader.fh)
    assert await client.read_file("shared") == b"bbcc"


async def test_statfs_reports_the_store_disk(ops: Operations) -> None:
    data = await ops.statfs(CTX)
    assert data.f_bsize > 0 and data.f_namemax == 255


async def test_large_writes_spill_from_memory_to_the_store_tmp(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool, "SPILL_AT", 4096)
    await client.write_file("small", b"s" * 100)
    fi, attrs = await client.ops.create(ROOT, b"big", 0o644, os.O_RDWR, CTX)
    payload = os.urandom(3000)
    for index in range(10):
        await client.ops.write(fi.fh, index * 3000, payload)
        if index == 1:
            found = client.ops.spools.get(client.ops.inodes.node(attrs.st_ino).node)
            assert found is not None and found.on_disk
    assert await client.ops.read(fi.fh, 3000, 3000) == payload
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert await client.read_file("big") == payload * 10
    fi = await client.ops.open(attrs.st_ino, os.O_RDWR, CTX)
    await client.ops.write(fi.fh, 29_999, b"!")  # copies the stored content in first
    await client.ops.release(fi.fh)
    assert await client.read_file("big") == payload * 9 + payload[:-1] + b"!"


async def test_sequential_and_random_reads_of_a_chunked_file(client: Client) -> None:
    payload = os.urandom(3 << 20)
    await client.write_file("chunked", payload)
    assert await client.read_file("chunked") == payload
    ino = await client.ino("chunked")
    reader = await client.ops.open(ino, os.O_RDONLY, CTX)
    assert await client.ops.read(reader.fh, 0, 131072) == payload[:131072]
    assert await client.ops.read(reader.fh, 2_000_000, 4096) == payload[2_000_000:2_004_096]
    assert await client.ops.read(reader.fh, (3 << 20) - 10, 4096) == payload[-10:]
    await client.write_file("chunked", b"replaced")  # another handle changes the content
    assert await client.ops.read(reader.fh, 0, 100) == b"replaced"
    await client.ops.release(reader.fh)


class _CountingCutter:
    """FastCDC with a count of the bytes it cut: what a store had to read and hash."""

    def __init__(self, cdc: Any) -> None:
        self.cdc, self.bytes = cdc, 0

    def cut_stream(self, source: Any) -> Iterator[Any]:
        for chunk in self.cdc.cut_stream(source):
            self.bytes += chunk.length
            yield chunk

    def cut_buf(self, data: Any) -> Iterator[Any]:
        for chunk in self.cdc.cut_buf(data):
            self.bytes += chunk.length
            yield chunk


async def test_fsyncs_of_a_big_open_file_store_only_around_the_edits(
    client: Client, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database in the mount: each commit writes a few pages and fsyncs. Each fsync
    must cost the edits, not the file, and still store exactly the file's bytes."""
    cutter = _CountingCutter(content._CDC)
    monkeypatch.setattr(content, "_CDC", cutter)
    rng = random.Random(11)
    model = bytearray(rng.randbytes(6 << 20))
    await client.write_file("db", bytes(model))
    ino = await client.ino("db")
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    node = client.ops.inodes.node(ino).node
    for step in range(40):
        before = set(repo.store.ids())
        resized = 0
        if step % 9 == 8:  # a size change through the handle, as ftruncate does
            size = rng.randrange(5 << 20, 7 << 20)
            resized = abs(size - len(model))
            attrs = await client.ops.getattr(ino, CTX)
            attrs.st_size = size
            await client.ops.setattr(ino, attrs, Fields(update_size=True), fi.fh, CTX)
            del model[size:]
            model.extend(bytes(size - len(model)))
        for _ in range(rng.choice([1, 3])):
            at = rng.randrange(len(model) - 4096)
            page = rng.randbytes(4096)
            await client.ops.write(fi.fh, at, page)
            model[at : at + 4096] = page
        cutter.bytes = 0
        await client.ops.fsync(fi.fh, False)
        assert cutter.bytes < (1 << 20) + resized  # around the edits, not the ~6 MB
        assert node.oid == pack_bytes(bytes(model)).oid  # as if stored whole
        assert len(set(repo.store.ids()) - before) <= 12
    await client.ops.release(fi.fh)
    assert await client.read_file("db") == bytes(model)


async def _scattered_session(
    client: Client, ino: int, model: bytearray, rng: random.Random, writes: int
) -> None:
    """Open, write the way a database or VM image does (pages at random, many adjacent
    or overlapping, some odd-sized, some past the end, a truncate now and then), close;
    the model gets the same changes, and reads through the handle must match it."""
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    for n in range(writes):
        kind = rng.random()
        if kind < 0.002:  # ftruncate, shorter or longer
            size = rng.randrange(len(model) // 2, len(model) * 3 // 2)
            attrs = pyfuse3.EntryAttributes()
            attrs.st_size = size
            await client.ops.setattr(ino, attrs, Fields(update_size=True), fi.fh, CTX)
            del model[size:]
            model.extend(bytes(size - len(model)))
            continue
        if kind < 0.01:  # past the end: a hole, then data
            at, data = len(model) + rng.choice([1, 4096, 300_000]), rng.randbytes(4096)
        elif kind < 0.2:  # odd size at any offset, over pages written before
            at, data = rng.randrange(len(model)), rng.randbytes(rng.choice([1, 100, 9000]))
        else:  # a page
            at, data = rng.randrange(len(model) >> 12) << 12, rng.randbytes(4096)
        await client.ops.write(fi.fh, at, data)
        model.extend(bytes(max(0, at - len(model))))
        model[at : at + len(data)] = data
        if n % 97 == 0:
            at = rng.randrange(len(model))
            assert await client.ops.read(fi.fh, at, 70_000) == model[at : at + 70_000]
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)


async def test_thousands_of_scattered_writes_store_exactly_the_bytes_written(
    client: Client,
) -> None:
    """A close after scattered writes re-cuts only the chunks around them (ADR 0016):
    with writes in most chunks, every way edits meet chunk edges and each other shows
    up. The stored file must be the model's bytes, with the id of a dense write."""
    rng = random.Random(7)
    model = bytearray(rng.randbytes(6 << 20))
    ino = await client.write_file("image", bytes(model))
    for writes in (3000, 300, 3000):
        await _scattered_session(client, ino, model, rng, writes)
        node = client.ops.inodes.node(ino).node
        assert node.size == len(model)
        assert node.oid == pack_bytes(bytes(model)).oid
        assert await client.read_file("image") == bytes(model)


async def test_a_close_after_scattered_writes_reads_the_file_once(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing re-cut around each edit on its own, reading ~1 MiB of the spool's view
    (the stored content pieced together with the writes) per edit: a 1 GiB file with
    40,000 page writes was read 3 times over at close."""
    read = 0
    view_readinto = spool._View.readinto

    def counted(self: spool._View, buffer: Any) -> int:
        nonlocal read
        n = view_readinto(self, buffer)
        read += n
        return n

    monkeypatch.setattr(spool._View, "readinto", counted)
    rng = random.Random(3)
    size = 16 << 20
    model = bytearray(rng.randbytes(size))
    ino = await client.write_file("db", bytes(model))
    read = 0
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    for at in sorted(rng.sample(range(len(model) >> 12), 1000)):
        await client.ops.write(fi.fh, at << 12, bytes(4096))
        model[at << 12 : (at + 1) << 12] = bytes(4096)
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert read <= size + (1 << 20)
    assert client.ops.inodes.node(ino).node.oid == pack_bytes(bytes(model)).oid


async def _sparse_session(
    client: Client, ino: int, fh: int, size: int, writes: dict[int, bytes]
) -> None:
    """ftruncate an open file to `size`, write pieces at offsets, close it."""
    attrs = pyfuse3.EntryAttributes()
    attrs.st_size = size
    await client.ops.setattr(ino, attrs, Fields(update_size=True), fh, CTX)
    for at, data in writes.items():
        await client.ops.write(fh, at, data)
    await client.ops.flush(fh)
    await client.ops.release(fh)


async def test_a_sparse_file_saves_at_the_cost_of_its_data(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ftruncate to 64 GiB and a few writes: the close cut the whole hole (minutes, and
    every other request of the mount waited). Now its zeros are stored unread, with the
    ids storing the dense bytes gives."""
    cutter = _CountingCutter(content._CDC)
    monkeypatch.setattr(content, "_CDC", cutter)
    size = 64 << 30
    writes = {0: b"head" * 1024, 5 << 30: os.urandom(100_000), size - 10: b"0123456789"}
    fi, attrs = await client.ops.create(ROOT, b"sparse", 0o644, os.O_RDWR, CTX)
    await _sparse_session(client, attrs.st_ino, fi.fh, size, writes)
    assert cutter.bytes < 8 << 20
    fi = await client.ops.open(attrs.st_ino, os.O_RDONLY, CTX)
    assert await client.ops.read(fi.fh, (5 << 30) - 5, 100_010) == (
        bytes(5) + writes[5 << 30] + bytes(5)
    )
    assert await client.ops.read(fi.fh, 40 << 30, 1 << 20) == bytes(1 << 20)
    assert await client.ops.read(fi.fh, size - 20, 100) == bytes(10) + b"0123456789"
    await client.ops.release(fi.fh)

    # opened again, written in a hole and grown: the edit path skips the holes too
    cutter.bytes = 0
    fi = await client.ops.open(attrs.st_ino, os.O_RDWR, CTX)
    await _sparse_session(client, attrs.st_ino, fi.fh, size * 2, {30 << 30: b"middle"})
    assert cutter.bytes < 8 << 20
    node = client.ops.inodes.node(attrs.st_ino).node
    assert client.ops.repo.worktree().read(node, 30 << 30, 6) == b"middle"
    assert client.ops.repo.worktree().read(node, 2 * size - 4, 4) == bytes(4)


async def test_a_sparse_file_is_stored_as_its_dense_bytes_would_be(client: Client) -> None:
    size = 40 << 20
    writes = {3 << 20: os.urandom(70_000), (20 << 20) + 1: os.urandom(5), size - 1: b"!"}
    model = bytearray(size)
    for at, data in writes.items():
        model[at : at + len(data)] = data
    fi, attrs = await client.ops.create(ROOT, b"sparse", 0o644, os.O_RDWR, CTX)
    await _sparse_session(client, attrs.st_ino, fi.fh, size, writes)
    assert client.ops.inodes.node(attrs.st_ino).node.oid == pack_bytes(bytes(model)).oid
    assert await client.read_file("sparse") == bytes(model)
    # a hole made by writing past the end, not by ftruncate
    fi, attrs = await client.ops.create(ROOT, b"written", 0o644, os.O_RDWR, CTX)
    await client.ops.write(fi.fh, size - 1, b"!")
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    node = client.ops.inodes.node(attrs.st_ino).node
    assert node.oid == pack_bytes(bytes(size - 1) + b"!").oid


def _blocks(nbytes: int) -> int:
    return (nbytes + 511) // 512


def _stored_data_bytes(ops: Operations, ino: int) -> int:
    """A stored content's bytes outside ZERO_CHUNK chunks, from its decoded index."""
    node = ops.inodes.node(ino).node
    assert node.oid is not None
    index = ops.repo.contents.chunks(node.oid)
    assert index is not None
    starts, ids = index
    lengths = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    return sum(n for oid, n in zip(ids, lengths, strict=True) if oid != content.ZERO_CHUNK[0])


async def test_st_blocks_count_a_sparse_file_s_data_not_its_holes(client: Client) -> None:
    """st_blocks said every byte was data: `du` of a 64 GiB sparse file said 64 GiB and
    `cp --sparse=auto` out of the mount could not tell it was sparse. Now an open file
    shows its written ranges and a stored one its chunks that are not ZERO_CHUNK."""
    size = 64 << 30
    writes = {0: b"head" * 1024, 5 << 30: os.urandom(100_000), size - 10: b"0123456789"}
    fi, attrs = await client.ops.create(ROOT, b"sparse", 0o644, os.O_RDWR, CTX)
    ino = attrs.st_ino
    attrs = pyfuse3.EntryAttributes()
    attrs.st_size = size
    await client.ops.setattr(ino, attrs, Fields(update_size=True), fi.fh, CTX)
    for at, data in writes.items():
        await client.ops.write(fi.fh, at, data)
    open_attrs = await client.ops.getattr(ino, CTX)
    assert (open_attrs.st_size, open_attrs.st_blocks) == (size, _blocks(4096 + 100_000 + 10))
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)

    data = _stored_data_bytes(client.ops, ino)
    assert 104_106 <= data < 2 << 20  # each piece of data plus at most 2 chunks of its hole
    for found in (
        await client.ops.getattr(ino, CTX),
        await client.ops.lookup(ROOT, b"sparse", CTX),
    ):
        assert (found.st_size, found.st_blocks) == (size, _blocks(data))


async def test_st_blocks_of_a_file_grown_by_truncate_leave_out_the_hole(client: Client) -> None:
    ino = await client.write_file("grown", b"x" * 4096)
    attrs = pyfuse3.EntryAttributes()
    attrs.st_size = 1 << 30
    await client.ops.setattr(ino, attrs, Fields(update_size=True), None, CTX)  # truncate -s
    found = await client.ops.getattr(ino, CTX)
    assert found.st_size == 1 << 30
    assert found.st_blocks == _blocks(_stored_data_bytes(client.ops, ino)) < _blocks(1 << 20)


async def test_st_blocks_of_dense_files_count_every_byte(client: Client) -> None:
    for name, data in [("small", b"s" * 5000), ("big", os.urandom(3 << 20)), ("empty", b"")]:
        ino = await client.write_file(name, data)
        assert (await client.ops.getattr(ino, CTX)).st_blocks == _blocks(len(data))


async def test_st_blocks_of_a_sparse_file_written_again_keep_its_holes(client: Client) -> None:
    """Opened again and written, a stored sparse file showed every byte as data until
    the kernel's attributes expired (300 s): the spool knew only its own holes."""
    size = 1 << 30
    fi, attrs = await client.ops.create(ROOT, b"sparse", 0o644, os.O_RDWR, CTX)
    ino = attrs.st_ino
    await _sparse_session(client, ino, fi.fh, size, {0: b"start", size // 2: b"middle"})
    stored = _stored_data_bytes(client.ops, ino)
    fi = await client.ops.open(ino, os.O_RDWR, CTX)
    await client.ops.write(fi.fh, size // 4, b"again")
    assert (await client.ops.getattr(ino, CTX)).st_blocks == _blocks(stored + 5)
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert (
        (await client.ops.getattr(ino, CTX)).st_blocks
        == _blocks(_stored_data_bytes(client.ops, ino))
        < _blocks(4 << 20)
    )


async def test_a_file_whose_index_is_unreadable_still_stats(repo: Repository) -> None:
    """st_blocks reads a big file's index: a missing or corrupt one must not turn `ls -l`
    or `stat` into EIO (reading the file does fail, and fsck names it)."""
    repo.commit({"big": os.urandom(3 << 20)}, "big")
    repo.store.delete([repo.trees.file_entry(repo.commit_info("HEAD").tree, "big").oid])
    client = Client(make_ops(repo))
    found = await client.ops.lookup(ROOT, b"big", CTX)
    assert (found.st_size, found.st_blocks) == (3 << 20, _blocks(3 << 20))


def rust_panic() -> BaseException:
    """A pyo3_runtime.PanicException, what a panic in rocksdict or blake3 raises: a
    BaseException, and not importable (each extension makes its own class at import)."""
    panic = next(c for c in BaseException.__subclasses__() if c.__module__ == "pyo3_runtime")
    return panic("called `Result::unwrap()` on an `Err` value")


@pytest.mark.parametrize("failure", [rust_panic(), KeyboardInterrupt()], ids=type)
async def test_a_panic_in_the_store_fails_the_request_not_the_mount(
    client: Client, failure: BaseException
) -> None:
    """A Rust panic is no Exception: it went past the EIO mapping into pyfuse3's loop,
    and the mount ended (ENOTCONN on every file). Its request fails with EIO now, and
    the next one is served; what ends a task on purpose (Ctrl-C) still goes through."""
    await client.write_file("saved.txt", b"saved\n")
    store = client.ops.repo.store

    def failing(*args: object, **kwargs: object) -> None:
        raise failure

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store, "_apply", failing)
        if isinstance(failure, KeyboardInterrupt):
            with pytest.raises(KeyboardInterrupt):
                await client.write_file("new.txt", b"new\n")
        else:
            await expect_errno(errno.EIO, client.write_file("new.txt", b"new\n"))
    await client.write_file("after.txt", b"served on\n")
    assert client.ops.repo.read("HEAD", b"after.txt") == b"served on\n"
    assert await client.read_file("saved.txt") == b"saved\n"
