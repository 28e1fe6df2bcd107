"""Everyday tools run in the mount and in a local-disk folder give the same result.

Each test runs one session of a tool (a shell line in a subprocess, under a timeout) in
a folder of the mount and in a folder of pytest's tmp dir, and compares what a user
sees: exit status, output, file contents, modes and mtimes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from mount_harness import Mount, need, run_both, sh

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]

NS_MAX = 2**63 - 1  # the latest mtime a tree entry holds: 2262-04-11
NS_MIN = -(2**63)  # the earliest: 1677-09-21
YEAR_2300 = 10_413_792_000  # seconds
YEAR_1600 = -11_676_096_000


def test_a_date_outside_1677_2262_is_clamped_as_a_local_disk_clamps_its_own(
    mnt: Mount, tmp_path: Path
) -> None:
    """A tree entry holds signed 64-bit ns. A local disk clamps a time outside its own
    range (ext4: 1901..2446) and the call succeeds; the mount answered EINVAL, so
    `touch -d 2300-01-01` failed and `tar x` of a file dated 2300 exited 2."""
    archive = tmp_path / "dates.tar"
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, when in (("future", YEAR_2300), ("past", YEAR_1600), ("now", 10**9)):
            info = tarfile.TarInfo(name)
            info.mtime = when
            tar.addfile(info)
    session = f"tar --warning=no-timestamp -xf {archive} && touch -d '2300-01-01 UTC' touched && ls"
    work, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk == "future\nnow\npast\ntouched\nexit=0\n"
    mtimes = {name: (work / name).stat().st_mtime_ns for name in ("future", "past", "now")}
    assert mtimes == {"future": NS_MAX, "past": NS_MIN, "now": 10**18}
    assert (work / "touched").stat().st_mtime_ns == NS_MAX
    listed = json.loads(mnt.helix("ls", "--json", "HEAD", "work").stdout)
    assert {e["name"]: e["mtime_ns"] for e in listed}["future"] == NS_MAX
    os.utime(work / "future", ns=(NS_MAX, NS_MAX))  # the bounds themselves are kept
    assert (work / "future").stat().st_mtime_ns == NS_MAX


def test_a_folder_made_in_a_setgid_folder_is_setgid_too(mnt: Mount, tmp_path: Path) -> None:
    """Shared group folders (`chmod g+s`) rely on it: on a local disk a new subfolder
    inherits the bit, so the files made deeper down keep the group too. The mount made
    the subfolder without it."""
    session = (
        "umask 022 && mkdir shared && chmod 2775 shared && mkdir shared/sub shared/sub/deeper"
        " && touch shared/file && mkdir plain && mkdir plain/sub"
        " && stat -c '%a %n' shared shared/sub shared/sub/deeper shared/file plain/sub"
    )
    _, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk
    assert "2755 shared/sub\n" in in_mount


def test_copying_a_folder_onto_the_mount_root_sets_its_mode_and_time(
    mnt: Mount, tmp_path: Path
) -> None:
    """`tar x` of an archive made with `-C SRC .` and `rsync -a SRC/ MNT/` set the
    mode and time of "." (the mount root): accepted as on a disk (ADR 0030)."""
    need("tar", "rsync")
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "mod.py").write_text("x = 1\n")
    src.chmod(0o750)
    os.utime(src, ns=(10**18, 10**18))
    sh(f"tar cf {tmp_path}/a.tar -C {src} .", tmp_path)
    sh(f"tar xf {tmp_path}/a.tar", mnt.path)
    sh(f"rsync -a {src}/ {mnt.path}/", tmp_path)
    shown = mnt.path.stat()
    assert (shown.st_mode & 0o7777, shown.st_mtime_ns) == (0o750, 10**18)
    assert (mnt.path / "pkg" / "mod.py").read_text() == "x = 1\n"


PIPE_AND_SOCKET = r"""
import os, socket, sys, threading
os.mkfifo("pipe", 0o600)
reader = threading.Thread(target=lambda: print("fifo:", open("pipe").read().strip()))
reader.start()
with open("pipe", "w") as writer:
    writer.write("through the pipe\n")
