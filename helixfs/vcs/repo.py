"""`Repository`: the one core API every surface (CLI, FUSE, `.helix/`) calls.

Refs (see docs/architecture.md): `HEAD` holds a branch name, `branches/NAME` and
`snapshots/NAME` hold commit ids, `work/NAME` holds the tree id of a branch's saved but
uncommitted state. Every ref move is a compare-and-swap in the same atomic write as the
objects it needs, so a racing writer gets RefConflict, never a lost commit.

Before a ref is moved behind a live Worktree's back (reset, merge, commit through this
API, branch delete/rename), that worktree's pending changes are committed first, then it
reloads, then subscribers hear the branch name: nothing a user saved is ever dropped.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from helixfs import config
from helixfs.errors import (
    AlreadyExists,
    CorruptObject,
    HelixError,
    InvalidInput,
    NotFound,
    ReadOnly,
    StoreLocked,
)
from helixfs.ids import CommitId, ObjectId, hex_id, object_id
from helixfs.lazy import lazy_module
from helixfs.store import ANY, ObjectStore, RefUpdate
from helixfs.store.validate import BYTES_LIKE
from helixfs.vcs import history, journal, ondemand, retention, revisions
from helixfs.vcs.ancestry import GENERATION, next_generation, remember_generation
from helixfs.vcs.content import ContentReader, RecordSource, Stored, pack_bytes, store_stream
from helixfs.vcs.experiments import Experiments, refuse_if_running, tag_experiment
from helixfs.vcs.ignore import NO_RULES, RuleFiles
from helixfs.vcs.objects import (
    Commit,
    TreeEntry,
    commit_record,
    decode_commit,
    encode_commit,
    uncompressed,
)
from helixfs.vcs.refs import (
    BRANCHES,
    DEFAULT_BRANCH,
    HEAD,
    SNAPSHOTS,
    WORK,
    FolderHead,
    RefInfo,
    branch_ref,
    check_name,
    shown_name,
    snapshot_ref,
    storable,
    work_ref,
)
from helixfs.vcs.treeops import (
    CONTROL_DIR,
    EMPTY_TREE_ID,
    EMPTY_TREE_RECORD,
    Change,
    Patches,
    Trees,
    show_path,
    split_path,
)

log = logging.getLogger(__name__)
# Decoded commits cached, counted by the length of their records: a commit carries up
# to 1,000 changed paths (~50 KB), so a count of commits (16,384 once) did not bound
# the memory (~1 GB of a bulk import's commits). Typical commits are ~400 bytes.
COMMIT_CACHE_BYTES = 16 << 20
# What a commit's changes may be: a dict is matched first, without the ABC's check
_MAPPINGS = (dict, Mapping)

if TYPE_CHECKING:
    from helixfs.vcs import blame, linkmerge, maint, merge, pick
    from helixfs.vcs.blame import BlameLine
    from helixfs.vcs.merge import MergeResult
    from helixfs.vcs.pick import PickResult
    from helixfs.vcs.worktree import Worktree
else:  # what a command may never reach is loaded when it does (helixfs/lazy.py)
    blame, linkmerge, maint, merge, pick = (
        lazy_module(f"helixfs.vcs.{part}")
        for part in ("blame", "linkmerge", "maint", "merge", "pick")
    )

# The folder of a mount a command runs in (`Repository.heading`). Per context: the
# daemon serves its mount's requests beside a forwarded command, and they keep the
# store's HEAD.
_FOLDER_HEAD: ContextVar[tuple[Repository, FolderHead] | None] = ContextVar(
    "folder_head", default=None
)

Listener = Callable[[str], None]
# (name, renamed_to): snapshot `name` was made, deleted or moved (None), or renamed
SnapshotListener = Callable[[str, str | None], None]
Content = bytes | bytearray | memoryview | BinaryIO | None


def default_author(settings: config.Settings | None = None) -> str:
    """`commit.author` ($HELIX_AUTHOR, the config files), else $USER."""
    chosen = (settings or config.load(None))["commit.author"]
    return str(chosen) or os.environ.get("USER") or "helix"


SettingsListener = Callable[[config.Settings], None]


def path_text(path: bytes) -> str:
    """A path as JSON-safe text that round-trips any bytes (surrogateescape)."""
    return path.decode("utf-8", "surrogateescape")


class Repository:
    """A store seen as a version-controlled tree. Thread-safe: one lock for all writes."""

    def __init__(
        self, store: ObjectStore, path: Path | None = None, settings: config.Settings | None = None
    ) -> None:
        self.store = store
        self.path = path
        self.settings = settings or config.load(path)
        self.trees = Trees(store)
        # a lazy clone reads the file contents it lacks from its remote (ADR 0064)
        self._on_demand = ondemand.read_through(store, path) if path is not None else None
        self.content_source: RecordSource = self._on_demand or store
        self.contents = ContentReader(self.content_source)
        self.trees.rule_files = RuleFiles(self.contents.read)
        self.lock = threading.RLock()
        self.author = default_author(self.settings)
        self._settings_listeners: list[SettingsListener] = []
        self._commits: dict[CommitId, Commit] = {}
        self._commit_bytes = 0  # record bytes of the cached commits
        self._worktrees: dict[str, Worktree] = {}
        self._listeners: list[Listener] = []
        self._snapshot_listeners: list[SnapshotListener] = []
        self._branch_ref_listeners: list[SnapshotListener] = []
        self._in_use: list[Callable[[], Iterable[ObjectId]]] = []
        self._chunks_in_use: list[Callable[[], Iterable[ObjectId]]] = []
        self._gc_lock = threading.Lock()
        self.generations: dict[CommitId, int] = {}  # of old commits (vcs/ancestry.py)

    # -- lifecycle ----------------------------------------------------------------------

    @classmethod
    def create(cls, store: ObjectStore, branch: str = DEFAULT_BRANCH) -> Repository:
        """Initialise an empty store: an empty root commit on `branch`, HEAD on it."""
        check_name(branch)
        if store.ref(HEAD) is not None:
            raise AlreadyExists("this store is already initialised")
        repo = cls(store)
        root = Commit(EMPTY_TREE_ID, (), time.time_ns(), repo.author, "init", {})
        record = encode_commit(root)
        cid = object_id(record)
        store.write(
            {EMPTY_TREE_ID: EMPTY_TREE_RECORD, cid: record},
            [
                RefUpdate(HEAD, branch.encode(), expected=None),
                RefUpdate(branch_ref(branch), cid, expected=None),
            ],
            sync=True,
        )
        return repo

    @classmethod
    def init(cls, path: str | os.PathLike[str]) -> Repository:
        """Create a store folder (RocksDB inside) and initialise it."""
        folder = Path(path)
        objects = folder / OBJECTS_DIR
        if (objects / "CURRENT").is_file():  # RocksDB's: a store, or half of one
            return cls._finish_init(folder)
        if objects.is_dir() and any(objects.iterdir()):  # (empty: init stopped before RocksDB)
            raise InvalidInput(_no_database(folder))
        if objects.exists() and not objects.is_dir():  # open calls this no store either
            raise InvalidInput(f"{objects} is not a folder: not a HelixFS store")
        if folder.exists() and not folder.is_dir():
            raise InvalidInput(f"{folder} is not a directory")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InvalidInput(f"cannot create store folder {folder}: {err.strerror}") from err
        return cls._initialised(_open_rocks(folder), folder)

    @classmethod
    def _initialised(cls, store: ObjectStore, folder: Path) -> Repository:
        """A Repository over a store with no ref yet, given its HEAD and first commit."""
        try:
            repo = cls.create(store)
        except BaseException:
            store.close()
            raise
        repo.path = folder
        return repo

    @classmethod
    def _finish_init(cls, folder: Path) -> Repository:
        """An init that stopped after RocksDB made its files (a full disk, ^C) left a
        store without a single ref, which open refused and init called existing: such a
        store is initialised now. Any ref at all means a real store: AlreadyExists."""
        try:
            store = _open_rocks(folder)
        except StoreLocked:  # a daemon serves it: a store indeed
            raise AlreadyExists(f"a HelixFS store already exists at {folder}") from None
        if any(True for _ in store.refs("")):
            store.close()
            raise AlreadyExists(f"a HelixFS store already exists at {folder}")
        return cls._initialised(store, folder)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Repository:
        """Open a store folder (takes its single-writer lock) and recover pending state."""
        folder = Path(path)
        if not (folder / OBJECTS_DIR).is_dir():
            raise NotFound(f"no HelixFS store at {folder} (create one with `helix init`)")
        if not (folder / OBJECTS_DIR / "CURRENT").is_file():  # opening would make a database
            raise NotFound(_no_database(folder))
        settings = config.load(folder)  # a bad config file fails here, before RocksDB opens
        store = _open_rocks(folder, settings)
        try:
            if store.ref(HEAD) is None:
                raise NotFound(
                    f"{folder} is not an initialised HelixFS store"
                    f" (an interrupted init? run it again: helix init {folder})"
                )
            repo = cls(store, folder, settings)
            repo.recover()
        except BaseException:
            store.close()
            raise
        return repo

    @classmethod
    def wrap(cls, store: ObjectStore) -> Repository:
        """An already-initialised store (e.g. MemoryStore in tests), with recovery."""
        repo = cls(store)
        repo.recover()
        return repo

    def close(self) -> None:
        with self.lock:
            for tree in list(self._worktrees.values()):
                if not tree.readonly:  # a commit may leave an overlay or a journal
                    tree.fold()  # (ADR 0086): a store at rest holds plain trees
            self._worktrees.clear()
            if self._on_demand is not None:
                self._on_demand.close()
            self.store.close()

    @property
    def lazy(self) -> bool:
        """A lazy clone: file contents may be missing here, read from its remote."""
        return self._on_demand is not None

    def open_remote(self) -> None:
        """A lazy clone: open the remote its contents come from now, off any read (a
        mount does, in the background: the S3 client takes ~170 ms to set up, which the
        first read waited for). Unreachable: the first read tries again."""
        if self._on_demand is not None:
            self._on_demand.open_remote()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def recover(self) -> list[CommitId]:
        """Commit every branch whose saved work tree differs from its head ("kill -9")."""
        made = []
        with self.lock:
            for name, value in list(self.store.refs(WORK)):
                branch = name[len(WORK) :]
                head = self.store.ref(branch_ref(branch))
                if head is None:
                    continue
                try:
                    cid = self._commit_work(branch, self._folded(branch, value), CommitId(head))
                except (CorruptObject, NotFound) as exc:  # a damaged head: kept, not lost
                    log.error("branch %s: its saved changes stay uncommitted: %s", branch, exc)
                    continue
                if cid is not None:
                    made.append(cid)
        return made

    def _folded(self, branch: str, value: bytes) -> ObjectId:
        """The tree of a saved work state: a journal left by a crash is replayed and
        written as trees first (vcs/journal.py)."""
        if not journal.has_journal(value):
            return ObjectId(value)
        from helixfs.vcs.worktree import Worktree

        state = Worktree(self, branch)
        state.fold()
        return journal.tree_of(self.store.ref(work_ref(branch)) or b"")

    def _commit_work(self, branch: str, work: ObjectId, head: CommitId) -> CommitId | None:
        objects: dict[ObjectId, bytes] = {}
        head_tree = self.commit_info(head).tree
        tree = self.trees.without_ephemeral(work, objects, head_tree)
        if tree == head_tree:
            return None
        paths = self.trees.changed_paths(head_tree, tree)
        changes = [path_text(p) for p in itertools.islice(paths, 1000)]
        meta = {"recovered": True, "changed": changes}
        return self.write_commit(branch, tree, [head], "recovered pending changes", meta, objects)

    # -- subscribers and worktrees --------------------------------------------------------

    def subscribe(self, callback: Listener) -> Callable[[], None]:
        """Call `callback(branch)` after a ref moves outside that branch's own worktree."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback)

    def subscribe_settings(self, callback: SettingsListener) -> Callable[[], None]:
        """Call `callback(settings)` after `reconfigure`: the mount's saver and collector."""
        self._settings_listeners.append(callback)
        return lambda: self._settings_listeners.remove(callback)

    def reconfigure(self, settings: config.Settings) -> None:
        """Take new settings live (`helix config set` on a mount): the store's caches and
        codec, the author, and whatever the subscribers apply."""
        from helixfs.store.frame import Compression

        configure = getattr(self.store, "configure", None)  # RocksStore's; others: none
        if configure is not None:
            configure(
                cache_bytes=settings.frame_cache_bytes,
                record_cache_bytes=settings.record_cache_bytes,
                compression=Compression.named(*settings.compression),
            )
        self.settings = settings
        self.author = default_author(settings)
        for listener in list(self._settings_listeners):
            listener(settings)

    def subscribe_snapshots(self, callback: SnapshotListener) -> Callable[[], None]:
        """Call `callback(name, None)` after snapshot `name` is made, deleted or moved, and
        `callback(old, new)` after a rename: a mount's view of a snapshot must follow its
        ref, whoever moved it (`helix snapshot` through the daemon, `.helix/snapshots/`)."""
        self._snapshot_listeners.append(callback)
        return lambda: self._snapshot_listeners.remove(callback)

    def subscribe_branch_ends(self, callback: SnapshotListener) -> Callable[[], None]:
        """Call `callback(name, None)` after branch `name` is deleted and `callback(old,
        new)` after a rename, however it was done (`helix branch`, `.helix/branches/`):
        the memory of a branch follows it (ADR 0063). Called under the lock."""
        self._branch_ref_listeners.append(callback)
        return lambda: self._branch_ref_listeners.remove(callback)

    def _notify_branch_end(self, name: str, renamed_to: str | None = None) -> None:
        for listener in list(self._branch_ref_listeners):
            listener(name, renamed_to)

    def _notify_snapshot(self, name: str, renamed_to: str | None = None) -> None:
        for listener in list(self._snapshot_listeners):
            listener(name, renamed_to)

    def keep_in_use(self, source: Callable[[], Iterable[ObjectId]]) -> Callable[[], None]:
        """Have gc keep the objects `source()` names, with all they reference: content a
        mount still serves (a file open in a deleted branch, in the view of a commit a
        reset left behind) that no ref reaches any more. Returns the undo."""
        self._in_use.append(source)
        return lambda: self._in_use.remove(source)

    def keep_chunks_in_use(self, source: Callable[[], Iterable[ObjectId]]) -> Callable[[], None]:
        """As keep_in_use, for chunks only (blobs, which reference nothing): gc counts
        them reachable without reading them. A file stored ahead of its close (ADR 0048)
        has thousands, and gc read back and hashed each one, during a 1 GiB write on the
        CPU that write needed (ADR 0071). Returns the undo."""
        self._chunks_in_use.append(source)
        return lambda: self._chunks_in_use.remove(source)

    def _notify(self, branch: str) -> None:
        for listener in list(self._listeners):
            listener(branch)

    def worktree(self, branch: str | None = None) -> Worktree:
        from helixfs.vcs.worktree import Worktree

        with self.lock:
            name = branch if branch is not None else self.current_branch()
            tree = self._worktrees.get(name)
            if tree is None:
                self.branch_head(name)
                tree = Worktree(self, name)
                self._worktrees[name] = tree
            return tree

    def snapshot_view(self, name: str) -> Worktree:
        from helixfs.vcs.worktree import Worktree

        cid = self.store.ref(snapshot_ref(check_name(name, "snapshot")))
        if cid is None:
            raise NotFound(f"no snapshot named {name!r}")
        return Worktree(self, name, commit=CommitId(cid))

    def commit_view(self, rev: str) -> Worktree:
        from helixfs.vcs.worktree import Worktree

        cid = self.resolve(rev)
        return Worktree(self, hex_id(cid), commit=cid)

    def settle(self, branch: str) -> None:
        """Commit `branch`'s live worktree's pending changes now (what any out-of-band
        move does first): a caller holding `lock` then sees the head its move builds on."""
        with self.lock:
            self._settle(branch)

    def _settle(self, branch: str) -> None:
        """Commit a live worktree's pending changes before its ref moves out of band."""
        tree = self._worktrees.get(branch)
        if tree is not None and tree.dirty:
            # the message set for this work (user.helix.message) names it best
            tree.commit(tree.next_message or "pending changes before an out-of-band update")
        if tree is not None and not tree.readonly:
            tree.fold()  # a commit may leave its work trees journaled (ADR 0061)

    def _settle_source(self, rev: str) -> None:
        """A branch or snapshot made from a live branch includes its latest saves (unlike
        `settle_rev`, under the out-of-band message of `_settle`)."""
        base = self._live_branch(rev)
        if base is not None:
            self._settle(base)

    def pending_saves(self, branch: str) -> list[bytes] | None:
        """What a live worktree of `branch` (a mount's, in its daemon) saved and has not
        committed yet (Worktree.pending_paths); [] without one."""
        tree = self._worktrees.get(branch)
        return tree.pending_paths() if tree is not None else []

    def commit_pending(
        self, message: str, meta: Mapping[str, Any] | None = None, branch: str | None = None
    ) -> CommitId | None:
        """Commit a live worktree's pending saves now, with this message and meta (`helix
        commit -m` in a mount); None when none are pending (or they change nothing)."""
        with self.lock:
            tree = self._worktrees.get(branch if branch is not None else self.current_branch())
            return tree.commit(message, meta) if tree is not None and tree.dirty else None

    @property
    def experiments(self) -> Experiments:
        """Named experiments on branches (vcs/experiments.py)."""
        return Experiments(self)

    def ignored_paths(self, branch: str) -> list[bytes]:
        """The topmost paths of `branch`'s work tree that its commits leave out (ignore
        rules, editor temp names; a folder as `name/`): a live worktree's, else the
        saved `work/BRANCH` (ADR 0061)."""
        from helixfs.vcs.keptout import LISTED_MAX, stored_ignored

        with self.lock:
            tree = self._worktrees.get(branch)
            if tree is not None:
                return tree.ignored_paths()
            work = self.store.ref(work_ref(branch))
            if work is None:
                return []
            if journal.parse(work).overlay is not None:  # what its commit tree lacks
                from helixfs.vcs.worktree import Worktree

                return Worktree(self, branch).ignored_paths()
            head = self.commit_info(self.branch_head(branch)).tree
            walk = stored_ignored(self.trees, journal.tree_of(work), head, NO_RULES)
            return list(itertools.islice(walk, LISTED_MAX))

    def settle_rev(self, rev: str) -> None:
        """Before a read of `rev` (a log, cat, ls): commit the pending saves of the live
        branch it names, as the quiet window would a moment later (the same commit,
        message and all), so a file just saved is in the history the reader asks for."""
        with self.lock:
            base = self._live_branch(rev)
            tree = self._worktrees.get(base) if base is not None else None
            if tree is not None and tree.dirty:
                tree.commit()

    def _live_branch(self, rev: str) -> str | None:
        """The branch with a live worktree that `rev` (HEAD, @, NAME, branches/NAME, each
        maybe with ~N / ^N) is read from, if any."""
        base = rev.split("~", 1)[0].split("^", 1)[0]
        if base in ("HEAD", "@"):
            head = self.folder_head()
            if head is not None and head.kind != "branch":
                return None  # a snapshot's or a commit's folder: no live branch
            base = self.current_branch()
        if base.startswith(BRANCHES):
            base = base[len(BRANCHES) :]
        return base if base in self._worktrees else None

    def _moved(self, branch: str) -> None:
        tree = self._worktrees.get(branch)
        if tree is not None:
            tree.reload()
        self._notify(branch)

    # -- refs and revisions -------------------------------------------------------------

    def head_branch(self) -> str:
        value = self.store.ref(HEAD)
        if value is None:
            raise NotFound("this store has no HEAD: is it initialised?")
        return value.decode()

    @contextmanager
    def heading(self, head: FolderHead | None) -> Iterator[None]:
        """Within, HEAD means `head` (if any) to this context's calls: a command run in
        a branch's folder of a mount logs, resets, merges into and commits on that branch."""
        token = _FOLDER_HEAD.set((self, head) if head is not None else None)
        try:
            yield
        finally:
            _FOLDER_HEAD.reset(token)

    def folder_head(self) -> FolderHead | None:
        """What `heading` set for this context's calls, if anything."""
        found = _FOLDER_HEAD.get()
        return found[1] if found is not None and found[0] is self else None

    def current_branch(self) -> str:
        """The branch a command moves unless told another: its folder's, else HEAD's."""
        head = self.folder_head()
        if head is None:
            return self.head_branch()
        if head.kind != "branch":
            raise ReadOnly(
                f"this folder shows {head}, which never moves: "
                "run the command at the mount's root or in a branch's folder"
            )
        return head.name

    def has_branch(self, branch: str) -> bool:
        """One ref read (cached), where `branches()` lists them all: a lookup in
        .helix/branches/ must not cost the number of branches."""
        return storable(branch) and self.store.ref(branch_ref(branch)) is not None

    def branch_head(self, branch: str) -> CommitId:
        """The commit a branch points at; NotFound "no branch named ..." otherwise."""
        value = self.store.ref(branch_ref(branch)) if storable(branch) else None
        if value is None:
            raise NotFound(f"no branch named {shown_name(branch)}")
        return CommitId(value)

    def resolve(self, rev: str = "HEAD") -> CommitId:
        """A commit id from HEAD, NAME (branch, then snapshot), an id prefix, plus ~N / ^N."""
        return revisions.resolve(self, rev)

    def resolve_id(self, prefix: str) -> CommitId:
        """A commit by id or unique id prefix only, never by a branch or snapshot name."""
        return revisions.resolve_id(self, prefix)

    def commit_info(self, rev: str | CommitId) -> Commit:
        cid = self.resolve(rev) if isinstance(rev, str) else rev
        commit = self._commits.get(cid)
        if commit is None:
            record = self.store.get(ObjectId(cid))
            commit = decode_commit(record, cid)
            self._remember(commit, len(record))
        return commit

    def _remember(self, commit: Commit, size: int) -> None:
        if self._commit_bytes + size > COMMIT_CACHE_BYTES:
            self._commits.clear()
            self._commit_bytes = 0
        self._commits[commit.id] = commit
        self._commit_bytes += size

    def branches(self) -> list[RefInfo]:
        return [RefInfo(n[len(BRANCHES) :], CommitId(v)) for n, v in self.store.refs(BRANCHES)]

    def snapshots(self) -> list[RefInfo]:
        return [RefInfo(n[len(SNAPSHOTS) :], CommitId(v)) for n, v in self.store.refs(SNAPSHOTS)]

    # -- reading ------------------------------------------------------------------------

    def log(
        self,
        rev: str = "HEAD",
        limit: int | None = None,
        *,
        first_parent: bool = True,
        path: bytes | str = b"",
    ) -> Iterator[Commit]:
        """Commits from `rev` back: first parents only, or every ancestor newest first.
        With a `path`: the first-parent commits that changed it."""
        _check_count(limit, "limit", none_ok=True)
        start = self.resolve(rev)
        path = b"/".join(split_path(path))  # "/" is the root, "d/" the folder d
        if path and not first_parent:
            raise InvalidInput("a log of one path follows first parents only")
        if path:
            walk = history.touching(self, start, path)
        elif first_parent:
            walk = history.first_parent(self, start)
        else:
            walk = history.ancestors(self, start)
        return itertools.islice(walk, limit)

    def ls(self, rev: str = "HEAD", path: bytes | str = b"") -> list[TreeEntry]:
        """A folder's entries; a file's own entry, as `ls FILE` and `git ls-tree` show it."""
        tree = self.commit_info(rev).tree
        entry = self.trees.entry(tree, path)
        if entry is not None and not entry.is_dir():
            return [entry]
        return list(self.trees.listing(tree, path).entries)

    def entry(self, rev: str, path: bytes | str) -> TreeEntry | None:
        return self.trees.entry(self.commit_info(rev).tree, path)

    def read(self, rev: str, path: bytes | str) -> bytes:
        entry = self.trees.file_entry(self.commit_info(rev).tree, path)
        return self.contents.read(entry.oid)

    def diff(self, a: str, b: str) -> list[Change]:
        return list(self.trees.diff(self.commit_info(a).tree, self.commit_info(b).tree))

    def changes_of(self, rev: str) -> list[Change]:
        """What commit `rev` changed: against its first parent (a root: the empty tree)."""
        commit = self.commit_info(rev)
        parent = self.commit_info(commit.parents[0]).tree if commit.parents else EMPTY_TREE_ID
        return list(self.trees.diff(parent, commit.tree))

    def patch_of(self, rev: str, context: int = 3) -> str:
        """`changes_of` as a unified diff (what `helix show` prints)."""
        _check_count(context, "context")
        return history.unified_diff(self, self.changes_of(rev), context)

    def blame(self, path: bytes | str, rev: str = "HEAD") -> list[BlameLine]:
        """For each line of file `path` at `rev`, the first-parent commit that last
        changed it (blame.py)."""
        return blame.blame(self, self.resolve(rev), b"/".join(split_path(path)))

    def diff_text(self, a: str, b: str, context: int = 3) -> str:
        """A unified diff; files that are not UTF-8 text show as `Binary files ... differ`."""
        _check_count(context, "context")
        return history.unified_diff(self, self.diff(a, b), context)

    # -- writing ------------------------------------------------------------------------

    def commit(
        self,
        changes: Mapping[bytes | str, Content],
        message: str,
        meta: Mapping[str, Any] | None = None,
        branch: str | None = None,
        *,
        author: str | None = None,
    ) -> CommitId:
        """Commit path changes (bytes or a file object = write, None = delete) on `branch`.

        Returns the new commit, or the unchanged head if the tree did not change.
        """
        started = time.perf_counter_ns()
        with self.lock:
            name = branch if branch is not None else self.current_branch()
            self._settle(name)
            head = self.branch_head(name)
            objects: dict[ObjectId, bytes] = {}
            stored = self._store_changes(changes)
            bases: dict[ObjectId, ObjectId] = {}
            head_tree = self.commit_info(head).tree
            replaced: list[TreeEntry] = []
            patches: Patches = {}
            tree = self.trees.apply(
                head_tree, stored, objects, bases=bases, replaced=replaced, patches=patches
            )
            linked = linkmerge.groups_of(replaced)  # the head's entries at the changed paths
            tree = linkmerge.settle_groups(self.trees, tree, linked, objects)
            if tree == head_tree:
                return head
            info = dict(meta or {})
            # vcs owns this key (last_commit trusts it): a caller's value is replaced
            info["changed"] = sorted(map(path_text, stored))[:1000]
            cid = self.write_commit(
                name, tree, [head], message, info, objects, bases, author, started, patches=patches
            )
            self._moved_if_live(name)
            return cid

    def commit_tree(
        self,
        tree: ObjectId,
        message: str,
        meta: Mapping[str, Any] | None = None,
        branch: str | None = None,
        *,
        objects: Mapping[ObjectId, bytes] | None = None,
        author: str | None = None,
    ) -> CommitId | None:
        """Make a whole `tree` the next commit of `branch` (for imports, which build trees
        themselves). `objects` (new records the tree needs) land in the commit's write.

        Same path as `commit`: lock, a live worktree's pending changes committed first,
        compare-and-swap, subscribers told. None (nothing written) when `tree` is the
        head's tree already.
        """
        with self.lock:
            name = branch if branch is not None else self.current_branch()
            self._settle(name)
            head = self.branch_head(name)
            if tree == self.commit_info(head).tree:
                return None
            info = dict(meta or {})
            cid = self.write_commit(
                name, tree, [head], message, info, dict(objects or {}), author=author
            )
            self._moved_if_live(name)
            return cid

    def move_refs(self, targets: Mapping[str, CommitId]) -> None:
        """Point refs (`branches/NAME`, `snapshots/NAME`) at commits in one atomic write.

        Live worktrees of moved branches are committed first and reloaded after, as for
        any out-of-band move; each ref is compared-and-swapped against what it held.
        """
        with self.lock:
            branches = [ref[len(BRANCHES) :] for ref in targets if ref.startswith(BRANCHES)]
            for branch in branches:
                self._settle(branch)
            updates = [
                RefUpdate(ref, cid, expected=self.store.ref(ref)) for ref, cid in targets.items()
            ]
            # a snapshot new to this store (a git tag imported) is made now, for its age
            updates += [
                retention.made_now(u.name[len(SNAPSHOTS) :])
                for u in updates
                if u.name.startswith(SNAPSHOTS) and u.expected is None
            ]
            objects: dict[ObjectId, bytes] = {}
            for branch in branches:
                old = self.store.ref(branch_ref(branch))
                was = CommitId(old) if old else None
                updates.append(self.work_follows(branch, was, targets[BRANCHES + branch], objects))
            self.store.write(objects, updates, uncompressed=uncompressed(objects))
            for branch in branches:
                self._moved(branch)
            for ref in targets:
                if ref.startswith(SNAPSHOTS):
                    self._notify_snapshot(ref[len(SNAPSHOTS) :])

    def _store_changes(self, changes: Mapping[bytes | str, Content]) -> dict[bytes, Stored | None]:
        """Each change's content packed (or streamed to the store), keyed by its path
        normalised once here: the tree update and `changed` take them as they are."""
        if not changes or not isinstance(changes, _MAPPINGS):
            raise InvalidInput("a commit needs at least one path change")
        stored: dict[bytes, Stored | None] = {}
        for raw_path, content in changes.items():
            parts = split_path(raw_path)
            path = b"/".join(parts)
            if path in stored:  # `a` and `/a`, or a write and a delete: which wins?
                raise InvalidInput(f"{show_path(path)} is changed twice in one commit")
            if content is None:
                stored[path] = None  # deleting is fine: it cleans up an old tree
            elif parts[:1] == [CONTROL_DIR]:
                raise InvalidInput(
                    f"{path_text(path)!r}: .helix at the root is the mount's control folder, "
                    "where a file could never be seen"
                )
            elif isinstance(content, BYTES_LIKE):
                stored[path] = pack_bytes(content)
            elif hasattr(content, "read"):
                stored[path] = store_stream(content, lambda objs: self.store.write(objs, bulk=True))
            else:
                raise InvalidInput(f"content for {path!r} must be bytes, a file or None")
        return stored

    def write_commit(
        self,
        branch: str,
        tree: ObjectId,
        parents: list[CommitId],
        message: str,
        meta: dict[str, Any],
        objects: dict[ObjectId, bytes],
        bases: Mapping[ObjectId, ObjectId] | None = None,
        author: str | None = None,
        started: int | None = None,
        work: bytes | None = None,
        patches: Patches | None = None,
    ) -> CommitId:
        """Write a commit object and CAS-move `branches/BRANCH` from parents[0] (one batch).

        `work` is the saved state of the full work tree the commit came from (it may
        hold editor temp files and ignored paths the commit tree leaves out; a tree id,
        maybe with a journal); the work ref is dropped when it adds nothing.
        """
        tag_experiment(self.store, branch, meta)
        try:
            meta[GENERATION] = next_generation(self, parents)
        except HelixError:  # an unreadable old commit below: saving must not fail for it
            log.warning("commit on %s: no generation recorded (history unreadable)", branch)
        if started is not None:
            meta["latency_us"] = (time.perf_counter_ns() - started) // 1000
        fields = (tree, tuple(parents), time.time_ns(), author or self.author, message, meta)
        record = commit_record(*fields)
        cid = CommitId(object_id(record))
        objects[ObjectId(cid)] = record
        refs = [RefUpdate(branch_ref(branch), cid, expected=parents[0] if parents else None)]
        saved = self.store.ref(work_ref(branch))
        if work is None and saved is not None:
            # a commit from outside the work tree: its editor temp files stay (ADR 0019)
            base = self.commit_info(parents[0]).tree if parents else EMPTY_TREE_ID
            work = self._carried_work(branch, base, tree, objects)
        keep = work if work is not None and work != tree else None
        # no update for a work ref that stays as it is: absent (every commit made through
        # the API on a branch without a mount), or an overlay on the head's tree that
        # the commit left as it was (ADR 0086)
        if keep != saved:
            refs.append(RefUpdate(work_ref(branch), keep, expected=ANY))
        self.store.write(
            objects,
            refs,
            delta_bases=bases or None,
            uncompressed=uncompressed(objects),
            patches=patches or None,
        )
        self._remember(Commit(*fields, id=cid), len(record))
        if GENERATION in meta:  # the next commit's parent: its generation is known now
            remember_generation(self, cid, meta[GENERATION])
        return cid

    def work_follows(
        self,
        branch: str,
        old: CommitId | None,
        new: CommitId,
        objects: dict[ObjectId, bytes],
    ) -> RefUpdate:
        """The update of `branch`'s saved work tree for a move of the branch from commit
        `old` to `new` (reset, fast-forward, ref moves): left behind, the mount would show
        the old files and its next save would undo the move. Only its editor temp files
        are carried over (ADR 0019); their records go to `objects`."""
        base = self.commit_info(old).tree if old is not None else EMPTY_TREE_ID
        work = self._carried_work(branch, base, self.commit_info(new).tree, objects)
        return RefUpdate(work_ref(branch), work, expected=ANY)

    def _carried_work(
        self, branch: str, old: ObjectId, new: ObjectId, objects: dict[ObjectId, bytes]
    ) -> ObjectId | None:
        """The work tree to keep when `branch` moves from commit tree `old` to `new`: the
        new tree plus the editor temp files of its saved work tree (ADR 0019). None when
        that is just `new` (no work ref then)."""
        work = self.store.ref(work_ref(branch))
        if work is None:
            return None
        # a journal or an overlay is folded before this: by the settle of a live work
        # tree (its commit and fold), or by the recovery on open
        saved = journal.tree_of(work)
        saved = old if saved == journal.HEAD_TREE else saved  # unfolded: its commit tree
        carried = self.trees.carry_ephemeral(saved, old, new, objects)
        return carried if carried != new else None

    def _moved_if_live(self, branch: str) -> None:
        if branch in self._worktrees:
            self._moved(branch)

    # -- branches and snapshots ---------------------------------------------------------

    def create_branch(self, name: str, rev: str = "HEAD") -> CommitId:
        check_name(name)
        with self.lock:
            self._settle_source(rev)
            cid = self.resolve(rev)
            self._create_ref(branch_ref(name), cid, f"branch {name!r} already exists")
            self._notify(name)
            return cid

    def _create_ref(self, ref: str, cid: CommitId, exists: str) -> None:
        from helixfs.errors import RefConflict

        if self.store.ref(ref) is not None:
            raise AlreadyExists(exists)
        try:
            self.store.write({}, [RefUpdate(ref, cid, expected=None)])
        except RefConflict:
            raise AlreadyExists(exists) from None

    def delete_branch(self, name: str) -> CommitId:
        """Drop a branch ref (its commits stay until gc). The HEAD branch cannot go."""
        with self.lock:
            cid = self.branch_head(check_name(name))
            if name == self.head_branch():
                raise InvalidInput(f"cannot delete {name!r}: it is the current branch (HEAD)")
            refuse_if_running(self.store, name, "delete")
            self._settle(name)
            cid = self.branch_head(name)
            self.store.write(
                {},
                [
                    RefUpdate(branch_ref(name), None, expected=cid),
                    RefUpdate(work_ref(name), None, expected=ANY),
                ],
            )
            tree = self._worktrees.pop(name, None)
            if tree is not None:
                tree.retire()
            self._notify(name)
            self._notify_branch_end(name)
            return cid

    def rename_branch(self, old: str, new: str) -> None:
        with self.lock:
            check_name(new)
            cid = self.branch_head(check_name(old))
            if old == new:
                return  # as rename(2) of a name onto itself, and as for snapshots
            if self.store.ref(branch_ref(new)) is not None:
                raise AlreadyExists(f"branch {new!r} already exists")
            refuse_if_running(self.store, old, "rename")
            self._settle(old)
            cid = self.branch_head(old)
            work = self.store.ref(work_ref(old))
            refs = [
                RefUpdate(branch_ref(old), None, expected=cid),
                RefUpdate(branch_ref(new), cid, expected=None),
                RefUpdate(work_ref(old), None, expected=work),
                RefUpdate(work_ref(new), work, expected=ANY),
            ]
            if self.head_branch() == old:
                refs.append(RefUpdate(HEAD, new.encode(), expected=old.encode()))
            self.store.write({}, refs)
            tree = self._worktrees.pop(old, None)
            if tree is not None:  # the same state under the new name: open files follow
                tree.branch = new
                self._worktrees[new] = tree
            self._notify(old)
            self._notify(new)
            self._notify_branch_end(old, new)

    def create_snapshot(self, name: str, rev: str = "HEAD") -> CommitId:
        check_name(name, "snapshot")
        with self.lock:
            self._settle_source(rev)
            cid = self.resolve(rev)
            self._create_ref(snapshot_ref(name), cid, f"snapshot {name!r} already exists")
            self.store.write({}, [retention.made_now(name)])  # its age, for gc.snapshot_ttl
            self._notify_snapshot(name)
            return cid

    def delete_snapshot(self, name: str) -> CommitId:
        with self.lock:
            ref = snapshot_ref(check_name(name, "snapshot"))
            cid = self.store.ref(ref)
            if cid is None:
                raise NotFound(f"no snapshot named {name!r}")
            self.store.write({}, [RefUpdate(ref, None, expected=cid), retention.dropped(name)])
            self._notify_snapshot(name)
            return CommitId(cid)

    def rename_snapshot(self, old: str, new: str) -> None:
        """A new label for the same commit (the content stays as it was): one write that
        drops the old name and takes the new one, refused if the new one is taken."""
        with self.lock:
            old_ref = snapshot_ref(check_name(old, "snapshot"))
            new_ref = snapshot_ref(check_name(new, "snapshot"))
            cid = self.store.ref(old_ref)
            if cid is None:
                raise NotFound(f"no snapshot named {old!r}")
            if old == new:
                return
            if self.store.ref(new_ref) is not None:
                raise AlreadyExists(f"snapshot {new!r} already exists")
            self.store.write(
                {},
                [
                    RefUpdate(old_ref, None, expected=cid),
                    RefUpdate(new_ref, cid, expected=None),
                    *retention.renamed(self, old, new),
                ],
            )
            self._notify_snapshot(old, new)

    def check_room(self, nbytes: int = 0) -> None:
        """StoreFull now if the store's disk has no room left for a write of about
        `nbytes` and a ref move. Writes nothing: for a change applied later
        (`.helix/HEAD` switches at close, whose error a shell ignores), refused while
        its writer can still be told."""
        self.store.check_room(nbytes)

    def checkout(self, branch: str) -> None:
        """Point HEAD (what the mount root shows) at another branch."""
        with self.lock:
            self._refuse_snapshot_checkout(check_name(branch))
            # a dangling or unreadable head would leave every later command failing
            head = self.commit_info(self.branch_head(branch))
            self.trees.get(head.tree)
            old = self.head_branch()
            if old == branch:
                return
            self.store.write({}, [RefUpdate(HEAD, branch.encode(), expected=old.encode())])
            self._notify(old)
            self._notify(branch)

    def _refuse_snapshot_checkout(self, name: str) -> None:
        if self.store.ref(branch_ref(name)) is None and self.store.ref(snapshot_ref(name)):
            raise InvalidInput(
                f"{shown_name(name)} is a snapshot, and snapshots are read-only: make a "
                "branch from it (`helix branch NEW SNAPSHOT`) and check that out"
            )

    def reset_hard(self, rev: str, branch: str | None = None) -> CommitId:
        """Move a branch to `rev`. Its pending work is committed first, so it stays in log."""
        with self.lock:
            name = branch if branch is not None else self.current_branch()
            self.branch_head(name)
            target = self.resolve(rev)
            self._settle(name)
            head = self.branch_head(name)
            objects: dict[ObjectId, bytes] = {}
            refs = [
                RefUpdate(branch_ref(name), target, expected=head),
                self.work_follows(name, head, target, objects),
            ]
            self.store.write(objects, refs, uncompressed=uncompressed(objects))
            self._moved(name)
            return target

    def merge(
        self,
        branch: str,
        into: str | None = None,
        *,
        message: str | None = None,
        allow_conflicts: bool = False,
    ) -> MergeResult:
        """Three-way merge of `branch` into `into` (default: HEAD's branch).

        Conflicts raise MergeConflict (carrying the conflicting paths and the files with
        markers) and change nothing, unless `allow_conflicts`: then the marked files are
        committed with `meta["conflicts"]` listing them and the result says so.
        """
        with self.lock:
            target = into if into is not None else self.current_branch()
            self._settle(target)
            self._settle(branch)
            result = merge.merge_branches(self, branch, target, message, allow_conflicts)
            if result.status != "up-to-date":
                self._moved(target)
            return result

    def revert(
        self, rev: str, into: str | None = None, *, message: str | None = None
    ) -> PickResult:
        """A new commit on `into` (default: HEAD's branch) undoing commit `rev`: a
        three-way merge with `rev` as the base. Conflicts raise and change nothing."""
        return self._apply(rev, into, undo=True, message=message)

    def cherry_pick(
        self, rev: str, into: str | None = None, *, message: str | None = None
    ) -> PickResult:
        """A new commit on `into` (default: HEAD's branch) with the change commit `rev`
        made: a three-way merge with its parent as the base. Conflicts raise, as above."""
        return self._apply(rev, into, undo=False, message=message)

    def _apply(self, rev: str, into: str | None, *, undo: bool, message: str | None) -> PickResult:
        with self.lock:
            target = into if into is not None else self.current_branch()
            self._settle(target)
            self._settle_source(rev)
            result = pick.apply_commit(self, rev, target, undo=undo, message=message)
            if result.status == "applied":
                self._moved(target)
            return result

    # -- maintenance --------------------------------------------------------------------

    def gc(
        self,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        *,
        grace_seconds: float = 0,
        without: Collection[str] = (),
    ) -> maint.GcReport:
        """Drop what no ref reaches (maint.gc): the repository stays usable meanwhile,
        but for its last step. With a grace period, unreachable commits younger than it
        are kept. `without`: refs taken as gone (a dry run of deleting them). One gc at
        a time."""
        with self._gc_lock:
            return maint.gc(
                self,
                self._live_objects,
                dry_run,
                progress,
                grace_seconds,
                without,
                live_chunks=self._live_chunks,
            )

    def _live_objects(self) -> list[ObjectId]:
        """For gc, under the lock: live work trees saved (their refs then name their
        state), plus the objects mounts still serve that no ref may reach."""
        for tree in self._worktrees.values():
            tree.save()
        return [oid for source in self._in_use for oid in source()]

    def _live_chunks(self) -> list[ObjectId]:
        """For gc: the chunks mounts hold that no ref reaches yet (keep_chunks_in_use)."""
        return [oid for source in list(self._chunks_in_use) for oid in source()]

    def lost(self) -> list[Commit]:
        """The tips of history no ref reaches any more, newest first (maint.lost):
        `create_branch(name, commit id)` brings one back."""
        return maint.lost(self)

    def fsck(self, progress: Callable[[int, int], None] | None = None) -> maint.FsckReport:
        with self.lock:
            return maint.fsck(self, progress)

    def stats(self, last: int = 1000) -> maint.RepoStats:
        _check_count(last, "last")
        with self.lock:
            return maint.stats(self, last)


