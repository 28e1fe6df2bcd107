"""The virtual `.helix/` folder: HEAD, store, branches, snapshots, commits, log, stats."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pyfuse3
import pytest
import trio
from fs_client import CTX, ROOT, Client, Ctx, expect_errno, make_ops

from helixfs.fs import handles
from helixfs.fs.helixdir import QueryDir, TextFile
from helixfs.fs.negatives import NegativeNames
from helixfs.store import space
from helixfs.vcs.repo import Repository


async def read_virtual(client: Client, path: str) -> bytes:
    fi = await client.ops.open(await client.ino(path), os.O_RDONLY, CTX)
    assert fi.direct_io  # sizes of computed files are not trusted to the page cache
    try:
        return await client.read_fh(fi.fh)
    finally:
        await client.ops.release(fi.fh)


async def write_virtual(client: Client, path: str, data: bytes) -> None:
    ino = await client.ino(path)
    fi = await client.ops.open(ino, os.O_WRONLY | os.O_TRUNC, CTX)
    await client.ops.write(fi.fh, 0, data)
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)


async def test_listing_and_static_files(client: Client, store: Path) -> None:
    names = await client.names(".helix")
    assert names == sorted(
        [b"HEAD", b"branches", b"commits", b"log", b"snapshots", b"stats", b"status", b"store"]
    )
    assert await read_virtual(client, ".helix/HEAD") == b"main\n"
    assert await read_virtual(client, ".helix/store") == str(store.resolve()).encode() + b"\n"
    attrs = await client.ops.getattr(await client.ino(".helix/HEAD"), CTX)
    assert attrs.st_size == 5


async def test_log_and_stats_render(client: Client) -> None:
    await client.ops.setxattr(ROOT, b"user.helix.message", b"first file", CTX)
    await client.write_file("a", b"1")
    log = await read_virtual(client, ".helix/log")
    assert b"first file" in log
    assert len(log.splitlines()) >= 2
    assert b":" in await read_virtual(client, ".helix/stats")


async def test_stats_are_computed_at_open_not_at_every_stat(client: Client) -> None:
    """`.helix/stats` walks every branch's tree (referenced bytes): rendered for each
    lookup and getattr too, `cat` paid it three to four times (570-740 ms at 100,000
    files, against 150 ms once). Like `.helix/context`, it reports 0 until opened."""
    await client.write_file("a", b"1")
    ino = await client.ino(".helix/stats")
    assert (await client.ops.getattr(ino, CTX)).st_size == 0  # not computed by a stat
    fi = await client.ops.open(ino, os.O_RDONLY, CTX)
    size = (await client.ops.getattr(ino, CTX)).st_size
    text = await client.ops.read(fi.fh, 0, size + 1)
    await client.ops.release(fi.fh)
    assert len(text) == size and b"objects: " in text


@pytest.fixture
def daemon_zone_not_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The daemon runs in a zone of its own (+0530, no tzdata needed)."""
    monkeypatch.setenv("TZ", "XYZ-05:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("daemon_zone_not_utc")
async def test_the_log_shows_times_in_the_authors_zone_not_the_daemons(
    repo: Repository,
) -> None:
    """`.helix/log` showed the daemon's local time, without a zone, where `helix log`
    shows the author's zone (an imported commit keeps it), else UTC: one commit, two
    different times. Both now show the same time and zone."""
    repo.commit({"plain": b"1"}, "made here")
    repo.commit({"imported": b"2"}, "from git", {"git": {"author_date": "1600000000 -0330"}})
    ops = make_ops(repo)
    log = (await read_virtual(Client(ops), ".helix/log")).decode().splitlines()
    ops.close()
    expected = []
    zones = [(-12600, "-0330"), (0, "+0000")]
    for commit, (offset, zone) in zip(repo.log("HEAD", limit=2), zones, strict=True):
        shown = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(commit.time_ns / 1e9 + offset))
        expected.append(f"{commit.id.hex()[:12]} {shown} {zone} {commit.message}")
    assert log[:2] == expected


async def test_the_log_shows_a_save_still_in_the_quiet_window(repo: Repository) -> None:
    """As `helix log` does: the log read commits the pending saves, as the window's own
    commit (who saved, what changed), and the window then has nothing left to commit."""
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    await client.write_file("just-saved", b"x")
    log = await read_virtual(client, ".helix/log")
    head = repo.commit_info("HEAD")
    assert head.meta["changed"] == ["just-saved"] and "process" in head.meta
    assert log.splitlines()[0].startswith(head.id.hex()[:12].encode())
    ops.saver.commit_due(trio.current_time() + 7200)  # the window ends
    assert repo.resolve("HEAD") == head.id
    ops.close()


async def test_the_log_of_a_full_disk_shows_the_last_commit(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No room for the pending saves' commit: the read still works, and the window
    commits them once there is room."""
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    await client.write_file("just-saved", b"x")
    last = repo.resolve("HEAD")
    full_disk(monkeypatch)
    log = await read_virtual(client, ".helix/log")
    assert log.splitlines()[0].startswith(last.hex()[:12].encode())
    monkeypatch.undo()
    ops.saver.commit_due(trio.current_time() + 7200)
    assert repo.commit_info("HEAD").meta["changed"] == ["just-saved"]
    ops.close()


def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's disk has no room left for a write (space.RESERVE_BYTES free)."""
    real_statvfs = os.statvfs

    def statvfs(path: str | Path) -> os.statvfs_result:
        found = list(real_statvfs(path))
        found[4] = space.RESERVE_BYTES // found[1]  # f_bavail, in f_frsize units
        return os.statvfs_result(found)

    monkeypatch.setattr(os, "statvfs", statvfs)
    monkeypatch.setattr(space, "RECHECK_SECONDS", 0.0)  # look at the disk on every write


async def test_helix_files_are_read_only_unless_meant(client: Client) -> None:
    ino = await client.ino(".helix/log")
    await expect_errno(errno.EPERM, client.ops.open(ino, os.O_WRONLY, CTX))
    await expect_errno(
        errno.EPERM, client.ops.create(await client.ino(".helix"), b"x", 0o644, os.O_WRONLY, CTX)
    )
    await expect_errno(errno.EPERM, client.ops.mkdir(await client.ino(".helix"), b"d", 0o755, CTX))


async def test_mkdir_branch_is_isolated_and_writable(client: Client) -> None:
    await client.write_file("shared.txt", b"base")
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"try", 0o755, CTX)
    assert b"try" in await client.names(".helix/branches")
    assert await client.read_file(".helix/branches/try/shared.txt") == b"base"
    await client.write_file(".helix/branches/try/only-here.txt", b"branch")
    await client.write_file(".helix/branches/try/shared.txt", b"changed on branch")
    assert await client.names() == [b"shared.txt"]
    assert await client.read_file("shared.txt") == b"base"
    repo = client.ops.repo
    assert repo.read("try", b"only-here.txt") == b"branch"
    assert repo.read("main", b"shared.txt") == b"base"


