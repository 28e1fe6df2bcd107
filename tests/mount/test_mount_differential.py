"""The mount against a local disk, operation by operation: a seeded random mix of the
calls editors, compilers and `git` make, applied to both, must give the same result
(or the same errno) every time and leave the same tree; the committed HEAD, and the
store mounted again, must hold that tree too."""

from __future__ import annotations

import errno
import os
import random
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from mount_harness import Background, Mount, MountFactory

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]

OPERATIONS = 400
OUTSIDE_EVERY = 8  # operations between two outside commits
CHECK_EVERY = 50
Outcome = object  # what an operation returned, or the errno it raised


OUTSIDE = "zz-outside"  # names only `helix commit` writes: not part of the workload
# What a reader racing the workload may meet: a path that came or went meanwhile
RACED = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.EINVAL}


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under `root`: type and permission bits, plus content or link target."""
    found: dict[str, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            if name.startswith(OUTSIDE):
                continue
            path = Path(folder, name)
            info = path.lstat()
            key = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[key] = ("dir", stat.S_IMODE(info.st_mode))
            else:
                found[key] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


class Workload:
    """Chooses each operation from the local copy, then runs it on both roots."""

    def __init__(self, seed: int, mount: Path, disk: Path) -> None:
        self.rng = random.Random(seed)
        self.roots = (mount, disk)
        self.log: list[str] = []

    def step(self) -> None:
        name, operation = self._choose()
        outcomes = [self._run(operation, root) for root in self.roots]
        self.log.append(f"{name} -> {outcomes[1]!r}")
        assert outcomes[0] == outcomes[1], self._history(f"{name}: mount {outcomes[0]!r}")

    def check_trees(self, what: str, mount: Path | None = None) -> None:
        seen, expected = snapshot(mount or self.roots[0]), snapshot(self.roots[1])
        if seen != expected:
            diff = sorted(set(seen.items()) ^ set(expected.items()), key=str)[:6]
            raise AssertionError(self._history(f"{what} differs from the disk: {diff}"))

    def _history(self, problem: str) -> str:
        return problem + "\nlast operations:\n" + "\n".join(self.log[-15:])

    def _run(self, operation: Callable[[Path], Outcome], root: Path) -> Outcome:
        try:
            return operation(root)
        except OSError as exc:
            return errno.errorcode.get(exc.errno or 0, exc.errno)

    def _paths(self, kind: str) -> list[str]:
        disk = self.roots[1]
        entries = snapshot(disk)
        return sorted(path for path, entry in entries.items() if entry[0] == kind)

    def _new_path(self) -> str:
        folder = self.rng.choice(["", *self._paths("dir")])
        name = self.rng.choice(["a", "b", "c", "d.txt", "e.py", "f f", "g\udcff"])
        return os.path.join(folder, name) if folder else name

    def _pick(self, *kinds: str) -> str:
        """Mostly an existing entry of these kinds; sometimes a new or wrong one (errors
        must match too)."""
        known = [path for kind in kinds for path in self._paths(kind)]
        if known and self.rng.random() < 0.85:
            return self.rng.choice(known)
        return self._any_path()

    def _any_path(self) -> str:
        known = self._paths("file") + self._paths("dir") + self._paths("link")
        return self.rng.choice(known) if known and self.rng.random() < 0.6 else self._new_path()

    def _data(self) -> bytes:
        size = self.rng.choice([0, 1, 100, 5000, 70_000, 1_500_000 + self.rng.randrange(10**6)])
        return self.rng.randbytes(size)

    def _choose(self) -> tuple[str, Callable[[Path], Outcome]]:
        rng = self.rng
        choice = rng.choices(
            ["write", "pwrite", "append", "truncate", "rename", "unlink", "mkdir", "rmdir"]
            + ["symlink", "chmod", "unlinked-read", "two-handles", "rename-open"],
            weights=[16, 10, 6, 6, 12, 8, 8, 5, 3, 4, 3, 4, 4],
        )[0]
        kinds = {"mkdir": ("dir",), "rmdir": ("dir",), "rename": ("file", "dir", "link")}
        path = self._pick(*kinds.get(choice, ("file",)))
        if choice == "write":
            data = self._data()
            return f"write {path!r} {len(data)}", lambda r: _write(r / path, data)
        if choice == "pwrite":
            offset, data = rng.randrange(2_500_000), rng.randbytes(rng.randrange(1, 9000))
            return f"pwrite {path!r} @{offset} {len(data)}", lambda r: _pwrite(
                r / path, offset, data
            )
        if choice == "append":
            data = rng.randbytes(rng.randrange(1, 3000))
            return f"append {path!r} {len(data)}", lambda r: _append(r / path, data)
        if choice == "truncate":
            size = rng.choice([0, 10, 4096, 100_000, 2_000_000])
            return f"truncate {path!r} {size}", lambda r: os.truncate(r / path, size)
        if choice == "rename":
            target = self._any_path()
            return f"rename {path!r} {target!r}", lambda r: os.rename(r / path, r / target)
        if choice == "unlink":
            return f"unlink {path!r}", lambda r: os.unlink(r / path)
        if choice == "mkdir":
            return f"mkdir {path!r}", lambda r: os.mkdir(r / path)
        if choice == "rmdir":
            return f"rmdir {path!r}", lambda r: os.rmdir(r / path)
        if choice == "symlink":
            # never out of the root: the test writes through links, on both sides
            target = rng.choice(["a", "d.txt", "missing", "e.py/x"])
            return f"symlink {path!r} -> {target}", lambda r: os.symlink(target, r / path)
        if choice == "chmod":
            mode = rng.choice([0o644, 0o755, 0o600, 0o700])
            return f"chmod {path!r} {mode:o}", lambda r: os.chmod(r / path, mode)
        if choice == "two-handles":
            offset, data = rng.randrange(100_000), rng.randbytes(rng.randrange(1, 5000))
            return f"two-handles {path!r} @{offset}", lambda r: _two_handles(r / path, offset, data)
        if choice == "rename-open":
            target, data = self._new_path(), rng.randbytes(rng.randrange(1, 5000))
            return f"rename-open {path!r} {target!r}", lambda r: _rename_open(r, path, target, data)
        return f"unlinked-read {path!r}", lambda r: _read_after_unlink(r / path)


def _write(path: Path, data: bytes) -> Outcome:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        return os.write(fd, data)
    finally:
        os.close(fd)


def _pwrite(path: Path, offset: int, data: bytes) -> Outcome:
    fd = os.open(path, os.O_WRONLY)
    try:
        return os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def _append(path: Path, data: bytes) -> Outcome:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _two_handles(path: Path, offset: int, data: bytes) -> Outcome:
    """A write seen at once by another descriptor of the file, before any close."""
    writer = os.open(path, os.O_RDWR)
    try:
        reader = os.open(path, os.O_RDONLY)
        try:
            os.pwrite(writer, data, offset)
            os.fsync(writer)
            return os.pread(reader, len(data) + 10, offset), os.fstat(reader).st_size
        finally:
            os.close(reader)
    finally:
        os.close(writer)


def _rename_open(root: Path, path: str, target: str, data: bytes) -> Outcome:
    """Writes through a descriptor land in the file under its new name."""
    fd = os.open(root / path, os.O_WRONLY | os.O_APPEND)
    try:
        os.rename(root / path, root / target)
        os.write(fd, data)
    finally:
        os.close(fd)
    return (root / target).stat().st_size


def _read_after_unlink(path: Path) -> Outcome:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.unlink(path)
        return os.pread(fd, 200, 0)
    finally:
        os.close(fd)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_mount_behaves_as_a_local_disk(
    make_mount: MountFactory, tmp_path: Path, seed: int
) -> None:
    mnt: Mount = make_mount(0)
    disk = tmp_path / "disk"
    disk.mkdir()
    work = Workload(seed, mnt.path, disk)
    for n in range(1, OPERATIONS + 1):
        work.step()
        if n % CHECK_EVERY == 0:
            work.check_trees(f"the mount after {n} operations")
    exported = tmp_path / "exported"
    mnt.helix("export", "HEAD", exported)
    work.check_trees("the committed HEAD", exported)
    assert mnt.stop() == 0
    again = make_mount(0, store=mnt.store)
    work.check_trees("the store mounted again", again.path)
    again.stop()
    assert "ok" in again.helix("fsck").stdout.lower()


class Readers(Background):
    """Threads that stat, list and read whatever the workload may have made, while it
    runs: a race may make a path vanish (ENOENT...), never fail otherwise."""

    def __init__(self, root: Path, count: int = 3) -> None:
        super().__init__(count)
        self.root = root

    def run(self, seed: int) -> None:
        rng = random.Random(seed)
        names = ["a", "b", "c", "d.txt", "e.py", "f f", "g\udcff"]
        while not self.stopping.is_set():
            path = self.root.joinpath(*rng.choices(names, k=rng.randrange(1, 3)))
            try:
                if path.is_dir():
                    os.listdir(path)
                else:
                    path.read_bytes()
            except OSError as exc:
                if exc.errno not in RACED:
                    self.errors.append(f"{path.relative_to(self.root)}: {exc}")


@pytest.mark.parametrize("seed", [4, 5])
def test_the_mount_stays_a_local_disk_under_readers_and_outside_commits(
    make_mount: MountFactory, tmp_path: Path, seed: int
) -> None:
    """The same workload while other threads read the mount and `helix commit` (on a
    worker thread of the daemon) reloads the branch between operations: no result may
    change, no reader may fail."""
    mnt: Mount = make_mount(0)
    disk = tmp_path / "disk"
    disk.mkdir()
    source = tmp_path / "outside"
    source.write_bytes(b"committed from outside\n")
    work = Workload(seed, mnt.path, disk)
    with Readers(mnt.path) as readers:
        for n in range(1, OPERATIONS + 1):
            work.step()
            if n % OUTSIDE_EVERY == 0:  # a `helix` process each: ~0.4 s
                mnt.helix("commit", "-m", "outside", f"{OUTSIDE}{n}={source}")
            if n % CHECK_EVERY == 0:
                work.check_trees(f"the mount after {n} operations")
    assert readers.errors == []
    exported = tmp_path / "exported"
    mnt.helix("export", "HEAD", exported)
    work.check_trees("the committed HEAD", exported)
    assert len(list(exported.glob(f"{OUTSIDE}*"))) == OPERATIONS // OUTSIDE_EVERY


class Branches:
    """Branches and snapshots made, switched and written through `.helix/`, against
    plain copies of folders on the disk."""

    def __init__(self, mount: Path, model: Path, work: Workload) -> None:
        self.mount, self.model, self.work = mount, model, work
        self.current = "main"
        self.branches = {"main"}
        self.snapshots: set[str] = set()
        (model / "branches" / "main").mkdir(parents=True)
        (model / "snapshots").mkdir()

    def place(self, branch: str) -> tuple[Path, Path]:
        """Where a branch shows in the mount (the root if current), and its copy."""
        shown = self.mount if branch == self.current else self.mount / ".helix/branches" / branch
        return shown, self.model / "branches" / branch

    def step(self) -> None:
        rng = self.work.rng
        action = rng.choices(["work", "branch", "switch", "snapshot", "drop"], [30, 3, 3, 2, 1])[0]
        if action == "work" or (action in ("switch", "drop") and len(self.branches) == 1):
            self.work.roots = self.place(rng.choice(sorted(self.branches)))
            self.work.step()
        elif action == "branch":
            name = f"b{len(self.work.log)}"
            os.mkdir(self.mount / ".helix/branches" / name)
            self._copy(self.place(self.current)[1], self.model / "branches" / name)
            self.branches.add(name)
        elif action == "snapshot":
            name = f"s{len(self.work.log)}"
            os.mkdir(self.mount / ".helix/snapshots" / name)
            self._copy(self.place(self.current)[1], self.model / "snapshots" / name)
            self.snapshots.add(name)
        elif action == "switch":
            self.current = rng.choice(sorted(self.branches - {self.current}))
            (self.mount / ".helix/HEAD").write_text(self.current)
        else:
            name = rng.choice(sorted(self.branches - {self.current}))
            os.rmdir(self.mount / ".helix/branches" / name)
            shutil.rmtree(self.model / "branches" / name)
            self.branches.remove(name)
        self.work.log.append(f"{action} (current: {self.current})")

    def check(self, what: str) -> None:
        for branch in sorted(self.branches):
            shown, copy = self.place(branch)
            self.work.roots = (shown, copy)
            self.work.check_trees(f"{what}: branch {branch} at {shown.name}")
        for name in sorted(self.snapshots):
            folder = self.mount / ".helix/snapshots" / name
            self.work.roots = (folder, self.model / "snapshots" / name)
            self.work.check_trees(f"{what}: snapshot {name}")
            with pytest.raises(OSError) as refused:
                (folder / "new-file").write_bytes(b"x")
            assert refused.value.errno == errno.EROFS

    def _copy(self, source: Path, target: Path) -> None:
        shutil.copytree(source, target, symlinks=True)
        self.work.log.append(f"copy {source.name} -> {target.name}")


@pytest.mark.parametrize("seed", [1, 2])
def test_branches_and_snapshots_behave_as_copies(
    make_mount: MountFactory, tmp_path: Path, seed: int
) -> None:
    mnt: Mount = make_mount(0)
    model = tmp_path / "model"
    branches = Branches(mnt.path, model, Workload(seed, mnt.path, model / "branches/main"))
    for n in range(1, OPERATIONS + 1):
        branches.step()
        if n % CHECK_EVERY == 0:
            branches.check(f"after {n} operations")
    assert mnt.stop() == 0
    again = make_mount(0, store=mnt.store)
    branches.mount = again.path
    branches.check("the store mounted again")


@pytest.mark.parametrize("seed", [1, 2])
def test_kill9_keeps_all_work_that_a_close_persisted(
    make_mount: MountFactory, tmp_path: Path, seed: int
) -> None:
    """With a long quiet window nothing is committed yet: the saved work tree alone
    holds the work. A change (rename, unlink, chmod...) persists with the next close
    (ADR 0006), so after the last operation one file is written and closed; then the
    daemon dies, and the store mounted again must show all of it, committed."""
    mnt: Mount = make_mount(60_000)
    disk = tmp_path / "disk"
    disk.mkdir()
    work = Workload(seed, mnt.path, disk)
    for _ in range(OPERATIONS // 2):
        work.step()
    for root in work.roots:
        _write(root / "last-save", b"closed before the crash")
    mnt.kill9()
    again = make_mount(60_000, store=mnt.store)
    work.check_trees("the store mounted after kill -9", again.path)
    assert again.log(limit=1)[0]["message"] == "recovered pending changes"
    again.stop()
    assert "ok" in again.helix("fsck").stdout.lower()
