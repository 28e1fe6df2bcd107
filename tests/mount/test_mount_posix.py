"""POSIX behaviours real tools rely on, through the kernel, each in a subprocess.

Every syscall runs in a child process (python -c, coreutils, attr tools) under a
timeout: a daemon bug then fails one test instead of hanging the test runner in an
uninterruptible FUSE request.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from mount_harness import Mount, MountFactory, need

pytestmark = [pytest.mark.mount, pytest.mark.timeout(120)]


def py(mnt: Mount, code: str, *, check: bool = True) -> Any:
    """Run `code` in a Python child with cwd in the mount; it prints one JSON value."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=mnt.path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"child failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout) if done.stdout.strip() else None


def test_create_write_read(mnt: Mount) -> None:
    mnt.sh("printf 'hello\\n' > a.txt && echo more >> a.txt")
    assert (mnt.path / "a.txt").read_text() == "hello\nmore\n"
    assert mnt.sh("cat a.txt").stdout == "hello\nmore\n"
    assert mnt.helix("cat", "HEAD", "a.txt").stdout == "hello\nmore\n"


def test_open_flags_append_trunc_excl(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import errno, json, os
        fd = os.open("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"0123456789"); os.close(fd)
        try:
            os.open("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644); excl = 0
        except FileExistsError: excl = errno.EEXIST
        fd = os.open("f", os.O_WRONLY | os.O_APPEND)
        os.lseek(fd, 0, os.SEEK_SET); os.write(fd, b"AB"); os.close(fd)
        appended = open("f", "rb").read().decode()
        fd = os.open("f", os.O_WRONLY | os.O_TRUNC); os.write(fd, b"x"); os.close(fd)
        print(json.dumps([excl, appended, open("f", "rb").read().decode()]))
        """,
    )
    assert result == [errno.EEXIST, "0123456789AB", "x"]
    assert mnt.helix("cat", "HEAD", "f").stdout == "x"


def test_sparse_writes_and_truncate(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import json, os
        fd = os.open("sparse", os.O_RDWR | os.O_CREAT, 0o644)
        os.pwrite(fd, b"end", 10_000_000)
        os.pwrite(fd, b"start", 0)
        os.close(fd)
        st = os.stat("sparse")
        with open("sparse", "rb") as f:
            f.seek(4_000_000); middle = f.read(16)
        os.truncate("sparse", 5)
        small = open("sparse", "rb").read()
        os.truncate("sparse", 8)
        grown = open("sparse", "rb").read()
        print(json.dumps([st.st_size, middle.hex(), small.decode(), grown.hex()]))
        """,
    )
    assert result == [10_000_003, "00" * 16, "start", b"start\0\0\0".hex()]
    assert mnt.helix("cat", "HEAD", "sparse").stdout == "start\0\0\0"
    # Past the largest file (1 TiB): a clean EFBIG. 8 EiB took all the host's memory.
    refused = mnt.sh(
        "truncate -s 2T sparse; echo $?;"
        " dd if=/dev/zero of=sparse bs=1 count=1 seek=2T conv=notrunc status=none; echo $?"
    )
    assert refused.stdout == "1\n1\n" and refused.stderr.count("File too large") == 2
    assert (mnt.path / "sparse").read_bytes() == b"start\0\0\0"


def test_a_64_gib_sparse_file_is_saved_at_the_cost_of_its_data(mnt: Mount, tmp_path: Path) -> None:
    """ftruncate of an open file, a write far past its end, cp --sparse=always: the close
    used to cut and hash every zero of the size (2-4 s per 2 GiB, the whole mount
    stalled meanwhile), so these 64 GiB files would not be saved within the timeouts."""
    result = py(
        mnt,
        """
        import json, os
        fd = os.open("sparse", os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, 64 << 30)
        os.pwrite(fd, b"start", 0)
        os.pwrite(fd, b"middle", 17 << 30)
        os.close(fd)
        fd = os.open("far", os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(fd, b"end", (64 << 30) - 3)
        os.close(fd)
        with open("sparse", "rb") as f:
            f.seek((17 << 30) - 2); middle = f.read(10)
            f.seek(40 << 30); hole = f.read(1 << 20)
        print(json.dumps([os.stat("sparse").st_size, middle.hex(), hole == bytes(1 << 20)]))
        """,
    )
    assert result == [64 << 30, (b"\0\0middle\0\0").hex(), True]
    source = tmp_path / "source"  # outside: cp reads a file in the mount whole
    with open(source, "wb") as f:
        f.truncate(64 << 30)
        f.seek(5_000_000_000)
        f.write(b"data")
    mnt.sh(
        f"cp --sparse=always {source} copy"
        " && dd if=/dev/zero of=dd bs=4k count=1 seek=16000000 status=none"
        " && exec 3<>grown && truncate -s 64G /proc/self/fd/3",
        timeout=60,
    )
    with open(mnt.path / "copy", "rb") as f:
        f.seek(4_999_999_998)
        assert f.read(8) == b"\0\0data\0\0"
    sizes = mnt.sh("stat -c %s sparse far copy dd grown").stdout.split()
    assert sizes == [
        str(64 << 30),
        str(64 << 30),
        str(64 << 30),
        str(16000001 * 4096),
        str(64 << 30),
    ]
    fsck = mnt.helix("fsck", check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def test_du_cp_and_tar_see_a_sparse_file_in_the_mount_as_sparse(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """st_blocks said every byte was data: `du` of a 64 GiB sparse file said 64G, and
    `cp --sparse=auto` or `tar -S` out of the mount wrote every zero (the mount cannot
    answer SEEK_HOLE; st_blocks < size is what they go by). Now st_blocks counts the
    written ranges while the file is open, the chunks that are not zeros once stored."""
    need("du", "cp", "tar")
    mnt = make_mount(0)
    open_blocks = py(
        mnt,
        """
        import json, os
        blocks = []
        for name, size in (("big", 64 << 30), ("gig", 1 << 30)):
            fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
            os.ftruncate(fd, size)
            os.pwrite(fd, b"start", 0)
            os.pwrite(fd, b"middle", size // 2)
            blocks.append(os.fstat(fd).st_blocks)
            os.close(fd)
        print(json.dumps(blocks))
        """,
    )
    assert open_blocks == [1, 1]  # 11 bytes written
    mnt.stop()  # a new mount: the kernel asks for the stored files' attributes
    mnt = make_mount(0, store=mnt.store)
    small = 4 << 20  # at most two 256 KiB chunks around each piece of data
    for command, unit in (("du -B1", 1), ("stat -c %b", 512), ("ls -s --block-size=1", 1)):
        used = [int(line.split()[0]) for line in mnt.sh(f"{command} big gig").stdout.splitlines()]
        assert len(used) == 2 and all(0 < n * unit < small for n in used), (command, used)

    copy, archive = tmp_path / "copy", tmp_path / "gig.tar"
    mnt.sh(f"cp --sparse=auto gig {copy} && tar -S -cf {archive} gig", timeout=120)
    assert copy.stat().st_size == 1 << 30
    assert copy.stat().st_blocks * 512 < small  # 1 GiB before: the copy was dense
    with open(copy, "rb") as f:
        assert f.read(6) == b"start\0"
        f.seek((1 << 29) - 1)
        assert f.read(8) == b"\0middle\0"
    assert archive.stat().st_size < small


def test_rename_over_existing_and_of_directories(mnt: Mount) -> None:
    mnt.sh(
        "echo old > target && echo new > source && mv source target"
        " && mkdir -p d1/sub && echo deep > d1/sub/f && mv d1 d2"
    )
    assert (mnt.path / "target").read_text() == "new\n"
    assert not (mnt.path / "source").exists()
    assert not (mnt.path / "d1").exists()
    assert (mnt.path / "d2" / "sub" / "f").read_text() == "deep\n"
    assert mnt.helix("cat", "HEAD", "d2/sub/f").stdout == "deep\n"
    mnt.sh("mkdir empty && mv d2 empty/inside")  # into another directory
    assert (mnt.path / "empty" / "inside" / "sub" / "f").read_text() == "deep\n"


def test_rename_noreplace_through_renameat2(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import ctypes, ctypes.util, json, os
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        AT_FDCWD, RENAME_NOREPLACE = -100, 1
        open("a", "w").write("a"); open("b", "w").write("b")
        def renameat2(src, dst, flags):
            rc = libc.renameat2(AT_FDCWD, src, AT_FDCWD, dst, flags)
            return 0 if rc == 0 else ctypes.get_errno()
        refused = renameat2(b"a", b"b", RENAME_NOREPLACE)
        moved = renameat2(b"a", b"c", RENAME_NOREPLACE)
        print(json.dumps([refused, moved, sorted(os.listdir(".")), open("b").read()]))
        """,
    )
    assert result == [errno.EEXIST, 0, ["b", "c"], "b"]


def test_unlinked_open_file_stays_readable(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import json, os
        open("doomed", "w").write("still here")
        fd = os.open("doomed", os.O_RDONLY)
        os.unlink("doomed")
        gone = not os.path.exists("doomed")
        data = os.pread(fd, 100, 0).decode()
        os.close(fd)
        print(json.dumps([gone, data]))
        """,
    )
    assert result == [True, "still here"]
    assert "doomed" not in mnt.helix("ls", "HEAD").stdout


def test_mkdir_rmdir(mnt: Mount) -> None:
    mnt.sh("mkdir -p a/b/c && rmdir a/b/c")
    assert (mnt.path / "a" / "b").is_dir()
    assert not (mnt.path / "a" / "b" / "c").exists()
    failed = mnt.sh("rmdir a", check=False)
    assert failed.returncode != 0 and "not empty" in failed.stderr.lower()
    assert mnt.sh("mkdir a", check=False).returncode != 0  # exists


def test_symlinks(mnt: Mount) -> None:
    mnt.sh("echo data > real && ln -s real link && ln -s nowhere dangling")
    assert os.readlink(mnt.path / "link") == "real"
    assert (mnt.path / "link").read_text() == "data\n"
    assert os.readlink(mnt.path / "dangling") == "nowhere"
    assert (mnt.path / "link").is_symlink()


def test_hard_link_is_refused_cleanly(mnt: Mount) -> None:
    mnt.sh("echo x > original")
    done = mnt.sh("ln original second", check=False)
    if done.returncode == 0:  # allowed by design only if both names see the same data
        assert (mnt.path / "second").read_text() == "x\n"
    else:
        assert "not permitted" in done.stderr.lower()  # EPERM, docs/decisions/0003


def test_ctime_is_when_a_file_changed_even_for_a_future_mtime(make_mount: MountFactory) -> None:
    """ctime showed max(ctime, mtime): a file touched to 2100 changed in 2100. As on a
    local disk, it is the time of the change (here: now), also after a remount."""
    mnt = make_mount(0)
    before = time.time()
    mnt.sh("echo x > later && touch -d '2100-01-01 UTC' later && echo y > now")
    _assert_changed_now(mnt, before)
    assert mnt.stop() == 0
    _assert_changed_now(make_mount(0, store=mnt.store), before)


def _assert_changed_now(mnt: Mount, before: float) -> None:
    st = (mnt.path / "later").stat()
    assert st.st_mtime == 4102444800
    assert before - 1 <= st.st_ctime <= time.time() + 1
    assert before - 1 <= (mnt.path / "now").stat().st_ctime <= time.time() + 1


def test_chmod_and_utimens_are_kept(mnt: Mount) -> None:
    mnt.sh("echo '#!/bin/sh' > run.sh && echo 'echo ran' >> run.sh && chmod 755 run.sh")
    assert mnt.sh("./run.sh").stdout == "ran\n"
    assert (mnt.path / "run.sh").stat().st_mode & 0o777 == 0o755
    mnt.sh("chmod 600 run.sh")
    assert (mnt.path / "run.sh").stat().st_mode & 0o777 == 0o600
    mnt.sh("touch -d '2001-02-03 04:05:06 UTC' run.sh")
    st = (mnt.path / "run.sh").stat()
    assert int(st.st_mtime) == 981173106
    result = py(
        mnt,
        """
        import json, os
        os.utime("run.sh", ns=(1_000_000_000_123_456_789, 1_500_000_000_987_654_321))
        print(json.dumps(os.stat("run.sh").st_mtime_ns))
        """,
    )
    assert result // 1000 == 1_500_000_000_987_654  # at least microsecond precision


def test_statfs(mnt: Mount) -> None:
    st = os.statvfs(mnt.path)
    assert st.f_bsize > 0 and st.f_blocks > 0
    assert "helixfs" in mnt.sh("df -T .").stdout


def test_fsync(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import json, os
        fd = os.open("durable", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"on disk"); os.fsync(fd); os.fdatasync(fd); os.close(fd)
        dfd = os.open(".", os.O_RDONLY); os.fsync(dfd); os.close(dfd)
        print(json.dumps(open("durable").read()))
        """,
    )
    assert result == "on disk"


def test_xattrs_with_attr_tools_and_the_xattr_package(mnt: Mount) -> None:
    mnt.sh("echo x > f && setfattr -n user.color -v blue f")
    assert mnt.sh("getfattr --only-values -n user.color f").stdout == "blue"
    listed = mnt.sh("getfattr -d f").stdout
    assert "user.color" in listed
    result = py(
        mnt,
        """
        import json, xattr
        x = xattr.xattr("f")
        x.set("user.size", b"big")
        names = sorted(x.list())
        x.remove("user.color")
        print(json.dumps([names, x.get("user.size").decode(), sorted(x.list())]))
        """,
    )
    assert result == [["user.color", "user.size"], "big", ["user.size"]]
    missing = mnt.sh("getfattr -n user.color f", check=False)
    assert missing.returncode != 0


def test_shared_writable_mmap(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import json, mmap, os
        with open("mapped", "wb") as f:
            f.write(b"." * 8192)
        fd = os.open("mapped", os.O_RDWR)
        m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        m[0:5] = b"HELLO"; m[4096:4101] = b"WORLD"
        m.flush(); m.close(); os.close(fd)
        data = open("mapped", "rb").read()
        print(json.dumps([data[:5].decode(), data[4096:4101].decode(), len(data)]))
        """,
    )
    assert result == ["HELLO", "WORLD", 8192]
    stored = mnt.helix("cat", "HEAD", "mapped").stdout
    assert stored[:5] == "HELLO" and stored[4096:4101] == "WORLD"


def test_shared_mmap_of_a_file_opened_for_append_writes_in_place(mnt: Mount) -> None:
    """The kernel writes dirty mmap pages back through an O_APPEND handle at their own
    offsets: they used to be appended once more (8192 bytes became 12288)."""
    result = py(
        mnt,
        """
        import json, mmap, os
        fd = os.open("log", os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, b"." * 8192)
        m = mmap.mmap(fd, 8192)
        m[0:5] = b"HELLO"
        m.flush(); m.close()
        os.write(fd, b"END")
        os.close(fd)
        data = open("log", "rb").read()
        print(json.dumps([len(data), data[:5].decode(), data[-3:].decode()]))
        """,
    )
    assert result == [8195, "HELLO", "END"]
    assert mnt.helix("cat", "HEAD", "log").stdout == "HELLO" + "." * 8187 + "END"


def test_invalid_utf8_names_round_trip(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import json, os
        names = [b"caf\\xe9.txt", b"\\xff\\xfe", "ünïcødé ✓".encode(), b"with space", b"-dash"]
        for n in names:
            with open(n, "wb") as f:
                f.write(n)
        back = sorted(os.listdir(b"."))
        ok = all(open(n, "rb").read() == n for n in names)
        print(json.dumps([sorted(n.hex() for n in names) == sorted(b.hex() for b in back), ok]))
        """,
    )
    assert result == [True, True]
    listed = [e["name"] for e in json.loads(mnt.helix("ls", "HEAD", "--json").stdout)]
    assert {"bytes_b64": base64.b64encode(b"caf\xe9.txt").decode()} in listed  # ADR 0020


def test_inode_numbers_are_stable(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import json, os
        os.makedirs("dir/sub"); open("dir/sub/f", "w").write("1")
        before = [os.stat(p).st_ino for p in (".", "dir", "dir/sub", "dir/sub/f")]
        open("dir/sub/f", "a").write("2")            # a save
        open("dir/other", "w").write("x")            # a sibling change
        again = [os.stat(p).st_ino for p in (".", "dir", "dir/sub", "dir/sub/f")]
        print(json.dumps([before, again, len(set(before))]))
        """,
    )
    before, again, distinct = result
    assert before == again and distinct == 4 and before[0] == 1
    # Make the kernel forget its dentries and inodes: the numbers must come back the same.
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as caches:
            caches.write("2\n")
    except OSError:
        return  # not root (or /proc/sys read-only): the numbers above are the check
    after = py(
        mnt,
        """
        import json, os
        print(json.dumps([os.stat(p).st_ino for p in (".", "dir", "dir/sub", "dir/sub/f")]))
        """,
    )
    assert after == before


def test_every_save_is_a_commit_with_process_and_paths(mnt: Mount) -> None:
    before = len(mnt.log())
    mnt.sh("echo one > first.txt")
    commits = mnt.log()
    assert len(commits) > before
    newest = commits[0]
    assert newest["meta"].get("process") in ("bash", "sh")
    assert isinstance(newest["meta"].get("pid"), int)
    assert "first.txt" in newest["meta"].get("changed", [])
    human = mnt.helix("log").stdout
    assert "bash" in human or "sh" in human


def test_setfattr_message_names_the_next_commit(mnt: Mount) -> None:
    mnt.sh("echo a > note.txt")
    mnt.sh("setfattr -n user.helix.message -v 'explain the change' .")
    mnt.sh("echo b >> note.txt")
    messages = [c["message"] for c in mnt.log(limit=3)]
    assert "explain the change" in messages


def test_open_files_follow_renames_and_unlinks(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import json, os
        fd = os.open("a.txt", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"first"); os.rename("a.txt", "b.txt"); os.write(fd, b"-second")
        os.close(fd)
        os.mkdir("d")
        fd = os.open("d/f", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"in-d"); os.rename("d", "e"); os.close(fd)
        fd = os.open("gone.txt", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"x"); os.unlink("gone.txt"); os.write(fd, b"y"); os.close(fd)
        fd = os.open("t.txt", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"0123456789"); os.truncate("t.txt", 3); os.close(fd)
        print(json.dumps([open("b.txt").read(), os.path.exists("a.txt"), open("e/f").read(),
                          os.path.exists("gone.txt"), open("t.txt").read()]))
        """,
    )
    assert result == ["first-second", False, "in-d", False, "012"]
    assert mnt.helix("cat", "HEAD", "b.txt").stdout == "first-second"
    assert mnt.helix("cat", "HEAD", "e/f").stdout == "in-d"
    assert "gone.txt" not in mnt.helix("ls", "HEAD").stdout  # no resurrection on close


def test_two_appenders_and_a_large_file_round_trip(mnt: Mount) -> None:
    result = py(
        mnt,
        """
        import hashlib, json, os
        a = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        b = os.open("log", os.O_WRONLY | os.O_APPEND)
        for _ in range(50):
            os.write(a, b"a" * 10); os.write(b, b"b" * 10)
        os.close(a); os.close(b)
        data = os.urandom(48 << 20) + b"tail"
        with open("big.bin", "wb") as f:
            f.write(data)
        back = open("big.bin", "rb").read()
        print(json.dumps([os.path.getsize("log"), back == data,
                          hashlib.sha256(data).hexdigest()]))
        """,
    )
    size, same, digest = result
    assert size == 1000 and same
    stored = subprocess.run(
        [
            sys.executable,
            "-m",
            "helixfs.cli.main",
            "--store",
            str(mnt.store),
            "cat",
            "HEAD",
            "big.bin",
        ],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    assert hashlib.sha256(stored).hexdigest() == digest


def test_posix_details_of_qa_issue_3(mnt: Mount) -> None:
    """QA issue 3, report #6: the same results as on a local disk."""
    # a context with something in it (an empty memory's context is empty)
    mnt.helix("remember", "The context file is read as long as its st_size says.")
    got = py(
        mnt,
        """
        import json, os
        out = {}
        with open("t", "w") as f:
            f.write("content")
        os.close(os.open("t", os.O_RDONLY | os.O_TRUNC))
        out["o_rdonly_o_trunc"] = os.stat("t").st_size
        fd = os.open("t", os.O_RDWR)
        os.unlink("t")
        out["nlink_unlinked"] = os.fstat(fd).st_nlink
        os.close(fd)
        open("a", "w").close()
        long = b"y" * 256
        calls = [
            lambda: open(long, "w"),
            lambda: os.mkdir(long),
            lambda: os.stat(long),
            lambda: os.symlink("a", long),
            lambda: os.rename("a", long),
        ]
        out["long_names"] = []
        for call in calls:
            try:
                call()
                out["long_names"].append(0)
            except OSError as exc:
                out["long_names"].append(exc.errno)
        fd = os.open(".helix/context", os.O_RDONLY)  # a reader that trusts st_size
        out["context"] = len(os.read(fd, os.fstat(fd).st_size)) > 0
        os.close(fd)
        print(json.dumps(out))
        """,
    )
    assert got == {
        "o_rdonly_o_trunc": 0,
        "nlink_unlinked": 0,
        "long_names": [errno.ENAMETOOLONG] * 5,
        "context": True,
    }


def test_temp_named_files_survive_a_reset_and_renamed_dirs_list_their_paths(
    make_mount: MountFactory,
) -> None:
    """QA issue 3, reports #2 and #4, as reproduced there (quiet window 300 ms)."""
    mnt = make_mount(300)
    mnt.sh("mkdir cd1; echo x > cd1/f; mv cd1 cd2; sleep 0.6")
    newest = mnt.log(limit=1)[0]
    assert newest["meta"]["changed"] == ["cd2", "cd2/f"]
    assert newest["message"].endswith("save 2 paths")
    mnt.sh("echo '<svg/>' > .logo.svg; echo keep > 'notes~'; echo 1 > 4913; sleep 0.6")
    listed = [line.split()[-1] for line in mnt.helix("ls", "HEAD").stdout.splitlines()]
    assert listed == [".logo.svg", "cd2/"]  # a hidden SVG is the user's file, not vim's
    mnt.helix("reset", "--hard", "HEAD")
    assert sorted(os.listdir(mnt.path)) == [".logo.svg", "4913", "cd2", "notes~"]
    assert (mnt.path / "notes~").read_text() == "keep\n"
