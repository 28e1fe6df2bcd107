"""The virtual `.helix/` folder: a table of handlers, one per entry.

Each entry is an object that knows how to be read, written, listed or changed; the
Operations class only dispatches on four shapes (file, directory, view, link) and never
on a name, so adding an entry (the daemon adds `search/` and `context`) is one table row.

- `VirtualFile`: content rendered when opened (a consistent snapshot per open); may
  accept a write, applied when the file is closed.
- `VirtualDir`: a listing plus lookup; may accept mkdir/rmdir/rename of its children.
- `ViewSpec`: a directory that is a whole tree (a branch, a snapshot, a commit); the
  Operations class opens the matching Worktree and serves it like the mount root.
- `Link`: a symbolic link. The current branch is one in `branches/`, to the mount root.

Every handler calls the core API (`Repository`) and nothing else: a branch made here is
the same as one made by `helix branch`.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from helixfs.errors import Busy, InvalidName, NotFound, NotPermitted, StoreFull
from helixfs.vcs.dates import shown_time
from helixfs.vcs.node import saved_by
from helixfs.vcs.status import status, status_lines
from helixfs.vcs.sync import notices

if TYPE_CHECKING:
    from helixfs.vcs.objects import Commit
    from helixfs.vcs.repo import Repository

LOG_LIMIT = 50


class Entry:
    """Anything `.helix/` can hold."""

    mode: int = stat.S_IFREG | 0o444
    # One of an unbounded set of names (a query): numbered only while the kernel knows
    # it, or a mount that answers searches for days would keep every query ever asked.
    transient: bool = False


class VirtualFile(Entry):
    """A file whose bytes are computed. `cheap` files report their true size in getattr;
    costly ones (search results) report 0 and are read with direct I/O."""

    mode = stat.S_IFREG | 0o444
    cheap = True

    def render(self) -> bytes:
        raise NotImplementedError

    def write(self, data: bytes) -> None:
        raise NotPermitted("this .helix file is read-only")

    def check(self, data: bytes) -> None:
        """Refuse a complete line of bad input as it is written: a shell ignores the
        error of the close that applies it (`echo nosuch > .helix/HEAD`). `data` is all
        this open wrote so far; once a write is refused, the open applies nothing."""

    @property
    def writable(self) -> bool:
        return bool(self.mode & 0o200)


class VirtualDir(Entry):
    mode = stat.S_IFDIR | 0o555

    def names(self) -> list[bytes]:
        return []

    def child(self, name: bytes) -> Entry:
        raise NotFound(f".helix has no entry {name!r}")

    def mkdir(self, name: bytes) -> None:
        raise NotPermitted("entries cannot be created here")

    def rmdir(self, name: bytes) -> None:
        raise NotPermitted("entries cannot be removed here")

    def rename(self, old: bytes, new: bytes) -> None:
        raise NotPermitted("entries cannot be renamed here")


@dataclass(frozen=True)
class ViewSpec(Entry):
    """A whole tree shown as a directory: kind is "branch", "snapshot" or "commit"."""

    kind: str
    name: str
    mode: int = stat.S_IFDIR | 0o755
    rev: str = ""  # what to open, if not `name` (a commit: its full id)


@dataclass(frozen=True)
class Link(Entry):
    """A symbolic link to `target`. The current branch's: each branch that was ever
    current has one, so it is numbered only while the kernel knows it."""

    target: bytes
    mode: int = stat.S_IFLNK | 0o777
    transient = True  # a class attribute, not a field


# -- building blocks the daemon can reuse for its own entries --------------------------


class TextFile(VirtualFile):
    """A read-only file rendered by a function (e.g. `.helix/context`)."""

    def __init__(self, render: Callable[[], bytes | str], *, cheap: bool = True) -> None:
        self._render = render
        self.cheap = cheap

    def render(self) -> bytes:
        out = self._render()
        return out.encode() if isinstance(out, str) else out


class QueryDir(VirtualDir):
    """A directory where any name is a query and the file under it its answer
    (`.helix/search/QUERY`). Not listed: the set of queries is infinite."""

    def __init__(self, answer: Callable[[str], bytes | str]) -> None:
        self._answer = answer

    def child(self, name: bytes) -> Entry:
        query = name.decode("utf-8", "surrogateescape")
        answer = TextFile(lambda: self._answer(query), cheap=False)
        answer.transient = True
        return answer


class TableDir(VirtualDir):
    """A fixed table of entries (the `.helix/` folder itself)."""

    def __init__(self, table: Mapping[bytes, Entry]) -> None:
        self._table = dict(table)

    def names(self) -> list[bytes]:
        return sorted(self._table)

    def child(self, name: bytes) -> Entry:
        try:
            return self._table[name]
        except KeyError:
            raise NotFound(f".helix has no entry {name.decode(errors='replace')!r}") from None


# -- the built-in entries ----------------------------------------------------------------


class Host(Protocol):
    """What the handlers need from the mount (implemented by the Operations class)."""

    repo: Repository

    def current_branch(self) -> str: ...

    def switch_branch(self, name: str) -> None: ...

    def settle(self) -> None:
        """Commit the current branch's pending saves, so "current state" is a commit."""
        ...

    def check_switch_room(self) -> None:
        """StoreFull now if the disk has no room for what a switch writes."""
        ...

    def forget_view(self, kind: str, name: str) -> None: ...

    def rename_view(self, kind: str, old: str, new: str) -> None: ...


