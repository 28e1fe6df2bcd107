"""Open files and directories, by the handle number the kernel passes back."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from helixfs.errors import FileTooBig, HelixError, IsADirectory, NotFound, NotPermitted
from helixfs.fs.edge import BadHandle
from helixfs.fs.helixdir import VirtualDir, VirtualFile
from helixfs.fs.inodes import NodeInode

if TYPE_CHECKING:
    from helixfs.vcs.worktree import Node, Worktree

# The text one open may write to a `.helix/` file (a branch name is at most 200 bytes):
# what an open wrote is kept whole until its close, in the daemon's memory.
MAX_VIRTUAL_WRITE = 64 * 1024


@dataclass(eq=False)
class FileHandle:
    """An open file: the node it opened, even if the view has moved on since (a HEAD
    switch or an out-of-band reset leaves open descriptors on the state they opened)."""

    entry: NodeInode
    worktree: Worktree
    node: Node
    flags: int
    meta: dict[str, Any]  # who opened it: the commit metadata of the save at close

    @property
    def writable(self) -> bool:
        return (self.flags & os.O_ACCMODE) != os.O_RDONLY


@dataclass(eq=False)
class VirtualHandle:
    """An open `.helix/` file: rendered once at open (a consistent snapshot for the
    reader), written back when closed (so `echo name > HEAD` acts once, on whole text)."""

    file: VirtualFile
    data: bytes = b""
    written: bytearray | None = None  # None: opened read-only
    unapplied: bool = False  # written since the last flush (a dup'ed fd flushes early)
    # A write `check` refused: the text of this open is wrong as a whole, so nothing of
    # it is applied, not even the part written before (`printf 'main\nother\n'`).
    refused: HelixError | None = None

    @classmethod
    def open(cls, thing: object, flags: int) -> VirtualHandle:
        if isinstance(thing, VirtualDir):
            raise IsADirectory("cannot open a directory as a file")
        if not isinstance(thing, VirtualFile):
            raise NotFound("not a file")
        handle = cls(thing)
        if (flags & os.O_ACCMODE) != os.O_RDONLY:
            if not thing.writable:
                raise NotPermitted("this .helix file is read-only")
            handle.written = bytearray()
        if (flags & os.O_ACCMODE) != os.O_WRONLY:
            handle.data = thing.render()
        return handle

    def read(self, offset: int, size: int) -> bytes:
        return self.data[offset : offset + size]

    def write(self, offset: int, buf: bytes) -> int:
        if self.written is None:
            raise BadHandle("opened read-only")
        if self.refused is not None:
            raise self.refused
        if offset + len(buf) > MAX_VIRTUAL_WRITE:
            self._refuse(FileTooBig(f".helix files take at most {MAX_VIRTUAL_WRITE} bytes"))
        written = bytearray(self.written)
        written.extend(b"\0" * max(0, offset + len(buf) - len(written)))
        written[offset : offset + len(buf)] = buf
        try:
            self.file.check(bytes(written))
        except HelixError as refusal:
            self._refuse(refusal)
        self.written = written
        self.unapplied = True
        return len(buf)

    def _refuse(self, refusal: HelixError) -> NoReturn:
        self.refused = refusal
        self.unapplied = False
        raise refusal

    def apply(self) -> None:
        if self.written is None or not self.unapplied:
            return
        self.unapplied = False
        self.file.write(bytes(self.written))


@dataclass(eq=False)
class DirHandle:
    """An open directory: its listing as of the first readdir (or the last rewinddir),
    so readdir offsets stay meaningful while entries come and go."""

    ino: int
    names: list[bytes] = field(default_factory=list)
    nodes: list[Node] | None = None  # tree directories: the nodes, to skip a lookup each
    listed: bool = False  # readdir has taken its listing


Handle = FileHandle | VirtualHandle | DirHandle
H = TypeVar("H", FileHandle, VirtualHandle, DirHandle)


class HandleTable:
    def __init__(self) -> None:
        self._handles: dict[int, Handle] = {}
        self._next = 1

    def add(self, handle: Handle) -> int:
        fh = self._next
        self._next += 1
        self._handles[fh] = handle
        return fh

    def get(self, fh: int) -> Handle | None:
        return self._handles.get(fh)

    def typed(self, fh: int, kind: type[H]) -> H:
        handle = self._handles.get(fh)
        if not isinstance(handle, kind):
            raise BadHandle(f"file handle {fh} is not open")
        return handle

    def pop(self, fh: int) -> Handle | None:
        return self._handles.pop(fh, None)

    def files(self) -> list[FileHandle]:
        """Open files; safe from another thread (gc's): the table is copied first."""
        return [h for h in list(self._handles.values()) if isinstance(h, FileHandle)]
