"""`.helix/search/QUERY` and `.helix/context`: the memory engine, as files in the mount.

The filesystem layer does not know the memory engine (fs may import only vcs), so the
daemon builds these two entries and hands them to `Operations(helix_entries=...)`.

The memory database and the embedder are opened on first use, not at mount time: most
mounts never search, and the embedding model costs seconds and a hundred MB of RSS.
Those seconds (more with 100,000 memories, whose vector indexes are built then) are
not spent on the FUSE loop, which every process using the mount waits on: the first
read opens the memory on a thread of its own, and reads until it is ready are answered
lexically, from a connection of their own, and say so; so are reads that come while a
forwarded command holds the memory for long (an import).
`memory.lexical` (`HELIX_MEMORY_LEXICAL=1`) keeps search lexical (no model), as in the CLI.

Workspace search needs the text files of the HEAD commit in the memory's chunk index.
After the first search, `index_forever` (a daemon nursery task) keeps that index on the
current HEAD commit, in a worker thread: embedding a tree's chunks takes far too long to
run on the FUSE loop. The first pass walks the whole tree; later ones index the diff
from the commit last indexed. A pass that fails (a full disk, a locked database) is
tried again on its own, HEAD moving or not, after a pause that doubles from twice the
poll interval up to RETRY_PAUSE_MAX. Committed trees are immutable and Repository reads are
thread-safe, so the thread only ever reads.
"""

from __future__ import annotations

import logging
import math
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

import trio

from helixfs import config
from helixfs.errors import HelixError, InvalidInput, NotFound
from helixfs.fs.helixdir import Entry, QueryDir, TextFile
from helixfs.ids import CommitId, hex_id

if TYPE_CHECKING:
    from helixfs.memory import Embedder, Hit, IndexReport, KeptOpen, Memory
    from helixfs.vcs.objects import TreeEntry
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.sourceview import BranchView

log = logging.getLogger(__name__)

MEMORY_DB = "memory.db"
SEARCH_RESULTS = 10
MAX_INDEXED_FILES = 20_000
MAX_INDEXED_BYTES = 512 * 1024
SKIPPED_DIRS = frozenset({b".git", b"node_modules", b".venv", b"venv", b"__pycache__"})
RETRY_PAUSE_MAX = 600.0  # seconds: a failed index pass is retried at least this often
CONTEXT_BUDGET = 2000  # tokens: what `.helix/context` packs
# The engine's warning goes to the daemon's log, which a reader of the file never sees.
LEXICAL_NOTE = "# lexical search only: no embedding model (daemon.log says why)\n"
LOADING_NOTE = "# lexical search while the embedding model loads: search again in a moment\n"
BUSY_NOTE = "# lexical search while the memory is busy (a long write): search again in a moment\n"
# How long a read waits for the memory another thread uses (a forwarded command) before
# it answers lexically from a connection of its own: the whole mount waits with it.
BUSY_WAIT = 0.05
# How long after the mount is up the kept memory starts opening: a mount that lives
# less (a script's, a test's) never loads the model; an agent's session starts later.
WARM_DELAY = 2.0
# The kept memory opens once hooks have paused this long (or this long after the first
# asked, whichever comes first): its imports (~100 ms of the interpreter) and the model
# load, on a thread beside a hook, made that hook wait 2-4x its time (ADR 0083).
HOOK_PAUSE = 0.5
HOOK_PAUSE_MAX = 30.0
RECENT_COMMITS = 20  # whose changed files a first index embeds first
INDEX_PENDING_NOTE = (
    "helix: note: the workspace index is being built: passages of its files join the "
    "results in a moment"
)


