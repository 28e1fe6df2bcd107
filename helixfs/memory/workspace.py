"""Workspace knowledge: text files chunked into passages, indexed by FTS and vectors.

Chunk boundaries prefer blank lines so an edit high in a file leaves the later chunks
byte-identical (same BLAKE3, same cached vector). Vectors are cached by (BLAKE3 of the
redacted chunk text, model): a text seen on any branch, at any time, is embedded once.
Embedding runs outside transactions, so the CLI is never locked out for a model call.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
import blake3

from helixfs.errors import InvalidInput
from helixfs.memory.db import (
    fetch_all,
    get_meta,
    pack_vector,
    set_meta,
    table_exists,
    unpack_vector,
    writing,
)
from helixfs.memory.redact import redact
from helixfs.memory.skipfiles import skip_reason
from helixfs.memory.tokens import fts_text

if TYPE_CHECKING:  # numpy: only a pass that embeds needs it
    from helixfs.memory.outcomes import IndexReport
    from helixfs.memory.vectors import EmbedderRunner

MAX_FILE_BYTES = 1 << 20
MIN_LINES = 12  # a blank line ends a chunk once it has this many lines
MAX_LINES = 60
MAX_CHARS = 2400
FILES_PER_BATCH = 64
PASS_COMMIT = "workspace_pass_commit"  # meta: the commit of the last pass begun
INDEXED_COMMIT = "workspace_commit"  # meta: the commit of the last pass completed
PROGRESS = "workspace_progress"  # meta: "DONE TOTAL", passages of the pass under way


@dataclass(frozen=True)
class Chunk:
    start_line: int
    end_line: int
    text: str


def as_text(data: bytes) -> str | None:
    """UTF-8 text without NULs, under 1 MiB; anything else is not indexed."""
    if len(data) > MAX_FILE_BYTES or b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def indexable_text(path: str, data: bytes) -> str | None:
    """The text of a file the index holds: text (`as_text`), and not a lock file, a
    vendored, minified or generated one (helixfs/memory/skipfiles.py)."""
    text = as_text(data)
    return None if text is None or skip_reason(path, text) else text


def chunk_text(text: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    lines = text.splitlines()
    start, size = 0, 0
    for index, line in enumerate(lines):
        size += len(line) + 1
        count = index - start + 1
        boundary = not line.strip() and count >= MIN_LINES
        if boundary or count >= MAX_LINES or size >= MAX_CHARS:
            _emit(chunks, lines, start, index)
            start, size = index + 1, 0
    if start < len(lines):
        _emit(chunks, lines, start, len(lines) - 1)
    return chunks


def _emit(chunks: list[Chunk], lines: list[str], first: int, last: int) -> None:
    body = "\n".join(lines[first : last + 1]).strip("\n")
    if body.strip():
        chunks.append(Chunk(first + 1, last + 1, body))


def text_hash(text: str) -> str:
    return blake3.blake3(text.encode("utf-8")).hexdigest()


def index(
    conn: apsw.Connection,
    lock: threading.RLock,
    files: Mapping[str, bytes],
    commit_id: str,
    vectors: EmbedderRunner | None,
    removed: Sequence[str] | None = None,
    first: Sequence[str] = (),
) -> IndexReport:
    """Index `files` as the workspace of `commit_id`: all of it, or with `removed` given,
    only what changed since the last index (`files` changed or added, `removed` gone).
    `first`: paths indexed before the others (the files an agent works on)."""
    if not isinstance(files, Mapping):
        raise InvalidInput("files must map path -> bytes")
    for path, data in files.items():
        if not isinstance(path, str) or not path or not isinstance(data, bytes | bytearray):
            raise InvalidInput(f"bad workspace entry {path!r}: need a path and its bytes")
    if removed is not None and not all(isinstance(p, str) and p for p in removed):
        raise InvalidInput("removed must be a list of paths")
    embedded_before = vectors.texts_embedded if vectors else 0
    with lock:
        known = {
            str(r[0]): str(r[1])
            for r in conn.execute("SELECT path, file_hash FROM workspace_files")
        }
    if removed is None:
        removed = [p for p in known if p not in files]
    else:  # a changed file that is no longer indexed leaves the index too
        removed = [*removed, *(p for p, d in files.items() if indexable_text(p, bytes(d)) is None)]
        removed = [p for p in dict.fromkeys(removed) if p in known]
    chunks_removed = 0
    changed = _Changed(files, known, first)
    total = changed.passages()
    removed = list(dict.fromkeys([*removed, *changed.left_out]))
    with lock, writing(conn):
        set_meta(conn, PASS_COMMIT, commit_id)  # the chunks this pass writes carry it
        set_meta(conn, PROGRESS, f"0 {total}")
        for path in removed:
            chunks_removed += _drop_file(conn, path)
    indexed = added = hits = 0
    try:
        for batch in changed.batches():
            n_added, n_removed, n_hits = _index_batch(
                conn, lock, batch, commit_id, vectors, (added, total)
            )
            indexed, added, hits = indexed + len(batch), added + n_added, hits + n_hits
            chunks_removed += n_removed
    finally:
        if vectors is not None:
            vectors.passages_done()
    with lock, writing(conn):
        set_meta(conn, PROGRESS, f"{total} {total}")
        # Every passage is now the one of this commit, unchanged files' too: one row says
        # so. Rewriting every chunk's commit id wrote 43 MB a pass at 50,000 chunks.
        set_meta(conn, INDEXED_COMMIT, commit_id)
    from helixfs.memory.outcomes import IndexReport  # here: a hook reads passages only

    return IndexReport(
        commit_id=commit_id,
        files_seen=changed.seen,
        files_indexed=indexed,
        files_removed=len(removed),
        chunks_added=added,
        chunks_removed=chunks_removed,
        embedded=(vectors.texts_embedded - embedded_before) if vectors else 0,
        cache_hits=hits,
    )


class _Changed:
    """The text files whose content the index does not hold, read as they come. With a
    lazy `files` (the daemon's) a pass then holds one batch of texts, not the workspace:
    indexing 100 MB of sources took +196 MB."""

    def __init__(
        self, files: Mapping[str, bytes], known: Mapping[str, str], first: Sequence[str] = ()
    ) -> None:
        self._files = files
        self._known = known
        self._first = [p for p in dict.fromkeys(first) if isinstance(p, str) and p in files]
        self.seen = 0  # text files, changed or not
        self.left_out: list[str] = []  # indexed before, left out now (skipfiles' rules)

    def passages(self) -> int:
        """How many passages the changed files hold: the pass's total, for its progress
        ("workspace index: 1,200 of 3,480 passages"). A read of every file ahead of the
        pass, which costs far less than embedding them."""
        return sum(len(chunk_text(text)) for _, _, text in self._changed(count=False))

    def batches(self) -> Iterator[list[tuple[str, str, str]]]:
        """(path, BLAKE3 hex, text) of changed files, FILES_PER_BATCH at a time."""
        batch = []
        for found in self._changed(count=True):
            batch.append(found)
            if len(batch) == FILES_PER_BATCH:
                yield batch
                batch = []
        if batch:
            yield batch

    def _changed(self, count: bool) -> Iterator[tuple[str, str, str]]:
        ahead = set(self._first)
        ordered = [(path, self._files[path]) for path in self._first]
        rest = ((p, d) for p, d in self._files.items() if p not in ahead)
        for path, data in itertools.chain(ordered, rest):
            text = indexable_text(path, bytes(data))
            if text is None:
                if not count and path in self._known:
                    self.left_out.append(path)
                continue
            self.seen += count
            digest = blake3.blake3(bytes(data)).hexdigest()
            if self._known.get(path) != digest:
                yield path, digest, text


def progress_in(db_path: Path) -> tuple[int, int] | None:
    """`progress` of the memory database at `db_path`, read-only (None without one):
    for `helix stats`, which opens no memory."""
    if not db_path.is_file():
        return None
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(1000)
        if not table_exists(conn, "meta"):
            return None
        return progress(conn)
    finally:
        conn.close()


def progress(conn: apsw.Connection) -> tuple[int, int] | None:
    """(passages indexed, passages in all) of the last index pass; None before any."""
    done, _, total = get_meta(conn, PROGRESS).partition(" ")
    return (int(done), int(total)) if done.isdigit() and total.isdigit() else None


def passage_commits(conn: apsw.Connection) -> Callable[[str], str]:
    """The commit a passage is from, given the one stored with its chunk: the index's,
    but a chunk written by a pass still under way is from that pass's commit. (Another
    chunk is in a file that pass has not changed, or not yet: as of the index's commit.)
    A database indexed before these marks existed reports each chunk's own."""
    indexed = get_meta(conn, INDEXED_COMMIT)
    begun = get_meta(conn, PASS_COMMIT)

    def commit(stored: str) -> str:
        return stored if stored == begun or not indexed else indexed

    return commit


def _index_batch(
    conn: apsw.Connection,
    lock: threading.RLock,
    batch: Sequence[tuple[str, str, str]],
    commit_id: str,
    vectors: EmbedderRunner | None,
    before: tuple[int, int] = (0, 0),
) -> tuple[int, int, int]:
    """`before`: (passages indexed by the pass so far, its total), for its progress."""
    pieces = [
        (path, chunk, redact(chunk.text).text)
        for path, _, text in batch
        for chunk in chunk_text(text)
    ]
    hashes = [text_hash(clean) for _, _, clean in pieces]
    found: list[list[float] | None] = [None] * len(pieces)
    hits = 0
    if vectors is not None:
        found, hits = passage_vectors(conn, lock, vectors, [clean for _, _, clean in pieces])
    removed = 0
    with lock, writing(conn):
        set_meta(conn, PROGRESS, f"{min(before[0] + len(pieces), before[1])} {before[1]}")
        for path, digest, _ in batch:
            removed += _drop_file(conn, path)
            conn.execute(
                "INSERT INTO workspace_files(path, file_hash, commit_id) VALUES (?,?,?)",
                (path, digest, commit_id),
            )
        for (path, chunk, clean), digest, vector in zip(pieces, hashes, found, strict=True):
            conn.execute(
                "INSERT INTO chunks(path, start_line, end_line, text, hash, commit_id) "
                "VALUES (?,?,?,?,?,?)",
                (path, chunk.start_line, chunk.end_line, clean, digest, commit_id),
            )
            rowid = conn.last_insert_rowid()
            conn.execute(
                "INSERT INTO chunks_fts(rowid, body) VALUES (?,?)",
                (rowid, fts_text(f"{path}\n{clean}")),
            )
            if vector is not None:
                conn.execute(
                    "INSERT INTO chunk_vec(rowid, embedding) VALUES (?,?)",
                    (rowid, pack_vector(vector)),
                )
    return len(pieces), removed, hits


def _drop_file(conn: apsw.Connection, path: str) -> int:
    rowids = [int(r[0]) for r in conn.execute("SELECT rowid FROM chunks WHERE path=?", (path,))]
    vec = table_exists(conn, "chunk_vec")
    for rowid in rowids:
        conn.execute("DELETE FROM chunks_fts WHERE rowid=?", (rowid,))
        if vec:
            conn.execute("DELETE FROM chunk_vec WHERE rowid=?", (rowid,))
    conn.execute("DELETE FROM chunks WHERE path=?", (path,))
    conn.execute("DELETE FROM workspace_files WHERE path=?", (path,))
    return len(rowids)


def cached_vectors(
    conn: apsw.Connection, model: str, hashes: Sequence[str]
) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    unique = list(dict.fromkeys(hashes))
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        placeholders = ",".join("?" * len(part))
        for row in conn.execute(
            f"SELECT hash, vector FROM embed_cache WHERE model=? AND hash IN ({placeholders})",
            [model, *part],
        ):
            found[str(row[0])] = unpack_vector(row[1])
    return found


def passage_vectors(
    conn: apsw.Connection, lock: threading.RLock, vectors: EmbedderRunner, texts: Sequence[str]
) -> tuple[list[list[float] | None], int]:
    """A vector for each passage, and how many came from the cache. The cache is keyed by
    the text embedded, the passage's head (`EmbedderRunner.passage_texts`): a head equal
    to a memory's text shares its vector, and a change of head length misses the cache."""
    embedded = vectors.passage_texts(texts)
    keys = [text_hash(text) for text in embedded]
    with lock:
        found = cached_vectors(conn, vectors.model, keys)
    hits = sum(1 for key in keys if key in found)
    missing = {key: text for key, text in zip(keys, embedded, strict=True) if key not in found}
    if missing:
        new = vectors.embed_passages(list(missing.values()))
        found.update(zip(missing, new, strict=True))
        with lock, writing(conn):
            conn.executemany(
                "INSERT OR IGNORE INTO embed_cache(hash, model, vector) VALUES (?,?,?)",
                [(key, vectors.model, pack_vector(v)) for key, v in zip(missing, new, strict=True)],
            )
    return [found[key] for key in keys], hits


def backfill_chunk_vectors(
    conn: apsw.Connection, vectors: EmbedderRunner, lock: threading.RLock
) -> None:
    """Give every chunk a vector for the current model (after lexical-only use or re-embed)."""
    with lock:
        rows = fetch_all(
            conn,
            "SELECT rowid, text FROM chunks WHERE rowid NOT IN (SELECT rowid FROM chunk_vec)",
        )
    for start in range(0, len(rows), 256):
        part = rows[start : start + 256]
        found, _ = passage_vectors(conn, lock, vectors, [str(r[1]) for r in part])
        with lock, writing(conn):
            conn.executemany(
                "INSERT INTO chunk_vec(rowid, embedding) VALUES (?,?)",
                [
                    (int(r[0]), pack_vector(v))
                    for r, v in zip(part, found, strict=True)
                    if v is not None
                ],
            )
