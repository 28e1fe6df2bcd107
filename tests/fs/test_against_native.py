"""Random operation sequences, applied to the Operations class and to a real directory
on the local disk: same results, same errno, same final tree. The disk is the oracle."""

from __future__ import annotations

import ctypes
import errno
import os
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pyfuse3
import pytest
from fs_client import CTX, ROOT, Client, Fields, make_ops

from helixfs.vcs.repo import Repository

NAMES = [b"a", b"b", b"c"]
DIRS = [b"", b"d", b"d/e"]


class Pair:
    def __init__(self, client: Client, native: Path) -> None:
        self.client = client
        self.native = native

    def real(self, path: bytes) -> bytes:
        return os.path.join(bytes(self.native), path)

    async def ino(self, path: bytes) -> int:
        ino = ROOT
        for part in path.split(b"/") if path else []:
            ino = (await self.client.lookup(ino, part)).st_ino
        return ino

    async def split(self, path: bytes) -> tuple[int, bytes]:
        """The parent's inode, checked as the kernel's path walk does before calling us."""
        parent, _, name = path.rpartition(b"/")
        ino = await self.ino(parent)
        if (await self.client.ops.getattr(ino, CTX)).st_mode & 0o170000 != 0o040000:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        return ino, name


Outcome = tuple[str, Any]  # ("ok", result) or ("err", errno)


async def outcome(coro: Awaitable[Any]) -> Outcome:
    try:
        return ("ok", await coro)
    except pyfuse3.FUSEError as exc:
        return ("err", exc.errno)


def native_outcome(fn: Callable[..., Any], *args: Any) -> Outcome:
    try:
        return ("ok", fn(*args))
    except OSError as exc:
        return ("err", exc.errno)


async def write_at(pair: Pair, path: bytes, offset: int, data: bytes) -> tuple[Outcome, Outcome]:
    def native() -> None:
        fd = os.open(pair.real(path), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data, offset)
        finally:
            os.close(fd)

    async def ours() -> None:
        parent, name = await pair.split(path)
        ops = pair.client.ops
        try:
            ino = (await pair.client.lookup(parent, name)).st_ino
            fi = await ops.open(ino, os.O_WRONLY, CTX)
        except pyfuse3.FUSEError as exc:
            if exc.errno != errno.ENOENT:
                raise
            fi, _ = await ops.create(parent, name, 0o644, os.O_WRONLY, CTX)
        try:
            await ops.write(fi.fh, offset, data)
            await ops.flush(fi.fh)
        finally:
            await ops.release(fi.fh)

    return native_outcome(native), await outcome(ours())


async def truncate(pair: Pair, path: bytes, size: int) -> tuple[Outcome, Outcome]:
    async def ours() -> None:
        attrs = pyfuse3.EntryAttributes()
        attrs.st_size = size
        await pair.client.ops.setattr(
            await pair.ino(path), attrs, Fields(update_size=True), None, CTX
        )

    return native_outcome(os.truncate, pair.real(path), size), await outcome(ours())


async def unlink(pair: Pair, path: bytes) -> tuple[Outcome, Outcome]:
    async def ours() -> None:
        await pair.client.ops.unlink(*await pair.split(path), CTX)

    return native_outcome(os.unlink, pair.real(path)), await outcome(ours())


async def mkdir(pair: Pair, path: bytes) -> tuple[Outcome, Outcome]:
    async def ours() -> None:
        await pair.client.ops.mkdir(*await pair.split(path), 0o755, CTX)

    return native_outcome(os.mkdir, pair.real(path)), await outcome(ours())


async def rmdir(pair: Pair, path: bytes) -> tuple[Outcome, Outcome]:
    async def ours() -> None:
        await pair.client.ops.rmdir(*await pair.split(path), CTX)

    return native_outcome(os.rmdir, pair.real(path)), await outcome(ours())


_LIBC = ctypes.CDLL(None, use_errno=True)


def renameat2(old: bytes, new: bytes, flags: int) -> None:
    if _LIBC.renameat2(-100, old, -100, new, flags) != 0:  # AT_FDCWD
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


async def rename(pair: Pair, old: bytes, new: bytes, flags: int) -> tuple[Outcome, Outcome]:
    async def ours() -> None:
        old_parent, old_name = await pair.split(old)
        new_parent, new_name = await pair.split(new)
        await pair.client.ops.rename(old_parent, old_name, new_parent, new_name, flags, CTX)

    native = native_outcome(renameat2, pair.real(old), pair.real(new), flags)
    return native, await outcome(ours())


async def symlink(pair: Pair, path: bytes, target: bytes) -> tuple[Outcome, Outcome]:
    async def ours() -> None:
        await pair.client.ops.symlink(*await pair.split(path), target, CTX)

    return native_outcome(os.symlink, target, pair.real(path)), await outcome(ours())


def snapshot_native(root: Path) -> dict[bytes, object]:
    tree: dict[bytes, object] = {}
    for dirpath, dirnames, filenames in os.walk(bytes(root)):
        rel = os.path.relpath(dirpath, bytes(root))
        base = b"" if rel == b"." else rel + b"/"
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                tree[base + name] = ("link", os.readlink(full))
            elif os.path.isdir(full):
                tree[base + name] = None
            else:
                with open(full, "rb") as handle:
                    tree[base + name] = handle.read()
    return tree