class MemoryFiles:
    """Lazily opened memory engine behind the two `.helix/` entries."""

    def __init__(self, store: Path, repo: Repository | None = None) -> None:
        self.store = store
        self.repo = repo
        self._memory: KeptOpen | None = None  # opened by the first search
        self._lock = threading.Lock()
        self._wanted = threading.Event()  # set by the first search
        self.indexed: CommitId | None = None  # HEAD when the indexer last looked
        # The commit the memory's chunk index holds, when a pass succeeded and the whole
        # workspace fitted in it: the next pass then indexes only a diff from it.
        self._index_base: CommitId | None = None
        self.failed_passes = 0  # in a row: the pause before the next try doubles
        self._retry_at: float | None = None  # trio time at which a failed pass is retried
        self._last_hook = -math.inf  # time.monotonic() when a hook last ran
        self._pause_awaited = False  # a thread waits for a pause in the hooks to open

    def entries(self) -> Mapping[bytes, Entry]:
        return {
            b"search": QueryDir(self.search),
            b"context": TextFile(self.context, cheap=False),
        }

    def memory(self) -> Memory:
        """The daemon's memory, open for its life: `.helix/` reads and forwarded memory
        commands share it, and its vector indexes. Opens it if need be: not for the
        FUSE loop (see `_reading`)."""
        return self._kept()()

    def _kept(self) -> KeptOpen:
        with self._lock:
            if self._memory is None:
                from helixfs.memory import KeptOpen

                self._memory = KeptOpen(self.store / MEMORY_DB, lambda: _embedder(self.store))
            return self._memory

    @contextmanager
    def _reading(self) -> Iterator[tuple[Memory, str]]:
        """The memory a `.helix/` read uses, and the note its answer starts with: the
        kept one once open and free, or else a lexical one for this read, while the kept
        one opens on its thread or another thread holds it (an import of 100,000
        memories holds it for seconds)."""
        kept = self._kept()
        memory = kept.ready()
        if memory is None:
            kept.open_in_background()
            note = LOADING_NOTE
        else:
            with memory.unless_busy(BUSY_WAIT) as free:
                if free:
                    yield memory, LEXICAL_NOTE if memory.lexical_only else ""
                    return
            note = BUSY_NOTE
        from helixfs.memory import Memory

        interim = Memory.open(self.store / MEMORY_DB, None, warn_lexical=False)
        try:
            yield interim, note
        finally:
            interim.close()

    async def open_soon(self, delay: float = WARM_DELAY) -> None:
        """Open the kept memory (imports, model, vector indexes) on its thread a moment
        after the mount is up, if this store has a memory, in a pause of the hooks: an
        agent's first hook or search then finds it warm. A store that never used memory
        pays nothing."""
        await trio.sleep(delay)
        if (self.store / MEMORY_DB).exists():
            self._open_in_a_pause()

    def _open_in_a_pause(self) -> None:
        """Have the kept memory open once no hook has run for HOOK_PAUSE (at the latest
        HOOK_PAUSE_MAX from now): an agent's hooks come in bursts, seconds apart."""
        if self._kept().ready() is not None:
            return
        with self._lock:
            if self._pause_awaited:
                return
            self._pause_awaited = True

        def wait_then_open() -> None:
            latest = time.monotonic() + HOOK_PAUSE_MAX
            while (idle := time.monotonic() - self._last_hook) < HOOK_PAUSE:
                if time.monotonic() >= latest:
                    break
                time.sleep(HOOK_PAUSE - idle)
            with self._lock:
                self._pause_awaited = False
            self._kept().open_in_background()

        threading.Thread(target=wait_then_open, name="helix-memory-pause", daemon=True).start()

    def warm_hooks(self, run: Callable[[list[str]], object]) -> threading.Thread | None:
        """Start importing what a forwarded hook runs (its handlers, the reader, the
        `hook` command's kept parser: ~15 ms of a mount's first SessionStart), on a
        thread, if this store has a memory: `run(argv)` runs a command in the daemon.
        The caller joins it before it says the mount is ready: an agent's SessionStart
        comes right after (ADR 0083)."""
        if not (self.store / MEMORY_DB).exists():
            return None

        def warm() -> None:
            try:
                run(["hook", "SessionStart", "--warm"])
                self._kept()
            except Exception:  # the first hook imports them itself
                log.exception("the hooks' modules were not imported ahead")

        thread = threading.Thread(target=warm, name="helix-hooks-warm", daemon=True)
        thread.start()
        return thread

    @contextmanager
    def for_a_hook(self) -> Iterator[Callable[[], Memory]]:
        """The memory a forwarded hook uses: the kept one once open and free, or else a
        reader for this call, with the branch's view (memory/reader.py: the engine's SQL
        and ranking without its imports), the kept one opening in the next pause of the
        hooks: a hook has milliseconds (ADR 0052), the engine's imports take ~100 ms and
        the model seconds, and an opening thread beside a hook shares the interpreter
        with it (ADR 0083)."""
        self._last_hook = time.monotonic()
        memory = self._kept().ready()
        if memory is not None:
            with memory.unless_busy(BUSY_WAIT) as free:
                if free:
                    yield lambda: memory
                    return
        try:
            with self._interim_reader() as interim:
                yield lambda: interim
        finally:
            self._last_hook = time.monotonic()
            self._open_in_a_pause()

    @contextmanager
    def _interim_reader(self) -> Iterator[Memory]:
        """A reader of memory.db (Stop's checkpoint is its one write), or the engine,
        lexical, for a database the engine must create or upgrade first."""
        import apsw

        from helixfs.memory.reader import Checkpointing

        try:
            reader = Checkpointing(self.store / MEMORY_DB)
        except (apsw.Error, HelixError):
            from helixfs.memory import Memory

            with Memory.open(self.store / MEMORY_DB, None, warn_lexical=False) as memory:
                yield memory
            return
        with reader:
            yield cast("Memory", reader)

    def want_workspace(self) -> str | None:
        """A search asked for workspace passages (`helix recall --workspace`, from the CLI
        or the MCP server): keep the index from now on, as a first `.helix/search` does.
        A note for the searcher while the first pass has not run yet."""
        self._wanted.set()
        return None if self.indexed is not None else INDEX_PENDING_NOTE

    def search(self, query: str) -> str:
        query = query.strip()
        if not query:
            raise InvalidInput("an empty search")
        with self._reading() as (memory, note):
            hits = memory.search(query, k=SEARCH_RESULTS, reinforce=False, view=self._view())
            progress = memory.workspace_progress()
        self._wanted.set()
        if progress is not None and progress[0] < progress[1]:
            note = f"# workspace index: {progress[0]:,} of {progress[1]:,} passages\n" + note
        elif not self.indexed and self.repo is not None:
            note += "# workspace index: being built\n"
        if not hits:
            return f"{note}# no results for {query!r}\n"
        return note + "".join(_format_hit(rank, hit) for rank, hit in enumerate(hits, 1))

    async def index_forever(self, interval: float = 2.0) -> None:
        """Keep the workspace index on HEAD's commit, once somebody has searched."""
        while not self._wanted.is_set():
            await trio.sleep(interval)
        while self.repo is not None:
            head = self.repo.resolve("HEAD")
            pause = interval
            if head != self.indexed or self._retry_due():
                started = trio.current_time()
                await self._index_pass(head, interval)
                self.indexed = head
                if self._index_base is None:
                    # The next pass walks the whole tree again (this one failed, or the
                    # workspace is past the budget): in a thread that shares the GIL with
                    # the FUSE loop, keep such walks to a tenth of the daemon's time.
                    pause = max(interval, 9 * (trio.current_time() - started))
            await trio.sleep(pause)

    async def _index_pass(self, head: CommitId, interval: float) -> None:
        """One pass; a failure (a full disk, a locked database) is tried again later on
        its own, HEAD moving or not, after a pause that doubles up to RETRY_PAUSE_MAX."""
        try:
            await trio.to_thread.run_sync(self.index_commit, head, abandon_on_cancel=True)
        except Exception as exc:  # never end the mount
            unexpected = not isinstance(exc, HelixError)
            log.warning("workspace index of %s failed: %s", hex_id(head), exc, exc_info=unexpected)
            self.failed_passes += 1
            pause = min(RETRY_PAUSE_MAX, interval * 2**self.failed_passes)
            self._retry_at = trio.current_time() + pause
        else:
            self.failed_passes, self._retry_at = 0, None

    def _retry_due(self) -> bool:
        return self._retry_at is not None and trio.current_time() >= self._retry_at

    def index_commit(self, commit: CommitId) -> IndexReport:
        assert self.repo is not None
        base, self._index_base = self._index_base, None  # stays None if this pass fails
        if base is None:
            texts = CommitTexts(self.repo, hex_id(commit))
            first = recently_changed(self.repo, commit)
            report = self.memory().index_workspace(texts, hex_id(commit), first=first)
            # a walk cut short by the budget is no base for diffs: walk again next time
            self._index_base = commit if len(texts) < MAX_INDEXED_FILES else None
        else:
            try:
                changed, removed = workspace_changes(self.repo, hex_id(base), hex_id(commit))
            except NotFound:  # the base is gone (`reset --hard`, then `helix gc`): walk all
                return self.index_commit(commit)
            report = self.memory().index_workspace(changed, hex_id(commit), removed=removed)
            self._index_base = commit
        log.info("workspace index on %s: %s", hex_id(commit)[:12], report)
        return report

    def context(self) -> str:
        with self._reading() as (memory, _):
            block = memory.context(CONTEXT_BUDGET, view=self._view())
        return block.text if block.text.endswith("\n") or not block.text else block.text + "\n"

    def _view(self) -> BranchView | None:
        """The trunk as `.helix/` (at the root) shows it: memories about a file that
        changed since are marked stale (ADR 0063). Its last commit, settling nothing:
        the read runs on the FUSE loop."""
        from helixfs.vcs.sourceview import BranchView

        return BranchView(self.repo, None, settle=False) if self.repo is not None else None

    def close(self) -> None:
        with self._lock:
            if self._memory is not None:
                self._memory.close()