reader.join()
server = socket.socket(socket.AF_UNIX)
server.bind("sock")
server.listen(1)
client = socket.socket(socket.AF_UNIX)
client.connect(os.path.abspath("sock"))  # found again by path, through the mount
peer, _ = server.accept()
client.sendall(b"through the socket")
print("socket:", peer.recv(64).decode())
"""


def test_fifos_sockets_and_device_nodes_work(mnt: Mount) -> None:
    """mkfifo and a unix socket's bind() make their files in the mount; data goes through
    both, as on a local disk. A device node is stored with its numbers (ADR 0042). Each
    is a save; fsck is clean."""
    done = mnt.sh(f"{sys.executable} -c '{PIPE_AND_SOCKET}'")
    assert done.stdout == "fifo: through the pipe\nsocket: through the socket\n"
    mnt.sh("mknod null c 1 3")
    listing = mnt.sh("ls -l pipe sock null").stdout
    assert listing.startswith("crw") and "1, 3" in listing
    assert "\nprw-------" in listing and "\nsrwx" in listing
    rows = json.loads(mnt.helix("ls", "--json", "HEAD").stdout)
    assert {row["name"]: row["type"] for row in rows} == {
        "null": "char device",
        "pipe": "fifo",
        "sock": "socket",
    }
    mnt.helix("fsck")


MANIFEST = r"""
import hashlib, json, os, stat, sys
root = os.fsencode(sys.argv[1])
rows = []
for folder, dirs, files in os.walk(root):
    for name in dirs + files:
        path = os.path.join(folder, name)
        st = os.lstat(path)
        # Any time after the source was made is "now": when the tool ran (a folder it
        # made; rsync sets some times while its other process still renames files).
        recent = st.st_mtime_ns >= int(sys.argv[2])
        mtime = "now" if recent else st.st_mtime_ns
        row = [os.path.relpath(path, root).hex(), st.st_mode, mtime]
        if stat.S_ISREG(st.st_mode):
            row.append(hashlib.sha256(open(path, "rb").read()).hexdigest())
        elif stat.S_ISLNK(st.st_mode):
            row.append(os.readlink(path).hex())
        if not stat.S_ISLNK(st.st_mode):
            row += sorted((x, os.getxattr(path, x).hex()) for x in os.listxattr(path))
        rows.append(row)
