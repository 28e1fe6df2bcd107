"""The canonical, versioned records HelixFS stores: blobs, chunked files, trees, commits.

Every record is `b"HLX" + kind(1) + version(1) + body` and its id is the BLAKE3 of the
whole record, so the encoding must be canonical: one value, one byte string. All integers
are little-endian and fixed-width; every variable field is length-prefixed, so names are
arbitrary bytes (invalid UTF-8 included) and a decoder never guesses.

Body layouts, version 1:

- blob (`B`): the file bytes, verbatim.
- chunked file (`C`): total size u64, count u32, then per chunk: chunk id (32 bytes, the id
  of a blob record) and length u32. Chunks are cut by FastCDC, so an edit in the middle of
  a large file changes only the chunks around it.
- tree (`T`): count u32, then entries sorted by name, each: name length u16, name, mode
  u32, id (32), size u64, mtime_ns i64, xattr count u16, then per xattr: key length u16,
  key, value length u32, value (xattrs sorted by key).
- paged tree (`P`): a directory of more than `FLAT_MAX` entries, cut into pages so that
  a change rewrites one page and this short index, not the whole listing. Body: page
  count u32, then per page: the id of a tree record (`T`) holding a run of the entries,
  and its entry count u32. Pages are in name order; where they end is a function of the
  names alone (`page_lengths`), so one listing has one encoding.
- root (`R`): a root listing with the root folder's own attributes, which no entry
  holds (ADR 0044): listing id (32, a `T` or `P` record), mode u32, xattr count u16,
  then the xattrs as a tree entry's. Only a commit's tree (or a work ref) names one,
  and only when the root's mode or owner is not the default (0755, the mounting user).
- commit (`M`): tree id (32), parent count u8, parents (32 each), time_ns i64, author
  (u16 length + UTF-8), message (u32 length + UTF-8), metadata (u32 length + canonical
  JSON: sorted keys, no spaces).
"""

from __future__ import annotations

import json
import stat
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from helixfs.errors import CorruptObject, InvalidInput, UnsupportedVersion
from helixfs.ids import ID_SIZE, CommitId, ObjectId, hex_id, object_id

MAGIC = b"HLX"
VERSION = 1
KIND_BLOB = b"B"
KIND_CHUNKED = b"C"
KIND_TREE = b"T"
KIND_COMMIT = b"M"
KIND_PAGED = b"P"
KIND_ROOT = b"R"
KIND_NAMES = {
    KIND_BLOB: "blob",
    KIND_CHUNKED: "chunked file",
    KIND_TREE: "tree",
    KIND_PAGED: "paged tree",
    KIND_COMMIT: "commit",
    KIND_ROOT: "root",
}
KINDS = (KIND_BLOB, KIND_CHUNKED, KIND_TREE, KIND_COMMIT, KIND_PAGED, KIND_ROOT)
DIRECTORY_KINDS = (KIND_TREE, KIND_PAGED)
ROOT_KINDS = (*DIRECTORY_KINDS, KIND_ROOT)  # what a commit's tree (a work ref) may be
HEADER_SIZE = len(MAGIC) + 2

_HEADERS = {kind: MAGIC + kind + bytes([VERSION]) for kind in KINDS}
_UNCOMPRESSED = frozenset((KIND_TREE, KIND_COMMIT, KIND_PAGED, KIND_ROOT))
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")
_CHUNKED_HEAD = struct.Struct("<QI")
_CHUNK_REF = struct.Struct(f"<{ID_SIZE}sI")
_ENTRY_FIXED = struct.Struct(f"<I{ID_SIZE}sQqH")
ENTRY_FIXED_BYTES = 2 + _ENTRY_FIXED.size  # an encoded entry beside its name (and xattrs)
TREE_HEAD_BYTES = HEADER_SIZE + _U32.size  # a flat tree record before its entries
_XATTR_KEY = struct.Struct("<H")
_ENTRY_ID_XATTRS = struct.Struct(f"<4x{ID_SIZE}s16xH")  # _ENTRY_FIXED's id and xattr count
_ENTRY_MODE_ID_XATTRS = struct.Struct(f"<I{ID_SIZE}s16xH")  # ... and its mode
_FORMAT_BITS = 0o170000  # stat.S_IFMT's mask: a mode's file type
_COMMIT_TIME = struct.Struct("<q")
_ROOT_HEAD = struct.Struct(f"<{ID_SIZE}sIH")
_PAGE_REF = struct.Struct(f"<{ID_SIZE}sI")

