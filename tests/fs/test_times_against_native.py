"""Time stamps through the Operations class against a directory on the local disk: the
same operation must move (or keep) the same mtime and ctime, of the file and of its
folders, as Linux does. Only what the filesystem decides is compared: atime is not kept
and a folder's st_nlink is always 2 (README, "Smaller POSIX differences"); what the
kernel decides before it asks us (UTIME_NOW, O_TRUNC) is in the mount's own test
(tests/mount/test_mount_differential.py)."""

from __future__ import annotations

import ctypes
import os
import stat
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pyfuse3
import pytest
from fs_client import CTX, Client, Fields, make_ops

from helixfs.vcs.repo import Repository

TICK = 0.02  # lets the local disk's clock move on (coarse on some kernels): no assertion
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
_LIBC = ctypes.CDLL(None, use_errno=True)


def set_atime_alone(path: str) -> None:
    """utimensat(path, {UTIME_NOW, UTIME_OMIT}): os.utime cannot leave mtime alone."""
    times = (ctypes.c_long * 4)(0, UTIME_NOW, 0, UTIME_OMIT)  # two struct timespec
    if _LIBC.utimensat(-100, path.encode(), times, 0) != 0:  # AT_FDCWD
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)


class Native:
    """The oracle: plain system calls on a local folder. Handles are descriptors."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _at(self, path: str) -> str:
        return os.path.join(self.root, path)

    async def stat(self, what: str | int) -> tuple[int, int]:
        info = os.fstat(what) if isinstance(what, int) else os.lstat(self._at(what))
        return info.st_mtime_ns, info.st_ctime_ns

    async def write(self, path: str, data: bytes) -> None:
        with open(self._at(path), "wb") as handle:
            handle.write(data)

    async def open(self, path: str) -> int:
        return os.open(self._at(path), os.O_RDWR)

    async def pwrite(self, fd: int, data: bytes) -> None:
        os.pwrite(fd, data, 0)

    async def close(self, fd: int) -> None:
        os.close(fd)

    async def truncate(self, path: str, size: int) -> None:
        os.truncate(self._at(path), size)

    async def chmod(self, path: str, mode: int) -> None:
        os.chmod(self._at(path), mode)

    async def chown(self, path: str) -> None:
        os.chown(self._at(path), os.getuid(), os.getgid())

    async def utime(self, path: str, mtime_ns: int) -> None:
        os.utime(self._at(path), ns=(mtime_ns, mtime_ns), follow_symlinks=False)

    async def touch_atime(self, path: str) -> None:
        set_atime_alone(self._at(path))

    async def setxattr(self, path: str, value: bytes | None) -> None:
        if value is None:
            os.removexattr(self._at(path), "user.k")
        else:
            os.setxattr(self._at(path), "user.k", value)

    async def mkdir(self, path: str) -> None:
        os.mkdir(self._at(path))

    async def rmdir(self, path: str) -> None:
        os.rmdir(self._at(path))

    async def unlink(self, path: str) -> None:
        os.unlink(self._at(path))

    async def symlink(self, path: str, target: str) -> None:
        os.symlink(target, self._at(path))

    async def rename(self, old: str, new: str) -> None:
        os.rename(self._at(old), self._at(new))


class Ours:
    """The same calls as the kernel makes them. Handles are (inode, file handle)."""

    def __init__(self, client: Client) -> None:
        self.client, self.ops = client, client.ops

    async def _split(self, path: str) -> tuple[int, bytes]:
        parent, _, name = path.rpartition("/")
        return await self.client.ino(parent), name.encode()

    async def stat(self, what: str | tuple[int, int]) -> tuple[int, int]:
        ino = what[0] if isinstance(what, tuple) else await self.client.ino(what)
        attrs = await self.ops.getattr(ino, CTX)
        return attrs.st_mtime_ns, attrs.st_ctime_ns

    async def write(self, path: str, data: bytes) -> None:
        await self.client.write_file(path, data)

    async def open(self, path: str) -> tuple[int, int]:
        ino = await self.client.ino(path)
        return ino, (await self.ops.open(ino, os.O_RDWR, CTX)).fh

    async def pwrite(self, handle: tuple[int, int], data: bytes) -> None:
        await self.ops.write(handle[1], 0, data)

    async def close(self, handle: tuple[int, int]) -> None:
        await self.ops.flush(handle[1])
        await self.ops.release(handle[1])

    async def _setattr(self, path: str, attrs: pyfuse3.EntryAttributes, **fields: bool) -> None:
        await self.ops.setattr(await self.client.ino(path), attrs, Fields(**fields), None, CTX)

    async def truncate(self, path: str, size: int) -> None:
        attrs = pyfuse3.EntryAttributes()
        attrs.st_size = size
        await self._setattr(path, attrs, update_size=True)

    async def chmod(self, path: str, mode: int) -> None:
        attrs = pyfuse3.EntryAttributes()
        attrs.st_mode = stat.S_IFREG | mode
        await self._setattr(path, attrs, update_mode=True)

    async def chown(self, path: str) -> None:
        attrs = pyfuse3.EntryAttributes()
        attrs.st_uid, attrs.st_gid = os.getuid(), os.getgid()
        await self._setattr(path, attrs, update_uid=True, update_gid=True)

    async def utime(self, path: str, mtime_ns: int) -> None:
        attrs = pyfuse3.EntryAttributes()
        attrs.st_atime_ns = attrs.st_mtime_ns = mtime_ns
        await self._setattr(path, attrs, update_atime=True, update_mtime=True)

    async def touch_atime(self, path: str) -> None:
        attrs = pyfuse3.EntryAttributes()
        attrs.st_atime_ns = time.time_ns()
        await self._setattr(path, attrs, update_atime=True)

    async def setxattr(self, path: str, value: bytes | None) -> None:
        ino = await self.client.ino(path)
        if value is None:
            await self.ops.removexattr(ino, b"user.k", CTX)
        else:
            await self.ops.setxattr(ino, b"user.k", value, CTX)

    async def mkdir(self, path: str) -> None:
        await self.client.mkdir(path)

    async def rmdir(self, path: str) -> None:
        await self.ops.rmdir(*await self._split(path), CTX)

    async def unlink(self, path: str) -> None:
        await self.ops.unlink(*await self._split(path), CTX)

    async def symlink(self, path: str, target: str) -> None:
        await self.ops.symlink(*await self._split(path), target.encode(), CTX)

    async def rename(self, old: str, new: str) -> None:
        await self.ops.rename(*await self._split(old), *await self._split(new), 0, CTX)


World = Any  # Native or Ours: the same methods
Seen = list[tuple[str, str]]


def moved(before: int, after: int) -> str:
    return "=" if after == before else ("later" if after > before else "earlier")


async def changes(
    world: World, watched: list[Any], operation: Callable[[], Awaitable[Any]]
) -> Seen:
    """How `operation` moved the mtime and ctime of each watched path or handle."""
    before = [await world.stat(what) for what in watched]
    time.sleep(TICK)
    await operation()
    after = [await world.stat(what) for what in watched]
    return [(moved(b[0], a[0]), moved(b[1], a[1])) for b, a in zip(before, after, strict=True)]


async def write_to_an_existing_file(w: World) -> Seen:
    await w.write("f", b"abc")
    handle = await w.open("f")
    seen = await changes(w, ["f", ""], lambda: w.pwrite(handle, b"z"))
    await w.close(handle)
    return seen


async def close_after_write_moves_nothing(w: World) -> Seen:
    """What stat showed while the file was open stays after the close."""
    await w.write("f", b"abc")
    handle = await w.open("f")
    await w.pwrite(handle, b"z")
    return await changes(w, ["f"], lambda: w.close(handle))


async def truncate_to_a_new_size(w: World) -> Seen:
    await w.write("f", b"abc")
    return await changes(w, ["f"], lambda: w.truncate("f", 1))


async def truncate_to_the_same_size(w: World) -> Seen:
    await w.write("f", b"abc")
    return await changes(w, ["f"], lambda: w.truncate("f", 3))


async def utimens_sets_mtime_and_moves_ctime(w: World) -> Seen:
    await w.write("f", b"abc")
    await w.mkdir("d")
    await w.symlink("l", "f")
    seen = []
    for path in ("f", "d", "l"):
        seen += await changes(w, [path, ""], lambda p=path: w.utime(p, 1_234_567_890_123_456_789))
    return seen + [(str((await w.stat(path))[0]), "mtime") for path in ("f", "d", "l")]


async def chmod_moves_ctime_only(w: World) -> Seen:
    await w.write("f", b"abc")
    return await changes(w, ["f", ""], lambda: w.chmod("f", 0o600))


async def chmod_to_the_same_mode_moves_ctime(w: World) -> Seen:
    await w.write("f", b"abc")
    await w.chmod("f", 0o644)
    return await changes(w, ["f"], lambda: w.chmod("f", 0o644))


async def chown_moves_ctime(w: World) -> Seen:
    await w.write("f", b"abc")
    return await changes(w, ["f", ""], lambda: w.chown("f"))


async def setting_atime_alone_moves_ctime(w: World) -> Seen:
    """atime is not kept (README), but setting it is a change all the same."""
    await w.write("f", b"abc")
    return await changes(w, ["f"], lambda: w.touch_atime("f"))


async def xattrs_move_ctime_only(w: World) -> Seen:
    await w.write("f", b"abc")
    seen = await changes(w, ["f", ""], lambda: w.setxattr("f", b"v"))
    return seen + await changes(w, ["f", ""], lambda: w.setxattr("f", None))


async def namespace_changes_move_the_folder(w: World) -> Seen:
    """Both folders of a rename, and the renamed file's ctime (watched by a descriptor)."""
    await w.mkdir("d")
    await w.mkdir("e")
    seen = await changes(w, ["d", ""], lambda: w.write("d/f", b"x"))
    handle = await w.open("d/f")
    seen += await changes(w, ["d", handle], lambda: w.rename("d/f", "d/g"))
    seen += await changes(w, ["d", "e", "", handle], lambda: w.rename("d/g", "e/g"))
    await w.close(handle)
    seen += await changes(w, ["e"], lambda: w.unlink("e/g"))
    seen += await changes(w, ["d"], lambda: w.mkdir("d/sub"))
    seen += await changes(w, ["d"], lambda: w.rmdir("d/sub"))
    return seen + await changes(w, ["d", ""], lambda: w.symlink("d/l", "x"))