async def test_branch_of_uncommitted_state(repo: Repository) -> None:
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    await client.write_file("pending.txt", b"not yet committed")
    await ops.mkdir(await client.ino(".helix/branches"), b"copy", 0o755, CTX)
    assert repo.read("copy", b"pending.txt") == b"not yet committed"


async def test_view_inodes_are_disjoint_from_the_root(client: Client) -> None:
    root_file = await client.write_file("f", b"x")
    await client.ops.mkdir(await client.ino(".helix/branches"), b"b", 0o755, CTX)
    branch_root = await client.ino(".helix/branches/b")
    branch_file = await client.ino(".helix/branches/b/f")
    assert len({root_file, branch_file, branch_root, ROOT}) == 4
    assert root_file >> 32 != branch_file >> 32


async def test_the_current_branch_is_a_link_to_the_root_and_cannot_be_unlinked(
    client: Client,
) -> None:
    """One writable place per branch: `rm -rf .helix` does not follow the link, so it
    cannot empty the workspace through `.helix/branches/main`."""
    await client.write_file("f", b"kept")
    branches = await client.ino(".helix/branches")
    attrs = await client.ops.lookup(branches, b"main", CTX)
    assert stat.S_ISLNK(attrs.st_mode) and attrs.st_size == len(b"../..")
    assert await client.ops.readlink(attrs.st_ino, CTX) == b"../.."
    await expect_errno(errno.EPERM, client.ops.unlink(branches, b"main", CTX))
    await expect_errno(errno.EBUSY, client.ops.rmdir(branches, b"main", CTX))
    listed = {name: ino for name, ino, _ in await client.listdir(branches)}
    assert listed[b"main"] == attrs.st_ino  # readdir shows the link too
    await client.ops.mkdir(branches, b"b", 0o755, CTX)
    view_root = await client.ino(".helix/branches/b")
    await client.write_file(".helix/HEAD", b"b\n")
    # now b is the link and main a whole tree, under numbers neither had before
    b_attrs = await client.ops.lookup(branches, b"b", CTX)
    assert stat.S_ISLNK(b_attrs.st_mode) and b_attrs.st_ino != view_root
    main_root = await client.ops.lookup(branches, b"main", CTX)
    assert stat.S_ISDIR(main_root.st_mode) and main_root.st_ino != attrs.st_ino
    assert await client.read_file(".helix/branches/main/f") == b"kept"


async def test_rmdir_branch_and_refusal_for_current(client: Client) -> None:
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"tmp", 0o755, CTX)
    await client.ops.rmdir(branches, b"tmp", CTX)
    assert b"tmp" not in await client.names(".helix/branches")
    await expect_errno(errno.EBUSY, client.ops.rmdir(branches, b"main", CTX))
    await expect_errno(errno.ENOENT, client.ops.rmdir(branches, b"nope", CTX))


async def test_a_branch_folder_made_again_is_a_new_inode(client: Client) -> None:
    """A shell may still be inside the deleted folder: the kernel holds its inode,
    marked deleted, and would refuse every create in a new folder of the same number."""
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"again", 0o755, CTX)
    first = await client.ino(".helix/branches/again")
    await client.ops.rmdir(branches, b"again", CTX)
    await client.ops.mkdir(branches, b"again", 0o755, CTX)
    second = await client.ino(".helix/branches/again")
    assert second != first
    assert await client.ino(".helix/branches/again") == second  # stable while it lives


async def test_rename_branch(client: Client) -> None:
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"old", 0o755, CTX)
    await client.write_file(".helix/branches/old/f", b"kept")
    await client.ops.rename(branches, b"old", branches, b"new", 0, CTX)
    assert await client.names(".helix/branches") == [b"main", b"new"]
    assert await client.read_file(".helix/branches/new/f") == b"kept"


async def test_head_write_switches_the_root(client: Client) -> None:
    await client.write_file("on-main", b"m")
    ino_main_file = await client.ino("on-main")
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"other", 0o755, CTX)
    await client.write_file(".helix/branches/other/on-other", b"o")
    await write_virtual(client, ".helix/HEAD", b"other\n")
    assert await read_virtual(client, ".helix/HEAD") == b"other\n"
    assert client.ops.repo.head_branch() == "other"
    assert sorted(await client.names()) == [b"on-main", b"on-other"]
    assert await client.ino("on-main") == ino_main_file  # same path, same number
    await client.write_file("written-after-switch", b"w")
    assert client.ops.repo.read("other", b"written-after-switch") == b"w"
    assert ("inode", ROOT) in client.ops.invalidator.recorded


async def test_head_write_of_unknown_branch_fails_cleanly(client: Client) -> None:
    ino = await client.ino(".helix/HEAD")
    fi = await client.ops.open(ino, os.O_WRONLY | os.O_TRUNC, CTX)
    await client.ops.write(fi.fh, 0, b"no-such-branch")  # no newline: checked at close
    await expect_errno(errno.ENOENT, client.ops.flush(fi.fh))
    await client.ops.release(fi.fh)
    assert client.ops.repo.head_branch() == "main"


async def test_a_long_write_to_head_is_refused_before_it_takes_the_daemons_memory(
    client: Client,
) -> None:
    """An open of `.helix/HEAD` kept all it was sent, zeros up to the offset included:
    `dd of=.helix/HEAD seek=1G` took 3 GB of the daemon, `cat /dev/zero > .helix/HEAD`
    all of the host's. Past MAX_VIRTUAL_WRITE the write gets EFBIG and the open
    applies nothing, as for any other wrong text."""
    client.ops.repo.create_branch("other")
    ino = await client.ino(".helix/HEAD")
    fi = await client.ops.open(ino, os.O_WRONLY | os.O_TRUNC, CTX)
    await expect_errno(errno.EFBIG, client.ops.write(fi.fh, 64 << 20, b"other"))
    await client.ops.release(fi.fh)
    fi = await client.ops.open(ino, os.O_WRONLY | os.O_TRUNC, CTX)
    block = b" " * 4096
    offset = 0
    while offset + len(block) <= handles.MAX_VIRTUAL_WRITE:
        assert await client.ops.write(fi.fh, offset, block) == len(block)
        offset += len(block)
    await expect_errno(errno.EFBIG, client.ops.write(fi.fh, offset, block))
    await expect_errno(errno.EFBIG, client.ops.write(fi.fh, offset, b"other\n"))
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert client.ops.repo.head_branch() == "main"
    assert await read_virtual(client, ".helix/HEAD") == b"main\n"


