"""Extended attributes: user.* stored in the tree, user.helix.* computed and hidden."""

from __future__ import annotations

import errno
import os

import blake3
from fs_client import CTX, ROOT, Client, expect_errno, make_ops

from helixfs.vcs.repo import Repository


async def test_user_xattrs_round_trip_and_list(client: Client) -> None:
    ino = await client.write_file("f", b"content")
    await client.ops.setxattr(ino, b"user.color", b"blue", CTX)
    assert await client.ops.getxattr(ino, b"user.color", CTX) == b"blue"
    assert list(await client.ops.listxattr(ino, CTX)) == [b"user.color"]
    await client.ops.removexattr(ino, b"user.color", CTX)
    await expect_errno(errno.ENODATA, client.ops.getxattr(ino, b"user.color", CTX))
    await expect_errno(errno.ENODATA, client.ops.removexattr(ino, b"user.color", CTX))


async def test_xattrs_are_committed(client: Client) -> None:
    ino = await client.write_file("f", b"content")
    await client.ops.setxattr(ino, b"user.k", b"v", CTX)
    entry = client.ops.repo.entry("HEAD", b"f")
    assert entry is not None and (b"user.k", b"v") in entry.xattrs


async def test_virtual_hash_and_commit_are_readable_not_listed(client: Client) -> None:
    ino = await client.write_file("f", b"content")
    digest = await client.ops.getxattr(ino, b"user.helix.hash", CTX)
    assert len(digest) == 64 and int(digest, 16) >= 0
    commit = await client.ops.getxattr(ino, b"user.helix.commit", CTX)
    assert client.ops.repo.resolve(commit.decode()) == client.ops.repo.resolve("HEAD")
    assert list(await client.ops.listxattr(ino, CTX)) == []


async def test_same_content_same_hash(client: Client) -> None:
    a = await client.write_file("a", b"same bytes")
    b = await client.write_file("b", b"same bytes")
    assert await client.ops.getxattr(a, b"user.helix.hash", CTX) == await client.ops.getxattr(
        b, b"user.helix.hash", CTX
    )


async def test_message_xattr_names_the_next_commit(repo: Repository) -> None:
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    await client.write_file("parser.py", b"def parse(): ...\n")
    await ops.setxattr(await client.ino("parser.py"), b"user.helix.message", b"add parser", CTX)
    ops.saver.flush_now()
    assert repo.commit_info("HEAD").message == "add parser"
    await ops.setxattr(ROOT, b"user.helix.message", b"second", CTX)
    await client.write_file("parser.py", b"v2")
    ops.saver.flush_now()
    assert repo.commit_info("HEAD").message == "second"


async def test_the_roots_xattrs_are_stored_and_versioned(repo: Repository, client: Client) -> None:
    """A tree has no entry for its root: the mount root's (or a branch folder's) user
    xattrs live in its root record beside its mode and owner (ADR 0044). They survive a
    remount, go with a branch made from it, and a reset takes them back."""
    before = repo.resolve("HEAD")
    await client.ops.setxattr(ROOT, b"user.helix.message", b"still fine", CTX)
    await client.ops.setxattr(ROOT, b"user.k", b"v", CTX)
    client.ops.saver.flush_now()
    assert repo.commit_info("HEAD").meta["changed"] == ["."]
    assert repo.commit_info("HEAD").message == "still fine"
    await client.mkdir(".helix/branches/b")
    branch = await client.ino(".helix/branches/b")
    assert await client.ops.getxattr(branch, b"user.k", CTX) == b"v"  # made from it
    await client.ops.setxattr(branch, b"user.mine", b"1", CTX)
    assert list(await client.ops.listxattr(branch, CTX)) == [b"user.k", b"user.mine"]
    await client.ops.removexattr(branch, b"user.k", CTX)
    client.ops.close()
    again = Client(make_ops(repo))
    try:
        assert list(await again.ops.listxattr(ROOT, CTX)) == [b"user.k"]
        assert await again.ops.getxattr(ROOT, b"user.k", CTX) == b"v"
        branch = await again.ino(".helix/branches/b")
        assert list(await again.ops.listxattr(branch, CTX)) == [b"user.mine"]
    finally:
        again.ops.close()
    repo.reset_hard(before.hex())
    back = Client(make_ops(repo))
    try:
        await expect_errno(errno.ENODATA, back.ops.getxattr(ROOT, b"user.k", CTX))
    finally:
        back.ops.close()
    assert repo.commit_info(before).tree == repo.commit_info(repo.resolve("HEAD")).tree


async def test_commit_xattr_of_a_removed_file_names_no_other_commit(client: Client) -> None:
    """An unlinked open file has no path: its user.helix.commit was the branch head
    (the root's), and a file in a removed folder took the commit of the root's file
    of the same name."""
    ops = client.ops
    await client.mkdir("d")
    await client.write_file("d/f", b"in d")
    await client.write_file("f", b"top")
    top_commit = await ops.getxattr(await client.ino("f"), b"user.helix.commit", CTX)
    await client.write_file("gone", b"x")
    held = {}
    for path in ("gone", "d/f"):
        ino = await client.ino(path)
        held[path] = ino, (await ops.open(ino, os.O_RDONLY, CTX)).fh
    await ops.unlink(ROOT, b"gone", CTX)
    await ops.unlink(await client.ino("d"), b"f", CTX)
    await ops.rmdir(ROOT, b"d", CTX)
    for ino, fh in held.values():
        await expect_errno(errno.ENODATA, ops.getxattr(ino, b"user.helix.commit", CTX))
        assert len(await ops.getxattr(ino, b"user.helix.hash", CTX)) == 64
        await ops.release(fh)
    assert await ops.getxattr(await client.ino("f"), b"user.helix.commit", CTX) == top_commit


