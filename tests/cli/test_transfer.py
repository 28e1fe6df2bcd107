"""Folder import and export: what goes in comes out, byte for byte and mode for mode."""

from __future__ import annotations

import base64
import os
import random
import shutil
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from .conftest import Helix, fails, make_tree, ok, store_state

ODD_NAME = b"caf\xc3\xa9 \xff\xfe name\twith tab"


def _describe(root: Path) -> dict[bytes, tuple[str, bytes, int]]:
    """Every path below `root`: (kind, content or link target, permission bits)."""
    found: dict[bytes, tuple[str, bytes, int]] = {}
    base = os.fsencode(root)
    for folder, dirs, files in os.walk(base):
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, base)
            st = os.lstat(path)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path), 0)
            elif os.path.isdir(path):
                found[rel] = ("dir", b"", st.st_mode & 0o777)
            else:
                with open(path, "rb") as f:
                    found[rel] = ("file", f.read(), st.st_mode & 0o777)
    return found


def _odd_project(root: Path) -> Path:
    rng = random.Random(7)
    make_tree(
        root,
        {
            "README.md": "readme\n",
            "src/pkg/mod.py": "x = 1\n",
            "bin/blob.bin": bytes(rng.getrandbits(8) for _ in range(3000)),
            "big/large.bin": rng.randbytes(3 << 20),  # chunked by FastCDC
            "empty.txt": b"",
        },
    )
    (root / "emptydir").mkdir()
    os.chmod(root / "src" / "pkg" / "mod.py", 0o755)
    os.symlink("README.md", root / "link-to-readme")
    os.symlink("does/not/exist", root / "dangling")
    with open(os.path.join(os.fsencode(root), ODD_NAME), "wb") as f:
        f.write(b"odd\n")
    return root


def test_export_of_an_import_is_identical(helix: Helix, tmp_path: Path) -> None:
    source = _odd_project(tmp_path / "src-tree")
    doc = ok(helix("import", "--json", "src-tree")).json()
    assert doc["files"] == 8 and doc["bytes"] == sum(
        len(c) for k, c, _ in _describe(source).values() if k == "file"
    )
    exported = ok(helix("export", "--json", "HEAD", "copy")).json()
    assert exported["files"] == 8
    assert _describe(tmp_path / "copy") == _describe(source)
    mtime = (source / "README.md").stat().st_mtime_ns
    assert (tmp_path / "copy" / "README.md").stat().st_mtime_ns == mtime
    names = ok(helix("ls", "--json", "HEAD")).json()
    assert {"bytes_b64": base64.b64encode(ODD_NAME).decode()} in [n["name"] for n in names]
    assert ok(helix("cat", "HEAD", os.fsdecode(ODD_NAME))).out == "odd\n"


def test_user_xattrs_round_trip_when_supported(helix: Helix, tmp_path: Path) -> None:
    source = make_tree(tmp_path / "x", {"f.txt": "f\n"})
    try:
        os.setxattr(source / "f.txt", "user.agent", b"claude")
    except OSError:
        return  # the tmp filesystem has no user xattrs: nothing to check here
    ok(helix("import", "x"))
    ok(helix("export", "HEAD", "y"))
    assert os.getxattr(tmp_path / "y" / "f.txt", "user.agent") == b"claude"


def test_import_keeps_a_files_xattrs_within_the_bound_the_mount_keeps(
    helix: Helix, store: Path
) -> None:
    """tmpfs holds three 60 KB values on one file; import stored all 180 KB in the
    folder's tree record, past the 128 KiB the mount allows (ENOSPC there), so every
    later save in that folder rewrote them. It keeps the first that fit and says so.
    (ext4, under tmp_path, holds 4 KiB of xattrs per file: /dev/shm is tmpfs.)"""
    from helixfs.vcs.repo import Repository

    source = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        (source / "f").write_bytes(b"f\n")
        for name in ("user.a", "user.b", "user.c"):
            os.setxattr(source / "f", name, bytes(60_000))
        result = ok(helix("import", str(source)))
        assert "left out 1 xattr(s) past a file's bound of 128 KiB" in result.out
        assert ok(helix("import", "--json", str(source))).json()["xattrs_skipped"] == 1
        with Repository.open(store) as repo:
            (entry,) = repo.ls("HEAD")
        assert [name for name, _ in entry.xattrs] == [b"user.a", b"user.b"]
    finally:
        shutil.rmtree(source)