class CommitTexts(Mapping[str, bytes]):
    """The text files of a commit worth indexing (small, no NUL, not vendored/generated),
    by name. Their bytes are read when asked for: a full index pass holds one batch of
    them at a time, not the whole workspace."""

    def __init__(self, repo: Repository, rev: str) -> None:
        self._repo = repo
        self._rev = rev
        self._paths = dict(_text_paths(repo, rev))

    def __getitem__(self, name: str) -> bytes:
        return self._repo.read(self._rev, self._paths[name])

    def __contains__(self, name: object) -> bool:
        return name in self._paths  # Mapping's own would read the file

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def _text_paths(repo: Repository, rev: str) -> Iterator[tuple[str, bytes]]:
    """(name, path) of a commit's text files worth indexing, MAX_INDEXED_FILES at most."""
    budget = [MAX_INDEXED_FILES]

    def walk(folder: bytes) -> Iterator[tuple[str, bytes]]:
        for entry in repo.ls(rev, folder):
            child = folder + b"/" + entry.name if folder else entry.name
            if entry.is_dir():
                if entry.name not in SKIPPED_DIRS:
                    yield from walk(child)
            elif _indexable(entry):
                if budget[0] <= 0:
                    return
                if b"\0" not in repo.read(rev, child)[:8192]:
                    budget[0] -= 1
                    yield child.decode("utf-8", "surrogateescape"), child

    yield from walk(b"")