async def snapshot_ours(client: Client, ino: int = ROOT, base: bytes = b"") -> dict[bytes, object]:
    tree: dict[bytes, object] = {}
    for name, child, _ in await client.listdir(ino):
        attrs = await client.ops.getattr(child, CTX)
        if attrs.st_mode & 0o170000 == 0o120000:
            tree[base + name] = ("link", await client.ops.readlink(child, CTX))
        elif attrs.st_mode & 0o170000 == 0o040000:
            tree[base + name] = None
            tree.update(await snapshot_ours(client, child, base + name + b"/"))
        else:
            fi = await client.ops.open(child, os.O_RDONLY, CTX)
            tree[base + name] = await client.read_fh(fi.fh)
            await client.ops.release(fi.fh)
    return tree


def _through_link(pair: Pair, path: bytes) -> bool:
    parts = path.split(b"/")
    return any(os.path.islink(pair.real(b"/".join(parts[:i]))) for i in range(1, len(parts)))


def _nested(a: bytes, b: bytes) -> bool:
    return a != b and (a.startswith(b + b"/") or b.startswith(a + b"/"))


def comparable(result: Outcome) -> Outcome:
    kind, value = result
    return (kind, value if kind == "err" else None)


class Held:
    """One file open in both worlds, kept across other operations (unlink, rename...)."""

    def __init__(self, native_fd: int, fh: int) -> None:
        self.native_fd, self.fh = native_fd, fh


async def hold(pair: Pair, path: bytes, held: list[Held]) -> tuple[Outcome, Outcome]:
    native = native_outcome(os.open, pair.real(path), os.O_RDWR)

    async def ours() -> int:
        fi = await pair.client.ops.open(await pair.ino(path), os.O_RDWR, CTX)
        return int(fi.fh)

    mine = await outcome(ours())
    if native[0] == "ok" and mine[0] == "ok":
        held.append(Held(native[1], mine[1]))
    elif native[0] == "ok":
        os.close(native[1])
    elif mine[0] == "ok":
        await pair.client.ops.release(mine[1])
    return native, mine


async def check_held(pair: Pair, one: Held, rng: random.Random) -> None:
    offset, data = rng.choice([0, 4, 6000]), rng.randbytes(rng.choice([1, 300]))
    os.pwrite(one.native_fd, data, offset)
    await pair.client.ops.write(one.fh, offset, data)
    size = os.fstat(one.native_fd).st_size
    assert await pair.client.ops.read(one.fh, 0, size + 10) == os.pread(one.native_fd, size + 10, 0)


async def release_held(pair: Pair, held: list[Held]) -> None:
    for one in held:
        os.close(one.native_fd)
        await pair.client.ops.flush(one.fh)
        await pair.client.ops.release(one.fh)
    held.clear()


@pytest.mark.parametrize("seed", range(12))
async def test_random_sequences_match_the_local_disk(
    seed: int, repo: Repository, tmp_path: Path
) -> None:
    native = tmp_path / "native"
    native.mkdir()
    pair = Pair(Client(make_ops(repo, window=0)), native)
    rng = random.Random(seed)
    paths = [d + b"/" + n if d else n for d in DIRS for n in NAMES] + DIRS[1:]
    held: list[Held] = []
    for step in range(160):
        choice = rng.randrange(9)
        path = rng.choice(paths)
        if _through_link(pair, path):
            continue  # the kernel resolves symlinks in a path before any request

        if choice == 0:
            if os.path.islink(pair.real(path)):
                continue  # the kernel follows symlinks before open reaches us
            data = rng.randbytes(rng.choice([1, 10, 5000]))
            got = await write_at(pair, path, rng.choice([0, 3, 9000]), data)
        elif choice == 1:
            if os.path.islink(pair.real(path)):
                continue  # the kernel follows symlinks before setattr reaches us
            got = await truncate(pair, path, rng.choice([0, 2, 7000]))
        elif choice == 2:
            got = await unlink(pair, path)
        elif choice == 3:
            got = await mkdir(pair, path)
        elif choice == 4:
            got = await rmdir(pair, path)
        elif choice == 5:
            target = rng.choice(paths)
            if _nested(path, target) or _through_link(pair, target):
                continue  # the kernel's VFS answers these (EINVAL/ENOTEMPTY) without us
            flags = rng.choice([0, 0, pyfuse3.RENAME_NOREPLACE, pyfuse3.RENAME_EXCHANGE])
            got = await rename(pair, path, target, flags)
        elif choice == 6:
            got = await symlink(pair, path, rng.choice([b"a", b"../x", b"d/e"]))
        elif choice == 7 and len(held) < 3:
            if os.path.islink(pair.real(path)):
                continue  # the kernel follows symlinks before open ever reaches us
            got = await hold(pair, path, held)
        else:
            if held:
                await check_held(pair, rng.choice(held), rng)
            if rng.random() < 0.3:
                await release_held(pair, held)
            continue
        native_result, our_result = got
        assert comparable(native_result) == comparable(our_result), (step, choice, path)
        if step % 20 == 19:
            await release_held(pair, held)
            assert await snapshot_ours(pair.client) == snapshot_native(native), step
    await release_held(pair, held)
    assert await snapshot_ours(pair.client) == snapshot_native(native)
    pair.client.ops.close()
    committed = {e.name for e in repo.ls("HEAD")}
    assert committed == {name for name in os.listdir(bytes(native))}
