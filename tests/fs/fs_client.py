"""Drives the Operations class the way the kernel does, for the direct fs tests."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import Any

import pyfuse3
import pytest

from helixfs.fs.operations import Operations
from helixfs.fs.saver import Saver
from helixfs.vcs.repo import Repository


@dataclass
class Ctx:
    """What pyfuse3.RequestContext carries (it cannot be built from Python)."""

    pid: int = field(default_factory=os.getpid)
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)
    umask: int = 0o022


@dataclass
class _Fields:
    """pyfuse3.SetattrFields has read-only attributes; this has the same names."""

    update_atime: bool = False
    update_mtime: bool = False
    update_ctime: bool = False
    update_mode: bool = False
    update_uid: bool = False
    update_gid: bool = False
    update_size: bool = False


def Fields(**updates: bool) -> Any:  # noqa: N802 (stands in for a class)
    return _Fields(**updates)


CTX: Any = Ctx()
ROOT = pyfuse3.ROOT_INODE


def make_ops(repo: Repository, window: float = 0, **kwargs: Any) -> Operations:
    return Operations(repo, saver=Saver(window), **kwargs)


class Client:
    """Drives Operations the way the kernel does for common syscalls."""

    def __init__(self, ops: Operations) -> None:
        self.ops = ops

    async def lookup(self, parent: int, name: bytes) -> pyfuse3.EntryAttributes:
        """A lookup as a process sees it: a negative entry (st_ino 0, "no such name"
        the kernel may cache) is ENOENT."""
        attrs: pyfuse3.EntryAttributes = negative_is_enoent(
            await self.ops.lookup(parent, name, CTX)
        )
        return attrs

    async def ino(self, path: str, parent: int = ROOT) -> int:
        for name in path.encode().split(b"/") if path else []:
            parent = (await self.lookup(parent, name)).st_ino
        return parent

    async def write_file(self, path: str, data: bytes, mode: int = 0o644) -> int:
        parent_path, _, name = path.rpartition("/")
        parent = await self.ino(parent_path)
        try:
            ino = (await self.lookup(parent, name.encode())).st_ino
            fi = await self.ops.open(ino, os.O_WRONLY | os.O_TRUNC, CTX)
        except pyfuse3.FUSEError as exc:
            assert exc.errno == errno.ENOENT
            fi, attrs = await self.ops.create(parent, name.encode(), mode, os.O_WRONLY, CTX)
            ino = attrs.st_ino
        if data:
            assert await self.ops.write(fi.fh, 0, data) == len(data)
        await self.ops.flush(fi.fh)
        await self.ops.release(fi.fh)
        return ino

    async def read_file(self, path: str) -> bytes:
        ino = await self.ino(path)
        fi = await self.ops.open(ino, os.O_RDONLY, CTX)
        try:
            return await self.read_fh(fi.fh)
        finally:
            await self.ops.release(fi.fh)

    async def read_fh(self, fh: int) -> bytes:
        out = b""
        while chunk := await self.ops.read(fh, len(out), 65536):
            out += chunk
        return out

    async def listdir(
        self, ino: int = ROOT, start: int = 0, limit: int = 10**6, *, dots: bool = False
    ) -> list[tuple[bytes, int, int]]:
        """(name, inode, next_id) as readdir_reply would receive them; `.` and `..` only
        with dots=True (os.listdir leaves them out too)."""
        got: list[tuple[bytes, int, int]] = []

        def reply(token: Any, name: bytes, attrs: pyfuse3.EntryAttributes, next_id: int) -> bool:
            if len(got) >= limit:
                return False
            if dots or name not in (b".", b".."):
                got.append((name, attrs.st_ino, next_id))
            return True

        self.ops.readdir_reply = reply
        fh = await self.ops.opendir(ino, CTX)
        try:
            await self.ops.readdir(fh, start, None)  # type: ignore[arg-type]
        finally:
            await self.ops.releasedir(fh)
        return got

    async def names(self, path: str = "") -> list[bytes]:
        return [name for name, _, _ in await self.listdir(await self.ino(path))]

    async def mkdir(self, path: str) -> int:
        parent_path, _, name = path.rpartition("/")
        attrs = await self.ops.mkdir(
            await self.ino(parent_path), name.encode(), stat.S_IFDIR | 0o755, CTX
        )
        return attrs.st_ino


def negative_is_enoent(attrs: Any) -> Any:
    if isinstance(attrs, pyfuse3.EntryAttributes) and attrs.st_ino == 0:
        raise pyfuse3.FUSEError(errno.ENOENT)
    return attrs


async def expect_errno(code: int, awaitable: Any) -> None:
    """`awaitable` fails with `code`. A lookup's negative entry is ENOENT, as the kernel
    reports it to the caller."""
    with pytest.raises(pyfuse3.FUSEError) as caught:
        negative_is_enoent(await awaitable)
    assert caught.value.errno == code, os.strerror(caught.value.errno)
