"""A lazy clone (`helix clone --lazy`, ADR 0064): commits and folders down, file contents
read from the remote when first read, through the mount or the CLI.

The server is this test's own (tests/seaweed.py), so that it can be killed.
"""

from __future__ import annotations

import errno
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_harness import MountFactory, helix
from seaweed import SeaweedServer, serving

from helixfs.vcs.repo import Repository

FILES = 40  # enough that the push is packed: reads come from a pack by ranged GETs


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