def test_import_counts_a_file_whose_xattr_names_linux_cannot_list(
    helix: Helix, store: Path
) -> None:
    """tmpfs holds more names on one file than listxattr can return (64 KiB: E2BIG),
    so none of them can be read: import kept that file bare without a word. The
    file's xattrs are counted as left out; another file keeps its own."""
    from helixfs.vcs.repo import Repository

    source = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        (source / "crowded").write_bytes(b"c\n")
        for n in range(300):  # 300 names of 250 bytes: a list of 75 KB
            os.setxattr(source / "crowded", f"user.{n:05}" + "x" * 239, b"")
        (source / "plain").write_bytes(b"p\n")
        os.setxattr(source / "plain", "user.kept", b"yes")
        result = ok(helix("import", str(source)))
        assert "left out all xattrs of 1 file(s) whose names are past the 64 KiB" in result.out
        assert ok(helix("import", "--json", str(source))).json()["xattrs_unlisted"] == 1
        with Repository.open(store) as repo:
            crowded, plain = repo.ls("HEAD")
        assert crowded.xattrs == () and plain.xattrs == ((b"user.kept", b"yes"),)
    finally:
        shutil.rmtree(source)


def test_import_of_a_file_dated_past_2262_is_one_clear_error(
    helix: Helix, store: Path, tmp_path: Path
) -> None:
    """Linux allows such mtimes (ext4 up to 2446); the tree encoder died with a traceback
    (struct.error). Before 1970 works: mtimes are signed."""
    make_tree(tmp_path / "p", {"old": "o\n", "future": "f\n"})
    year_1960, year_2300 = -315_619_200 * 10**9, 10_413_792_000 * 10**9
    os.utime(tmp_path / "p" / "old", ns=(year_1960, year_1960))
    os.utime(tmp_path / "p" / "future", ns=(year_2300, year_2300))
    # ext4, xfs, btrfs and tmpfs hold it; a test that cannot check must fail, not skip
    held = (tmp_path / "p" / "future").stat().st_mtime_ns
    assert held == year_2300, f"{tmp_path} cannot hold a mtime in 2300 (it kept {held})"
    before = store_state(store)
    fails(helix("import", "p"), says="p/future: its mtime is outside 1677..2262")
    assert store_state(store) == before
    os.utime(tmp_path / "p" / "future")
    ok(helix("import", "p"))
    (old,) = [e for e in ok(helix("ls", "--json", "HEAD")).json() if e["name"] == "old"]
    assert old["mtime_ns"] == year_1960


