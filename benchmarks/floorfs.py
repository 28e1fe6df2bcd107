"""The floor under HelixFS's metadata figures: a pyfuse3 filesystem that does nothing.

    python benchmarks/floorfs.py MOUNTPOINT      # foreground; fusermount3 -u to stop

Everything lives in a dict: no store, no versioning, no saves. It runs on the same
binding and the same request loop as HelixFS (pyfuse3 + trio, with HelixFS's quick wait
for requests, ADR 0026), and lets the kernel cache every entry, attribute and page for
an hour, which HelixFS cannot always do. What a workload costs here, HelixFS cannot
undercut in Python: bench_fs.py runs the metadata workloads on it, beside the disk.
It serves what `tar x`, `git status` and `rm -rf` use; nothing else is promised.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pyfuse3
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helixfs.daemon.fuseloop import use_quick_wait  # noqa: E402 (after the path)

CACHE_SECONDS = 3600.0


def _attributes(ino: int, mode: int, ctx: Any) -> pyfuse3.EntryAttributes:
    attrs = pyfuse3.EntryAttributes()
    attrs.st_ino = ino
    attrs.st_mode = mode
    attrs.st_nlink = 2 if stat.S_ISDIR(mode) else 1
    attrs.st_uid = ctx.uid if ctx else os.getuid()
    attrs.st_gid = ctx.gid if ctx else os.getgid()
    attrs.st_atime_ns = attrs.st_mtime_ns = attrs.st_ctime_ns = time.time_ns()
    attrs.st_blksize = 4096
    attrs.entry_timeout = attrs.attr_timeout = CACHE_SECONDS
    return attrs


class Node:
    __slots__ = ("attrs", "children", "data", "target")

    def __init__(self, ino: int, mode: int, ctx: Any) -> None:
        self.attrs = _attributes(ino, mode, ctx)
        self.children: dict[bytes, int] = {}
        self.data = bytearray()
        self.target = b""


class FloorFS(pyfuse3.Operations):  # type: ignore[misc]
    supports_dot_lookup = False

    def __init__(self) -> None:
        super().__init__()
        root = pyfuse3.ROOT_INODE
        self.nodes = {root: Node(root, stat.S_IFDIR | 0o755, None)}
        self.next_ino = root + 1

    def _node(self, ino: int) -> Node:
        try:
            return self.nodes[ino]
        except KeyError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None

    def _make(self, parent: int, name: bytes, mode: int, ctx: Any) -> Node:
        folder = self._node(parent)
        if name in folder.children:
            raise pyfuse3.FUSEError(errno.EEXIST)
        node = self.nodes[self.next_ino] = Node(self.next_ino, mode, ctx)
        folder.children[name] = self.next_ino
        self.next_ino += 1
        return node

    async def lookup(self, parent_inode: int, name: bytes, ctx: Any) -> pyfuse3.EntryAttributes:
        ino = self._node(parent_inode).children.get(name)
        if ino is not None:
            return self.nodes[ino].attrs
        absent = pyfuse3.EntryAttributes()  # st_ino 0: the kernel caches "no such name"
        absent.entry_timeout = CACHE_SECONDS
        return absent

    async def getattr(self, inode: int, ctx: Any) -> pyfuse3.EntryAttributes:
        return self._node(inode).attrs

    async def setattr(
        self, inode: int, attr: Any, fields: Any, fh: int | None, ctx: Any
    ) -> pyfuse3.EntryAttributes:
        node = self._node(inode)
        attrs = node.attrs
        if fields.update_size:
            del node.data[attr.st_size :]
            node.data.extend(bytes(attr.st_size - len(node.data)))
            attrs.st_size = attr.st_size
        if fields.update_mode:
            attrs.st_mode = (attrs.st_mode & ~0o7777) | (attr.st_mode & 0o7777)
        if fields.update_uid:
            attrs.st_uid = attr.st_uid
        if fields.update_gid:
            attrs.st_gid = attr.st_gid
        if fields.update_atime:
            attrs.st_atime_ns = attr.st_atime_ns
        if fields.update_mtime:
            attrs.st_mtime_ns = attr.st_mtime_ns
        attrs.st_ctime_ns = time.time_ns()
        return attrs

    async def getxattr(self, inode: int, name: bytes, ctx: Any) -> bytes:
        raise pyfuse3.FUSEError(pyfuse3.ENOATTR)

    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: Any
    ) -> pyfuse3.EntryAttributes:
        return self._make(parent_inode, name, stat.S_IFDIR | (mode & 0o7777), ctx).attrs

    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Any
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        node = self._make(parent_inode, name, mode, ctx)
        return pyfuse3.FileInfo(fh=node.attrs.st_ino, keep_cache=True), node.attrs

    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: Any
    ) -> pyfuse3.EntryAttributes:
        node = self._make(parent_inode, name, stat.S_IFLNK | 0o777, ctx)
        node.target = target
        node.attrs.st_size = len(target)
        return node.attrs

    async def readlink(self, inode: int, ctx: Any) -> bytes:
        return self._node(inode).target

    async def open(self, inode: int, flags: int, ctx: Any) -> pyfuse3.FileInfo:
        node = self._node(inode)
        if flags & os.O_TRUNC:
            node.data.clear()
            node.attrs.st_size = 0
        return pyfuse3.FileInfo(fh=inode, keep_cache=True)

    async def read(self, fh: int, off: int, size: int) -> bytes:
        return bytes(self.nodes[fh].data[off : off + size])

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        node = self.nodes[fh]
        if off > len(node.data):
            node.data.extend(bytes(off - len(node.data)))
        node.data[off : off + len(buf)] = buf
        node.attrs.st_size = len(node.data)
        node.attrs.st_mtime_ns = node.attrs.st_ctime_ns = time.time_ns()
        return len(buf)

    # Answered, as HelixFS must answer them (a save at close needs flush): pyfuse3's
    # default ENOSYS would make the kernel stop sending them, a saving HelixFS cannot have.
    async def flush(self, fh: int) -> None:
        pass

    async def release(self, fh: int) -> None:
        pass

    async def fsync(self, fh: int, datasync: bool) -> None:
        pass

    async def releasedir(self, fh: int) -> None:
        pass

    async def forget(self, inode_list: Any) -> None:
        pass

    async def opendir(self, inode: int, ctx: Any) -> int:
        self._node(inode)
        return inode

    async def readdir(self, fh: int, start_id: int, token: Any) -> None:
        entries = list(self.nodes[fh].children.items())
        for index in range(start_id, len(entries)):
            name, ino = entries[index]
            if not pyfuse3.readdir_reply(token, name, self.nodes[ino].attrs, index + 1):
                return

    async def unlink(self, parent_inode: int, name: bytes, ctx: Any) -> None:
        if self._node(parent_inode).children.pop(name, None) is None:
            raise pyfuse3.FUSEError(errno.ENOENT)

    async def rmdir(self, parent_inode: int, name: bytes, ctx: Any) -> None:
        folder = self._node(parent_inode)
        ino = folder.children.get(name)
        if ino is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        if self.nodes[ino].children:
            raise pyfuse3.FUSEError(errno.ENOTEMPTY)
        del folder.children[name]

    async def rename(
        self, old: int, name_old: bytes, new: int, name_new: bytes, flags: int, ctx: Any
    ) -> None:
        moved = self._node(old).children.pop(name_old)
        self._node(new).children[name_new] = moved

    async def statfs(self, ctx: Any) -> pyfuse3.StatvfsData:
        data = pyfuse3.StatvfsData()
        data.f_bsize = data.f_frsize = 4096
        data.f_blocks = data.f_bfree = data.f_bavail = 1 << 24
        data.f_files = data.f_ffree = data.f_favail = 1 << 20
        data.f_namemax = 255
        return data


def main(mountpoint: str) -> None:
    options = set(pyfuse3.default_options) | {"fsname=floorfs", "default_permissions"}
    pyfuse3.init(FloorFS(), mountpoint, options)
    use_quick_wait(1, os.environ.get("HELIX_FUSE_WAIT", "auto"))  # HelixFS's, ADR 0074
    print(f"mounted {mountpoint}", flush=True)
    try:
        trio.run(pyfuse3.main, 1, 1)
    finally:
        pyfuse3.close(unmount=True)


if __name__ == "__main__":
    main(sys.argv[1])