# Pages: a directory above FLAT_MAX entries is paged. A page ends after a name whose
# CRC-32 has its low 7 bits clear (~128 entries a page, and an insert or a delete moves
# no other page's ends), or at PAGE_MAX entries (so a run of unlucky names stays bounded).
FLAT_MAX = 512
PAGE_MAX = 1024
_PAGE_END_MASK = 127

MAX_NAME = 0xFFFF
# Bytes looked for in names as ints: `b"/" in name` first tries b"/" as an int and
# formats a TypeError it then drops (~1,200 instructions; a commit did it 18 times),
# where `SLASH in name` is a memchr.
SLASH = ord("/")
NUL = 0
MODE_DIR = stat.S_IFDIR | 0o755
MODE_FILE = stat.S_IFREG | 0o644
MODE_LINK = stat.S_IFLNK | 0o777
# Linux's XATTR_LIST_MAX: a listxattr answer past it fails with E2BIG, so a file holding
# more names could never have them listed again (getfattr -d, rsync -X, cp -a).
XATTR_LIST_MAX = 65536
# Names and values of one file, in all. They live in its folder's tree record, written
# again by every commit of that folder until gc: 100 values of 64 KiB on one file made
# each save beside it store 6.4 MB. (ext4 allows 4 KiB in all without ea_inode.) The
# mount refuses a set past it (ENOSPC); an import keeps what fits.
XATTR_TOTAL_MAX = 128 << 10
EMPTY_KINDS = (stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFCHR, stat.S_IFBLK)
"""Kinds stored with the empty blob: a pipe, a socket or a device holds no content, only
its name, mode and times (the kernel gives it its behaviour), and a device its number
(attrs.RDEV)."""
_USUAL_PERMS = (0o644, 0o664, 0o600, 0o755, 0o775, 0o700)


class TreeEntry(NamedTuple):
    """One name in a directory. `oid` is a blob/chunked id (file, symlink) or a tree id.

    A NamedTuple, not a frozen dataclass: one is built per entry of every tree decoded
    and per directory on a commit's path, and a frozen dataclass's constructor cost 2x.
    """

    name: bytes
    mode: int
    oid: ObjectId
    size: int = 0
    mtime_ns: int = 0
    xattrs: tuple[tuple[bytes, bytes], ...] = ()

    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    def is_file(self) -> bool:
        return stat.S_ISREG(self.mode)

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self.mode)


class Tree(NamedTuple):
    """A directory listing. `raw` keeps each entry's encoding so path copying can splice
    one changed entry into an otherwise identical listing without re-encoding the rest.
    `own`: a root's own mode and xattrs (a `R` record's: name b"", oid its listing's).

    A NamedTuple like TreeEntry: a commit builds one per directory on its path. (So
    `==` compares names, raw and pages too; nothing compares listings, only their ids.)
    """

    entries: tuple[TreeEntry, ...]
    names: tuple[bytes, ...] = ()
    raw: tuple[bytes, ...] = ()
    pages: tuple[tuple[ObjectId, int], ...] = ()
    own: TreeEntry | None = None


@dataclass(frozen=True, slots=True)
class ChunkedFile:
    size: int
    chunks: tuple[tuple[ObjectId, int], ...]  # (blob id, length)


@dataclass(frozen=True)
class Commit:
    """A commit record. `id` is filled in by decode_commit (it is the hash, not a field)."""

    tree: ObjectId
    parents: tuple[CommitId, ...]
    time_ns: int
    author: str
    message: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    id: CommitId = field(default=CommitId(b""), compare=False)


# -- headers ---------------------------------------------------------------------------


def uncompressed(objects: Mapping[ObjectId, bytes]) -> set[ObjectId]:
    """The trees and commits among `objects`: not worth LZ4 on the write path.

    A tree is mostly 32-byte ids (LZ4 took a 6 KB root tree to 4 KB for 7.5 us, a third
    of a commit's own CPU), a commit mostly ids and short text; RocksDB's ZSTD block
    compression codes both in the background anyway.
    """
    return {oid for oid, record in objects.items() if record[3:4] in _UNCOMPRESSED}