async def test_other_namespaces_and_virtual_names_are_refused(client: Client) -> None:
    ino = await client.write_file("f", b"")
    await expect_errno(errno.ENOTSUP, client.ops.setxattr(ino, b"trusted.x", b"1", CTX))
    await expect_errno(errno.EPERM, client.ops.setxattr(ino, b"user.helix.hash", b"1", CTX))
    await expect_errno(errno.ENODATA, client.ops.getxattr(ino, b"security.capability", CTX))


async def test_a_name_that_is_only_the_namespace_is_invalid(client: Client) -> None:
    """'user.' alone is EINVAL on ext4, xfs and tmpfs: stored here, it made `rsync -X`
    of the file out of the mount fail (exit 23)."""
    ino = await client.write_file("f", b"")
    await expect_errno(errno.EINVAL, client.ops.setxattr(ino, b"user.", b"1", CTX))
    assert await client.ops.listxattr(ino, CTX) == []


async def test_hash_is_the_blake3_of_the_bytes(client: Client) -> None:
    """What `b3sum` prints, for a one-blob file and a chunked one alike."""
    small = await client.write_file("small", b"content")
    assert (
        await client.ops.getxattr(small, b"user.helix.hash", CTX)
        == blake3.blake3(b"content").hexdigest().encode()
    )
    payload = os.urandom(5 << 20)
    big = await client.write_file("big", payload)
    assert (
        await client.ops.getxattr(big, b"user.helix.hash", CTX)
        == blake3.blake3(payload).hexdigest().encode()
    )
    await expect_errno(errno.ENODATA, client.ops.getxattr(ROOT, b"user.helix.hash", CTX))


async def test_a_name_past_what_listxattr_can_return_is_refused(client: Client) -> None:
    """Linux's listxattr fails with E2BIG past 64 KiB of names: a file holding more
    could never have its xattrs listed (getfattr -d, rsync -X) again. ext4 refuses the
    name that does not fit with ENOSPC, and so does the mount."""
    ino = await client.write_file("f", b"content")
    name_of = [b"user.n%03d" % i + b"x" * 240 for i in range(300)]
    fitting = 65536 // (len(name_of[0]) + 1)  # each name listed with its NUL
    for name in name_of[:fitting]:
        await client.ops.setxattr(ino, name, b"v", CTX)
    await expect_errno(errno.ENOSPC, client.ops.setxattr(ino, name_of[fitting], b"v", CTX))
    assert len(await client.ops.listxattr(ino, CTX)) == fitting
    await client.ops.setxattr(ino, name_of[0], b"a new value of a name it holds", CTX)
    await client.ops.removexattr(ino, name_of[0], CTX)
    await client.ops.setxattr(ino, name_of[fitting], b"v", CTX)


async def test_a_files_xattrs_are_bounded_in_all(client: Client) -> None:
    """Values live in the folder's tree record, stored again by every commit of the
    folder: 100 values of 64 KiB made each save beside the file store 6.4 MB. Past 128
    KiB in all, ENOSPC; a value may still shrink, or be replaced within the bound."""
    ino = await client.write_file("f", b"content")
    big = b"v" * (60 << 10)
    await client.ops.setxattr(ino, b"user.a", big, CTX)
    await client.ops.setxattr(ino, b"user.b", big, CTX)
    await expect_errno(errno.ENOSPC, client.ops.setxattr(ino, b"user.c", big, CTX))
    await expect_errno(errno.ENOSPC, client.ops.setxattr(ino, b"user.b", big * 2, CTX))
    await client.ops.setxattr(ino, b"user.b", big + b"w" * 1024, CTX)  # still fits
    await client.ops.setxattr(ino, b"user.a", b"small", CTX)
    await client.ops.setxattr(ino, b"user.c", big, CTX)
    assert sorted(await client.ops.listxattr(ino, CTX)) == [b"user.a", b"user.b", b"user.c"]


async def test_getxattr_follows_a_ref_move_another_thread_made_first(client: Client) -> None:
    """getxattr of a file with no xattrs answers without the repository lock: a ref
    move that a command on another thread made (queued for the loop) is followed
    first, so the answer is the moved tree's, not the one before it."""
    import threading

    import trio

    ino = await client.write_file("f", b"content")
    await client.ops.setxattr(ino, b"user.k", b"v", CTX)
    tagged = client.ops.repo.resolve("HEAD")
    await client.ops.removexattr(ino, b"user.k", CTX)
    await expect_errno(errno.ENODATA, client.ops.getxattr(ino, b"user.k", CTX))
    client.ops._loop = (threading.get_ident(), trio.lowlevel.current_trio_token())
    worker = threading.Thread(target=client.ops.repo.reset_hard, args=(tagged.hex(),))
    worker.start()
    worker.join()  # the loop has not run since: the move is still queued
    assert client.ops._moves
    assert await client.ops.getxattr(ino, b"user.k", CTX) == b"v"
