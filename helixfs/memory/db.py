"""The memory database: one SQLite file per store, opened through apsw.

apsw rather than the stdlib sqlite3 because the stdlib module cannot load extensions
and we need sqlite-vec. WAL mode lets the CLI read and write while the daemon holds the
database open. `secure_delete` zeroes freed pages, so a purged or rewritten memory does
not linger in the file.

The schema is described here, once, column by column (SCHEMA below is the only place
tables are created). Vector tables depend on the embedder's dimension, so they are made
by `ensure_vector_tables` when a model is first pinned.
"""

from __future__ import annotations

import os
import re
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

if TYPE_CHECKING:  # numpy and sqlite-vec load when used: a hook's light read needs neither
    import numpy as np
    import numpy.typing as npt

from helixfs.errors import (
    Busy,
    CorruptObject,
    DiskFailed,
    HelixError,
    InvalidInput,
    StoreFull,
    UnsupportedVersion,
)

SCHEMA_VERSION = 1
MMAP_BYTES = 1 << 30  # address space only; pages come from the OS page cache

SCHEMA = """
-- meta: key/value facts about the database itself.
--   schema_version   integer, SCHEMA_VERSION of the code that created it
--   embed_provider   Embedder.name the vectors were made with ('' = none yet)
--   embed_model      Embedder.model (pinned: a different model triggers a re-embed)
--   embed_dim        Embedder.dim, the width of the vec0 tables
--   workspace_commit       the commit of the last complete workspace index pass
--   workspace_pass_commit  the commit of the last pass begun
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- memories: one row per durable fact, never hard-deleted except by purge.
--   rowid         integer key shared with memories_fts and memory_vec
--   id            time-sortable text id (ULID-like, 26 chars Crockford base32)
--   type          identity|preference|project|decision|entity|snippet|fact|gotcha|howto|convention
--   content       the fact, already redacted
--   scope         'global' or a project name
--   tags          JSON array of strings
--   source_agent  who wrote it (agent name, 'cli', ...), nullable
--   source_file   the file it is about, nullable
--   source_line   the line in that file, nullable
--   source_time   when the source observed it (unix seconds), nullable
--   confidence    0..1; prompt-injection-looking content is capped low
--   salience      0..1 at last_seen; decays with idle time (see retrieval.effective_salience)
--   valid_from    unix seconds from which the fact holds
--   valid_to      unix seconds at which it stopped holding (set on supersede), nullable
--   created       unix seconds of creation
--   updated       unix seconds of the last content/field change
--   last_seen     unix seconds of the last recall or confirmation (reinforcement)
--   status        active|superseded|archived|forgotten
--   subject       normalised subject key from the extractor ('' if none): the slot a
--                 contradicting fact competes for (e.g. 'database')
--   value         normalised value for that subject ('' if none)
--   norm          normalised content, to detect identical facts cheaply
--   branch        the branch it was written in, NULL for the trunk (the store's HEAD
--                 branch) or outside any branch: who sees it (memory/tree.py, ADR 0063)
--   base_commit   that branch's head commit (hex) when it was written, NULL if unscoped
--   source_blob   the blob id (hex) of source_file in that tree when written or last
--                 confirmed, NULL if unknown: a different blob now means stale
--   moved_from    the path source_file had before a rename was followed, NULL if none
-- (the last four were added in place: a database from before them gains them on open)
CREATE TABLE IF NOT EXISTS memories (
    rowid        INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    type         TEXT NOT NULL,
    content      TEXT NOT NULL,
    scope        TEXT NOT NULL DEFAULT 'global',
    tags         TEXT NOT NULL DEFAULT '[]',
    source_agent TEXT,
    source_file  TEXT,
    source_line  INTEGER,
    source_time  REAL,
    confidence   REAL NOT NULL,
    salience     REAL NOT NULL,
    valid_from   REAL NOT NULL,
    valid_to     REAL,
    created      REAL NOT NULL,
    updated      REAL NOT NULL,
    last_seen    REAL NOT NULL,
    status       TEXT NOT NULL DEFAULT 'active',
    subject      TEXT NOT NULL DEFAULT '',
    value        TEXT NOT NULL DEFAULT '',
    norm         TEXT NOT NULL DEFAULT '',
    branch       TEXT,
    base_commit  TEXT,
    source_blob  TEXT,
    moved_from   TEXT
);
CREATE INDEX IF NOT EXISTS memories_slot ON memories(scope, subject, status);
CREATE INDEX IF NOT EXISTS memories_norm ON memories(norm);
CREATE INDEX IF NOT EXISTS memories_status ON memories(status, type);
-- newest first by status without sorting every row (`memories`, the web view's lists)
CREATE INDEX IF NOT EXISTS memories_status_id ON memories(status, id);
-- a branch's memories (a merge, a deletion, the web view's filter)
CREATE INDEX IF NOT EXISTS memories_branch ON memories(branch, status);
-- the memories seen last by status, without sorting every row: a briefing weighs the
-- 5,000 last seen (ranking.top_memories: 6.5 -> 2.9 ms at 10,000 memories)
CREATE INDEX IF NOT EXISTS memories_seen ON memories(status, last_seen);

-- memories_fts: BM25 index over content plus its identifiers split (CamelCase,
-- snake_case; see tokens.fts_text). Contentless: the text lives only in memories.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    body, content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2'
);

-- edges: typed relations between memories ('supersedes', 'relates_to', user-defined).
--   src, dst   memory ids;  rel  relation name;  created  unix seconds
CREATE TABLE IF NOT EXISTS edges (
    src     TEXT NOT NULL,
    dst     TEXT NOT NULL,
    rel     TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (src, dst, rel)
);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);

-- provenance: every assertion of a memory (the first write and each confirmation).
--   memory_id  the memory;  action  add|update|noop|supersede;  agent/file/line  source
--   at         unix seconds;  excerpt  the (redacted) text that asserted it
CREATE TABLE IF NOT EXISTS provenance (
    memory_id TEXT NOT NULL,
    action    TEXT NOT NULL,
    agent     TEXT,
    file      TEXT,
    line      INTEGER,
    at        REAL NOT NULL,
    excerpt   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS provenance_memory ON provenance(memory_id);

-- history: every change as an operation, so forget/update/supersede can be rolled back.
--   seq        increasing operation number
--   memory_id  the memory changed (NULL for database-wide ops such as reembed)
--   op         add|update|supersede|superseded|confirm|forget|archive|rollback|relate|purge|reembed
--   at         unix seconds
--   before     JSON of the row before the op (NULL for add)
--   after      JSON of the row after the op (NULL for purge)
--   note       free text (reason, related ids)
CREATE TABLE IF NOT EXISTS history (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT,
    op        TEXT NOT NULL,
    at        REAL NOT NULL,
    before    TEXT,
    after     TEXT,
    note      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS history_memory ON history(memory_id, seq);

-- sync_batches: batches of memory operations from other machines that were applied
-- here (memory/shared.py, ADR 0065), so that none is applied twice.
--   signer  hex Ed25519 key of the machine that wrote it;  seq  its number there
--   applied unix seconds;  first_seq, last_seq  the history rows applying it wrote
--   (never sent on: a machine sends only what it learnt itself)
CREATE TABLE IF NOT EXISTS sync_batches (
    signer    TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    applied   REAL NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    PRIMARY KEY (signer, seq)
);

-- sync_origins: which memory here holds a memory of another machine (its id there),
-- so that a forget or purge of it there reaches the one here.
--   origin  the memory's id on the machine that wrote it;  memory_id  the one here
CREATE TABLE IF NOT EXISTS sync_origins (
    origin    TEXT PRIMARY KEY,
    memory_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sync_origins_memory ON sync_origins(memory_id);

-- checkpoints: a task's state for `resume`; lists are JSON arrays of strings.
CREATE TABLE IF NOT EXISTS checkpoints (
    id         TEXT PRIMARY KEY,
    scope      TEXT NOT NULL,
    created    REAL NOT NULL,
    task       TEXT NOT NULL,
    done       TEXT NOT NULL,
    next       TEXT NOT NULL,
    hypotheses TEXT NOT NULL,
    blocked    TEXT NOT NULL,
    files      TEXT NOT NULL
);

-- workspace_files: which version of each text file the chunk index holds.
--   path  file path in the tree;  file_hash  BLAKE3 hex of its bytes;  commit_id  hex
CREATE TABLE IF NOT EXISTS workspace_files (
    path      TEXT PRIMARY KEY,
    file_hash TEXT NOT NULL,
    commit_id TEXT NOT NULL
);

-- chunks: passages of workspace files (rowid shared with chunks_fts and chunk_vec).
--   path, start_line, end_line (1-based, inclusive);  text  the redacted passage
--   hash  BLAKE3 hex of text: the embedding cache key;  commit_id  hex, of the pass
--   that wrote it (passages are reported as of workspace_commit: workspace.py)
CREATE TABLE IF NOT EXISTS chunks (
    rowid      INTEGER PRIMARY KEY,
    path       TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line   INTEGER NOT NULL,
    text       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    commit_id  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);

CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2'
);

-- embed_cache: vectors by (BLAKE3 of text, model), so the same text is embedded once
-- per model no matter how many branches or reverts show it again.
--   hash  BLAKE3 hex;  model  Embedder.model;  vector  float32 little-endian, normalised
CREATE TABLE IF NOT EXISTS embed_cache (
    hash   TEXT NOT NULL,
    model  TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (hash, model)
) WITHOUT ROWID;
"""