def _name(raw: bytes) -> str:
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidName("branch and snapshot names must be UTF-8") from None
    if not name or name.startswith(".") or "/" in name:
        raise InvalidName(f"{name!r} cannot be used as a branch or snapshot name")
    return name


def _ref_names(items: Iterable[Any]) -> list[bytes]:
    """Names from `repo.branches()` / `snapshots()`, whether they give names or records."""
    names = []
    for item in items:
        name = item if isinstance(item, str) else getattr(item, "name", None)
        if isinstance(name, str):
            names.append(name.encode())
    return sorted(names)


class HeadFile(VirtualFile):
    """Read: the branch the mount root shows. Write a branch name: switch to it."""

    mode = stat.S_IFREG | 0o644

    def __init__(self, host: Host) -> None:
        self._host = host

    def render(self) -> bytes:
        return self._host.current_branch().encode() + b"\n"

    def write(self, data: bytes) -> None:
        self._host.switch_branch(_head_name(data))

    def check(self, data: bytes) -> None:
        """From the first newline on, the text is either one whole name or wrong. A
        switch the disk has no room for is refused here too: at close, its ENOSPC
        would be ignored by the shell, which would report success. That covers the
        commit of the current branch's pending saves the switch makes first."""
        if b"\n" in data:
            name = _head_name(data)
            if name not in {ref.name for ref in self._host.repo.branches()}:
                raise NotFound(f"no branch named {name!r}")
            if name == self._host.current_branch():
                return  # no switch, nothing to write
        self._host.check_switch_room()


def _head_name(data: bytes) -> str:
    """What one open of `.helix/HEAD` wrote: a single branch name. Whitespace around it
    (echo's newline, an editor's CRLF, a space) is not part of it; branch names hold
    none, so whitespace inside means two names or two lines: refused as a whole."""
    words = data.split()
    if len(words) > 1:
        raise InvalidName("write one branch name to .helix/HEAD, on one line")
    return _name(data.strip())


class StoreFile(VirtualFile):
    """The absolute store path: how the CLI finds the store of the mount holding cwd."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def render(self) -> bytes:
        return str(self._path.resolve()).encode() + b"\n"


def format_commit(commit: Commit) -> str:
    """`ID DATE TIME ZONE [process pid] subject`: the time as `helix log` shows it (the
    author's zone, else UTC; not the daemon's zone, which no reader can tell), to the
    second."""
    meta = dict(commit.meta or {})
    when = shown_time(commit, "%Y-%m-%d %H:%M:%S")
    who = saved_by(meta)
    first_line = (commit.message or "").splitlines()[0] if commit.message else ""
    return f"{commit.id.hex()[:12]} {when}{who} {first_line}"


class LogFile(VirtualFile):
    """The current branch's history, as `helix log` shows it: the saves still in the
    quiet window are committed first (the commit the window would cut, and the window
    then finds nothing left), so a file just saved is in it. A disk too full for that
    commit still gets the log, up to the last commit (the window tries again)."""

    def __init__(self, host: Host) -> None:
        self._host = host

    def render(self) -> bytes:
        with contextlib.suppress(StoreFull):
            self._host.repo.settle_rev("HEAD")
        lines = [f"! {text}" for text in notices(self._host.repo)]  # a remote's news
        lines += [format_commit(c) for c in self._host.repo.log("HEAD", limit=LOG_LIMIT)]
        return "".join(line + "\n" for line in lines).encode()


class StatusFile(VirtualFile):
    """`helix status` as a file: the branch, its commit and the saves not committed
    yet (vcs/status.py). Reading it commits nothing."""

    def __init__(self, host: Host) -> None:
        self._host = host

    def render(self) -> bytes:
        state = status(self._host.repo, mounted=True)
        text = "".join(line + "\n" for line in status_lines(state, os.fsdecode))
        return text.encode("utf-8", "surrogateescape")


class StatsFile(VirtualFile):
    """`helix stats`: it walks every branch's tree, so it is rendered once per open."""

    cheap = False

    def __init__(self, host: Host) -> None:
        self._host = host

    def render(self) -> bytes:
        stats: Any = self._host.repo.stats()
        if is_dataclass(stats) and not isinstance(stats, type):
            stats = asdict(stats)
        if isinstance(stats, Mapping):
            return "".join(f"{k}: {_plain(v)}\n" for k, v in stats.items()).encode()
        return (str(stats) + "\n").encode()


