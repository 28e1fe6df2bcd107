"""Checks every backend applies to a `write` before touching anything.

Kept in one place so MemoryStore and RocksStore refuse exactly the same bad input with
exactly the same message: the contract suite runs against both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from helixfs.errors import InvalidInput, RefConflict
from helixfs.ids import ID_SIZE, ObjectId, hex_id, object_id
from helixfs.store import ANY, Patch, RefUpdate

# A tuple, not `bytes | bytearray | memoryview`: written inline that union is built
# anew by every isinstance call (0.5 us each, per record of every write).
BYTES_LIKE = (bytes, bytearray, memoryview)


def check_oid(oid: object) -> ObjectId:
    """An object id must be exactly 32 raw bytes; anything else is a caller bug."""
    if not isinstance(oid, bytes) or len(oid) != ID_SIZE:
        raise InvalidInput(f"object id must be {ID_SIZE} bytes, got {oid!r:.80}")
    return ObjectId(oid)


def check_objects(objects: Mapping[ObjectId, bytes], *, rehash: bool = True) -> None:
    """Refuse malformed ids and non-bytes records, and (with `rehash`) records whose id is
    not their BLAKE3: storing one would plant corruption. Skipping the re-hash is for
    callers that hashed the record a moment ago; it halves the hashing of a commit.
    """
    for oid, record in objects.items():
        if not isinstance(oid, bytes) or len(oid) != ID_SIZE:  # check_oid, inline
            check_oid(oid)
        if not isinstance(record, BYTES_LIKE):
            raise InvalidInput(f"record for {hex_id(oid)} must be bytes")
        if rehash and object_id(bytes(record)) != oid:
            raise InvalidInput(f"record does not hash to its id {hex_id(oid)}")


def check_delta_bases(
    objects: Mapping[ObjectId, bytes], bases: Mapping[ObjectId, ObjectId] | None
) -> None:
    for new, base in (bases or {}).items():
        check_oid(new)
        check_oid(base)
        if new not in objects:
            raise InvalidInput(f"delta hint for {hex_id(new)}, which this write does not store")


def check_patches(
    objects: Mapping[ObjectId, bytes], patches: Mapping[ObjectId, Patch] | None
) -> None:
    """A patch names a record of this write and trims that fit in it (its base is a
    hint: a store that cannot find it stores the record whole)."""
    if not patches:
        return
    for new, patch in patches.items():
        record = objects.get(new)
        if record is None:
            raise InvalidInput(f"patch for {hex_id(new)}, which this write does not store")
        if not isinstance(patch, Patch):
            raise InvalidInput(f"patch for {hex_id(new)} must be a Patch")
        base, prefix, suffix = patch
        if not isinstance(base, bytes) or len(base) != ID_SIZE:
            check_oid(base)
        if type(prefix) is not int or type(suffix) is not int or prefix < 0 or suffix < 0:
            raise InvalidInput(f"patch for {hex_id(new)}: trims must be ints >= 0")
        if prefix + suffix > len(record):
            raise InvalidInput(f"patch for {hex_id(new)}: its trims overlap")


def check_bulk(refs: Sequence[RefUpdate], sync: bool) -> None:
    """A bulk write (no write-ahead log) may carry objects only: a ref it moved could
    point at objects a crash takes back."""
    if refs or sync:
        raise InvalidInput("a bulk write carries objects only: no refs, no sync")


def check_ref_name(name: object) -> str:
    if not isinstance(name, str) or not name or "\x00" in name or not name.isprintable():
        raise InvalidInput(f"ref name must be printable text without NUL, got {name!r:.80}")
    try:
        name.encode()
    except UnicodeEncodeError:  # lone surrogates: not storable as UTF-8
        raise InvalidInput(f"ref name is not valid text: {name!r:.80}") from None
    return name


def check_ref_prefix(prefix: object) -> str:
    if not isinstance(prefix, str):
        raise InvalidInput(f"ref prefix must be a string, got {prefix!r:.80}")
    return prefix


def plan_refs(
    updates: Sequence[RefUpdate], current: Callable[[str], bytes | None]
) -> dict[str, bytes | None]:
    """Check every compare-and-swap and return the final value per ref (None = delete).

    Updates apply in order, so a later update in the same write sees earlier ones.
    Raises RefConflict naming the first ref whose expectation fails; nothing is applied.
    """
    planned: dict[str, bytes | None] = {}
    for update in updates:
        if not isinstance(update, RefUpdate):
            raise InvalidInput(f"expected a RefUpdate, got {type(update).__name__}")
        name = check_ref_name(update.name)
        if update.new is not None and not isinstance(update.new, bytes):
            raise InvalidInput(f"ref {name!r}: new value must be bytes or None")
        now = planned[name] if name in planned else current(name)
        if update.expected is not ANY and update.expected != now:
            raise RefConflict(
                f"ref {name!r} moved: expected {_show(update.expected)}, found {_show(now)}"
            )
        planned[name] = update.new
    return planned


def _show(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bytes):
        return value.hex()[:16] if len(value) == ID_SIZE else repr(value[:40])
    return repr(value)
