"""POSIX conformance of owners, permission checks as other users, devices, times and
folder link counts (issue 27, ADR 0042), through the kernel with ordinary tools.

The same shell script runs in a tmpfs folder and in the mount (mounted by root, so with
`allow_other`); its lines (one assertion each) must be the same on both. Other users
are `setpriv --reuid=... --clear-groups` children whose cwd is the folder under test, so
they need no way through pytest's private tmp folders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_harness import HELIX, Mount, MountFactory, need, sh

pytestmark = [pytest.mark.mount, pytest.mark.timeout(240)]

TMPFS = Path("/dev/shm")


@pytest.fixture(autouse=True)
def _as_root() -> None:
    if os.getuid() != 0:  # other users, chown and mknod need root
        if os.environ.get("CI") == "true":
            pytest.fail("the conformance tests run as root (CI runs the suite as root)")
        pytest.skip("needs root")
    need("setpriv", "mknod", "stat", "git")


@pytest.fixture
def tmpfs() -> Iterator[Path]:
    """A folder on tmpfs: the local disk the mount is compared with."""
    folder = Path(tempfile.mkdtemp(dir=TMPFS, prefix="helix-conformance-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


PRELUDE = """
set -u
umask 022
as() { u=$1; shift; setpriv --reuid=$u --regid=$u --clear-groups "$@"; }
check() {
    what=$1; shift
    if "$@" >/dev/null 2>&1; then echo "$what: yes"; else echo "$what: no"; fi
}
show() { echo "$1: $(stat -c "$2" "$3" 2>&1)"; }
"""

OWNERS = """
mkdir own && chown 1001:1001 own
check "1001 creates in a folder chowned to it" as 1001 sh -c 'echo x > own/f'
show "owner of what 1001 made" %u:%g own/f
mkdir rootonly
check "1001 creates in root's 755 folder" as 1001 sh -c 'echo x > rootonly/f'
echo secret > secret && chown 1002:1002 secret && chmod 600 secret
check "1001 reads 1002's 0600 file" as 1001 cat secret
check "1002 reads its 0600 file" as 1002 cat secret
mkdir tmp && chmod 1777 tmp
as 1002 sh -c 'echo x > tmp/theirs'
check "1001 deletes 1002's file in a sticky folder" as 1001 rm -f tmp/theirs
as 1001 sh -c 'echo y > tmp/mine'
check "1001 renames over 1002's file in a sticky folder" as 1001 mv -f tmp/mine tmp/theirs
check "1002 deletes its file in a sticky folder" as 1002 rm -f tmp/theirs
check "1002 chmods 1001's file" as 1002 chmod 777 own/f
check "1001 gives its file to 1002" as 1001 chown 1002 own/f
check "1001 chmods its file" as 1001 chmod 640 own/f
show "mode after chmod by its owner" %a own/f
chown 123:456 own/f
show "owner after chown 123:456" %u:%g own/f
chown :789 own/f
show "owner after chown :789" %u:%g own/f
as 1001 ln -s nowhere own/link
show "owner of a symlink 1001 made" %u:%g own/link
chown -h 1002:1003 own/link
show "owner of a symlink after chown -h" %u:%g own/link
mkdir shared && chown 0:1003 shared && chmod 2777 shared
as 1001 sh -c 'echo x > shared/f && mkdir shared/d && ln -s f shared/l'
show "a file in a setgid folder" %u:%g shared/f
show "a folder in a setgid folder" %u:%g:%a shared/d
show "a symlink in a setgid folder" %u:%g shared/l
echo x > suid && chown 1001:1001 suid && chmod 4755 suid
as 1001 sh -c 'echo y >> suid'
show "setuid after a write by its owner" %a suid
echo x > sgid && chown 1001:1001 sgid && chmod 2775 sgid
as 1001 sh -c 'echo y >> sgid'
show "setgid (group x) after a write by its owner" %a sgid
echo x > rootsuid && chmod 4755 rootsuid && echo y >> rootsuid
show "setuid after a write by root" %a rootsuid
chown 1001 rootsuid
show "setuid after a chown by root" %a:%u rootsuid
echo x > truncsuid && chown 1001:1001 truncsuid && chmod 4755 truncsuid
as 1001 truncate -s 0 truncsuid
show "setuid after a truncate by its owner" %a truncsuid
"""

DEVICES = """
mknod null c 1 3 && chmod 666 null
mknod disk b 8 1 && chown 1001:6 disk && chmod 660 disk
mkfifo pipe
show "char device" "%F %t:%T %a %u:%g" null
show "block device" "%F %t:%T %a %u:%g" disk
show "fifo" "%F %a" pipe
"""

TIMES = """
echo x > f
touch -a -d '2001-02-03 04:05:06 UTC' f
touch -m -d '2002-02-03 04:05:06 UTC' f
show "atime and mtime set apart" "%X %Y" f
touch -m -d '2003-02-03 04:05:06 UTC' f
show "atime after touch -m" "%X %Y" f
cp -p f copy
show "cp -p keeps both times" "%X %Y" copy
python3 -c "import os; os.utime('f', ns=(1_000_000_000_123_456_789, 1_100_000_000_987_654_321))"
show "utimensat with nanoseconds" "%x %y" f
python3 -c "
import os, time
st = os.stat('f')
os.utime('f', ns=(st.st_atime_ns, 0))  # the atime given as it is: UTIME_OMIT's effect
before = time.time_ns()
os.utime('f')  # UTIME_NOW for both
st = os.stat('f')
print('UTIME_NOW sets both to now:', st.st_atime_ns == st.st_mtime_ns >= before - 10**9)
"
mkdir -p tar/src tar/out && echo t > tar/src/a && touch -m -d '2005-01-01 UTC' tar/src/a
tar cf t.tar -C tar src && tar xf t.tar -C tar/out
show "tar x restores the mtime" "%Y" tar/out/src/a
"""

NLINK = """
mkdir -p n/a n/b n/c && echo x > n/file
show "a folder with three subfolders" %h n
rmdir n/c
show "after an rmdir" %h n
mv n/b b
show "after a subfolder moved out" %h n
show "the folder it moved to" %h .
echo "find -links 3: $(find . -maxdepth 1 -type d -links 3 -name n)"
show "an empty folder" %h n/a
show "a file" %h n/file
"""

LINKS = """
mkdir hl && cd hl
echo one > f && chown 1001:1001 f && ln f g
show "a file with two names" %h f
check "both names are one file" test f -ef g
chmod 600 g && chown 1001:1003 g
show "mode and owner through the other name" %a:%u:%g f
mkdir own && chown 1002:1002 own
check "1002 links a file it cannot write (protected_hardlinks)" as 1002 ln f own/h
check "1001 links its file into 1002's 755 folder" as 1001 ln f own/h
as 1002 sh -c 'echo x > own/mine && ln own/mine own/mine2'
show "a link its owner made" %h:%u:%g own/mine2
as 1002 rm own/mine
show "after one name went" %h own/mine2
check "a folder gets a hard link" ln own own2
check "a link onto a name taken" ln f own/mine2
mv g moved
show "after a rename" %h moved
echo "find -links 2: $(find . -type f -links 2 | sort | tr '\\n' ' ')"
rm f
show "after the first name went" %h moved
"""


def _run(folder: Path, script: str) -> list[str]:
    done = subprocess.run(
        ["bash", "-c", PRELUDE + textwrap.dedent(script)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    "script",
    [OWNERS, DEVICES, TIMES, NLINK, LINKS],
    ids=["owners", "devices", "times", "nlink", "links"],
)
def test_the_mount_answers_as_tmpfs(mnt: Mount, tmpfs: Path, script: str) -> None:
    expected = _run(tmpfs, script)
    assert _run(mnt.path, script) == expected


def test_a_device_cannot_be_opened_on_the_nodev_mount(mnt: Mount) -> None:
    """The mount is nodev (FUSE's default, README): a device file is kept, not opened."""
    mounts = Path("/proc/mounts").read_text().splitlines()
    options = next(line.split()[3] for line in mounts if f" {mnt.path} " in line)
    assert "nodev" in options.split(",")
    mnt.sh("mknod null c 1 3 && chmod 666 null")
    done = mnt.sh("cat null", check=False)
    assert done.returncode != 0 and "Permission denied" in done.stderr


def test_the_tmpfs_answers_are_the_posix_ones(tmpfs: Path) -> None:
    """The reference itself, pinned where POSIX (and ext4) are clear, so a kernel that
    changed would not make both sides agree on something wrong."""
    lines = dict(line.split(": ", 1) for line in _run(tmpfs, OWNERS + NLINK + DEVICES + LINKS))
    assert lines["1001 creates in a folder chowned to it"] == "yes"
    assert lines["1001 creates in root's 755 folder"] == "no"
    assert lines["1001 reads 1002's 0600 file"] == "no"
    assert lines["1001 deletes 1002's file in a sticky folder"] == "no"
    assert lines["1002 deletes its file in a sticky folder"] == "yes"
    assert lines["owner after chown 123:456"] == "123:456"
    assert lines["a folder in a setgid folder"] == "1001:1003:2755"
    assert lines["setuid after a write by its owner"] == "755"
    assert lines["a folder with three subfolders"] == "5"
    assert lines["char device"] == "character special file 1:3 666 0:0"
    assert lines["1002 links a file it cannot write (protected_hardlinks)"] == "no"
    assert lines["mode and owner through the other name"] == "600:1001:1003"
    assert lines["after one name went"] == "1"


def _stat(path: Path) -> tuple[int, ...]:
    st = os.lstat(path)
    return (st.st_mode, st.st_uid, st.st_gid, st.st_rdev, st.st_nlink, st.st_atime_ns)


SETUP = """
mkdir -p tree/sub/deeper tree/other && chown -R 1001:1002 tree/sub
echo x > tree/sub/f && chown 123:456 tree/sub/f && chmod 640 tree/sub/f
touch -a -d '2001-01-01 UTC' tree/sub/f && touch -m -d '2002-01-01 UTC' tree/sub/f
mknod tree/tty c 4 64 && chown 0:5 tree/tty && chmod 620 tree/tty
ln -s sub/f tree/link && chown -h 7:8 tree/link
"""
KEPT = ["tree", "tree/sub", "tree/sub/f", "tree/tty", "tree/link", "tree/sub/deeper"]


def _kept(root: Path) -> dict[str, tuple[int, ...]]:
    return {name: _stat(root / name) for name in KEPT}


def test_owners_devices_times_survive_remount_branches_snapshots_and_export(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    mnt = make_mount(0)
    _run(mnt.path, SETUP)
    before = _kept(mnt.path)
    assert before["tree/sub/f"][1:3] == (123, 456) and before["tree"][4] == 4
    mnt.helix("snapshot", "keep")
    mnt.helix("branch", "copy")
    assert mnt.stop() == 0
    again = make_mount(0, store=mnt.store)
    assert _kept(again.path) == before
    assert _kept(again.path / ".helix" / "snapshots" / "keep") == before
    assert _kept(again.path / ".helix" / "branches" / "copy") == before
    again.sh("chown 9:9 tree/sub/f")
    assert _stat(again.path / "tree/sub/f")[1:3] == (9, 9)
    again.helix("reset", "--hard", "keep")
    assert _kept(again.path) == before
    again.sh("chown 11:12 .helix/branches/copy/tree/sub/f")
    again.helix("merge", "copy")
    assert _stat(again.path / "tree/sub/f")[1:3] == (11, 12)
    exported = tmp_path / "out"
    done = again.helix("export", "keep", str(exported))
    assert "could not set" not in done.stdout and "left out" not in done.stdout
    assert _kept(exported) == before
    imported = make_mount(0)
    imported.helix("import", str(exported))
    without_atime = {name: values[:-1] for name, values in before.items()}
    assert {name: values[:-1] for name, values in _kept(imported.path).items()} == without_atime


def test_the_roots_owner_and_mode_survive_a_remount_and_an_export(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """The mount root's owner, mode and xattrs are stored in its root record (ADR 0044):
    the kernel checks a second user against them, after a remount too, and export sets
    them."""
    mnt = make_mount(0)
    mnt.sh("chown 1001:1002 . && chmod 2770 . && setfattr -n user.tag -v blue .")
    mnt.helix("snapshot", "rooted")
    assert mnt.stop() == 0
    again = make_mount(0, store=mnt.store)
    for shown in (again.path, again.path / ".helix" / "snapshots" / "rooted"):
        st = shown.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1001, 1002, 0o2770)
        assert os.getxattr(shown, "user.tag") == b"blue"
    user = "setpriv --reuid=1001 --regid=1001 --clear-groups"
    again.sh(f"{user} sh -c 'echo x > mine'")  # its folder: the kernel lets it in
    assert (again.path / "mine").stat().st_gid == 1002  # the setgid root's group
    assert again.sh("setpriv --reuid=1003 --regid=1003 --clear-groups ls", check=False).returncode
    exported = tmp_path / "out"
    again.helix("export", "HEAD", str(exported))
    st = exported.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1001, 1002, 0o2770)
    assert os.getxattr(exported, "user.tag") == b"blue"


def test_a_chown_is_a_commit_that_diff_and_log_show(mnt: Mount) -> None:
    mnt.sh("echo x > f")
    old = mnt.head()
    mnt.sh("chown 123:456 f")
    new = mnt.head()
    assert new != old
    status = mnt.helix("diff", "--name-status", old, new).stdout
    assert status.split() == ["M", "(owner)", "f"]
    text = mnt.helix("diff", old, new).stdout
    assert "old owner mounting user" in text and "new owner 123:456" in text
    changed = mnt.log(limit=1)[0]
    assert "f" in json.dumps(changed)


def test_a_non_root_export_reports_the_owners_it_could_not_set(
    make_mount: MountFactory, tmpfs: Path
) -> None:
    mnt = make_mount(0)
    mnt.sh("echo x > f && chown 123:456 f && mknod d c 1 3 && echo y > mine")
    assert mnt.stop() == 0
    store = tmpfs / "store"  # where user 1001 can reach it (not pytest's private tmp)
    shutil.copytree(mnt.store, store, symlinks=True)
    sh("chown -R 1001:1001 store && mkdir public && chown 1001 public", tmpfs)
    done = subprocess.run(
        [
            "setpriv",
            "--reuid=1001",
            "--regid=1001",
            "--clear-groups",
            "--",
            *HELIX,
            "--store",
            str(store),
            "export",
            "HEAD",
            str(tmpfs / "public" / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmpfs / "public")},
    )
    assert done.returncode == 0, done.stderr
    assert "could not set the stored owner of 1 file" in done.stdout
    assert "left out 1 device file" in done.stdout
    out = tmpfs / "public" / "out"
    assert (out / "f").stat().st_uid == 1001 and (out / "mine").read_text() == "y\n"
    assert not (out / "d").exists()


def test_reads_make_no_commit_and_leave_atime_alone(mnt: Mount) -> None:
    mnt.sh("echo x > f && touch -a -d '2001-01-01 UTC' f")
    head = mnt.head()
    atime = (mnt.path / "f").stat().st_atime_ns
    mnt.sh("cat f >/dev/null && cat f >/dev/null")
    assert (mnt.path / "f").stat().st_atime_ns == atime  # noatime
    assert mnt.head() == head


def test_git_status_after_a_remount_rereads_nothing(make_mount: MountFactory) -> None:
    """git's index keeps each file's ctime, mtime, inode, owner and size: when any
    differs after a remount git re-reads (and re-hashes) the file; diff-files without a
    refresh lists every such file. Only a file renamed in the mount since git looked at
    it is listed: its number came from its old path (inodes.py)."""
    mnt = make_mount(0)
    sh(
        "git init -q repo && cd repo && for i in $(seq 1 30); do echo $i > f$i; done"
        " && mkdir d && echo x > d/g && chmod 600 d/g && chown 5:6 d/g && mv f1 renamed"
        " && git add -A && git -c user.name=t -c user.email=t@t commit -qm one",
        mnt.path,
    )
    assert mnt.sh("cd repo && git diff-files --name-only").stdout == ""
    assert mnt.stop() == 0
    again = make_mount(0, store=mnt.store)
    assert again.sh("cd repo && git diff-files --name-only").stdout == "renamed\n"
    assert again.sh("cd repo && git status --porcelain").stdout == ""  # it refreshes
    assert again.stop() == 0
    third = make_mount(0, store=mnt.store)
    assert third.sh("cd repo && git diff-files --name-only").stdout == ""


def test_relatime_moves_atime_in_memory_and_never_commits(make_mount: MountFactory) -> None:
    mnt = make_mount(0, "-o", "relatime")
    mnt.sh("echo x > f && touch -a -d '2001-01-01 UTC' f")
    stored = (mnt.path / "f").stat().st_atime_ns
    head = mnt.head()
    mnt.sh("cat f >/dev/null")
    assert (mnt.path / "f").stat().st_atime_ns > stored  # relatime: older than the mtime
    assert mnt.head() == head
    assert mnt.stop() == 0
    again = make_mount(0, store=mnt.store)  # noatime, the default: the stored one
    again.sh("cat f >/dev/null")
    assert (again.path / "f").stat().st_atime_ns == stored