def is_structure(record: bytes) -> bool:
    """Whether a record is a commit or a folder's (tree, paged tree, root record): what a
    lazy clone fetches and a push packs apart from file contents (ADR 0081)."""
    return record[3:4] in _UNCOMPRESSED


def kind_of(record: bytes) -> bytes:
    """The kind byte of a record, after checking magic and version."""
    if len(record) < HEADER_SIZE or record[:3] != MAGIC:
        raise CorruptObject("not a HelixFS record (bad magic)")
    kind = record[3:4]
    if kind not in _HEADERS:
        raise UnsupportedVersion(
            f"unknown record kind {kind!r}: written by a newer HelixFS? upgrade to read it"
        )
    if record[4] != VERSION:
        raise UnsupportedVersion(
            f"record version {record[4]} of kind {kind.decode()} is not supported "
            f"(this HelixFS reads version {VERSION}): upgrade HelixFS"
        )
    return kind


def _body(record: bytes, kind: bytes) -> memoryview:
    found = kind_of(record)
    if found != kind:
        raise CorruptObject(f"expected a {kind.decode()} record, found {found.decode()}")
    return memoryview(record)[HEADER_SIZE:]


# -- blobs and chunked files -------------------------------------------------------------


def encode_blob(data: bytes | bytearray | memoryview) -> bytes:
    return b"".join((_HEADERS[KIND_BLOB], data))  # one copy, of a chunk's view too


def decode_blob(record: bytes) -> bytes:
    _body(record, KIND_BLOB)
    return record[HEADER_SIZE:]


def encode_chunked(chunks: Sequence[tuple[ObjectId, int]]) -> bytes:
    total = sum(length for _, length in chunks)
    parts = [_HEADERS[KIND_CHUNKED], _CHUNKED_HEAD.pack(total, len(chunks))]
    parts.extend(_CHUNK_REF.pack(oid, length) for oid, length in chunks)
    return b"".join(parts)


def decode_chunked(record: bytes) -> ChunkedFile:
    body = _body(record, KIND_CHUNKED)
    try:
        total, count = _CHUNKED_HEAD.unpack_from(body, 0)
        if len(body) != _CHUNKED_HEAD.size + count * _CHUNK_REF.size:
            raise CorruptObject("chunked file record has the wrong length")
        chunks = tuple(
            (ObjectId(oid), length)
            for oid, length in _CHUNK_REF.iter_unpack(body[_CHUNKED_HEAD.size :])
        )
    except struct.error as exc:
        raise CorruptObject(f"truncated chunked file record: {exc}") from None
    if sum(length for _, length in chunks) != total:
        raise CorruptObject("chunked file record: chunk lengths do not add up to its size")
    return ChunkedFile(total, chunks)


def count_chunk(record: bytes, chunk: tuple[ObjectId, int]) -> int:
    """How many times a chunked file's index lists `chunk`, without decoding the index
    (a 64 GiB file's has 262,144 entries): a 36-byte entry could match astride two others
    only if their BLAKE3 ids happened to spell it."""
    _body(record, KIND_CHUNKED)
    return record.count(_CHUNK_REF.pack(*chunk), HEADER_SIZE + _CHUNKED_HEAD.size)


# -- trees ---------------------------------------------------------------------------------


def valid_name(name: bytes) -> bool:
    """A name a directory entry may have: not empty, not `.` or `..`, no `/` or NUL."""
    return bool(name) and SLASH not in name and NUL not in name and name not in (b".", b"..")


def encode_entry(entry: TreeEntry) -> bytes:
    name = entry.name
    if len(name) > MAX_NAME or not valid_name(name):
        raise InvalidInput(f"invalid file name {name!r:.80}")
    return entry_bytes(entry)