def test_pipes_sockets_and_devices_round_trip(helix: Helix, tmp_path: Path) -> None:
    """A FIFO, socket or device in an imported folder is kept with its kind, mode and
    mtime (a device with its number), and export makes it again."""
    make_tree(tmp_path / "p", {"a": "a\n"})
    os.mkfifo(tmp_path / "p" / "pipe", 0o640)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "p" / "sock"))
    device = os.geteuid() == 0  # CI runs as root; elsewhere mknod of a device is EPERM
    if device:
        os.mknod(tmp_path / "p" / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.chmod(tmp_path / "p" / "null", 0o666)
    os.utime(tmp_path / "p" / "pipe", ns=(10**18, 10**18))
    doc = ok(helix("import", "--json", "p")).json()
    assert (doc["files"], doc["skipped"]) == (3 + int(device), 0)
    kinds = {n["name"]: n["type"] for n in ok(helix("ls", "--json", "HEAD")).json()}
    assert kinds == {"a": "file", "pipe": "fifo", "sock": "socket"} | (
        {"null": "char device"} if device else {}
    )
    ok(helix("export", "HEAD", "out"))
    pipe, sock = os.lstat(tmp_path / "out" / "pipe"), os.lstat(tmp_path / "out" / "sock")
    assert pipe.st_mode == stat.S_IFIFO | 0o640 and pipe.st_mtime_ns == 10**18
    assert stat.S_ISSOCK(sock.st_mode)
    if device:
        null = os.lstat(tmp_path / "out" / "null")
        assert (null.st_mode, null.st_rdev) == (stat.S_IFCHR | 0o666, os.makedev(1, 3))
    names = ["a", "pipe", "sock"] + (["null"] if device else [])
    assert sorted(os.listdir(tmp_path / "out")) == sorted(names)


def test_import_as_root_keeps_owners_and_export_sets_them(helix: Helix, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root may give files away (CI runs as root)")
    make_tree(tmp_path / "p", {"a": "a\n", "sub/b": "b\n"})
    os.chown(tmp_path / "p" / "a", 123, 456)
    os.chown(tmp_path / "p" / "sub", 7, 8)
    ok(helix("import", "p"))
    ok(helix("export", "HEAD", "out"))
    owners = {name: os.lstat(tmp_path / "out" / name)[4:6] for name in ("a", "sub", "sub/b")}
    assert owners == {"a": (123, 456), "sub": (7, 8), "sub/b": (0, 0)}


def test_export_keeps_a_mode_without_permission_bits(helix: Helix, tmp_path: Path) -> None:
    """A file imported (or saved in the mount) with mode 000 came out as 644."""
    make_tree(tmp_path / "p", {"locked": "x\n", "open": "y\n"})
    os.chmod(tmp_path / "p" / "locked", 0)
    ok(helix("import", "p"))
    ok(helix("export", "HEAD", "out"))
    assert (tmp_path / "out" / "locked").stat().st_mode & 0o7777 == 0
    assert (tmp_path / "out" / "open").stat().st_mode & 0o7777 == 0o644


def test_export_where_no_folder_can_be_made_names_the_target(helix: Helix) -> None:
    """The error named the hidden staging folder (`/proc/.out.helix-export-x1y2`)."""
    result = fails(helix("export", "HEAD", "/proc/helix-out"), says="cannot create")
    assert "/proc/helix-out" in result.err and "helix-export" not in result.err


def test_export_into_an_empty_folder_is_allowed(helix: Helix, tmp_path: Path) -> None:
    make_tree(tmp_path / "p", {"a": "a"})
    ok(helix("import", "p"))
    (tmp_path / "dest").mkdir()
    ok(helix("export", "HEAD", "dest"))
    assert (tmp_path / "dest" / "a").read_text() == "a"
    leftovers = [p.name for p in tmp_path.iterdir() if "helix-export" in p.name]
    assert leftovers == []


def test_import_skips_git_internals_and_counts_them(helix: Helix, tmp_path: Path) -> None:
    make_tree(tmp_path / "p", {"a": "a", ".git/config": "x", "sub/.helix/x": "y"})
    doc = ok(helix("import", "--json", "p")).json()
    assert doc["files"] == 1 and doc["skipped"] == 2


def test_import_leaves_out_what_the_folder_ignores(helix: Helix, tmp_path: Path) -> None:
    files = {".gitignore": "*.o\nout/\n", "src/a.c": "c", "src/a.o": "o", "out/bin": "b"}
    make_tree(tmp_path / "p", files)
    doc = ok(helix("import", "--json", "p")).json()
    assert doc["files"] == 2 and doc["ignored"] == 2
    assert "left out 2 ignored path(s)" in ok(helix("import", "p")).out
    fails(helix("cat", "HEAD", "src/a.o"), says="no such path")


def test_import_never_swallows_its_own_store(tmp_path: Path) -> None:
    from .conftest import run_helix

    make_tree(tmp_path / "w", {"a": "a"})
    ok(run_helix("init", store=tmp_path / "w" / "store"))
    doc = ok(run_helix("import", "--json", tmp_path / "w", store=tmp_path / "w" / "store")).json()
    assert doc["files"] == 1 and doc["skipped"] == 1


def test_import_to_another_branch(helix: Helix, tmp_path: Path) -> None:
    make_tree(tmp_path / "p", {"a": "a"})
    ok(helix("branch", "incoming"))
    doc = ok(helix("import", "--json", "--branch", "incoming", "-m", "drop", "p")).json()
    assert doc["branch"] == "incoming"
    fails(helix("cat", "main", "a"), says="no such path")
    assert ok(helix("cat", "incoming", "a")).out == "a"


def test_failed_export_leaves_nothing(helix: Helix, store: Path, tmp_path: Path) -> None:
    make_tree(tmp_path / "p", {"a": "a"})
    ok(helix("import", "p"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    before = store_state(store)
    fails(helix("export", "HEAD", "full"), says="not an empty folder")
    fails(helix("export", "HEAD", "no/such/parent/dir"), says="no such folder")
    assert (tmp_path / "full" / "x").read_text() == "keep"
    assert store_state(store) == before


def test_export_onto_a_symlink_loop_is_refused_in_one_line(helix: Helix, tmp_path: Path) -> None:
    """Path.resolve() raised RuntimeError on the loop: a traceback, exit 1."""
    make_tree(tmp_path / "p", {"a": "a"})
    ok(helix("import", "p"))
    (tmp_path / "loop").symlink_to("loop")
    fails(helix("export", "HEAD", "loop"), says="symbolic link loop")
    assert os.readlink(tmp_path / "loop") == "loop"
    assert [p.name for p in tmp_path.iterdir() if "helix-export" in p.name] == []