print(json.dumps(sorted(rows)))
"""


def manifest(folder: Path, now: int) -> list[object]:
    """Every entry below `folder`: name bytes, mode, mtime (or "now" from `now` ns on),
    content or target, xattrs."""
    done = subprocess.run(
        [sys.executable, "-c", MANIFEST, folder, str(now)],
        capture_output=True,
        check=True,
        timeout=120,
    )
    rows: list[object] = json.loads(done.stdout)
    return rows


def test_rsync_cp_tar_and_zip_copies_match_the_local_disk(mnt: Mount, tmp_path: Path) -> None:
    """Odd names (255 bytes, a newline, invalid UTF-8), modes, nanosecond mtimes, user
    xattrs and symlinks, copied in by rsync -aX (temp file + rename, then --inplace and
    --delete), cp -a and tar --xattrs: the same trees as on the local disk, also after
    a remount."""
    need("rsync", "tar", "zip", "unzip", "setfattr")
    source = tmp_path / "src"
    sh(
        "mkdir -p src/a/b && cd src && echo one > a/f && chmod 640 a/f"
        " && head -c 300000 /dev/urandom > a/b/big && echo run > a/run && chmod 4755 a/run"
        " && ln -s b/big a/link && ln -s /nowhere a/dangling"
        " && echo long > $(printf 'L%.0s' $(seq 255)) && echo nl > \"$(printf 'new\\nline')\""
        " && echo bad > \"$(printf 'bad\\xff\\xfe')\" && setfattr -n user.color -v blue a/f"
        " && setfattr -n user.dir -v 0x00ff a"
        " && find . -exec touch -h -d '2003-03-03 03:03:03.5' {} +"
        " && touch -d '2001-02-03 04:05:06.123456789' a/f && touch -h -d '2002-01-01' a/link"
        " && touch -d '1999-12-31' a/b",
        tmp_path,
    )
    now = time.time_ns()
    session = (
        f"rsync -aX {source}/ rsync && echo more >> rsync/a/f && rm rsync/a/run"
        f" && echo extra > rsync/extra && rsync -aX --delete {source}/ rsync"
        f" && echo change >> rsync/a/b/big && rsync -aX --inplace --no-whole-file {source}/ rsync"
        f" && cp -a {source} cp && tar -C {source} --xattrs --xattrs-include='user.*' -cf - ."
        " | (mkdir tar && tar -C tar --xattrs --xattrs-include='user.*' -xf -)"
        f" && (cd {source} && zip -qry -X - .) > all.zip && mkdir unzip && cd unzip"
        " && unzip -q ../all.zip && cd .. && rm all.zip"
    )
    work, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk == "exit=0\n"
    expected = manifest(tmp_path / "work", now)
    kept_ns = [row for row in expected if row[2] == 981_173_106_123_456_789]  # type: ignore[index]
    assert len(kept_ns) == 3  # a/f in rsync/, cp/ and tar/ (zip keeps whole seconds)
    assert manifest(work, now) == expected
    mnt.stop()
    mnt.start("--quiet-window", "0")
    assert manifest(work, now) == expected


TRY_LOCK = r"""
import fcntl, os, struct, sys
fd = os.open("f", os.O_RDWR)
ofd_lock = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
try:
    if sys.argv[1] == "flock":
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    elif sys.argv[1] == "posix":
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, ofd_lock)
    print(0)
except OSError as exc:
    print(exc.errno)
"""

LOCKS = r"""
import fcntl, os, subprocess, sys
open("f", "w").close()
def other(kind):  # another process tries a lock without waiting: 0 got it, else errno
    done = subprocess.run([sys.executable, sys.argv[1], kind], capture_output=True, text=True)
    return int(done.stdout)
fd = os.open("f", os.O_RDWR)
out = []
for take, release in (
    (lambda: fcntl.flock(fd, fcntl.LOCK_EX), lambda: fcntl.flock(fd, fcntl.LOCK_UN)),
    (lambda: fcntl.lockf(fd, fcntl.LOCK_EX), lambda: fcntl.lockf(fd, fcntl.LOCK_UN)),
):
    take()
    out.append([other(kind) for kind in ("flock", "posix", "ofd")])
    release()
out.append([other(kind) for kind in ("flock", "posix", "ofd")])
hold = "import fcntl, os, time; fcntl.flock(os.open('f', os.O_RDWR), fcntl.LOCK_EX); time.sleep(60)"
holder = subprocess.Popen([sys.executable, "-c", hold])
while other("flock") == 0:
    pass
holder.kill()
holder.wait()
out.append(other("flock"))  # the kernel drops a dead holder's lock
print(out)
"""


def test_advisory_locks_work_between_processes_as_on_a_local_disk(
    mnt: Mount, tmp_path: Path
) -> None:
    """The mount has no lock calls (pyfuse3 has none), so the kernel keeps flock, fcntl
    and OFD locks itself, per inode: processes of this machine exclude each other as on
    a local disk (flock and POSIX locks are separate kinds there too)."""
    (tmp_path / "try_lock.py").write_text(TRY_LOCK)
    (tmp_path / "locks.py").write_text(LOCKS)
    session = f"{sys.executable} {tmp_path / 'locks.py'} {tmp_path / 'try_lock.py'}"
    _, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk
    assert in_mount == "[[11, 0, 0], [0, 11, 11], [0, 0, 0], 0]\nexit=0\n"