async def test_snapshot_is_read_only(client: Client) -> None:
    await client.write_file("f", b"before")
    snapshots = await client.ino(".helix/snapshots")
    await client.ops.mkdir(snapshots, b"s1", 0o755, CTX)
    await client.write_file("f", b"after")
    assert await client.read_file(".helix/snapshots/s1/f") == b"before"
    snap_root = await client.ino(".helix/snapshots/s1")
    snap_file = await client.ino(".helix/snapshots/s1/f")
    await expect_errno(errno.EROFS, client.ops.open(snap_file, os.O_WRONLY, CTX))
    await expect_errno(errno.EROFS, client.ops.open(snap_file, os.O_RDONLY | os.O_TRUNC, CTX))
    assert await client.read_file(".helix/snapshots/s1/f") == b"before"
    await expect_errno(errno.EROFS, client.ops.create(snap_root, b"n", 0o644, os.O_WRONLY, CTX))
    await expect_errno(errno.EROFS, client.ops.unlink(snap_root, b"f", CTX))
    await expect_errno(errno.EROFS, client.ops.mkdir(snap_root, b"d", 0o755, CTX))
    await expect_errno(errno.EROFS, client.ops.setxattr(snap_file, b"user.x", b"1", CTX))
    await client.ops.rmdir(snapshots, b"s1", CTX)
    assert await client.names(".helix/snapshots") == []


async def test_commits_by_prefix(client: Client) -> None:
    await client.write_file("f", b"v1")
    first = client.ops.repo.resolve("HEAD").hex()
    await client.write_file("f", b"v2")
    assert await client.read_file(f".helix/commits/{first[:10]}/f") == b"v1"
    # reached by id, never listed: tools that walk the mount would walk every tree listed
    assert await client.names(".helix/commits") == []
    commits = await client.ino(".helix/commits")
    await expect_errno(errno.ENOENT, client.ops.lookup(commits, b"zzzz", CTX))
    view_file = await client.ino(f".helix/commits/{first[:10]}/f")
    await expect_errno(errno.EROFS, client.ops.open(view_file, os.O_RDWR, CTX))


async def test_commits_by_prefix_never_by_a_branch_of_that_name(client: Client) -> None:
    """`.helix/commits/ID` is a commit id prefix: a branch (or snapshot) whose name is
    also hex, made at another commit, must not be shown in its place."""
    await client.write_file("f", b"v1")
    repo = client.ops.repo
    wanted = repo.resolve("HEAD").hex()
    await client.write_file("f", b"v2")
    repo.create_branch(wanted[:6], "HEAD")  # a branch named like the commit's prefix
    repo.create_snapshot(wanted[:8], "HEAD")
    for prefix in (wanted[:6], wanted[:8], wanted[:6].upper()):
        assert await client.read_file(f".helix/commits/{prefix}/f") == b"v1", prefix
    commits = await client.ino(".helix/commits")
    for name in (b" " + wanted[:6].encode(), b"+" + wanted[:6].encode(), b"HEAD", b"main"):
        await expect_errno(errno.ENOENT, client.ops.lookup(commits, name, CTX))


async def test_daemon_entries_plug_in(repo: Repository) -> None:
    extra = {
        b"context": TextFile(lambda: "packed context\n"),
        b"search": QueryDir(lambda query: f"results for {query}\n"),
    }
    client = Client(make_ops(repo, helix_entries=extra))
    assert await read_virtual(client, ".helix/context") == b"packed context\n"
    answer = await read_virtual(client, ".helix/search/refresh tokens")
    assert answer == b"results for refresh tokens\n"
    attrs = await client.ops.getattr(await client.ino(".helix/search/x"), CTX)
    assert stat.S_ISREG(attrs.st_mode) and attrs.st_size == 0
    client.ops.close()


async def test_a_costly_file_reports_the_size_its_open_rendered(repo: Repository) -> None:
    """`.helix/context` is computed at open, not at every stat: fstat after the open
    gives its size, so readers that read st_size bytes (tail, mmap) get it all."""
    rendered = iter([b"first context\n", b"a longer second context\n"])
    extra = {b"context": TextFile(lambda: next(rendered), cheap=False)}
    client = Client(make_ops(repo, helix_entries=extra))
    ino = await client.ino(".helix/context")
    assert (await client.ops.getattr(ino, CTX)).st_size == 0  # not computed by a stat
    fi = await client.ops.open(ino, os.O_RDONLY, CTX)
    size = (await client.ops.getattr(ino, CTX)).st_size
    assert await client.ops.read(fi.fh, 0, size) == b"first context\n"
    await client.ops.release(fi.fh)
    fi = await client.ops.open(ino, os.O_RDONLY, CTX)
    size = (await client.ops.getattr(ino, CTX)).st_size
    assert await client.ops.read(fi.fh, 0, size) == b"a longer second context\n"
    await client.ops.release(fi.fh)
    client.ops.close()


async def test_out_of_band_reset_shows_up(client: Client) -> None:
    """Unchanged paths keep their numbers; a changed file gets a new one, so the kernel
    never pairs the old number's cached size and pages with other content."""
    await client.write_file("same", b"kept")
    await client.write_file("f", b"v1")
    first = client.ops.repo.resolve("HEAD").hex()
    same_ino, ino = await client.ino("same"), await client.ino("f")
    await client.write_file("new", b"later")
    new_ino = await client.ino("new")
    await client.write_file("f", b"v2")
    client.ops.invalidator.recorded.clear()
    client.ops.repo.reset_hard(first)  # what `helix reset --hard` does via the daemon
    assert await client.read_file("f") == b"v1"
    assert await client.ino("same") == same_ino
    assert await client.ino("f") != ino
    await expect_errno(errno.ENOENT, client.ops.lookup(ROOT, b"new", CTX))
    recorded = client.ops.invalidator.recorded
    assert ("inode", same_ino) in recorded
    assert ("entry", ROOT, b"f", ino) in recorded
    assert ("entry", ROOT, b"new", new_ino) in recorded


async def test_a_number_dropped_by_a_reset_is_stale_not_missing(client: Client) -> None:
    """The kernel may still hold a dropped number under a cached name (until the
    invalidation lands): ESTALE makes it look the path up again and find what is there
    now, where ENOENT would report a file that exists as missing."""
    await client.write_file("f", b"v1")
    first = client.ops.repo.resolve("HEAD").hex()
    await client.write_file("f", b"v2")
    ino = await client.ino("f")
    client.ops.repo.reset_hard(first)
    await expect_errno(errno.ESTALE, client.ops.getattr(ino, CTX))
    await expect_errno(errno.ESTALE, client.ops.open(ino, os.O_RDONLY, CTX))
    assert await client.read_file("f") == b"v1"


