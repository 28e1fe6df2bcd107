"""Time stamps in the mount against a local disk, where the kernel takes part: the
system calls as a process makes them (UTIME_NOW, UTIME_OMIT, AT_SYMLINK_NOFOLLOW,
O_TRUNC, ftruncate, stat of an open file through the kernel's attribute cache), the
times a remount, a HEAD switch and `.helix/` views show, and the tools that decide by
them: make, rsync and git. The Operations-level table is tests/fs/test_times_against_native.py.
atime is not kept and a folder's st_nlink is always 2 (README): neither is compared."""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mount_harness import Mount, MountFactory, need, sh

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]

TICK = 0.02  # lets the local disk's clock move on (coarse on some kernels): no assertion
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
AT_SYMLINK_NOFOLLOW = 0x100
_LIBC = ctypes.CDLL(None, use_errno=True)


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path: Path, atime: tuple[int, int], mtime: tuple[int, int], flags: int = 0) -> None:
    """utimensat(2) itself: os.utime cannot pass UTIME_OMIT."""
    times = (Timespec * 2)(Timespec(*atime), Timespec(*mtime))
    if _LIBC.utimensat(-100, bytes(path), times, flags) != 0:  # AT_FDCWD
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(path))


Seen = list[tuple[str, str]]


def moved(before: int, after: int) -> str:
    return "=" if after == before else ("later" if after > before else "earlier")


def times(what: Path | int) -> tuple[int, int]:
    info = os.fstat(what) if isinstance(what, int) else what.lstat()
    return info.st_mtime_ns, info.st_ctime_ns


def changes(watched: list[Path | int], operation: Callable[[], object]) -> Seen:
    before = [times(what) for what in watched]
    time.sleep(TICK)
    operation()
    after = [times(what) for what in watched]
    return [(moved(b[0], a[0]), moved(b[1], a[1])) for b, a in zip(before, after, strict=True)]


def utimens_variants(root: Path) -> Seen:
    """UTIME_NOW, UTIME_OMIT (alone and for one of the two) and explicit ns, on a file,
    a folder and a symlink (not followed); `touch -h` on the symlink."""
    (root / "f").write_bytes(b"x")
    (root / "d").mkdir()
    (root / "l").symlink_to("f")
    now, omit, explicit = (0, UTIME_NOW), (0, UTIME_OMIT), (1_000_000_000, 123_456_789)
    seen = []
    for path, flags in ((root / "f", 0), (root / "d", 0), (root / "l", AT_SYMLINK_NOFOLLOW)):
        for atime, mtime in ((omit, omit), (now, omit), (omit, explicit), (now, now)):
            seen += changes(
                [path, root / "f"],
                lambda p=path, a=atime, m=mtime, f=flags: utimensat(p, a, m, f),
            )
    seen += changes([root / "l", root / "f"], lambda: sh("touch -h l", root))
    return seen + changes([root / "l", root / "f"], lambda: sh("touch l", root))


def truncations(root: Path) -> Seen:
    """O_TRUNC of an empty file and of a full one, truncate and ftruncate to the size the
    file has and to another."""
    (root / "empty").write_bytes(b"")
    (root / "f").write_bytes(b"abc")
    seen = changes([root / "empty"], lambda: os.close(os.open(root / "empty", os.O_TRUNC)))
    seen += changes([root / "f"], lambda: os.truncate(root / "f", 3))
    seen += changes([root / "f"], lambda: os.truncate(root / "f", 5))
    fd = os.open(root / "f", os.O_RDWR)
    seen += changes([fd], lambda: os.ftruncate(fd, 5))
    seen += changes([fd], lambda: os.ftruncate(fd, 1))
    os.close(fd)
    return seen + changes(
        [root / "f"], lambda: os.close(os.open(root / "f", os.O_WRONLY | os.O_TRUNC))
    )


