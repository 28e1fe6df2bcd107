"""Opening the RocksDB behind RocksStore: options, column families, the owner file.

Kept apart from the store's logic: this is the part that knows RocksDB's knobs and error
texts, measured and chosen once, while rocks.py is about frames, deltas and refs.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import rocksdict

from helixfs.errors import (
    CorruptObject,
    DiskFailed,
    HelixError,
    InvalidInput,
    StoreFull,
    StoreLocked,
)
from helixfs.lazy import logger

log = logger(__name__)  # logging imported at the first line logged (ADR 0083)


OWNER_FILE = "OWNER"
COLUMN_FAMILIES = ("objects", "bodies", "refs", "meta")
BLOB_FAMILIES = ("objects", "bodies")  # objects: the chunks of stores from before ADR 0018
BLOCK_CACHE_BYTES = 8 << 20  # uncompressed SST blocks; the L1 above holds decoded-ready frames
MIN_BLOB_BYTES = 16 << 10  # FastCDC's smallest chunk: every chunk but a file's last
BLOB_FILE_BYTES = 256 << 20
WRITE_BUFFER_BYTES = 16 << 20  # a family's memtable
WRITE_BUFFERS = 2  # memtables a family may hold, flushing ones included: then writes stall
MEMTABLE_BLOOM_RATIO = 0.02  # of a memtable's bytes: 320 KiB of filter for 16 MiB
RELOCATE_AT_GARBAGE = 0.25  # compact() moves live blobs once this share of blob bytes is dead
DIRECT_BLOCK = 4096  # a write O_DIRECT takes on any block size up to 4 KiB
BLOB_GC_OFF = {"enable_blob_garbage_collection": "false"}


def open_db(path: Path, *, read_only: bool = False) -> rocksdict.Rdict:
    """Open (creating if needed) the RocksDB at `path`, mapping its LOCK error.
    `read_only`: RocksDB's read-only open, which takes no LOCK (the store's writer may
    be running), writes nothing to the database (rocksdict rewrites its own
    rocksdict-config.json, as at every open) and sees what was written before it opened."""
    try:
        if not read_only:
            path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InvalidInput(f"cannot create store directory {path}: {err.strerror}") from err
    cache = rocksdict.Cache(BLOCK_CACHE_BYTES)  # one block cache shared by every family
    options = db_options(cache)
    # Bulk writes skip the log, so a flush must never persist an object's BODY frame
    # in `objects` without its frame in `bodies` (ADR 0018): every family flushes at once.
    options.set_atomic_flush(True)
    if not read_only and direct_writes_work(path):
        # Flushes and compactions write their files past the page cache (ADR 0089): a
        # flush of 1 GiB of chunks took 1.0-1.1 s of CPU so, 1.2-3.2 s buffered, as much
        # as the kernel's page cache made its copy cost. Nothing reads a flush's pages.
        options.set_use_direct_io_for_flush_and_compaction(True)
    try:  # RocksDB refuses to open unless every existing family is named
        existing = set(rocksdict.Rdict.list_cf(str(path), options)) - {"default"}
    except Exception:  # a new, empty directory has none
        existing = set()
    families = {
        name: db_options(cache, blobs=name in BLOB_FAMILIES, looked_up=name == "objects")
        for name in existing.union(COLUMN_FAMILIES)
    }
    access = rocksdict.AccessType.read_only() if read_only else rocksdict.AccessType.read_write()
    try:
        return rocksdict.Rdict(str(path), options, column_families=families, access_type=access)
    except Exception as err:  # rocksdict raises bare Exception with RocksDB's status text
        text = str(err)
        if "LOCK" in text and ("lock" in text.lower() or "unavailable" in text):
            raise StoreLocked(locked_message(path)) from None
        raise InvalidInput(f"cannot open store at {path}: {text}") from err


def direct_writes_work(path: Path) -> bool:
    """Whether the filesystem of `path` takes O_DIRECT writes (ext4 and xfs do, tmpfs
    only since Linux 6.6, some never): RocksDB would fail its first flush otherwise."""
    probe = path / "direct-io-probe"
    block = mmap.mmap(-1, DIRECT_BLOCK)  # page-aligned, as O_DIRECT wants its buffer
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
        try:
            return os.write(fd, block) == DIRECT_BLOCK
        finally:
            os.close(fd)
    except (OSError, AttributeError):  # AttributeError: no O_DIRECT on this platform
        return False
    finally:
        block.close()
        with suppress(OSError):
            probe.unlink()


def memtable_full_soon(family: rocksdict.Rdict, nbytes: int) -> bool:
    """Whether writing `nbytes` more to `family` would stall: its active memtable would
    fill while every other one is still waiting for its flush."""
    flushing = family.property_int_value("rocksdb.num-immutable-mem-table") or 0
    if flushing < WRITE_BUFFERS - 1:
        return False
    active = family.property_int_value("rocksdb.cur-size-active-mem-table") or 0
    return active + nbytes >= WRITE_BUFFER_BYTES


def disk_error(path: Path, err: Exception) -> HelixError:
    """A failed RocksDB write (rocksdict raises a bare Exception with RocksDB's status
    text) as StoreFull or DiskFailed, so that a mount answers ENOSPC or EIO and lives on.

    After such an error RocksDB refuses every write until the store is opened again:
    the space guard (store/space.py) exists so that it never sees a full disk.
    """
    if isinstance(err, HelixError):
        return err
    text = str(err)
    log().error("store %s: RocksDB failed a write: %s", path, text)
    if "No space left" in text:
        return StoreFull(
            f"the disk of store {path} is full; RocksDB now refuses writes until the "
            f"store is opened again (free space, then remount): {text}"
        )
    return DiskFailed(f"the disk of store {path} failed a write: {text}")


def locked_message(path: Path) -> str:
    try:
        pid = int((path / OWNER_FILE).read_text().strip())
    except (OSError, ValueError):
        holder = "another process"
    else:
        holder = "this process" if pid == os.getpid() else f"process {pid}"
    return (
        f"store {path} is in use by {holder} (one writer per store): stop that process "
        "(`helix umount`) or talk to its daemon instead of opening the store directly"
    )


def db_options(
    cache: rocksdict.Cache, *, blobs: bool = False, looked_up: bool = False
) -> rocksdict.Options:
    """Options for a small footprint, measured on 1,000 AI-style variants of a project.

    Frames arrive LZ4-compressed (fast, so the commit path stays cheap), yet ZSTD block
    compression on top still took the SST files from 2.42 to 1.98 MB: it entropy-codes
    what LZ4 leaves, plus the delta headers and commit text. It runs only in RocksDB's
    background flush/compaction threads, never in `write`. 16 KiB blocks (vs 4 KiB)
    gave ZSTD more context for 4% more, at the price of inflating 16 KiB on a cold
    point read (the L1 and block caches absorb the hot ones). The info LOG is capped:
    uncapped it outgrew a small store's data.
    """
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_compression_type(rocksdict.DBCompressionType.zstd())
    options.set_write_buffer_size(WRITE_BUFFER_BYTES)
    options.set_max_write_buffer_number(WRITE_BUFFERS)
    options.set_keep_log_file_num(1)  # RocksDB's info LOG: one file, capped, no stat dumps
    options.set_max_log_file_size(64 << 10)
    options.set_stats_dump_period_sec(0)
    options.set_max_total_wal_size(64 << 20)
    options.set_max_background_jobs(2)
    table = rocksdict.BlockBasedOptions()
    table.set_bloom_filter(10, False)
    table.set_block_size(16 << 10)
    table.set_block_cache(cache)
    options.set_block_based_table_factory(table)
    if looked_up:
        # A bloom filter over the memtable's keys (`objects`' only: it is made, and its
        # memory taken, with each memtable): a commit asks whether each new record is
        # stored already (key_may_exist), and without it a miss searched the memtable's
        # skip list, 1.4-1.7 us in a memtable of 10,000 records against 0.47 with it.
        options.set_memtable_prefix_bloom_ratio(MEMTABLE_BLOOM_RATIO)
        options.set_memtable_whole_key_filtering(True)
    options.set_advise_random_on_open(False)  # let the kernel read ahead in blob files
    if blobs:
        set_blob_options(options)
    return options


def set_blob_options(options: rocksdict.Options) -> None:
    """Chunk-sized values go to blob files (ADR 0011), not into the SSTs.

    Chunks are keyed by write order in `bodies` (ADR 0018), so a flush writes a file's
    chunks into a blob file in the file's order, and a file read in order reads it as
    a stream; compactions rewrite only keys and blob references. Values are not
    compressed again: chunks are LZ4 frames already, mostly of incompressible data.

    Blob GC is off in background compactions (ADR 0014): it would move the live blobs
    of the oldest files on every compaction, garbage or not, rewriting a large file's
    chunks again and again while it is written. A blob file whose blobs are all
    deleted goes without it; `relocating_blobs` runs it for one manual compaction.
    """
    options.set_enable_blob_files(True)
    options.set_min_blob_size(MIN_BLOB_BYTES)
    options.set_blob_file_size(BLOB_FILE_BYTES)
    options.set_enable_blob_gc(False)


def blob_garbage_ratio(family: rocksdict.Rdict) -> float:
    """The share of blob file bytes that belong to deleted values (RocksDB learns it as
    compactions drop their references)."""
    total = family.property_int_value("rocksdb.total-blob-file-size") or 0
    garbage = family.property_int_value("rocksdb.live-blob-file-garbage-size") or 0
    return garbage / total if total else 0.0


def blob_garbage_bytes(family: rocksdict.Rdict) -> int:
    """The bytes of deleted values still in blob files."""
    return family.property_int_value("rocksdb.live-blob-file-garbage-size") or 0


# RocksDB's own figures, summed over the families: read from memory, no scan.
ENGINE_FIGURES = {
    "compaction_pending_bytes": "rocksdb.estimate-pending-compaction-bytes",
    "estimated_keys": "rocksdb.estimate-num-keys",
    "sst_bytes": "rocksdb.total-sst-files-size",
    "blob_file_bytes": "rocksdb.total-blob-file-size",
    "memtable_bytes": "rocksdb.cur-size-all-mem-tables",
    "running_compactions": "rocksdb.num-running-compactions",
}


def engine_figures(families: list[rocksdict.Rdict]) -> dict[str, int]:
    """What RocksDB itself reports (pending compaction, estimated keys, file sizes)."""
    return {
        name: sum(family.property_int_value(prop) or 0 for family in families)
        for name, prop in ENGINE_FIGURES.items()
    }


def blob_file_count(family: rocksdict.Rdict) -> int:
    return family.property_int_value("rocksdb.num-blob-files") or 0


def step_bounds(path: Path, families: list[rocksdict.Rdict], family: rocksdict.Rdict) -> list[int]:
    """Per blob file of `family`, oldest first, at least the live bytes that moving it
    writes again: the first k add up to what relocating the oldest k costs at most.

    RocksDB tells no file's family or garbage, only counts. When the files on disk are
    exactly this family's, their sizes are the bounds; otherwise (another family has
    blob files, a flush or a deletion is under way) each bound is the next largest
    file on disk, which holds for whichever files are the oldest."""
    sizes = blob_file_sizes(path)
    count = blob_file_count(family)
    if len(sizes) == count == sum(map(blob_file_count, families)):
        return sizes
    return sorted(sizes, reverse=True)[:count]


def blob_file_sizes(path: Path) -> list[int]:
    """The sizes of the blob files in `path`, oldest (lowest number) first."""
    sizes: list[tuple[str, int]] = []
    for entry in os.scandir(path):
        if entry.name.endswith(".blob"):
            with suppress(FileNotFoundError):  # relocated and deleted after the listing
                sizes.append((entry.name, entry.stat().st_size))
    return [size for _, size in sorted(sizes)]  # zero-padded numbers sort as names


@contextmanager
def relocating_blobs(family: rocksdict.Rdict, oldest: int) -> Iterator[None]:
    """Blob GC on for the compactions run inside: the live blobs of the `oldest` blob
    files of `family` move to new files, so that those files go, with the deleted blobs
    they also hold."""
    count = blob_file_count(family)
    # RocksDB relocates the files below index int(cutoff * count), oldest first
    cutoff = 1.0 if oldest >= count else (oldest + 0.5) / count
    family.set_options(
        {
            "enable_blob_garbage_collection": "true",
            "blob_garbage_collection_age_cutoff": str(cutoff),
        }
    )
    try:
        yield
    finally:
        family.set_options(BLOB_GC_OFF)


def unchecked_reads() -> rocksdict.ReadOptions:
    """Reads of `bodies` that skip RocksDB's own checksums: every record we return is
    checked against its BLAKE3 id anyway, and a blob's CRC cost 4x the rest of its read
    (106 vs 23 us for a 64 KiB chunk in the page cache). The price: a damaged block of
    the `bodies` table is parsed unchecked, and can crash the process (about one
    single-bit flip in 150 did); maintenance scans read with `checked_reads`. The small
    records of `objects` are always checked (see RocksStore.__init__)."""
    read = rocksdict.ReadOptions()
    read.set_verify_checksums(False)
    return read


def checked_reads() -> rocksdict.ReadOptions:
    read = rocksdict.ReadOptions()
    read.set_verify_checksums(True)
    return read


def read(
    family: rocksdict.Rdict, key: bytes, options: rocksdict.ReadOptions | None = None
) -> bytes | None:
    """One row, or None; a block RocksDB cannot read is CorruptObject, not a bare
    Exception that no surface would turn into a clear error."""
    try:
        value: bytes | None = family.get(key, read_opt=options)
    except Exception as err:
        raise unreadable(err) from err
    return value


def scan(family: rocksdict.Rdict, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Rows whose key starts with `prefix`, in key order.

    A cursor that meets a block it cannot read just stops, as if the rows ended there:
    its status is checked at the end, so fsck, gc and stats never take a damaged store
    for a smaller one (gc would have dropped what the lost rows point at).
    """
    cursor = family.iter()
    cursor.seek(prefix)
    while cursor.valid():
        key = cursor.key()
        if not key.startswith(prefix):
            return
        yield key, cursor.value()
        cursor.next()
    check_cursor(cursor)


def check_cursor(cursor: rocksdict.RdictIter) -> None:
    """A cursor that stopped short of the end because a block could not be read is
    CorruptObject: its `valid()` turns false as if the rows ended there."""
    try:
        cursor.status()
    except Exception as err:
        raise unreadable(err) from err


def unreadable(err: Exception) -> CorruptObject:
    return CorruptObject(
        f"the store cannot be read: {err} (restore the store from a backup if it persists)"
    )


def claim_owner(path: Path) -> None:
    """Record our pid beside RocksDB's LOCK, for the next opener's error message."""
    (path / OWNER_FILE).write_text(f"{os.getpid()}\n")


def forget_owner(path: Path) -> None:
    owner = path / OWNER_FILE
    try:
        if int(owner.read_text().strip()) == os.getpid():
            owner.unlink()
    except (OSError, ValueError):
        pass  # never ours, or already gone: nothing to undo


def disk_usage(path: Path) -> int:
    total = 0
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            # RocksDB may delete it after the listing (a compaction, a flush): 0 bytes
            with suppress(FileNotFoundError):
                total += entry.stat().st_size
    return total