async def test_open_file_survives_an_out_of_band_reset(client: Client) -> None:
    await client.write_file("f", b"v1")
    first = client.ops.repo.resolve("HEAD").hex()
    await client.write_file("f", b"v2")
    fi = await client.ops.open(await client.ino("f"), os.O_RDONLY, CTX)
    client.ops.repo.reset_hard(first)
    assert await client.ops.read(fi.fh, 0, 10) == b"v2"
    await client.ops.release(fi.fh)


async def test_rename_across_views_is_exdev(client: Client) -> None:
    await client.write_file("f", b"x")
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"b", 0o755, CTX)
    await expect_errno(
        errno.EXDEV,
        client.ops.rename(ROOT, b"f", await client.ino(".helix/branches/b"), b"f", 0, CTX),
    )
    # into .helix itself: EPERM (the next test), never a copy that would make a branch


async def refs_and_names(client: Client) -> tuple[object, ...]:
    repo = client.ops.repo
    return (
        [(r.name, r.commit) for r in repo.branches()],
        [(r.name, r.commit) for r in repo.snapshots()],
        repo.head_branch(),
        await client.names(),
        await client.names(".helix/branches"),
        await client.names(".helix/snapshots"),
    )


async def test_helix_entries_never_move_out_of_their_folder(client: Client) -> None:
    """QA: `mv .helix/branches/A .helix/snapshots/A` got EXDEV, so mv copied: its mkdir
    made a snapshot A of HEAD. `mv A CUR` (CUR: the link to the root) and `mv A B` moved
    A into the root or into branch B the same way, then deleted branch A. EPERM makes
    mv give up."""
    await client.write_file("f", b"x")
    await client.mkdir("d")
    branches = await client.ino(".helix/branches")
    snapshots = await client.ino(".helix/snapshots")
    for name in (b"A", b"B"):
        await client.ops.mkdir(branches, name, 0o755, CTX)
    await client.ops.mkdir(snapshots, b"s1", 0o755, CTX)
    await client.ops.mkdir(snapshots, b"s2", 0o755, CTX)
    helix, view_b = await client.ino(".helix"), await client.ino(".helix/branches/B")
    s2 = await client.ino(".helix/snapshots/s2")
    before = await refs_and_names(client)
    for moves in (
        (branches, b"A", snapshots, b"A"),  # mv A .helix/snapshots/ (either way)
        (snapshots, b"s1", branches, b"s1"),
        (branches, b"A", ROOT, b"A"),  # mv A .helix/branches/main: main is ../..
        (branches, b"A", view_b, b"A"),  # mv A .helix/branches/B: into B/
        (snapshots, b"s1", s2, b"s1"),  # mv s1 .helix/snapshots/s2: into s2/
        (branches, b"main", snapshots, b"main"),  # the link itself
        (ROOT, b"d", branches, b"d"),  # mv d .helix/branches/: a copy would be a mkdir
        (ROOT, b"f", snapshots, b"f"),
        (view_b, b"f", branches, b"f"),
        (helix, b"log", ROOT, b"log"),
    ):
        await expect_errno(errno.EPERM, client.ops.rename(*moves, 0, CTX))
        await expect_errno(errno.EPERM, client.ops.rename(*moves, pyfuse3.RENAME_NOREPLACE, CTX))
    assert await refs_and_names(client) == before


async def test_an_exchange_involving_helix_entries_is_refused_and_changes_nothing(
    client: Client,
) -> None:
    """renameat2(RENAME_EXCHANGE) of two branches or two snapshots got EEXIST: the
    handlers only relabel, never over another name, and "the name is taken" is no
    answer to an exchange of two names that must both exist. Swapping two entries of
    .helix/ is refused as every other change the handlers do not make: EPERM. `.helix`
    at the root stays the reserved name it is for every other call (EBUSY), and so is
    one left at the top of a branch, which an exchange would keep under that name."""
    await client.write_file("f", b"x")
    branches = await client.ino(".helix/branches")
    snapshots = await client.ino(".helix/snapshots")
    for name in (b"A", b"B"):
        await client.ops.mkdir(branches, name, 0o755, CTX)
    await client.ops.mkdir(snapshots, b"s1", 0o755, CTX)
    await client.write_file("g", b"y")
    await client.ops.mkdir(snapshots, b"s2", 0o755, CTX)
    branch_b = client.ops.repo.worktree("B")  # an old store's `.helix` at a branch top
    branch_b.create(branch_b.root, b".helix", 0o644)
    view_b = await client.ino(".helix/branches/B")
    helix = await client.ino(".helix")
    before = await refs_and_names(client)
    exchange = pyfuse3.RENAME_EXCHANGE
    for refused in (
        (branches, b"A", branches, b"B"),
        (branches, b"A", branches, b"main"),  # main: the link to the root
        (snapshots, b"s1", snapshots, b"s2"),
        (helix, b"HEAD", helix, b"log"),
    ):
        await expect_errno(errno.EPERM, client.ops.rename(*refused, exchange, CTX))
    for reserved in (
        (ROOT, b"f", ROOT, b".helix"),
        (ROOT, b".helix", ROOT, b"f"),
        (view_b, b".helix", view_b, b"f"),
    ):
        await expect_errno(errno.EBUSY, client.ops.rename(*reserved, exchange, CTX))
    assert await refs_and_names(client) == before
    assert await client.read_file(".helix/snapshots/s1/f") == b"x"
    assert await client.names(".helix/snapshots/s2") == [b"f", b"g"]
    assert await client.read_file(".helix/branches/B/f") == b"x"  # not swapped in B


async def test_a_branch_renamed_onto_an_existing_branch_is_refused(client: Client) -> None:
    """`mv -T A B`: rename(2) onto a directory that is not empty fails (EEXIST or
    ENOTEMPTY); a branch is never replaced by another. mv reports it and stops."""
    branches = await client.ino(".helix/branches")
    for name in (b"A", b"B"):
        await client.ops.mkdir(branches, name, 0o755, CTX)
    await client.write_file(".helix/branches/A/f", b"a")
    before = await refs_and_names(client)
    for old, new in ((b"A", b"B"), (b"A", b"main"), (b"main", b"A")):
        await expect_errno(errno.EEXIST, client.ops.rename(branches, old, branches, new, 0, CTX))
    assert await refs_and_names(client) == before


