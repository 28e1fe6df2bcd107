"""Records round-trip, are canonical, and refuse what they cannot read."""

from __future__ import annotations

import json
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helixfs.errors import CorruptObject, InvalidInput, UnsupportedVersion
from helixfs.ids import CommitId, ObjectId, object_id
from helixfs.vcs.objects import (
    MODE_FILE,
    Commit,
    TreeEntry,
    canonical_json,
    decode_any,
    decode_blob,
    decode_chunked,
    decode_commit,
    decode_tree,
    encode_blob,
    encode_chunked,
    encode_commit,
    encode_entry,
    encode_tree,
    entry_bytes,
    references,
    tree_dirs,
)
from helixfs.vcs.treeops import split_path

ids = st.binary(min_size=32, max_size=32).map(ObjectId)
names = st.binary(min_size=1, max_size=60).filter(
    lambda n: b"/" not in n and b"\0" not in n and n not in (b".", b"..")
)
modes = st.sampled_from([MODE_FILE, stat.S_IFDIR | 0o755, stat.S_IFLNK | 0o777, 0o100755])
xattrs = st.dictionaries(st.binary(min_size=1, max_size=20), st.binary(max_size=50), max_size=3)
entries = st.builds(
    lambda name, mode, oid, size, mtime, xa: TreeEntry(
        name, mode, oid, size, mtime, tuple(sorted(xa.items()))
    ),
    names,
    modes,
    ids,
    st.integers(0, 2**63 - 1),
    st.integers(-(2**63), 2**63 - 1),
    xattrs,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(entries)
def test_entry_bytes_encodes_a_valid_entry_as_encode_entry_does(entry: TreeEntry) -> None:
    assert entry_bytes(entry) == encode_entry(entry)


@given(st.lists(st.sampled_from([b"a", b"", b".", b"..", b"b\x00", b"c" * 255, b"d" * 256, b".e"])))
def test_split_path_refuses_what_its_checks_part_by_part_refuse(parts: list[bytes]) -> None:
    """split_path checks a whole path at C speed first: the same paths pass and fail."""
    path = b"/".join(parts)
    stripped = path.strip(b"/")
    kept = stripped.split(b"/") if stripped else []
    bad = any(not p or p in (b".", b"..") or b"\x00" in p or len(p) > 255 for p in kept)
    if bad:
        with pytest.raises(InvalidInput):
            split_path(path)
    else:
        assert split_path(path) == kept


@given(st.binary(max_size=2000))
def test_blob_roundtrip(data: bytes) -> None:
    assert decode_blob(encode_blob(data)) == data


@given(st.lists(entries, max_size=20, unique_by=lambda e: e.name))
@settings(max_examples=200)
def test_tree_roundtrip_with_arbitrary_byte_names(items: list[TreeEntry]) -> None:
    record = encode_tree(items)
    tree = decode_tree(record)
    assert list(tree.entries) == sorted(items, key=lambda e: e.name)
    assert encode_tree(list(reversed(items))) == record  # canonical: order does not matter
    assert references(record) == [e.oid for e in tree.entries]  # read without decoding
    assert tree_dirs(record) == {e.name: e.oid for e in tree.entries if e.is_dir()}
    with pytest.raises(CorruptObject):
        tree_dirs(record[:-1] if tree.entries else record + b"x")


@given(
    ids,
    st.lists(ids.map(CommitId), max_size=3),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=30),
    st.text(max_size=200),
    st.dictionaries(st.text(max_size=10), json_values, max_size=5),
)
def test_commit_roundtrip(tree, parents, time_ns, author, message, meta) -> None:  # type: ignore[no-untyped-def]
    commit = Commit(tree, tuple(parents), time_ns, author, message, meta)
    record = encode_commit(commit)
    decoded = decode_commit(record)
    assert decoded == commit
    assert decoded.id == object_id(record)
    assert references(record) == [tree, *parents]


@given(
    st.dictionaries(
        st.text(max_size=10),
        json_values | st.floats(allow_nan=False, allow_infinity=False),
        max_size=5,
    )
)
def test_commit_metadata_is_json_dumps_bytes(meta: dict[str, object]) -> None:
    # commit ids hash these bytes: the encoder built once must give what json.dumps gave
    expected = json.dumps(
        meta, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )
    assert canonical_json(meta) == expected.encode()


def test_commit_metadata_that_is_not_json_is_refused() -> None:
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    for meta in ({"x": float("nan")}, {"x": object()}, {"x": [cyclic]}, {1: "a", "b": 2}):
        with pytest.raises(InvalidInput, match="JSON-serialisable"):
            canonical_json(meta)  # type: ignore[arg-type]
    assert canonical_json({"after": "a refusal"}) == b'{"after":"a refusal"}'


@given(st.lists(st.tuples(ids, st.integers(1, 2**32 - 1)), max_size=20))
def test_chunked_roundtrip(chunks: list[tuple[ObjectId, int]]) -> None:
    decoded = decode_chunked(encode_chunked(chunks))
    assert list(decoded.chunks) == chunks
    assert decoded.size == sum(n for _, n in chunks)


def test_invalid_utf8_names_survive() -> None:
    entry = TreeEntry(b"\xff\xfe caf\xc3 \x01", MODE_FILE, ObjectId(bytes(32)))
    assert decode_tree(encode_tree([entry])).entries == (entry,)


@pytest.mark.parametrize("name", [b"", b".", b"..", b"a/b", b"a\0b"])
def test_bad_names_are_refused(name: bytes) -> None:
    with pytest.raises(InvalidInput):
        encode_tree([TreeEntry(name, MODE_FILE, ObjectId(bytes(32)))])


def test_duplicate_names_are_refused() -> None:
    entry = TreeEntry(b"a", MODE_FILE, ObjectId(bytes(32)))
    with pytest.raises(InvalidInput):
        encode_tree([entry, entry])


def test_unknown_version_and_kind_are_refused_with_advice() -> None:
    record = encode_blob(b"x")
    with pytest.raises(UnsupportedVersion, match="upgrade"):
        decode_blob(record[:4] + b"\x09" + record[5:])
    with pytest.raises(UnsupportedVersion, match="kind"):
        decode_any(b"HLXZ\x01")


def test_garbage_is_corrupt_not_a_crash() -> None:
    with pytest.raises(CorruptObject):
        decode_any(b"nothing like a record")
    tree = encode_tree([TreeEntry(b"a", MODE_FILE, ObjectId(bytes(32)))])
    with pytest.raises(CorruptObject):
        decode_tree(tree[:-3])
    for cut in (tree[:-3], tree[:12], tree + b"\0"):
        with pytest.raises(CorruptObject):
            references(cut)
    with pytest.raises(CorruptObject):
        decode_commit(encode_blob(b"x"))


def test_metadata_must_be_json() -> None:
    with pytest.raises(InvalidInput):
        encode_commit(Commit(ObjectId(bytes(32)), (), 0, "a", "m", {"x": object()}))