async def rename_over_a_file(w: World) -> Seen:
    await w.mkdir("d")
    await w.write("d/f", b"x")
    await w.write("d/g", b"y")
    moving, victim = await w.open("d/f"), await w.open("d/g")
    seen = await changes(w, ["d", moving, victim], lambda: w.rename("d/f", "d/g"))
    await w.close(moving)
    await w.close(victim)
    return seen


async def unlink_moves_the_ctime_of_an_open_file(w: World) -> Seen:
    await w.write("f", b"abc")
    handle = await w.open("f")
    seen = await changes(w, [handle, ""], lambda: w.unlink("f"))
    await w.close(handle)
    return seen


SCENARIOS = [
    write_to_an_existing_file,
    close_after_write_moves_nothing,
    truncate_to_a_new_size,
    truncate_to_the_same_size,
    utimens_sets_mtime_and_moves_ctime,
    chmod_moves_ctime_only,
    chmod_to_the_same_mode_moves_ctime,
    chown_moves_ctime,
    setting_atime_alone_moves_ctime,
    xattrs_move_ctime_only,
    namespace_changes_move_the_folder,
    rename_over_a_file,
    unlink_moves_the_ctime_of_an_open_file,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_times_move_as_on_the_local_disk(
    scenario: Callable[[World], Awaitable[Seen]], repo: Repository, tmp_path: Path
) -> None:
    native = tmp_path / "native"
    native.mkdir()
    ops = make_ops(repo, window=0)
    try:
        assert await scenario(Ours(Client(ops))) == await scenario(Native(native))
    finally:
        ops.close()