async def test_a_snapshot_renames_in_place_and_never_over_another(client: Client) -> None:
    """`mv .helix/snapshots/A .helix/snapshots/B` got EPERM ("entries cannot be renamed
    here"). A snapshot's label now renames as a branch does: same commit, its folder's
    number and a process inside go with it; never over an existing snapshot."""
    await client.write_file("f", b"before")
    snapshots = await client.ino(".helix/snapshots")
    for name in (b"A", b"C"):
        await client.ops.mkdir(snapshots, name, 0o755, CTX)
    cid = client.ops.repo.resolve("snapshots/A")
    folder, file = await client.ino(".helix/snapshots/A"), await client.ino(".helix/snapshots/A/f")
    await client.write_file("f", b"after")
    await client.ops.rename(snapshots, b"A", snapshots, b"B", 0, CTX)
    assert await client.names(".helix/snapshots") == [b"B", b"C"]
    assert client.ops.repo.resolve("snapshots/B") == cid
    assert await client.ino(".helix/snapshots/B") == folder
    assert await client.ino(".helix/snapshots/B/f") == file
    assert await client.read_file(".helix/snapshots/B/f") == b"before"
    await expect_errno(errno.ENOENT, client.ops.lookup(snapshots, b"A", CTX))
    before = await refs_and_names(client)
    for flags in (0, pyfuse3.RENAME_NOREPLACE):
        await expect_errno(
            errno.EEXIST, client.ops.rename(snapshots, b"B", snapshots, b"C", flags, CTX)
        )
    await expect_errno(errno.ENOENT, client.ops.rename(snapshots, b"A", snapshots, b"D", 0, CTX))
    await expect_errno(errno.EINVAL, client.ops.rename(snapshots, b"B", snapshots, b".x", 0, CTX))
    assert await refs_and_names(client) == before


async def test_a_retried_open_is_not_stale_again_after_a_second_switch(client: Client) -> None:
    """Linux retries an open that got ESTALE once, with a fresh LOOKUP. Under rapid HEAD
    switches a second switch landed between that LOOKUP and the retry's GETATTR (its
    permission check) or OPEN, dropping the number just handed out: the second ESTALE
    reached the caller. The retry now opens the file it looked up; a number the kernel
    only kept cached, or another thread's, still answers ESTALE."""
    ops, me, other = client.ops, Ctx(pid=101), Ctx(pid=102)
    await client.write_file("f", b"main")
    await client.mkdir(".helix/branches/b")
    await client.write_file(".helix/branches/b/f", b"on b")
    cached = (await ops.lookup(ROOT, b"f", me)).st_ino
    await write_virtual(client, ".helix/HEAD", b"b")
    await expect_errno(errno.ESTALE, ops.open(cached, os.O_RDONLY, me))
    retried = (await ops.lookup(ROOT, b"f", me)).st_ino  # the kernel's walk again
    await write_virtual(client, ".helix/HEAD", b"main")
    await expect_errno(errno.ESTALE, ops.getattr(retried, other))
    assert (await ops.getattr(retried, me)).st_size == len(b"on b")
    fi = await ops.open(retried, os.O_RDONLY, me)
    assert await client.read_fh(fi.fh) == b"on b"  # as it was when looked up
    await ops.release(fi.fh)
    await expect_errno(errno.ESTALE, ops.open(retried, os.O_RDONLY, me))  # cached only
    assert await client.read_file("f") == b"main"


async def test_stale_stats_of_many_threads_are_not_kept(client: Client) -> None:
    """A `stat` of a number a switch made stale gets ESTALE and walks the path again,
    but never opens: each such thread's retry (and the file it looked up, with its
    tree) was kept for the mount's life, one more per thread id."""
    ops = client.ops
    await client.write_file("f", b"main")
    await client.mkdir(".helix/branches/b")
    await client.write_file(".helix/branches/b/f", b"on b")
    cached = (await ops.lookup(ROOT, b"f", CTX)).st_ino
    await write_virtual(client, ".helix/HEAD", b"b")
    for pid in range(1000, 1400):
        await expect_errno(errno.ESTALE, ops.getattr(cached, Ctx(pid=pid)))
        await ops.lookup(ROOT, b"f", Ctx(pid=pid))  # the kernel's walk again; no open
    assert len(ops.retries._walks) <= 256


def test_kernel_invalidations_are_only_recorded_before_mount(repo: Repository) -> None:
    ops = make_ops(repo)
    assert not ops.invalidator.active
    ops.invalidator.inode(ROOT)
    assert ops.invalidator.recorded == [("inode", ROOT)]
    assert isinstance(pyfuse3.ROOT_INODE, int)
    ops.close()


async def test_a_bad_head_line_is_refused_by_the_write_itself(client: Client) -> None:
    """QA2: `echo nosuch > .helix/HEAD` exited 0: the error came at close, which a shell
    ignores. A complete line is checked as it is written."""
    head = await client.ino(".helix/HEAD")
    fi = await client.ops.open(head, os.O_WRONLY | os.O_TRUNC, CTX)
    await expect_errno(errno.ENOENT, client.ops.write(fi.fh, 0, b"nosuch\n"))
    await client.ops.flush(fi.fh)  # nothing was kept to apply
    await client.ops.release(fi.fh)
    fi = await client.ops.open(head, os.O_WRONLY | os.O_APPEND, CTX)
    await expect_errno(errno.ENOENT, client.ops.write(fi.fh, 5, b"x\n"))  # `echo x >>`
    await client.ops.release(fi.fh)
    assert client.ops.repo.head_branch() == "main"


async def test_head_write_through_a_dup_ed_fd(client: Client) -> None:
    """`echo b > .helix/HEAD` in bash: open, dup2, close (a flush), write, close."""
    await client.ops.mkdir(await client.ino(".helix/branches"), b"b", 0o755, CTX)
    fi = await client.ops.open(await client.ino(".helix/HEAD"), os.O_WRONLY | os.O_TRUNC, CTX)
    await client.ops.flush(fi.fh)
    await client.ops.write(fi.fh, 0, b"b\n")
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    assert client.ops.repo.head_branch() == "b"