OBJECTS_DIR = "objects"
"""The RocksDB directory inside a store folder (memory.db, control.sock, tmp/ sit beside)."""


def _check_count(value: object, name: str, *, none_ok: bool = False) -> None:
    """A count argument of the API: a negative one hunks, lines or an islice would
    choke on (diff hunks came out as `@@ -7,-1 +7,-1 @@`) is refused up front."""
    if value is None and none_ok:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput(f"{name} must be a whole number, 0 or more, not {value!r}")


def _no_database(folder: Path) -> str:
    return (
        f"{folder / OBJECTS_DIR} holds no HelixFS database: {folder} is not a HelixFS store"
        " (its objects/ folder is left as it is)"
    )


def _open_rocks(folder: Path, settings: config.Settings | None = None) -> ObjectStore:
    from helixfs.store.frame import Compression
    from helixfs.store.rocks import RocksStore

    settings = settings or config.load(folder)
    # Every record vcs writes gets its id from object_id(record) a moment earlier, so
    # the store's own re-hash of each write would only double the hashing cost.
    store: ObjectStore = RocksStore(
        folder / OBJECTS_DIR,
        verify_writes=False,
        cache_bytes=settings.frame_cache_bytes,
        record_cache_bytes=settings.record_cache_bytes,
        compression=Compression.named(*settings.compression),
    )
    return store


def __getattr__(name: str) -> object:
    """`MergeResult` from here, without loading merge.py until it is asked for."""
    if name == "MergeResult":
        return merge.MergeResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MergeResult", "RefInfo", "Repository"]