# memory_vec / chunk_vec: vec0 tables (cosine), rowid shared with memories / chunks.
#   embedding  float[embed_dim];  active  1 when the row may be returned by default
VECTOR_TABLES = {
    "memory_vec": "embedding float[{dim}] distance_metric=cosine, active integer",
    "chunk_vec": "embedding float[{dim}] distance_metric=cosine",
}

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_id_lock = threading.Lock()
_last_id: list[int] = [0, 0]  # [millis, random80] of the last id, for monotonic ids


def new_id(now: float | None = None) -> str:
    """A 26-char ULID-like id: 48-bit milliseconds then 80 random bits.

    Ids made in the same millisecond increment the random part, so ids always sort in
    creation order within a process.
    """
    millis = int((time.time() if now is None else now) * 1000)
    with _id_lock:
        if millis <= _last_id[0]:
            millis, rand = _last_id[0], _last_id[1] + 1
        else:
            import secrets  # here: only a write makes an id (~5 ms of a hook's start)

            rand = secrets.randbits(80)
        _last_id[0], _last_id[1] = millis, rand
    value = (millis << 80) | (rand & ((1 << 80) - 1))
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def pack_vector(vector: Sequence[float] | npt.NDArray[np.float32]) -> bytes:
    """float32 little-endian, as vec0 stores it (a list or a numpy row)."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def unpack_vector(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


@contextmanager
def reported_errors() -> Iterator[None]:
    """SQLite's failures as the errors every surface reports (one line, exit 1, an
    errno): a damaged, full or locked memory.db is the user's to fix, not a traceback."""
    try:
        yield
    except apsw.FullError:
        raise StoreFull("the disk holding memory.db is full: free some space") from None
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        raise CorruptObject(f"memory.db is damaged ({exc})") from None
    except apsw.BusyError:
        raise Busy("memory.db is locked by another process: try again") from None
    except (apsw.IOError, apsw.CantOpenError) as exc:
        raise DiskFailed(
            f"memory.db cannot be read or written ({exc}): is the disk full?"
        ) from None
    except apsw.Error as exc:
        raise HelixError(f"the memory database failed: {exc}") from None