async def test_head_text_written_in_pieces_is_applied_once_as_a_whole(client: Client) -> None:
    """QA: `printf 'main\\nother\\n' > .helix/HEAD` (two writes) had its second write
    refused, and the close then switched to main, the first line alone."""
    await client.ops.mkdir(await client.ino(".helix/branches"), b"b", 0o755, CTX)
    await write_virtual(client, ".helix/HEAD", b"b\n")
    head = await client.ino(".helix/HEAD")
    for first, second, refusal in (
        (b"main\n", b"other\n", errno.EINVAL),  # two lines: two names, or none
        (b"main\n", b"main\n", errno.EINVAL),
        (b"main\n", b"x", errno.EINVAL),
        (b"main", b" b\n", errno.EINVAL),
        (b"nosuch\n", b"main\n", errno.ENOENT),  # a refused open takes nothing more
    ):
        fi = await client.ops.open(head, os.O_WRONLY | os.O_TRUNC, CTX)
        with contextlib.suppress(pyfuse3.FUSEError):  # refused at once, if it is wrong
            await client.ops.write(fi.fh, 0, first)
        await expect_errno(refusal, client.ops.write(fi.fh, len(first), second))
        await client.ops.flush(fi.fh)  # the write said it: nothing is left to apply
        await client.ops.release(fi.fh)
        assert client.ops.repo.head_branch() == "b", (first, second)
    for pieces in ((b"ma", b"in\n"), (b" main", b" \r\n"), (b"main\n", b"\n")):
        fi = await client.ops.open(head, os.O_WRONLY | os.O_TRUNC, CTX)
        for offset, piece in zip((0, len(pieces[0])), pieces, strict=True):
            await client.ops.write(fi.fh, offset, piece)
        await client.ops.flush(fi.fh)
        await client.ops.release(fi.fh)
        assert client.ops.repo.head_branch() == "main", pieces
        await write_virtual(client, ".helix/HEAD", b"b\n")


async def test_ref_moves_from_a_worker_thread_are_applied_on_the_loop(client: Client) -> None:
    """The daemon runs some CLI commands on a worker thread (holding the repo lock)."""
    import threading

    import trio

    await client.write_file("f", b"v1")
    first = client.ops.repo.resolve("HEAD").hex()
    await client.write_file("f", b"v2")
    client.ops._loop = (threading.get_ident(), trio.lowlevel.current_trio_token())
    await trio.to_thread.run_sync(client.ops.repo.reset_hard, first)
    await trio.sleep(0.01)
    assert await client.read_file("f") == b"v1"


async def test_rename_of_the_current_branch_moves_head(client: Client) -> None:
    ino = await client.write_file("f", b"x")
    branches = await client.ino(".helix/branches")
    await client.ops.rename(branches, b"main", branches, b"trunk", 0, CTX)
    assert client.ops.repo.head_branch() == "trunk"
    assert await read_virtual(client, ".helix/HEAD") == b"trunk\n"
    assert await client.ino("f") == ino
    await client.write_file("g", b"after")
    assert client.ops.repo.read("trunk", b"g") == b"after"


async def test_deleting_a_branch_with_pending_saves_leaves_no_work_ref(
    repo: Repository,
) -> None:
    ops = make_ops(repo, window=3600)
    client = Client(ops)
    branches = await client.ino(".helix/branches")
    await ops.mkdir(branches, b"gone", 0o755, CTX)
    await client.write_file(".helix/branches/gone/f", b"x")
    await ops.rmdir(branches, b"gone", CTX)
    ops.saver.flush_now()
    assert repo.store.ref("work/gone") is None
    assert b"gone" not in await client.names(".helix/branches")
    ops.close()


async def test_a_folder_a_head_switch_removes_is_a_removed_folder_while_held(
    client: Client,
) -> None:
    """As after `git checkout` on a local disk: the kernel still holds it (a shell's
    cwd): it stats with st_nlink 0, and it has nothing in it (ENOENT, not ESTALE)."""
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"b", 0o755, CTX)
    folder = await client.mkdir("only_on_main")
    await write_virtual(client, ".helix/HEAD", b"b\n")
    assert (await client.ops.getattr(folder, CTX)).st_nlink == 0
    await expect_errno(errno.ENOENT, client.ops.opendir(folder, CTX))
    await expect_errno(errno.ENOENT, client.ops.lookup(folder, b"x", CTX))


async def open_in_branch(client: Client, branch: bytes, name: bytes) -> int:
    """A new file in `.helix/branches/BRANCH`, left open with b"before " written."""
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, branch, 0o755, CTX)
    folder = (await client.ops.lookup(branches, branch, CTX)).st_ino
    fi, _ = await client.ops.create(folder, name, 0o644, os.O_RDWR, CTX)
    await client.ops.write(fi.fh, 0, b"before ")
    return int(fi.fh)


async def close(client: Client, fh: int) -> None:
    await client.ops.flush(fh)
    await client.ops.release(fh)


async def test_a_file_held_open_in_a_deleted_branch_does_not_come_back(
    client: Client,
) -> None:
    """Its close used to write work/BRANCH again: a new branch of the same name then
    showed the deleted branch's file instead of the current state."""
    repo = client.ops.repo
    fh = await open_in_branch(client, b"gone", b"held")
    branches = await client.ino(".helix/branches")
    await client.ops.rmdir(branches, b"gone", CTX)
    await client.ops.write(fh, 7, b"after")
    await close(client, fh)
    assert repo.store.ref("work/gone") is None
    await client.ops.mkdir(branches, b"gone", 0o755, CTX)
    assert b"held" not in await client.names(".helix/branches/gone")


async def test_a_file_held_open_in_a_renamed_branch_is_saved_in_it(client: Client) -> None:
    """As a file open in a folder `mv` renamed: its later writes and its close land under
    the new name. They used to go to the old name's work ref, lost to the new name."""
    repo = client.ops.repo
    fh = await open_in_branch(client, b"old", b"held")
    branches = await client.ino(".helix/branches")
    await client.ops.rename(branches, b"old", branches, b"new", 0, CTX)
    await client.ops.write(fh, 7, b"after")
    await close(client, fh)
    assert repo.read("new", b"held") == b"before after"
    assert repo.store.ref("work/old") is None
    await client.ops.mkdir(branches, b"old", 0o755, CTX)
    assert b"held" not in await client.names(".helix/branches/old")


async def test_writes_to_a_file_held_across_a_reset_fail_cleanly(client: Client) -> None:
    await client.write_file("f", b"v1")
    first = client.ops.repo.resolve("HEAD").hex()
    await client.write_file("f", b"v2")
    fi = await client.ops.open(await client.ino("f"), os.O_RDWR, CTX)
    client.ops.repo.reset_hard(first)
    await client.ops.write(fi.fh, 0, b"lost")
    await expect_errno(errno.ESTALE, client.ops.flush(fi.fh))
    await client.ops.release(fi.fh)
    assert await client.read_file("f") == b"v1"