def forget_cached_attributes() -> None:
    """The kernel drops its dentries and inodes (the mount gets FORGETs), so the next
    stat asks the daemon. Root only; elsewhere the cached attributes stay."""
    if os.access("/proc/sys/vm/drop_caches", os.W_OK):
        Path("/proc/sys/vm/drop_caches").write_text("2")


def writes_and_closes(root: Path) -> Seen:
    """A write moves mtime and ctime, seen by fstat while open; the close moves nothing,
    neither in the kernel's cached attributes nor in the daemon's."""
    (root / "f").write_bytes(b"abc")
    fd = os.open(root / "f", os.O_RDWR)
    seen = changes([fd, root], lambda: os.pwrite(fd, b"z", 0))
    seen += changes([root / "f"], lambda: os.close(fd))
    seen += changes([root / "f"], forget_cached_attributes)
    fd = os.open(root / "f", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"more")
    seen += changes([root / "f"], lambda: os.close(fd))
    seen += changes([root / "f"], lambda: os.close(os.open(root / "f", os.O_RDWR)))
    return seen + changes([root / "f"], lambda: (root / "f").read_bytes())


def metadata_changes(root: Path) -> Seen:
    """chmod (to another mode and to the same), chown (to the owner it has), xattrs:
    ctime alone moves."""
    path = root / "f"
    path.write_bytes(b"x")
    seen = changes([path, root], lambda: os.chmod(path, 0o600))
    seen += changes([path], lambda: os.chmod(path, 0o600))
    seen += changes([path], lambda: os.chown(path, os.getuid(), os.getgid()))
    seen += changes([path, root], lambda: os.setxattr(path, "user.k", b"v"))
    return seen + changes([path, root], lambda: os.removexattr(path, "user.k"))


def namespace_changes(root: Path) -> Seen:
    """Folders of a create, unlink, mkdir, rmdir, symlink, mkfifo and rename (both ends
    of one across folders); the renamed and the unlinked file's ctime."""
    d, e = root / "d", root / "e"
    d.mkdir()
    e.mkdir()
    seen = changes([d, root], lambda: (d / "f").write_bytes(b"x"))
    fd = os.open(d / "f", os.O_RDONLY)
    seen += changes([d, fd], lambda: os.rename(d / "f", d / "g"))
    seen += changes([d, e, root, fd], lambda: os.rename(d / "g", e / "g"))
    seen += changes([e, fd], lambda: os.unlink(e / "g"))
    os.close(fd)
    seen += changes([d], lambda: os.mkdir(d / "sub"))
    seen += changes([d, e], lambda: os.rename(d / "sub", e / "sub"))
    seen += changes([e], lambda: os.rmdir(e / "sub"))
    seen += changes([d], lambda: os.symlink("x", d / "l"))
    return seen + changes([d], lambda: os.mkfifo(d / "p"))


@pytest.mark.parametrize(
    "scenario",
    [utimens_variants, truncations, writes_and_closes, metadata_changes, namespace_changes],
    ids=lambda s: s.__name__,
)
def test_times_move_as_on_the_local_disk(
    mnt: Mount, tmp_path: Path, scenario: Callable[[Path], Seen]
) -> None:
    roots = [mnt.path / "work", tmp_path / "work"]
    for root in roots:
        root.mkdir()
    assert scenario(roots[0]) == scenario(roots[1])


STAMPS = {
    "f": 1_234_567_890_123_456_789,
    "d": 1_222_222_222_000_000_003,
    "l": 1_111_111_111_000_000_001,
}


def stamped_tree(root: Path) -> None:
    (root / "d").mkdir()
    (root / "f").write_bytes(b"x")
    (root / "l").symlink_to("f")
    for name, ns in STAMPS.items():
        os.utime(root / name, ns=(ns, ns), follow_symlinks=False)


def mtimes(root: Path) -> dict[str, tuple[int, int]]:
    """Each stamped entry's mtime and ctime: both are stored (ctime when it is not the
    mtime: ADR 0042), so a tree loaded again shows the same pair."""
    return {name: times(root / name) for name in STAMPS}