def workspace_changes(repo: Repository, old: str, new: str) -> tuple[dict[str, bytes], list[str]]:
    """The text files changed or added from commit `old` to `new`, and the paths that
    left the index's reach (deleted, grown too big, turned binary): a diff of two trees
    skips every unchanged folder, so this costs the change, not the workspace."""
    files: dict[str, bytes] = {}
    removed: list[str] = []
    for change in repo.diff(old, new):
        if SKIPPED_DIRS.intersection(change.path.split(b"/")[:-1]):
            continue
        name = change.path.decode("utf-8", "surrogateescape")
        data = repo.read(new, change.path) if change.new and _indexable(change.new) else b"\0"
        if b"\0" in data[:8192]:
            removed.append(name)
        else:
            files[name] = data
    return files, removed


def recently_changed(repo: Repository, commit: CommitId, depth: int = RECENT_COMMITS) -> list[str]:
    """The paths changed by the last `depth` commits before `commit` (fewer when history
    is shorter), newest change first: every save is a commit, so these are the files the
    agent works on, which a first index embeds before the rest."""
    seen: dict[str, None] = {}
    newer = hex_id(commit)
    for _ in range(depth):
        try:
            older = hex_id(repo.resolve(f"{newer}~1"))
        except (NotFound, InvalidInput):
            break
        for change in repo.diff(older, newer):
            if change.new is not None:
                seen.setdefault(change.path.decode("utf-8", "surrogateescape"), None)
        newer = older
    return list(seen)


def _indexable(entry: TreeEntry) -> bool:
    return stat.S_ISREG(entry.mode) and 0 < entry.size <= MAX_INDEXED_BYTES


def _embedder(store: Path) -> Embedder | None:
    from helixfs.memory.embed import load_configured

    return load_configured(config.load(store))  # memory.lexical, memory.model_dir...


def _format_hit(rank: int, hit: Hit) -> str:
    """One result: a header line saying where it comes from, then the text, indented."""
    from helixfs.memory.ranking import stale_mark

    if hit.kind == "memory":
        where = f"memory {hit.id} ({hit.type or 'note'}){stale_mark(hit)}"
    else:
        lines = f":{hit.start_line}-{hit.end_line}" if hit.start_line is not None else ""
        where = f"{hit.path}{lines}"
    body = "\n".join("    " + line for line in hit.content.splitlines())
    return f"{rank}. [{hit.score:.3f}] {where}\n{body}\n\n"