def entry_bytes(entry: TreeEntry) -> bytes:
    """`encode_entry` of an entry whose name is known to be valid (path copying's:
    split_path checked each name of a change)."""
    name, xattrs = entry.name, entry.xattrs
    head = b"".join(
        (
            _U16.pack(len(name)),
            name,
            _ENTRY_FIXED.pack(entry.mode, entry.oid, entry.size, entry.mtime_ns, len(xattrs)),
        )
    )
    if not xattrs:
        return head
    parts = [head]
    for key, value in xattrs:
        parts.append(_XATTR_KEY.pack(len(key)) + key + _U32.pack(len(value)) + value)
    return b"".join(parts)


def encode_tree_raw(raw_entries: Sequence[bytes]) -> bytes:
    """A tree record from already-encoded entries, in name order (the caller's promise)."""
    return _HEADERS[KIND_TREE] + _U32.pack(len(raw_entries)) + b"".join(raw_entries)


def encode_tree(entries: Sequence[TreeEntry]) -> bytes:
    ordered = sorted(entries, key=lambda e: e.name)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if before.name == after.name:
            raise InvalidInput(f"duplicate name {before.name!r} in one directory")
    return encode_tree_raw([encode_entry(e) for e in ordered])


def decode_tree(record: bytes) -> Tree:
    body = _body(record, KIND_TREE)
    try:
        return _decode_tree_body(bytes(body))
    except (struct.error, IndexError) as exc:
        raise CorruptObject(f"truncated tree record: {exc}") from None


# The usual modes of files and folders, and the symlinks': one int each for every
# decoded entry (and every Node made from one) instead of an int (28 bytes) per entry.
_MODES = {
    mode: mode
    for mode in [MODE_LINK]
    + [kind | perm for kind in (stat.S_IFREG, stat.S_IFDIR) for perm in _USUAL_PERMS]
}


def _decode_tree_body(body: bytes) -> Tree:
    (count,) = _U32.unpack_from(body, 0)
    pos = 4
    entries: list[TreeEntry] = []
    raws: list[bytes] = []
    names: list[bytes] = []
    for _ in range(count):
        start = pos
        (name_len,) = _U16.unpack_from(body, pos)
        pos += 2
        name = body[pos : pos + name_len]
        pos += name_len
        mode, oid, size, mtime_ns, nx = _ENTRY_FIXED.unpack_from(body, pos)
        mode = _MODES.get(mode, mode)  # shared with every other entry of the same mode
        pos += _ENTRY_FIXED.size
        xattrs: list[tuple[bytes, bytes]] = []
        for _ in range(nx):
            (klen,) = _XATTR_KEY.unpack_from(body, pos)
            key = body[pos + 2 : pos + 2 + klen]
            pos += 2 + klen
            (vlen,) = _U32.unpack_from(body, pos)
            value = body[pos + 4 : pos + 4 + vlen]
            pos += 4 + vlen
            if len(value) != vlen:
                raise CorruptObject("truncated xattr in tree record")
            xattrs.append((key, value))
        if len(name) != name_len or (names and name <= names[-1]):
            raise CorruptObject("tree record entries are truncated or not sorted")
        entries.append(TreeEntry(name, mode, ObjectId(oid), size, mtime_ns, tuple(xattrs)))
        names.append(name)
        raws.append(body[start:pos])
    if pos != len(body):
        raise CorruptObject("tree record has trailing bytes")
    return Tree(tuple(entries), tuple(names), tuple(raws))


def _tree_ids(body: memoryview) -> list[ObjectId]:
    """The child ids of a tree body, read without decoding its entries (gc marks every
    tree of the history: building the entries was half of its time)."""
    try:
        (count,) = _U32.unpack_from(body, 0)
        pos = 4
        ids: list[ObjectId] = []
        for _ in range(count):
            pos += 2 + _U16.unpack_from(body, pos)[0]
            oid, xattrs = _ENTRY_ID_XATTRS.unpack_from(body, pos)
            ids.append(ObjectId(oid))
            pos += _ENTRY_FIXED.size
            if xattrs:
                pos = _past_xattrs(body, pos, xattrs)
    except struct.error as exc:
        raise CorruptObject(f"truncated tree record: {exc}") from None
    _check_tree_end(body, pos)
    return ids


def tree_dirs(record: bytes) -> dict[bytes, ObjectId]:
    """The folders a (flat) tree record lists, by name, read as `_tree_ids` reads ids:
    gc's repack reads every tree that changed (ADR 0027), and decode_tree took 2x."""
    return _tree_dirs(_body(record, KIND_TREE))


