"""Races between processes working in the mount and `helix` commands changing the store
underneath it: nothing whose close() or rename() returned may be lost, and nothing may
fail that a local disk would have done."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from mount_harness import Background, Mount, MountFactory

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]

WRITERS = 8


class Writers(Background):
    """Processes' worth of editor saves (write a temp file, close, rename over the
    name) in threads, until told to stop; records what each returned."""

    def __init__(self, root: Path, count: int = WRITERS) -> None:
        super().__init__(count)
        self.root = root
        self.saved: dict[str, bytes] = {}

    def run(self, writer: int) -> None:
        index = 0
        while not self.stopping.is_set():
            name, data = f"w{writer}_{index}.txt", f"{writer}:{index}\n".encode() * 3
            try:
                (self.root / f"{name}.tmp").write_bytes(data)
                os.rename(self.root / f"{name}.tmp", self.root / name)
                self.saved[name] = data
            except OSError as exc:
                self.errors.append(f"{name}: {exc}")
            index += 1


def in_head(mount: Mount) -> set[str]:
    return {entry["name"] for entry in json.loads(mount.helix("ls", "HEAD", "--json").stdout)}


def check_saved(mount: Mount, writers: Writers) -> None:
    assert writers.errors == []
    assert writers.saved, "the writers saved nothing"
    lost_from_head = sorted(set(writers.saved) - in_head(mount))
    lost_from_mount = sorted(set(writers.saved) - set(os.listdir(mount.path)))
    assert (lost_from_head, lost_from_mount) == ([], [])


def repeat(times: int, command: Callable[[int], object]) -> None:
    for index in range(times):
        command(index)


def test_saves_survive_outside_commits_run_on_a_daemon_thread(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """`helix commit` runs on a worker thread of the daemon (it reads files that may be
    in the mount). Its reload of the branch used to land while the loop still served the
    old nodes: a rename into them returned 0 and vanished, a close gave ESTALE."""
    mount = make_mount(0)
    source = tmp_path / "source.txt"
    source.write_bytes(b"from outside\n")
    with Writers(mount.path) as writers:
        repeat(40, lambda i: mount.helix("commit", "-m", "outside", f"outside{i}.txt={source}"))
    check_saved(mount, writers)
    assert {f"outside{i}.txt" for i in range(40)} <= in_head(mount)


@pytest.mark.parametrize(
    "rename", ["mv ../feat ../feat2", "python -m helixfs.cli.main branch -m feat feat2"]
)
def test_a_process_inside_a_renamed_branch_folder_stays_in_it(mnt: Mount, rename: str) -> None:
    """As in a folder `mv` renamed on a local disk: a shell working in
    `.helix/branches/feat` goes on working there, now in feat2. Its every write used to
    fail with ENOENT, as if the folder had been deleted."""
    mnt.sh("mkdir .helix/branches/feat")
    inside = "cd .helix/branches/feat && echo 1 > before"
    done = mnt.sh(f"{inside} && {rename} >/dev/null && echo 2 > after && ls")
    assert done.stdout.split() == ["after", "before"]
    assert mnt.helix("cat", "feat2", "after").stdout == "2\n"
    assert sorted(os.listdir(mnt.path / ".helix/branches")) == ["feat2", "main"]
