"""A lazy clone (`helix clone --lazy`, ADR 0064): commits and folders down, file contents
read from the remote when first read, through the mount or the CLI.

The server is this test's own (tests/seaweed.py), so that it can be killed.
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import blake3
import pytest
from mount_harness import MountFactory, helix
from seaweed import SeaweedServer, serving
from wire import counting

from helixfs.ids import ObjectId
from helixfs.store.s3 import S3Store
from helixfs.store.s3client import S3Location
from helixfs.vcs.repo import Repository

# a pack of more than a request's worth (s3packs.REQUEST_BYTES, 1 MiB): reads come from
# it by ranged GETs (a smaller pack comes whole at the first read, ADR 0081)
FILES = 300
TREE_FILES = 2_000  # issue 31's "10,000 files usable before every blob is down", smaller
NOISE_FILES, NOISE_BYTES = 400, 4096  # file contents that dwarf their folders, as in a repository


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SeaweedServer]:
    with serving(tmp_path / "seaweed") as started:
        yield started


def text(i: int) -> str:
    return f"file {i}\n" * 50


def bulky(i: int) -> str:
    return f"file {i}\n" + noise(i).decode()


def test_a_lazy_clone_reads_contents_when_read_and_eio_offline(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    url = f"s3://{server.bucket}/{uuid.uuid4().hex[:8]}"
    source = tmp_path / "source"
    with Repository.init(source) as repo:
        repo.commit({f"src/f{i}.txt": bulky(i).encode() for i in range(FILES)}, "files")
    helix("--store", source, "remote", "add", "origin", url, "--endpoint", server.endpoint)
    helix("--store", source, "push")
    clone = tmp_path / "lazy"
    helix("clone", "--lazy", url, clone, "--endpoint", server.endpoint)
    with Repository.open(clone) as repo:
        blobs = {e.name.decode(): e.oid for e in repo.ls("main", b"src")}
        assert len(blobs) == FILES
        assert not [name for name, oid in blobs.items() if repo.store.contains(oid)]
    assert "ok" in helix("--store", clone, "fsck").stdout.lower()  # not fetched is no damage
    # the CLI reads through too (and keeps what it fetched)
    assert helix("--store", clone, "cat", "main", "src/f1.txt").stdout == bulky(1)

    mount = make_mount(0, store=clone)
    assert (mount.path / "src" / "f3.txt").read_text() == bulky(3)  # not fetched before
    assert len(list((mount.path / "src").iterdir())) == FILES
    server.kill()
    assert (mount.path / "src" / "f3.txt").read_text() == bulky(3)  # kept locally
    with pytest.raises(OSError) as failed:
        (mount.path / "src" / "f4.txt").read_bytes()
    assert failed.value.errno == errno.EIO
    mount.stop()
    log = "".join(mount.output)
    assert "cannot be fetched from the remote origin" in log, log
    with Repository.open(clone) as repo:
        kept = [name for name, oid in blobs.items() if repo.store.contains(oid)]
    assert sorted(kept) == ["f1.txt", "f3.txt"]


def tree_path(i: int) -> str:
    return f"d{i % 20}/e{i % 5}/f{i}.txt"


def held_contents(store: Path, paths: dict[str, bytes]) -> list[str]:
    """Which of `paths` (path -> content) the store at `store` holds the content of."""
    with Repository.open(store) as repo:
        return sorted(p for p in paths if repo.store.contains(repo.entry("main", p).oid))


def walked(root: Path) -> dict[str, int]:
    """Every file under `root` (not `.helix`) and its size from a stat: what `find` and a
    `git status` look at."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".helix"]
        for name in names:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = os.lstat(path).st_size
    return found