def _tree_dirs(body: memoryview) -> dict[bytes, ObjectId]:
    try:
        (count,) = _U32.unpack_from(body, 0)
        pos = 4
        dirs: dict[bytes, ObjectId] = {}
        for _ in range(count):
            (name_len,) = _U16.unpack_from(body, pos)
            pos += 2 + name_len
            mode, oid, xattrs = _ENTRY_MODE_ID_XATTRS.unpack_from(body, pos)
            if stat.S_ISDIR(mode):
                dirs[bytes(body[pos - name_len : pos])] = ObjectId(oid)
            pos += _ENTRY_FIXED.size
            if xattrs:
                pos = _past_xattrs(body, pos, xattrs)
    except struct.error as exc:
        raise CorruptObject(f"truncated tree record: {exc}") from None
    _check_tree_end(body, pos)
    return dirs


def tree_names(record: bytes) -> list[tuple[bytes, ObjectId]]:
    """(name, id) of each entry of a (flat) tree record, read as `_tree_ids` reads ids:
    a push pairs each new folder's names with its parent's (vcs/outgoing.py), and
    decode_tree took 2x."""
    body = _body(record, KIND_TREE)
    try:
        (count,) = _U32.unpack_from(body, 0)
        pos = 4
        found: list[tuple[bytes, ObjectId]] = []
        for _ in range(count):
            (name_len,) = _U16.unpack_from(body, pos)
            pos += 2 + name_len
            oid, xattrs = _ENTRY_ID_XATTRS.unpack_from(body, pos)
            found.append((bytes(body[pos - name_len : pos]), ObjectId(oid)))
            pos += _ENTRY_FIXED.size
            if xattrs:
                pos = _past_xattrs(body, pos, xattrs)
    except struct.error as exc:
        raise CorruptObject(f"truncated tree record: {exc}") from None
    _check_tree_end(body, pos)
    return found


def _past_xattrs(body: memoryview, pos: int, count: int) -> int:
    for _ in range(count):
        pos += 2 + _XATTR_KEY.unpack_from(body, pos)[0]
        pos += 4 + _U32.unpack_from(body, pos)[0]
    return pos


def _check_tree_end(body: memoryview, pos: int) -> None:
    if pos != len(body):
        raise CorruptObject("tree record is truncated or has trailing bytes")


def is_page_end(name: bytes) -> bool:
    """Whether a page ends after this name (unless PAGE_MAX ended it earlier)."""
    return zlib.crc32(name) & _PAGE_END_MASK == 0


def page_lengths(names: Sequence[bytes]) -> list[int]:
    """How many entries each page holds, for names in order (the last page ends with
    them). A scan started at any page start gives the same pages as one from the top."""
    lengths, count = [], 0
    for name in names:
        count += 1
        if count == PAGE_MAX or is_page_end(name):
            lengths.append(count)
            count = 0
    if count:
        lengths.append(count)
    return lengths


def encode_paged(pages: Sequence[tuple[ObjectId, int]]) -> bytes:
    """A paged tree record from (page tree id, entry count) pairs in name order."""
    parts = [_HEADERS[KIND_PAGED], _U32.pack(len(pages))]
    parts.extend(_PAGE_REF.pack(oid, count) for oid, count in pages)
    return b"".join(parts)


def decode_paged(record: bytes) -> tuple[tuple[ObjectId, int], ...]:
    body = _body(record, KIND_PAGED)
    try:
        (count,) = _U32.unpack_from(body, 0)
        if len(body) != 4 + count * _PAGE_REF.size:
            raise CorruptObject("paged tree record has the wrong length")
        pages = tuple((ObjectId(oid), n) for oid, n in _PAGE_REF.iter_unpack(body[4:]))
    except struct.error as exc:
        raise CorruptObject(f"truncated paged tree record: {exc}") from None
    if not pages or any(n == 0 for _, n in pages):
        raise CorruptObject("paged tree record without pages or with an empty page")
    return pages