def _plain(value: Any) -> str:
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=str, sort_keys=True)
    return str(value)


class BranchesDir(VirtualDir):
    """One writable tree per branch; mkdir branches from the current state, rmdir
    deletes (never the current branch), rename renames.

    The current branch is a link to the mount root, not a second view of it: one place
    to write it, one set of inodes for the kernel to cache, and `rm -rf .helix` (which
    does not follow links) cannot empty the workspace through it.
    """

    mode = stat.S_IFDIR | 0o755

    def __init__(self, host: Host) -> None:
        self._host = host

    def names(self) -> list[bytes]:
        return _ref_names(self._host.repo.branches())

    def child(self, name: bytes) -> Entry:
        try:
            known = self._host.repo.has_branch(name.decode())
        except UnicodeDecodeError:
            known = False
        if not known:
            raise NotFound(f"no branch {name.decode(errors='replace')!r}")
        if name.decode() == self._host.current_branch():
            return Link(b"../..")
        return ViewSpec("branch", name.decode())

    def mkdir(self, name: bytes) -> None:
        branch = _name(name)
        self._host.settle()
        self._host.repo.create_branch(branch, self._host.current_branch())

    def rmdir(self, name: bytes) -> None:
        branch = _name(name)
        if branch == self._host.current_branch():
            raise Busy(f"{branch!r} is the branch this mount shows; switch HEAD first")
        self._host.repo.delete_branch(branch)
        self._host.forget_view("branch", branch)

    def rename(self, old: bytes, new: bytes) -> None:
        """Renaming the current branch moves HEAD with it (the root keeps showing it)."""
        old_name, new_name = _name(old), _name(new)
        self._host.repo.rename_branch(old_name, new_name)
        self._host.rename_view("branch", old_name, new_name)


class SnapshotsDir(VirtualDir):
    """Read-only trees; mkdir snapshots the current state, rmdir deletes, rename
    relabels (never over an existing name)."""

    mode = stat.S_IFDIR | 0o755

    def __init__(self, host: Host) -> None:
        self._host = host

    def names(self) -> list[bytes]:
        return _ref_names(self._host.repo.snapshots())

    def child(self, name: bytes) -> Entry:
        if name not in self.names():
            raise NotFound(f"no snapshot {name.decode(errors='replace')!r}")
        return ViewSpec("snapshot", name.decode())

    def mkdir(self, name: bytes) -> None:
        snapshot = _name(name)
        self._host.settle()
        self._host.repo.create_snapshot(snapshot, self._host.current_branch())

    def rmdir(self, name: bytes) -> None:
        snapshot = _name(name)
        self._host.repo.delete_snapshot(snapshot)
        self._host.forget_view("snapshot", snapshot)

    def rename(self, old: bytes, new: bytes) -> None:
        """A new label for the same content: its folder (and a process inside) moves."""
        old_name, new_name = _name(old), _name(new)
        self._host.repo.rename_snapshot(old_name, new_name)
        self._host.rename_view("snapshot", old_name, new_name)


class CommitsDir(VirtualDir):
    """`commits/ID/`: any commit by unique prefix (the ids are in `log`). Not listed, as
    ZFS hides `.zfs`: every tool that walks the mount (`rm -rf .helix`, `find`, `du`,
    `grep -r`) would walk a whole read-only tree per commit listed, and `rm` would print
    an EROFS line for each of their files."""

    def __init__(self, host: Host) -> None:
        self._host = host

    def child(self, name: bytes) -> Entry:
        try:
            prefix = name.decode("ascii")
        except UnicodeDecodeError:
            raise NotFound(f"{name!r} is not a commit id") from None
        # An id only, never a ref: a branch named `cafe` must not show as commit cafe...
        # NotFound / AmbiguousRevision before any view.
        cid = self._host.repo.resolve_id(prefix)
        return ViewSpec("commit", prefix, rev=cid.hex())


def helix_root(host: Host, store_path: Path, extra: Mapping[bytes, Entry] = {}) -> TableDir:
    """The `.helix/` table. `extra` is how the daemon adds `search/` and `context`
    without this layer importing the memory engine."""
    table: dict[bytes, Entry] = {
        b"HEAD": HeadFile(host),
        b"store": StoreFile(store_path),
        b"log": LogFile(host),
        b"stats": StatsFile(host),
        b"status": StatusFile(host),
        b"branches": BranchesDir(host),
        b"snapshots": SnapshotsDir(host),
        b"commits": CommitsDir(host),
    }
    clash = set(table) & set(extra)
    if clash:
        raise ValueError(f".helix entries defined twice: {sorted(clash)}")
    table.update(extra)
    return TableDir(table)