# How long a statement waits for another connection's write lock before "locked".
BUSY_TIMEOUT_MS = 10_000
_SCHEMA_NAMES = frozenset(re.findall(r"IF NOT EXISTS (\w+)", SCHEMA))
# Columns added to `memories` after its first release, each NULL for the rows before.
ADDED_COLUMNS = (
    ("branch", "TEXT"),
    ("base_commit", "TEXT"),
    ("source_blob", "TEXT"),
    ("moved_from", "TEXT"),
)


def connect(path: str | os.PathLike[str]) -> apsw.Connection:
    """Open (creating if needed) the database, with extensions, WAL and the schema."""
    db_path = Path(path)
    if db_path.is_dir():
        raise InvalidInput(f"{db_path} is a directory; give the memory database file path")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(db_path))
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    load_vectors_extension(conn)
    _use_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA secure_delete=ON")
    # Reads through a memory map: a vec0 point lookup walks a ~1.5 MB chunk blob's page
    # chain, 0.3-5 ms through read() at 100,000 memories, ~0.05 ms mapped.
    conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    conn.execute("PRAGMA foreign_keys=ON")
    _check_version(conn, db_path)
    if not schema_complete(conn):
        with writing(conn):
            _add_columns(conn)
            conn.execute(SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
    return conn


def load_vectors_extension(conn: apsw.Connection) -> None:
    """sqlite-vec, for the vec0 tables (memory_vec, chunk_vec)."""
    conn.enable_load_extension(True)
    conn.load_extension(vectors_extension_path())
    conn.enable_load_extension(False)


def vectors_extension_path() -> str:
    """sqlite_vec.loadable_path(), found without importing the package: its __init__
    imports numpy (~65 ms), which a hook with no daemon that reads no vector (a
    SessionStart, a PreToolUse on a store with embeddings) must not pay."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:  # not a plain folder package
        import sqlite_vec

        return str(sqlite_vec.loadable_path())
    return os.path.normpath(os.path.join(list(spec.submodule_search_locations)[0], "vec0"))


def _use_wal(conn: apsw.Connection) -> None:
    """Switch the database to WAL (a no-op once it is). Connections creating a new one at
    once (the daemon's memory opening on its thread, a read beside it, the CLI) can
    deadlock in the rollback journal's locks, and SQLite then refuses one of them at
    once, busy timeout or not (12 rounds in 100 of four threads opening a new file):
    that one tries again."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except apsw.BusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


@contextmanager
def writing(conn: apsw.Connection) -> Iterator[None]:
    """A write transaction that holds SQLite's write lock from its first statement.

    A deferred transaction (apsw's `with conn`) that reads and then writes fails at once
    with "database is locked", whatever the busy timeout, when another connection wrote
    in between: its snapshot is stale and SQLite cannot wait that out. Taking the lock
    first makes a second writer (the daemon, the CLI, the MCP server, a thread) wait its
    turn instead. Inside the caller's transaction it is a savepoint."""
    if conn.in_transaction:
        with conn:
            yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def schema_complete(conn: apsw.Connection) -> bool:
    """Every table, index and column of SCHEMA exists: opening the database then writes
    nothing, so a reader never waits for (or fails on) another connection's write."""
    have = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    return (
        have >= _SCHEMA_NAMES
        and not _missing_columns(conn)
        and bool(conn.execute("SELECT 1 FROM meta WHERE key='schema_version'").fetchone())
    )


def _missing_columns(conn: apsw.Connection) -> list[tuple[str, str]]:
    have = {str(r[1]) for r in conn.execute("PRAGMA table_info(memories)")}
    if not have:  # a new database: SCHEMA creates the table whole
        return []
    return [(name, kind) for name, kind in ADDED_COLUMNS if name not in have]


def _add_columns(conn: apsw.Connection) -> None:
    """A database from before ADDED_COLUMNS gains them (NULL in every row), before
    SCHEMA's indexes on them are made. Older HelixFS still reads and writes it: it
    names its columns."""
    for name, kind in _missing_columns(conn):
        conn.execute(f"ALTER TABLE memories ADD COLUMN {name} {kind}")


def _check_version(conn: apsw.Connection, db_path: Path) -> None:
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
    ).fetchone()
    if not has_meta:
        return
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is not None and int(row[0]) > SCHEMA_VERSION:
        raise UnsupportedVersion(
            f"memory database {db_path} has schema version {row[0]}, newer than this "
            f"HelixFS understands ({SCHEMA_VERSION}); upgrade HelixFS to open it"
        )


def get_meta(conn: apsw.Connection, key: str, default: str = "") -> str:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return str(row[0]) if row else default


def set_meta(conn: apsw.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        (key, value),
    )


def table_exists(conn: apsw.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (name,)).fetchone()
    return row is not None


def create_vector_tables(conn: apsw.Connection, dim: int) -> None:
    """(Re)create the vec0 tables for `dim`; the caller re-fills them."""
    for name, columns in VECTOR_TABLES.items():
        conn.execute(f"DROP TABLE IF EXISTS {name}")
        conn.execute(f"CREATE VIRTUAL TABLE {name} USING vec0({columns.format(dim=dim)})")


def fetch_all(conn: apsw.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(sql, params).fetchall()]


def fetch_one(
    conn: apsw.Connection, sql: str, params: Sequence[Any] = ()
) -> tuple[Any, ...] | None:
    row = conn.execute(sql, params).fetchone()
    return tuple(row) if row is not None else None