def join_pages(pages: tuple[tuple[ObjectId, int], ...], trees: Sequence[Tree]) -> Tree:
    """One listing from a paged tree's pages, checked against the index."""
    for (oid, count), page in zip(pages, trees, strict=True):
        if len(page.entries) != count:
            raise CorruptObject(f"page {hex_id(oid)} does not hold the {count} entries listed")
    names = tuple(name for page in trees for name in page.names)
    for page, after in zip(trees, trees[1:], strict=False):
        if page.names[-1] >= after.names[0]:
            raise CorruptObject("paged tree pages overlap or are out of order")
    entries = tuple(entry for page in trees for entry in page.entries)
    raws = tuple(raw for page in trees for raw in page.raw)
    return Tree(entries, names, raws, pages)


# -- roots --------------------------------------------------------------------------------


def root_record(listing: ObjectId, mode: int, xattrs: tuple[tuple[bytes, bytes], ...]) -> bytes:
    """A root's record: its listing with the mode and xattrs the root folder has."""
    parts = [_HEADERS[KIND_ROOT], _ROOT_HEAD.pack(listing, mode, len(xattrs))]
    for key, value in xattrs:
        parts.append(_XATTR_KEY.pack(len(key)) + key + _U32.pack(len(value)) + value)
    return b"".join(parts)


def decode_root(record: bytes) -> TreeEntry:
    """A root record as an entry named b"" whose oid is the listing's."""
    body = bytes(_body(record, KIND_ROOT))
    try:
        listing, mode, count = _ROOT_HEAD.unpack_from(body, 0)
        pos, xattrs = _ROOT_HEAD.size, []
        for _ in range(count):
            key, pos = _take(body, pos, _XATTR_KEY)
            value, pos = _take(body, pos, _U32)
            xattrs.append((key, value))
    except struct.error as exc:
        raise CorruptObject(f"truncated root record: {exc}") from None
    keys = [key for key, _ in xattrs]
    if pos != len(body) or not stat.S_ISDIR(mode) or keys != sorted(set(keys)):
        raise CorruptObject("malformed root record")
    return TreeEntry(b"", mode, ObjectId(listing), 0, 0, tuple(xattrs))


# -- commits --------------------------------------------------------------------------------


# One encoder for all commits: json.dumps with these options built a new one per call.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)
# The C encoder JSONEncoder.encode builds on every call, built once (half the cost of a
# commit's metadata): the same options, so the same bytes. Without a table of the
# containers being encoded (a shared one would keep them after a failed encode), a
# cycle ends in RecursionError rather than ValueError.
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # None without _json
_ENCODE: Any = (
    None
    if _MAKE_ENCODER is None
    else _MAKE_ENCODER(
        None,  # markers
        _CANONICAL.default,
        json.encoder.encode_basestring_ascii,
        None,  # indent
        ":",
        ",",
        True,  # sort_keys
        False,  # skipkeys
        False,  # allow_nan
    )
)


def canonical_json(meta: Mapping[str, Any]) -> bytes:
    try:
        if _ENCODE is not None and isinstance(meta, dict):
            return "".join(_ENCODE(meta, 0)).encode()
        return _CANONICAL.encode(meta).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"commit metadata must be JSON-serialisable: {exc}") from None


def _commit_text(text: object, what: str) -> bytes:
    """A commit's author or message as bytes. Surrogate escapes are bytes that were not
    UTF-8 (a git import's) and go back to them; any other surrogate (a lone '\\ud800'
    from a JSON string) has no bytes: a clear refusal, not a UnicodeEncodeError."""
    if not isinstance(text, str):
        raise InvalidInput(f"commit {what} must be a string, not {type(text).__name__}")
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as err:
        raise InvalidInput(f"commit {what} holds {err.object[err.start]!r}, not text") from None


def encode_commit(commit: Commit) -> bytes:
    return commit_record(
        commit.tree, commit.parents, commit.time_ns, commit.author, commit.message, commit.meta
    )