def test_nanosecond_times_survive_switches_views_and_a_remount(make_mount: MountFactory) -> None:
    mnt = make_mount(0)
    stamped_tree(mnt.path)
    committed = mtimes(mnt.path)
    assert {name: seen[0] for name, seen in committed.items()} == STAMPS
    os.mkdir(mnt.path / ".helix/branches/other")
    assert mtimes(mnt.path / ".helix/branches/other") == committed
    assert mtimes(mnt.path / ".helix/commits" / mnt.head()) == committed
    (mnt.path / ".helix/HEAD").write_text("other")
    assert mtimes(mnt.path) == committed
    (mnt.path / ".helix/HEAD").write_text("main")
    assert mtimes(mnt.path) == committed
    assert mnt.stop() == 0
    assert mtimes(make_mount(0, store=mnt.store).path) == committed


def test_make_rebuilds_only_what_an_edit_made_newer(mnt: Mount, tmp_path: Path) -> None:
    """Edits by `sed -i` (a new file renamed over), `cp -p` (an older time kept) and
    `touch -r` (an equal time): make decides as on the local disk."""
    need("make")
    session = (
        "printf 'out: a b\\n\\tcat a b > out\\n' > Makefile && echo a > a && echo b > b"
        " && make && make && sleep 0.05 && sed -i s/a/A/ a && make && make"
        " && cp -p a ../older && sleep 0.05 && echo new >> b && make"
        " && cp -p ../older a && make && touch -r out b && make"
        " && sleep 0.05 && touch b && make && sleep 0.05 && echo x >> a && make"
    )
    outputs = []
    for root in (mnt.path, tmp_path):
        (root / "mk").mkdir()
        outputs.append(sh(session, root / "mk").stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].count("cat a b > out") == 5


def test_rsync_there_and_back_finds_nothing_to_do(mnt: Mount, tmp_path: Path) -> None:
    """`rsync -a` from the mount to a local folder and back: a dry run either way then
    lists nothing (sizes, mtimes to the ns, modes, symlinks, folders, xattrs with -X)."""
    need("rsync", "setfattr")
    sh(
        "mkdir -p src/sub/deep empty && echo hi > src/f && head -c 70000 /dev/zero > src/big"
        " && ln -s f src/link && ln -s missing src/dangling && mkfifo src/fifo"
        " && chmod 700 src/sub/deep && echo s > src/sub/s && chmod 600 src/sub/s"
        " && setfattr -n user.k -v v src/f && touch -d '2001-02-03 04:05:06.123456789' src/f"
        " && touch -h -d '2002-01-01 00:00:00.5' src/link && touch -d 1999-01-01 src/sub",
        mnt.path,
    )
    local = tmp_path / "local"
    sh(f"rsync -aX {mnt.path}/src/ {local}/ && rsync -aX {local}/ {mnt.path}/back/", tmp_path)
    for source, target in ((f"{mnt.path}/src", local), (local, f"{mnt.path}/src")):
        assert sh(f"rsync -aiX --dry-run {source}/ {target}/", tmp_path).stdout == ""
    assert sh(f"rsync -aiX --dry-run {local}/ {mnt.path}/back/", tmp_path).stdout == ""


def test_git_status_stays_clean_after_touch_once_the_index_is_refreshed(mnt: Mount) -> None:
    """`touch` of unchanged files: status is clean, and once it refreshed the index the
    stat data git keeps stays true, even after the kernel forgot the attributes."""
    need("git")
    sh(
        "git init -q . && git config user.email a@b && git config user.name t"
        " && mkdir d && echo 1 > f1 && echo 2 > f2 && echo x > d/x"
        " && git add -A && git commit -qm one && sleep 0.05 && touch f1 d/x",
        mnt.path,
    )
    assert sh("git status --porcelain", mnt.path).stdout == ""
    index = (mnt.path / ".git/index").read_bytes()
    forget_cached_attributes()
    assert sh("git status --porcelain", mnt.path).stdout == ""
    assert (mnt.path / ".git/index").read_bytes() == index  # nothing to refresh again
