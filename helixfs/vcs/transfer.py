"""Folders in and out of the store: `import_dir` (a folder becomes one commit) and
`export` (a revision's tree becomes a folder).

Both stream: file contents go to the store in batches of bounded size (large files
through FastCDC chunks), so importing a big folder never holds it in memory. An import
keeps what a checkout needs to look the same: bytes names, modes, symlinks, mtimes and
`user.*` extended attributes (as many as the mount would take: XATTR_TOTAL_MAX), pipes
and sockets. A file with more xattr names than Linux lists at once (XATTR_LIST_MAX:
tmpfs holds more) has none that can be read: it is counted, not silently bare. Devices
are skipped and counted, as are `.git` and `.helix` folders (another VCS's internals and
our own virtual folder) and the store's own folder. What the folder's `.gitignore` and
`.helixignore` files ignore is left out and counted, unless the branch's head holds it
(ADR 0061).

An export writes into a fresh sibling folder and renames it into place at the end, so a
failure halfway leaves nothing behind where the user asked for the tree.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.errors import CorruptObject, InvalidInput, NotFound
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.vcs import attrs
from helixfs.vcs.attrs import folder_entry
from helixfs.vcs.content import EMPTY, ZERO_CHUNK, pack_bytes, store_stream
from helixfs.vcs.ignore import NO_RULES, Scope, repo_on_disk, rules_on_disk
from helixfs.vcs.linkcopy import ExportLinks, ImportLinks
from helixfs.vcs.objects import EMPTY_KINDS, XATTR_TOTAL_MAX, TreeEntry, valid_name
from helixfs.vcs.refs import branch_ref
from helixfs.vcs.treeops import holds_file, show_path, subtree

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

Progress = Callable[[int], None]
FLUSH_BYTES = 32 << 20
"""Objects are handed to the store every this many bytes: bounded memory, few batches."""
SKIPPED_DIRS = frozenset({b".git", b".helix"})
XATTR_NAMESPACE = b"user."


@dataclass(frozen=True)
class ImportSummary:
    commit: str
    branch: str
    files: int
    dirs: int
    bytes: int
    skipped: int
    changed: bool
    xattrs_skipped: int = 0  # values past a file's bound (XATTR_TOTAL_MAX), left out
    xattrs_unlisted: int = 0  # files whose names are past XATTR_LIST_MAX: none kept
    ignored: int = 0  # paths the folder's ignore rules left out (a folder counts once)


@dataclass(frozen=True)
class ExportSummary:
    commit: str
    path: str
    files: int
    dirs: int
    bytes: int
    owners_unset: int = 0  # entries whose stored owner lchown refused (not root)
    devices_skipped: int = 0  # device files mknod refused (not root): left out


class _Batch:
    """Objects waiting for one store write; flushed when they grow past FLUSH_BYTES.

    Nothing reaches them before the import's commit, so they go as bulk writes (no
    write-ahead log); the commit's write makes them durable first (ADR 0014).

    Until then no ref reaches what was flushed either, and a gc may run meanwhile (a
    mount's own, beside an import the daemon runs on a worker thread; gc marks and
    deletes without waiting for the import). So the batch names every object it
    flushed, or found stored already (`keep`), to gc as in use, until `close()`.
    """

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.objects: dict[ObjectId, bytes] = {}
        self.size = 0
        self.kept: list[ObjectId] = []
        self._release = repo.keep_in_use(self._in_use)

    def _in_use(self) -> list[ObjectId]:
        return list(self.kept)  # gc calls this from its own thread: a copy, in one step

    def keep(self, oids: Iterable[ObjectId]) -> None:
        """Have gc keep stored objects the import will point at (before checking that
        they are stored: a gc between the check and this would drop them)."""
        self.kept.extend(oids)

    def close(self) -> None:
        """Call once the import's refs reach what it wrote (or it failed)."""
        self._release()

    def __enter__(self) -> _Batch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, objects: dict[ObjectId, bytes]) -> None:
        for oid, record in objects.items():
            if oid not in self.objects:
                self.objects[oid] = record
                self.size += len(record)
        if self.size >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.objects:
            # named first: the write skips what is stored already, which a gc deciding
            # meanwhile could otherwise drop before the commit reaches it
            self.keep(self.objects)
            self.repo.store.write(self.objects, bulk=True)
            self.objects, self.size = {}, 0