def commit_record(
    tree: ObjectId,
    parents: tuple[CommitId, ...],
    time_ns: int,
    author: str,
    message: str,
    meta: Mapping[str, Any],
) -> bytes:
    """The record of a commit with these fields: a writer hashes it for the id its
    `Commit` is then built with (one Commit per new commit, not a second one for the id)."""
    if len(parents) > 255:
        raise InvalidInput("a commit has at most 255 parents")
    author_raw = _commit_text(author, "author")
    if len(author_raw) > 0xFFFF:  # its length is a u16
        raise InvalidInput(f"an author is at most 65535 bytes, not {len(author_raw)}")
    message_raw = _commit_text(message, "message")
    meta_raw = canonical_json(meta)
    return b"".join(
        [
            _HEADERS[KIND_COMMIT],
            tree,
            bytes([len(parents)]),
            *parents,
            _COMMIT_TIME.pack(time_ns),
            _U16.pack(len(author_raw)),
            author_raw,
            _U32.pack(len(message_raw)),
            message_raw,
            _U32.pack(len(meta_raw)),
            meta_raw,
        ]
    )


def decode_commit(record: bytes, cid: CommitId | None = None) -> Commit:
    body = bytes(_body(record, KIND_COMMIT))
    try:
        tree = ObjectId(body[:ID_SIZE])
        nparents = body[ID_SIZE]
        pos = ID_SIZE + 1
        parents = tuple(
            CommitId(body[pos + i * ID_SIZE : pos + (i + 1) * ID_SIZE]) for i in range(nparents)
        )
        pos += nparents * ID_SIZE
        (time_ns,) = _COMMIT_TIME.unpack_from(body, pos)
        author, pos = _take(body, pos + 8, _U16)
        message, pos = _take(body, pos, _U32)
        meta_raw, pos = _take(body, pos, _U32)
        meta = json.loads(meta_raw)
    except (struct.error, IndexError, ValueError) as exc:
        raise CorruptObject(f"malformed commit record: {exc}") from None
    if pos != len(body) or len(tree) != ID_SIZE or not isinstance(meta, dict):
        raise CorruptObject("malformed commit record")
    return Commit(
        tree,
        parents,
        time_ns,
        author.decode("utf-8", "surrogateescape"),
        message.decode("utf-8", "surrogateescape"),
        meta,
        cid if cid is not None else CommitId(object_id(record)),
    )


def _take(body: bytes, pos: int, prefix: struct.Struct) -> tuple[bytes, int]:
    (length,) = prefix.unpack_from(body, pos)
    start = pos + prefix.size
    value = body[start : start + length]
    if len(value) != length:
        raise CorruptObject("truncated field in record")
    return value, start + length


# -- generic ------------------------------------------------------------------------------


def references(record: bytes) -> list[ObjectId]:
    """Ids a record points at (for gc marking and fsck). Blobs point at nothing."""
    kind = kind_of(record)
    if kind == KIND_TREE:
        return _tree_ids(_body(record, KIND_TREE))
    if kind == KIND_PAGED:
        return [oid for oid, _ in decode_paged(record)]
    if kind == KIND_ROOT:
        return [decode_root(record).oid]
    if kind == KIND_CHUNKED:
        return [oid for oid, _ in decode_chunked(record).chunks]
    if kind == KIND_COMMIT:
        commit = decode_commit(record)
        return [commit.tree, *(ObjectId(p) for p in commit.parents)]
    return []


def structure_references(record: bytes) -> list[ObjectId]:
    """What a record points at, file contents left out: a commit's tree and parents, a
    tree's folders, a paged tree's pages, a root record's listing (what a lazy clone
    fetches: vcs/ondemand.py)."""
    kind = kind_of(record)
    if kind == KIND_TREE:  # read as gc reads ids: decode_tree was 60% of a lazy clone's CPU
        return list(_tree_dirs(_body(record, KIND_TREE)).values())
    if kind in (KIND_PAGED, KIND_COMMIT, KIND_ROOT):
        return references(record)
    return []


def decode_any(record: bytes) -> object:
    """Decode a record of any kind: fsck's proof that a record is well formed."""
    kind = kind_of(record)
    if kind == KIND_BLOB:
        return decode_blob(record)
    if kind == KIND_CHUNKED:
        return decode_chunked(record)
    if kind == KIND_TREE:
        return decode_tree(record)
    if kind == KIND_PAGED:
        return decode_paged(record)
    if kind == KIND_ROOT:
        return decode_root(record)
    return decode_commit(record)


def short(oid: bytes) -> str:
    return hex_id(oid)[:12]
