"""`helix push --verify` (vcs/verify.py): what the remote holds for the pushed branches is
read back and checked, and objects damaged or missing on SeaweedFS are written again from
the local store; what no side has whole is named, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli.conftest import ok, run_helix

from helixfs.ids import ObjectId, object_id
from helixfs.vcs.objects import encode_blob
from helixfs.vcs.repo import Repository

from .conftest import Place, helix_on, new_store

pytestmark = pytest.mark.timeout(240)
FILES = 60  # a push of them is packed


def blob_id(text: str) -> ObjectId:
    return object_id(encode_blob(text.encode()))


def flip(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes([blob[at] ^ 0x55]) + blob[at + 1 :]


def damage_packed(place: Place, oid: ObjectId) -> None:
    with place.store() as remote:
        remote._packs.ensure()
        slot = remote._packs.slots(oid)[0]
        key = f"packs/{slot.pack}"
        body = remote._client.get(key) or b""
        remote._client.raw_put(key, flip(body, slot.offset + slot.length - 1))


def test_push_verify_mends_a_damaged_and_a_missing_object(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    with Repository.open(tmp_path / "a") as repo:
        repo.commit({f"d/f{i}.txt": b"file %d\n" % i for i in range(FILES)}, "many")
    ok(helix("push"))
    with Repository.open(tmp_path / "a") as repo:
        repo.commit({"late.txt": b"late\n"}, "one more")  # sent loose (a small push)
    ok(helix("push"))
    damaged, missing = blob_id("file 7\n"), blob_id("late\n")
    damage_packed(place, damaged)
    with place.store() as remote:
        remote.delete([missing])

    report = ok(helix("push", "--verify", "--json")).json()["verified"]
    assert report["damaged"] == [damaged.hex()]
    assert report["missing"] == [missing.hex()]
    assert report["repaired"] == 2 and report["unmendable"] == []
    assert report["objects"] > FILES

    again = ok(helix("push", "--verify", "--json")).json()["verified"]
    assert again["damaged"] == again["missing"] == [] and again["repaired"] == 0
    clone = tmp_path / "b"
    ok(run_helix("clone", place.url, clone, "--endpoint", place.endpoint, store=None))
    ok(helix_on(clone)("fsck"))
    with Repository.open(clone) as other:
        assert other.read("main", "d/f7.txt") == b"file 7\n"
        assert other.read("main", "late.txt") == b"late\n"


def test_what_neither_side_has_whole_is_named(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    with Repository.open(tmp_path / "a") as repo:
        repo.commit({f"d/f{i}.txt": b"file %d\n" % i for i in range(FILES)}, "many")
    ok(helix("push"))
    lazy = tmp_path / "lazy"  # has no file contents: it cannot mend one
    ok(run_helix("clone", place.url, lazy, "--endpoint", place.endpoint, "--lazy", store=None))
    damage_packed(place, blob_id("file 3\n"))
    failed = helix_on(lazy)("push", "--verify")
    assert failed.code == 1, failed.err
    assert "1 this store lacks too" in failed.out and blob_id("file 3\n").hex() in failed.out
    assert "Traceback" not in failed.err
    report = ok(helix("push", "--verify", "--json")).json()["verified"]  # the whole store can
    assert report["repaired"] == 1
