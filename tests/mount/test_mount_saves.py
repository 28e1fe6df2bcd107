"""What a save through the mount commits: a change, never nothing (issue 27)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mount_harness import Mount, MountFactory, need

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]

GIT = "git -c user.name=t -c user.email=t@t"
LONG_WINDOW = 600_000  # ms: the save waits for `helix log`, which commits it (settles)


def test_git_status_commits_the_mtime_it_changed_and_names_it(make_mount: MountFactory) -> None:
    """Every `git status` made a commit with `changed: []` ("git: save 0 paths"). git
    takes .git/index.lock and removes it, which moves .git's mtime, as on a local disk:
    that is a change, so a commit, and it lists r/.git now."""
    need("git")
    mnt = make_mount(LONG_WINDOW)
    mnt.sh(f"git init -q r && cd r && echo 1 > f && git add f && {GIT} commit -qm one")
    head = mnt.head()
    for _ in range(3):
        mnt.sh("cd r && git status --porcelain")
        newest = mnt.log(limit=1)[0]
        changed, count = newest["meta"]["changed"], len(newest["meta"]["changed"])
        assert set(changed) <= {"r/.git", "r/.git/index"} and count, newest  # git may
        # rewrite its index; nothing else changes
        assert newest["message"].endswith(f"save {changed[0] if count == 1 else f'{count} paths'}")
        before, after = _listing(mnt, newest["parents"][0], "r"), _listing(mnt, "HEAD", "r")
        assert after[".git"]["mtime_ns"] != before[".git"]["mtime_ns"]
        if changed == ["r/.git"]:  # the same .git, but for its mtime
            after[".git"]["mtime_ns"] = before[".git"]["mtime_ns"]
        else:
            del after[".git"], before[".git"]
        assert after == before
    listed = mnt.helix("diff", "--name-status", head, "HEAD").stdout.split()
    assert set(listed) <= {"M", "r/.git/index"}, listed


def _listing(mnt: Mount, rev: str, folder: str) -> dict[str, dict[str, Any]]:
    entries = json.loads(mnt.helix("ls", "--json", rev, folder).stdout)
    return {entry["name"]: entry for entry in entries}


def test_a_save_that_changes_no_versioned_entry_makes_no_commit(
    make_mount: MountFactory,
) -> None:
    """A name made and removed at the root (whose mtime is not versioned, ADR 0030), and
    an editor's temp file in a folder, leave the head's tree as it was: no commit."""
    mnt = make_mount(LONG_WINDOW)
    mnt.sh("mkdir d && echo a > d/a")
    head = mnt.head()
    mnt.sh("touch x.lock && rm x.lock && touch d/4913 && rm d/4913 && cat d/a >/dev/null")
    assert mnt.head() == head
    assert mnt.log(limit=1)[0]["meta"]["changed"] == ["d", "d/a"]
