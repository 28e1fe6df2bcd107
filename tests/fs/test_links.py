"""Hard links through the Operations class, as the kernel sends them (ADR 0043)."""

from __future__ import annotations

import errno
import os

from fs_client import CTX, ROOT, Client, expect_errno, make_ops

from helixfs.vcs.repo import Repository


async def _nlink(client: Client, ino: int) -> int:
    return int((await client.ops.getattr(ino, CTX)).st_nlink)


async def test_a_link_is_the_same_inode_under_two_names(client: Client) -> None:
    ino = await client.write_file("a", b"first")
    sub = await client.mkdir("sub")
    attrs = await client.ops.link(ino, sub, b"b", CTX)
    assert attrs.st_ino == ino and attrs.st_nlink == 2
    assert (await client.lookup(sub, b"b")).st_ino == ino
    fi = await client.ops.open(ino, os.O_WRONLY, CTX)  # opened by its number, as b
    await client.ops.write(fi.fh, 0, b"THROUGH")
    assert await client.read_file("a") == b"THROUGH"  # at once, before the close
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    await client.ops.unlink(ROOT, b"a", CTX)
    assert await _nlink(client, ino) == 1
    assert await client.read_file("sub/b") == b"THROUGH"
    assert (await client.lookup(sub, b"b")).st_ino == ino  # the inode outlives a name


async def test_a_rename_keeps_the_link(client: Client) -> None:
    ino = await client.write_file("a", b"x")
    await client.ops.link(ino, ROOT, b"b", CTX)
    await client.ops.rename(ROOT, b"b", ROOT, b"c", 0, CTX)
    assert (await client.lookup(ROOT, b"c")).st_ino == ino
    assert await _nlink(client, ino) == 2


async def test_links_survive_a_remount(repo: Repository, client: Client) -> None:
    ino = await client.write_file("a", b"kept")
    await client.mkdir("d")
    await client.ops.link(ino, await client.ino("d"), b"b", CTX)
    client.ops.close()
    again = Client(make_ops(repo))
    try:
        first = await again.ino("d/b")  # its other name's folder is not loaded yet
        assert await _nlink(again, first) == 2
        assert await again.ino("a") == first
        await again.write_file("d/b", b"new")
        assert await again.read_file("a") == b"new"
    finally:
        again.ops.close()


async def test_a_link_out_of_the_tree_is_exdev(client: Client) -> None:
    ino = await client.write_file("a", b"x")
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"other", 0o755, CTX)
    other = await client.ino(".helix/branches/other")
    await expect_errno(errno.EXDEV, client.ops.link(ino, other, b"a2", CTX))
    await expect_errno(errno.EXDEV, client.ops.link(ino, branches, b"a2", CTX))
    await expect_errno(errno.EXDEV, client.ops.link(ino, await client.ino(".helix"), b"x", CTX))
    theirs = await client.ino(".helix/branches/other/a")
    await expect_errno(errno.EXDEV, client.ops.link(theirs, ROOT, b"a3", CTX))


async def test_a_folder_is_not_linked_and_a_taken_name_is_eexist(client: Client) -> None:
    sub = await client.mkdir("sub")
    await expect_errno(errno.EPERM, client.ops.link(sub, ROOT, b"sub2", CTX))
    ino = await client.write_file("a", b"x")
    await client.write_file("b", b"y")
    await expect_errno(errno.EEXIST, client.ops.link(ino, ROOT, b"b", CTX))
    await expect_errno(errno.EBUSY, client.ops.link(ino, ROOT, b".helix", CTX))