async def test_a_file_held_open_across_an_outside_commit_that_left_it_keeps_its_writes(
    client: Client,
) -> None:
    """QA: `helix commit other=...` while an editor or a database holds f open. On a
    local disk `git commit` or `git reset --hard` leaves an unchanged file's inode alone,
    so its descriptors keep writing to it; here too."""
    await client.write_file("f", b"keep")
    fi = await client.ops.open(await client.ino("f"), os.O_RDWR, CTX)
    client.ops.repo.commit({b"other.txt": b"o"}, "from outside")
    await client.ops.write(fi.fh, 0, b"K")
    await client.ops.flush(fi.fh)
    before = client.ops.repo.resolve("HEAD").hex()
    client.ops.repo.commit({b"more.txt": b"m"}, "again, with the write pending")
    await client.ops.write(fi.fh, 4, b"!")
    await client.ops.release(fi.fh)
    client.ops.saver.flush_now()
    assert await client.read_file("f") == b"Keep!"
    assert client.ops.repo.read("HEAD", "f") == b"Keep!"
    assert client.ops.repo.read(before, "other.txt") == b"o"


async def test_a_branch_folder_shows_its_head_commit_time_not_1970(client: Client) -> None:
    await client.write_file("f", b"x")
    await client.ops.mkdir(await client.ino(".helix/branches"), b"b", 0o755, CTX)
    attrs = await client.ops.getattr(await client.ino(".helix/branches/b"), CTX)
    assert attrs.st_mtime_ns == client.ops.repo.commit_info("b").time_ns


async def test_open_file_keeps_its_branch_across_a_head_switch(client: Client) -> None:
    await client.write_file("f", b"main v1")
    await client.ops.mkdir(await client.ino(".helix/branches"), b"other", 0o755, CTX)
    fi = await client.ops.open(await client.ino("f"), os.O_RDWR | os.O_TRUNC, CTX)
    await write_virtual(client, ".helix/HEAD", b"other\n")
    await client.ops.write(fi.fh, 0, b"main v2")
    await client.ops.flush(fi.fh)
    await client.ops.release(fi.fh)
    repo = client.ops.repo
    assert repo.read("main", b"f") == b"main v2"
    assert repo.read("other", b"f") == b"main v1"
    assert await client.read_file("f") == b"main v1"  # the root shows other now


async def test_changes_through_one_view_invalidate_the_other_views_of_the_branch(
    client: Client,
) -> None:
    """A view of branch b opened in `.helix/branches/b` stays open (a shell's cwd, say)
    when HEAD moves to b: the root and that view then show the same nodes under
    different numbers, cached for edge.WRITABLE_TIMEOUT, so a change made through one is
    invalidated in the other."""
    await client.write_file("f", b"v1")
    await client.mkdir("d")
    await client.ops.mkdir(await client.ino(".helix/branches"), b"b", 0o755, CTX)
    other_f = await client.ino(".helix/branches/b/f")
    other_d = await client.ino(".helix/branches/b/d")
    other_root = await client.ino(".helix/branches/b")
    await client.write_file(".helix/HEAD", b"b\n")
    recorded = client.ops.invalidator.recorded
    recorded.clear()
    await client.write_file("f", b"v2, longer")
    assert ("inode", other_f) in recorded
    recorded.clear()
    await client.write_file("d/new", b"x")
    assert ("entry", other_d, b"new", 0) in recorded
    recorded.clear()
    await client.ops.rename(ROOT, b"f", await client.ino("d"), b"moved", 0, CTX)
    assert ("entry", other_root, b"f", 0) in recorded
    assert ("entry", other_d, b"moved", 0) in recorded
    recorded.clear()
    await client.ops.unlink(await client.ino("d"), b"new", CTX)
    assert ("entry", other_d, b"new", 0) in recorded


async def test_one_view_of_a_branch_sends_no_invalidations(client: Client) -> None:
    await client.write_file("f", b"v1")
    client.ops.invalidator.recorded.clear()
    await client.write_file("f", b"v2")
    await client.mkdir("d")
    await client.ops.unlink(ROOT, b"f", CTX)
    assert client.ops.invalidator.recorded == []


async def forget_all(client: Client, *paths: str) -> None:
    """What the kernel sends once it evicts the names it looked up along `paths`."""
    for path in paths:
        parts = path.split("/")
        for depth in range(len(parts), 0, -1):
            ino = await client.ino("/".join(parts[:depth]))
            entry = client.ops.inodes.get(ino)
            await client.ops.forget([(ino, entry.lookups)])


async def test_commit_views_the_kernel_forgot_are_dropped(client: Client) -> None:
    """A mount that lives for days may browse thousands of commits: each view under
    `.helix/commits/` (its tree, its inode numbers) lives only while the kernel holds it."""
    await client.write_file("f", b"v0")
    baseline = None
    for round_ in range(1, 25):
        await client.write_file("f", b"v%d" % round_)
        path = f".helix/commits/{client.ops.repo.resolve('HEAD').hex()[:12]}/f"
        assert await client.read_file(path) == b"v%d" % round_
        await forget_all(client, path)
        if round_ == 4:
            baseline = (len(client.ops.inodes), len(client.ops.views._views))
    assert (len(client.ops.inodes), len(client.ops.views._views)) == baseline
    assert await client.read_file(path) == b"v24"  # opened again on the next lookup


async def test_branch_and_snapshot_folders_made_and_removed_leave_no_slots(
    client: Client,
) -> None:
    """An agent may make and remove `.helix/branches/X` and `.helix/snapshots/X`
    thousands of times in a mount's life: each removed view used to leave its number
    range's table behind (500 mkdir/rmdir: 500 entries), growing without bound."""
    await client.write_file("f", b"x")
    branches = await client.ino(".helix/branches")
    snapshots = await client.ino(".helix/snapshots")
    for round_ in range(40):
        for folder, prefix in ((branches, "branches"), (snapshots, "snapshots")):
            await client.ops.mkdir(folder, b"x%d" % round_, 0o755, CTX)
            assert await client.read_file(f".helix/{prefix}/x{round_}/f") == b"x"
            await client.ops.rmdir(folder, b"x%d" % round_, CTX)
    assert len(client.ops.inodes._by_node) < 5


async def test_links_of_branches_once_current_are_dropped_when_forgotten(
    client: Client,
) -> None:
    """The current branch shows as a link under `.helix/branches/`. An agent that
    makes a branch per task, switches to it, back, and removes it, left each link's
    inode (and its path's number) behind after the kernel forgot it: one more per
    branch for the mount's life."""
    branches = await client.ino(".helix/branches")
    baseline = (0, 0)
    for round_ in range(1, 25):
        name = b"task%d" % round_
        await client.ops.mkdir(branches, name, 0o755, CTX)
        await write_virtual(client, ".helix/HEAD", name)
        link = await client.ops.lookup(branches, name, CTX)
        assert stat.S_ISLNK(link.st_mode)
        await write_virtual(client, ".helix/HEAD", b"main")
        await client.ops.rmdir(branches, name, CTX)
        await client.ops.forget([(link.st_ino, 1)])
        if round_ == 4:
            baseline = (len(client.ops.inodes), len(client.ops.inodes._numbers))
    assert (len(client.ops.inodes), len(client.ops.inodes._numbers)) == baseline