@dataclass
class _Counts:
    files: int = 0
    dirs: int = 0
    bytes: int = 0
    skipped: int = 0
    xattrs_skipped: int = 0
    xattrs_unlisted: int = 0
    ignored: int = 0
    owners_unset: int = 0
    devices_skipped: int = 0
    avoid: frozenset[tuple[int, int]] = frozenset()  # (st_dev, st_ino) of folders to skip
    links: ImportLinks | None = None  # the names of each file inside an imported folder
    exported: ExportLinks = field(default_factory=ExportLinks)


# -- import -----------------------------------------------------------------------------


def import_dir(
    repo: Repository,
    path: Path,
    *,
    message: str | None = None,
    branch: str | None = None,
    meta: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> ImportSummary:
    """Commit the folder `path` as the whole tree of `branch` (default: HEAD's branch).

    Paths absent from the folder are absent from the new commit. An unchanged tree makes
    no commit (`changed=False`, the head is returned).
    """
    root = Path(path)
    if not root.is_dir():
        raise NotFound(f"no such folder to import: {root}")
    name = branch if branch is not None else repo.current_branch()
    repo.branch_head(name)  # an unknown branch fails before any object is written
    avoid = _store_folder(repo)
    if _inside(root, avoid):
        raise InvalidInput(f"{root} is (inside) the store's own folder: not importing it")
    counts = _Counts(avoid=avoid)
    counts.links = ImportLinks(os.fsencode(root), lambda item: _skipped(item, avoid))
    head = repo.commit_info(repo.branch_head(name)).tree
    with _Batch(repo) as batch:
        place = _Place(head, NO_RULES)
        tree = _import_tree(repo, os.fsencode(root), batch, counts, progress or _ignore, place)
        tree = _keep_root(repo, name, tree, batch)
        info = dict(meta or {})
        info.setdefault("imported_from", str(root.resolve()))
        cid, changed = commit_tree(
            repo, name, tree, message or f"import {root.name or root}", info, batch
        )
    return ImportSummary(
        hex_id(cid),
        name,
        counts.files,
        counts.dirs,
        counts.bytes,
        counts.skipped,
        changed,
        counts.xattrs_skipped,
        counts.xattrs_unlisted,
        counts.ignored,
    )


def _keep_root(repo: Repository, branch: str, tree: ObjectId, batch: _Batch) -> ObjectId:
    """The imported listing under the branch root's own mode and owner (ADR 0044): an
    import replaces what the root holds, not who owns it."""
    own = repo.trees.get(repo.commit_info(repo.branch_head(branch)).tree).own
    objects: dict[ObjectId, bytes] = {}
    tree = repo.trees.rooted(tree, own, objects)
    batch.add(objects)
    return tree


@dataclass(frozen=True)
class _Place:
    """Where an imported folder lands: the head's tree there (what is tracked, which
    the ignore rules never leave out) and the rules it inherits (ADR 0061)."""

    tracked: ObjectId | None
    outer: Scope

    def left_out(self, repo: Repository, scope: Scope, name: bytes, is_dir: bool) -> bool:
        if not scope.ignored(name, is_dir):
            return False
        head = repo.trees.get(self.tracked) if self.tracked is not None else None
        return (subtree(head, name) is None) if is_dir else not holds_file(head, name)

    def below(self, repo: Repository, scope: Scope, name: bytes) -> _Place:
        head = repo.trees.get(self.tracked) if self.tracked is not None else None
        return _Place(subtree(head, name), scope.below(name))


def _ignore(_: int) -> None:
    return None


def _skipped(item: os.DirEntry[bytes], avoid: frozenset[tuple[int, int]]) -> bool:
    """A folder an import leaves out: another VCS's, ours, the store's own."""
    if item.name in SKIPPED_DIRS:
        return True
    st = item.stat(follow_symlinks=False)
    return (st.st_dev, st.st_ino) in avoid


def _dev_ino(folder: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _inside(folder: Path, avoid: frozenset[tuple[int, int]]) -> bool:
    return any(_dev_ino(f) in avoid for f in (folder, *folder.resolve().parents))


def _store_folder(repo: Repository) -> frozenset[tuple[int, int]]:
    """The store's own folder, never imported into itself (its files change as we write)."""
    try:
        st = os.stat(repo.path) if repo.path is not None else None
    except OSError:
        return frozenset()
    return frozenset({(st.st_dev, st.st_ino)}) if st is not None else frozenset()


def _import_tree(
    repo: Repository,
    folder: bytes,
    batch: _Batch,
    counts: _Counts,
    progress: Progress,
    place: _Place,
) -> ObjectId:
    entries: list[TreeEntry] = []
    with os.scandir(folder) as listing:
        items = sorted(listing, key=lambda e: e.name)
    repo_rules = repo_on_disk(folder, place.outer, repo.trees.rule_files)
    scope = place.outer.with_rules(rules_on_disk(folder), repo_rules)
    for item in items:
        if place.left_out(repo, scope, item.name, item.is_dir(follow_symlinks=False)):
            counts.ignored += 1
            continue
        entry = _import_entry(repo, item, batch, counts, progress, place, scope)
        if entry is not None:
            entries.append(entry)
    objects: dict[ObjectId, bytes] = {}
    oid = repo.trees.build(entries, objects)
    batch.add(objects)
    return oid


def _import_entry(
    repo: Repository,
    item: os.DirEntry[bytes],
    batch: _Batch,
    counts: _Counts,
    progress: Progress,
    place: _Place,
    scope: Scope,
) -> TreeEntry | None:
    st = item.stat(follow_symlinks=False)
    name = item.name
    _check_mtime(item.path, st.st_mtime_ns)
    if stat.S_ISDIR(st.st_mode):
        if _skipped(item, counts.avoid):
            counts.skipped += 1
            return None
        counts.dirs += 1
        inner = place.below(repo, scope, name)
        sub = _import_tree(repo, item.path, batch, counts, progress, inner)
        xattrs = attrs.with_keys(_xattrs(item.path, counts), _posix_attrs(st))
        made = TreeEntry(name, st.st_mode, sub, 0, st.st_mtime_ns, xattrs)
        return folder_entry(made, sub, repo.trees.listed(sub, batch.objects))
    if stat.S_ISLNK(st.st_mode):
        stored = pack_bytes(os.readlink(item.path))
    elif stat.S_ISREG(st.st_mode):
        known = counts.links.stored(st) if counts.links is not None else None
        if known is not None:
            stored = known  # another name of a file read already
        else:
            with open(item.path, "rb") as source:
                stored = store_stream(source, lambda objs: batch.add(dict(objs)))
    elif stat.S_IFMT(st.st_mode) in EMPTY_KINDS:
        stored = EMPTY
    else:
        counts.skipped += 1
        return None
    batch.add(stored.objects)
    counts.files += 1
    counts.bytes += stored.size if stat.S_ISREG(st.st_mode) else 0
    progress(1)
    xattrs = () if stat.S_ISLNK(st.st_mode) else _xattrs(item.path, counts)
    xattrs = attrs.with_keys(xattrs, _posix_attrs(st))
    if counts.links is not None:
        xattrs = counts.links.xattrs(item.path, st, stored, xattrs)
    return TreeEntry(name, st.st_mode, stored.oid, stored.size, st.st_mtime_ns, xattrs)


def _posix_attrs(st: os.stat_result) -> dict[bytes, bytes | None]:
    """An imported entry's owner (none when it is the importing user's: the default a
    mount shows) and a device's number (ADR 0042)."""
    device = stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
    return {
        attrs.OWNER: attrs.pack_owner((st.st_uid, st.st_gid), (os.getuid(), os.getgid())),
        attrs.RDEV: attrs.pack_rdev(st.st_rdev) if device else None,
    }


MTIME_RANGE = range(-(2**63), 2**63)
"""What a tree entry's mtime can hold (signed 64-bit ns: years 1677 to 2262)."""


def _check_mtime(path: bytes, mtime_ns: int) -> None:
    """Linux allows later dates (ext4: 2446), which made the tree encoder fail."""
    if mtime_ns not in MTIME_RANGE:
        raise InvalidInput(
            f"{show_path(path)}: its mtime is outside 1677..2262, which HelixFS cannot "
            "store (touch it, then import again)"
        )


def _xattrs(path: bytes, counts: _Counts) -> tuple[tuple[bytes, bytes], ...]:
    """The `user.*` xattrs, in name order, as many as fit the bound the mount keeps
    (tmpfs or XFS hold more): the rest are left out and counted."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as err:
        if err.errno == errno.E2BIG:  # the names are past what one list can hold
            counts.xattrs_unlisted += 1
        return ()  # otherwise a filesystem without xattrs: nothing to keep
    found = []
    total = 0
    for key in sorted(names):
        raw = key.encode("utf-8", "surrogateescape")
        if raw.startswith(XATTR_NAMESPACE):
            try:
                value = os.getxattr(path, key, follow_symlinks=False)
            except OSError:
                continue
            if total + len(raw) + len(value) > XATTR_TOTAL_MAX:
                counts.xattrs_skipped += 1
                continue
            total += len(raw) + len(value)
            found.append((raw, value))
    return tuple(found)


def commit_tree(
    repo: Repository,
    branch: str,
    tree: ObjectId,
    message: str,
    meta: dict[str, Any],
    batch: _Batch,
) -> tuple[CommitId, bool]:
    """Make `tree` the next commit of `branch` (objects of `batch` land with it).

    Goes through the repository's own commit path (lock, settle a live worktree first,
    compare-and-swap, notify the mount) so an import behaves like any other commit.
    """
    with repo.lock:
        cid = repo.commit_tree(tree, message, meta, branch, objects=batch.objects)
        if cid is None:
            batch.flush()
            return repo.resolve(branch_ref(branch)), False
        batch.objects, batch.size = {}, 0
        return cid, True


# -- export -----------------------------------------------------------------------------


def export(
    repo: Repository, rev: str, path: Path, *, progress: Progress | None = None
) -> ExportSummary:
    """Write the tree of `rev` as a new folder `path` (absent, or an empty folder)."""
    # a link to an empty folder means that folder: renaming over the link would fail
    target = _link_target(Path(path)) if Path(path).is_symlink() else Path(path)
    commit = repo.commit_info(rev)  # unknown rev: NotFound before anything is created
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInput(f"{path} exists and is not an empty folder: not exporting there")
    parent = target.absolute().parent
    if not parent.is_dir():
        raise NotFound(f"no such folder: {parent}")
    if _inside(parent, _store_folder(repo)):  # RocksDB's own folder, the memory database
        raise InvalidInput(f"{path} is inside the store's own folder: not exporting there")
    # an existing empty folder keeps its mode; mkdtemp's is private, a new one is 755
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o755
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.helix-export-", dir=parent))
    except OSError as err:  # its message would name the staging folder, not the user's
        raise InvalidInput(f"cannot create {path} in {parent}: {err.strerror}") from None
    counts = _Counts()
    try:
        _export_tree(repo, commit.tree, os.fsencode(staging), counts, progress or _ignore)
        own = repo.trees.get(commit.tree).own  # the root's stored mode, owner, xattrs
        if own is not None:
            mode = stat.S_IMODE(own.mode)
            _set_user_xattrs(os.fsencode(staging), own)
            _set_owner(os.fsencode(staging), own, counts)
        staging.chmod(mode)
        if target.exists():
            target.rmdir()
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportSummary(
        hex_id(commit.id),
        str(target),
        counts.files,
        counts.dirs,
        counts.bytes,
        counts.owners_unset,
        counts.devices_skipped,
    )


def _link_target(link: Path) -> Path:
    """Where the symlink `link` leads (perhaps a folder not made yet); a loop is refused."""
    try:
        return link.resolve()
    except (RuntimeError, OSError) as err:  # RuntimeError on Python 3.11 and 3.12
        raise InvalidInput(f"{link} is a symbolic link loop: not exporting there") from err


def _safe_name(name: bytes) -> bytes:
    """A tree entry name that stays inside its folder (a forged tree could say `..`)."""
    if not valid_name(name):
        raise CorruptObject(f"tree entry with an unsafe name {name!r:.80}: refusing to export")
    return name


def _export_tree(
    repo: Repository, tree: ObjectId, folder: bytes, counts: _Counts, progress: Progress
) -> None:
    for entry in repo.trees.get(tree).entries:
        target = os.path.join(folder, _safe_name(entry.name))
        if not entry.is_dir() and counts.exported.linked(entry, target):
            counts.files += 1  # another name of a file written already: a hard link
            progress(1)
        elif entry.is_dir():
            counts.dirs += 1
            os.mkdir(target, 0o700)
            _export_tree(repo, entry.oid, target, counts, progress)
            _finish(target, entry, counts)
        elif entry.is_symlink():
            os.symlink(repo.contents.read(entry.oid), target)
            _set_owner(target, entry, counts)
            os.utime(target, ns=(entry.mtime_ns, entry.mtime_ns), follow_symlinks=False)
            counts.files += 1
            progress(1)  # counted as a file, as import counts it
        elif stat.S_IFMT(entry.mode) in EMPTY_KINDS:
            rdev = attrs.rdev_of(attrs.lookup(entry.xattrs, attrs.RDEV))
            try:
                os.mknod(target, entry.mode, rdev)
            except PermissionError:  # a device, made by a user who may not
                counts.devices_skipped += 1
                continue
            _finish(target, entry, counts)
            counts.files += 1
            progress(1)
        else:
            counts.bytes += _write_file(repo, entry.oid, target)
            _finish(target, entry, counts)
            counts.files += 1
            progress(1)
        counts.exported.written(entry, target)


def _write_file(repo: Repository, oid: ObjectId, target: bytes) -> int:
    """The content written chunk by chunk; a hole's zero chunks are skipped, not written,
    so a sparse file stays sparse (a 64 GiB one would fill the disk with zeros)."""
    size = 0
    with open(target, "wb") as sink:
        for piece in _pieces(repo, oid):
            if piece is None:
                sink.seek(ZERO_CHUNK[1], os.SEEK_CUR)
                size += ZERO_CHUNK[1]
            else:
                sink.write(piece)
                size += len(piece)
        sink.truncate(size)  # a trailing hole
    return size


def _pieces(repo: Repository, oid: ObjectId) -> Iterator[bytes | None]:
    """A content chunk by chunk, so a large file never sits in memory whole; None for
    ZERO_CHUNK (a piece of a hole)."""
    index = repo.contents.chunks(oid)
    if index is None:
        yield repo.contents.read(oid)
        return
    starts, ids = index
    for i, chunk_id in enumerate(ids):
        if chunk_id == ZERO_CHUNK[0]:
            yield None
        else:
            yield repo.contents.read(oid, starts[i], starts[i + 1] - starts[i])


def _finish(target: bytes, entry: TreeEntry, counts: _Counts) -> None:
    _set_user_xattrs(target, entry)
    _set_owner(target, entry, counts)  # before the mode: a chown clears setuid
    os.chmod(target, stat.S_IMODE(entry.mode))  # 000 is a mode too, not "none recorded"
    atime = attrs.time_of(attrs.lookup(entry.xattrs, attrs.ATIME), entry.mtime_ns)
    os.utime(target, ns=(atime, entry.mtime_ns))


def _set_user_xattrs(target: bytes, entry: TreeEntry) -> None:
    for key, value in attrs.user_xattrs(entry.xattrs):
        try:
            os.setxattr(target, key, value)
        except OSError:  # the destination filesystem may refuse user xattrs
            continue


def _set_owner(target: bytes, entry: TreeEntry, counts: _Counts) -> None:
    """The stored owner, if any (none: the exporting user's, as a mount shows it). A
    user who may not give files away gets the count of those it could not set."""
    stored = attrs.lookup(entry.xattrs, attrs.OWNER)
    if stored is None:
        return
    uid, gid = attrs.owner_of(stored, (-1, -1))
    try:
        os.lchown(target, uid, gid)
    except PermissionError:
        counts.owners_unset += 1
