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

import pytest
from mount_harness import MountFactory, helix
from seaweed import SeaweedServer, serving

from helixfs.vcs.repo import Repository

FILES = 40  # enough that the push is packed: reads come from a pack by ranged GETs
TREE_FILES = 2_000  # issue 31's "10,000 files usable before every blob is down", smaller


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SeaweedServer]:
    with serving(tmp_path / "seaweed") as started:
        yield started


def text(i: int) -> str:
    return f"file {i}\n" * 50


def test_a_lazy_clone_reads_contents_when_read_and_eio_offline(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    url = f"s3://{server.bucket}/{uuid.uuid4().hex[:8]}"
    source = tmp_path / "source"
    with Repository.init(source) as repo:
        repo.commit({f"src/f{i}.txt": text(i).encode() for i in range(FILES)}, "files")
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
    assert helix("--store", clone, "cat", "main", "src/f1.txt").stdout == text(1)

    mount = make_mount(0, store=clone)
    assert (mount.path / "src" / "f3.txt").read_text() == text(3)  # not fetched before
    assert len(list((mount.path / "src").iterdir())) == FILES
    server.kill()
    assert (mount.path / "src" / "f3.txt").read_text() == text(3)  # kept locally
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