def test_a_lazy_clone_of_thousands_of_files_is_listed_and_read_before_its_contents_are_down(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    url = f"s3://{server.bucket}/{uuid.uuid4().hex[:8]}"
    source = tmp_path / "source"
    files = {tree_path(i): text(i).encode() for i in range(TREE_FILES)}
    with Repository.init(source) as repo:
        repo.commit(files, "many files")
    helix("--store", source, "remote", "add", "origin", url, "--endpoint", server.endpoint)
    helix("--store", source, "push")
    clone = tmp_path / "lazy"
    helix("clone", "--lazy", url, clone, "--endpoint", server.endpoint)
    assert held_contents(clone, files) == []

    mount = make_mount(0, store=clone)
    # the whole tree, every file's size, with no content fetched for it
    assert walked(mount.path) == {path: len(data) for path, data in files.items()}
    one = tree_path(1234)
    assert (mount.path / one).read_bytes() == files[one]
    server.kill()  # the listing and the stats need nothing from it
    assert len(walked(mount.path)) == TREE_FILES
    assert (mount.path / one).read_bytes() == files[one]
    mount.stop()
    assert held_contents(clone, files) == [one]  # of 2,000, only the file read is here


def noise(i: int, version: int = 0) -> bytes:
    """A file's content that LZ4 does not shrink (it would hide the bytes counted)."""
    seed = b"file %d version %d" % (i, version)
    return blake3.blake3(seed).hexdigest(length=NOISE_BYTES // 2).encode()


def test_a_lazy_clone_downloads_metadata_and_a_read_only_its_file(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    """ADR 0081: a push packs commits and folders apart from file contents, so a lazy
    clone, its mount and a walk with a stat of every file take a small fraction of the
    contents' bytes off the wire (counted by a relay in front of the server); a read
    of one file is one ranged read, verified: a damaged copy is refused (EIO)."""
    url = f"s3://{server.bucket}/{uuid.uuid4().hex[:8]}"
    source = tmp_path / "source"
    files = {f"d{i % 20}/f{i}.bin": noise(i) for i in range(NOISE_FILES)}
    pushed = sum(len(data) for data in files.values())
    with Repository.init(source) as repo:
        repo.commit(files, "files")
        for k in range(1, 4):  # a little history: old versions of a few files
            edited = {f"d{i % 20}/f{i}.bin": noise(i, k) for i in range(k, NOISE_FILES, 37)}
            repo.commit(edited, f"edit {k}")
            files.update(edited)
            pushed += sum(len(data) for data in edited.values())
    helix("--store", source, "remote", "add", "origin", url, "--endpoint", server.endpoint)
    helix("--store", source, "push")
    clone = tmp_path / "lazy"
    with counting(server.endpoint) as wire:
        helix("clone", "--lazy", url, clone, "--endpoint", wire.endpoint)
        mount = make_mount(0, store=clone)
        assert walked(mount.path) == {path: len(data) for path, data in files.items()}
        listed = wire.down
        print(f"clone --lazy, mount, walk: {listed:,} bytes down; contents {pushed:,}")
        assert listed < pushed / 10, (listed, pushed)  # the whole pack was 106%
        wire.reset()
        one, other = "d7/f107.bin", "d8/f108.bin"
        assert (mount.path / one).read_bytes() == files[one]
        print(f"a read of one file: {wire.down:,} bytes down")
        assert wire.down < pushed / 10, (wire.down, pushed)  # a ranged read, not the pack
        with Repository.open(source) as repo, S3Store(S3Location.parse(url, server.endpoint)) as s3:
            s3.ensure_layout()
            damage(s3, repo.entry("main", other).oid)
        with pytest.raises(OSError) as failed:
            (mount.path / other).read_bytes()
        assert failed.value.errno == errno.EIO
        mount.stop()
    assert "corrupt" in "".join(mount.output)
    assert held_contents(clone, files) == [one]


def damage(s3: S3Store, oid: ObjectId) -> None:
    """One byte of `oid`'s record flipped in the pack that holds it, on the server."""
    s3._packs.ensure()
    slot = s3._packs.slots(oid)[0]
    key = f"packs/{slot.pack}"
    body = s3._client.get(key) or b""
    at = slot.offset + slot.length - 1
    s3._client.raw_put(key, body[:at] + bytes([body[at] ^ 0x55]) + body[at + 1 :])