async def test_search_answers_the_kernel_forgot_are_dropped(repo: Repository) -> None:
    """Every query is a name of its own: a mount that answers searches for days must not
    keep an inode (and the query) for each one it was ever asked."""
    client = Client(make_ops(repo, helix_entries={b"search": QueryDir(lambda q: q + "\n")}))
    baseline = 0
    for round_ in range(1, 25):
        path = f".helix/search/what is {round_}"
        assert await read_virtual(client, path) == f"what is {round_}\n".encode()
        await forget_all(client, path)
        if round_ == 4:
            baseline = len(client.ops.inodes)
    assert len(client.ops.inodes) == baseline
    assert len(client.ops.inodes._numbers) < 20


async def test_a_file_open_across_a_head_switch_stays_in_its_branch(client: Client) -> None:
    """The kernel may still open a file by the number it held before a switch (another
    descriptor keeps that number alive): the file is the old branch's, and its close
    saves it there. It used to be tied to the new branch, and its close failed with
    ESTALE, the data lost."""
    await client.write_file("f", b"main's")
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"b", 0o755, CTX)
    await client.write_file(".helix/branches/b/f", b"b's")
    old = await client.ino("f")
    held = await client.ops.open(old, os.O_RDONLY, CTX)
    await write_virtual(client, ".helix/HEAD", b"b\n")
    late = await client.ops.open(old, os.O_WRONLY | os.O_TRUNC, CTX)
    assert await client.ops.write(late.fh, 0, b"late") == 4
    await client.ops.flush(late.fh)
    await client.ops.release(late.fh)
    await client.ops.release(held.fh)
    client.ops.saver.flush_now()
    assert client.ops.repo.read("main", b"f") == b"late"
    assert await client.read_file("f") == b"b's"


async def test_absent_names_of_a_writable_view_are_cached_by_the_kernel(client: Client) -> None:
    """SQLite and git probe `db-wal`, `index.lock` again and again: each an ENOENT
    lookup into the daemon, never cached. A writable view now answers a negative entry
    the kernel keeps; `.helix/` (names come and go with refs) and read-only views do not."""
    await client.mkdir("d")
    await client.ops.mkdir(await client.ino(".helix/snapshots"), b"s", 0o755, CTX)
    for parent in (ROOT, await client.ino("d")):
        absent = await client.ops.lookup(parent, b"db-wal", CTX)
        assert absent.st_ino == 0 and absent.entry_timeout > 0
    for uncached in (".helix", ".helix/branches", ".helix/snapshots", ".helix/snapshots/s"):
        with pytest.raises(pyfuse3.FUSEError) as caught:
            await client.ops.lookup(await client.ino(uncached), b"db-wal", CTX)
        assert caught.value.errno == errno.ENOENT


async def test_names_cached_as_absent_are_invalidated_when_they_appear_out_of_band(
    client: Client,
) -> None:
    """A name the kernel holds as absent that a reset, an API commit or a HEAD switch
    brings in must be asked for again at once: each such move has the kernel drop the
    negative entries of the folders it keeps. A name made through the kernel replaced
    its negative entry itself: it is not invalidated later (a folder, maybe someone's
    cwd, would look deleted)."""
    ops = client.ops
    await client.mkdir("d")
    await client.write_file("d/late", b"1")
    with_late = ops.repo.resolve("HEAD")
    await client.ops.unlink(await client.ino("d"), b"late", CTX)
    d = await client.ino("d")
    for parent, name in ((d, b"late"), (ROOT, b"api"), (ROOT, b"made"), (ROOT, b"other")):
        assert (await ops.lookup(parent, name, CTX)).st_ino == 0
    await ops.mkdir(ROOT, b"made", 0o755, CTX)  # through the kernel: not negative any more
    recorded = ops.invalidator.recorded
    recorded.clear()
    ops.repo.reset_hard(with_late.hex())
    assert ("entry", d, b"late", 0) in recorded
    assert await client.read_file("d/late") == b"1"
    ops.repo.commit({"api": b"2"}, "through the API")
    assert ("entry", ROOT, b"api", 0) in recorded
    ops.repo.create_branch("side")
    ops.repo.commit({"other": b"3"}, "on side", branch="side")
    await write_virtual(client, ".helix/HEAD", b"side")
    assert ("entry", ROOT, b"other", 0) in recorded
    assert await client.read_file("other") == b"3"
    assert ("entry", ROOT, b"made", 0) not in recorded


def test_the_record_of_absent_names_is_bounded_in_time_and_size() -> None:
    """A name is kept as long as the kernel may hold it, and past the limit a lookup is
    answered uncached rather than recorded: a switch never invalidates without bound."""
    now = [0.0]
    names = NegativeNames(timeout=10, limit=2, clock=lambda: now[0])
    assert names.record(1, b"a") and names.record(2, b"b")
    assert not names.record(1, b"c")  # full: this one goes uncached
    assert names.record(1, b"a")  # already recorded: its time is renewed
    names.discard(2, b"b")  # looked up or made through the kernel since
    assert names.take({2}) == []
    now[0] = 10.5  # within the margin: the kernel may still hold it
    assert names.take({1, 2}) == [(1, b"a")]
    assert names.record(1, b"c")
    now[0] = 100
    assert len(names) == 1 and names.take({1}) == []


async def test_a_branch_folder_is_found_and_made_without_listing_every_branch(
    client: Client, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mkdir and lookup in .helix/branches read one ref each: listing the branches cost
    a scan of all of them per mkdir (5.1 ms p50 at 200 branches, 0.26 ms now)."""
    await client.write_file("a.txt", b"a")
    for n in range(30):
        repo.create_branch(f"old{n}", "main")

    def listing() -> None:
        raise AssertionError("branches listed on a lookup or a mkdir")

    monkeypatch.setattr(repo, "branches", listing)
    branches = await client.ino(".helix/branches")
    await client.ops.mkdir(branches, b"new", 0o755, CTX)
    assert (await client.lookup(branches, b"old7")).st_ino
    assert await client.read_file(".helix/branches/new/a.txt") == b"a"
    await expect_errno(errno.ENOENT, client.lookup(branches, b"absent"))
    await expect_errno(errno.ENOENT, client.lookup(branches, b"\xff"))
