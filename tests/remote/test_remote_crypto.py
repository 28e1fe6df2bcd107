"""An encrypted remote: only ciphertext and keyed names on the server (ADR 0057)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cli.conftest import fails, ok, run_helix

from helixfs.vcs.repo import Repository

from .conftest import Place, commit, helix_on, new_store

SECRET_TEXT = "the launch code is 0000-swordfish\n"


def test_an_encrypted_remote_holds_only_ciphertext(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place, "--encrypt")
    key_file = tmp_path / "a" / "remote-keys" / "origin.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    commit(helix, tmp_path, "notes.txt", SECRET_TEXT * 20)
    ok(helix("push"))
    with Repository.open(tmp_path / "a") as repo:
        ids = {oid.hex() for oid in repo.store.ids()}
        head = repo.branch_head("main")
    with place.store() as remote:
        keys = [key for key, _ in remote._client.listing("")]
        blobs = {key: remote._client.get(key) or b"" for key in keys}
    objects = [k for k in keys if k.startswith("objects/")]
    assert objects and not {k[len("objects/") :] for k in objects} & ids  # names keyed
    for key, blob in blobs.items():
        assert b"swordfish" not in blob, key
        assert head not in blob and head.hex().encode() not in blob, key
        if key.startswith("objects/"):
            assert blob.startswith(b"HXE\x01"), key


def test_the_key_travels_out_of_band(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place, "--encrypt")
    commit(helix, tmp_path, "notes.txt", SECRET_TEXT)
    ok(helix("push"))
    exported = ok(helix("remote", "key", "export", "origin")).out.strip()
    key = tmp_path / "key.txt"
    key.write_text(exported + "\n")
    os.chmod(key, 0o600)
    plain = fails(
        run_helix("clone", place.url, tmp_path / "b", "--endpoint", place.endpoint, store=None),
        says="encrypted",
    )
    assert "swordfish" not in plain.err
    assert not (tmp_path / "b").exists()
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("11" * 32)
    fails(
        run_helix(
            "clone",
            place.url,
            tmp_path / "c",
            "--endpoint",
            place.endpoint,
            "--key",
            wrong,
            store=None,
        ),
        says="another key",
    )
    ok(
        run_helix(
            "clone",
            place.url,
            tmp_path / "d",
            "--endpoint",
            place.endpoint,
            "--key",
            key,
            store=None,
        )
    )
    assert ok(helix_on(tmp_path / "d")("cat", "main", "notes.txt")).out == SECRET_TEXT
    # a second machine added by hand: add --encrypt, then import the key
    third = new_store(tmp_path / "e", place, "--encrypt")
    fails(third("fetch"), says="another key")
    ok(third("remote", "key", "import", "origin", key))
    # its own main (its init commit) and the remote's share no history: pull merges them
    assert ok(third("fetch", "--json")).json()["branches"][0]["status"] == "diverged"
    assert ok(third("pull", "--json")).json()["branches"][0]["status"] == "merged"
    assert ok(third("cat", "main", "notes.txt")).out == SECRET_TEXT


def test_a_plain_store_refuses_an_encrypted_remote_and_back(tmp_path: Path, place: Place) -> None:
    sealed = new_store(tmp_path / "a", place, "--encrypt")
    commit(sealed, tmp_path, "a.txt", "a\n")
    ok(sealed("push"))
    plain = new_store(tmp_path / "b", place)
    fails(plain("fetch"), says="is encrypted")
    fails(plain("push"), says="is encrypted")


def test_a_damaged_or_moved_sealed_object_is_refused(tmp_path: Path, place: Place) -> None:
    """Every object fetched is checked, encrypted too: a flipped byte fails its seal, and
    a whole sealed object stored under another object's name fails to open there."""
    helix = new_store(tmp_path / "a", place, "--encrypt")
    commit(helix, tmp_path, "notes.txt", SECRET_TEXT)
    ok(helix("push"))
    key = tmp_path / "key.txt"
    key.write_text(ok(helix("remote", "key", "export", "origin")).out)
    clone = ("clone", place.url, "--endpoint", place.endpoint, "--key", key)
    with place.store() as remote:
        names = sorted(k for k, _ in remote._client.listing("objects/"))
        sealed = {name: remote._client.get(name) or b"" for name in names}
    assert len(names) >= 3  # a commit, its tree and the file's blob, each loose
    refused = 0
    for n, name in enumerate(names):
        other = sealed[names[(n + 1) % len(names)]]
        flipped = sealed[name][:-1] + bytes([sealed[name][-1] ^ 1])
        for m, damaged in enumerate((flipped, other)):
            with place.store() as remote:
                remote._client.raw_put(name, damaged)
            target = tmp_path / f"b{n}-{m}"
            result = run_helix(*clone, target, store=None)
            if result.code == 0:  # an object a new store holds already is not fetched
                assert ok(helix_on(target)("cat", "main", "notes.txt")).out == SECRET_TEXT
                ok(helix_on(target)("fsck"))
                continue
            refused += 1
            assert "Traceback" not in result.err and "swordfish" not in result.err
            assert "corrupt" in result.err or "damaged" in result.err, result.err
            assert not target.exists()
        with place.store() as remote:
            remote._client.raw_put(name, sealed[name])
    assert refused >= 6  # both damages of the commit, its tree and the blob at least
    ok(run_helix(*clone, tmp_path / "whole", store=None))
    assert ok(helix_on(tmp_path / "whole")("cat", "main", "notes.txt")).out == SECRET_TEXT
