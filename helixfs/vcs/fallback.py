"""What a branch whose head cannot be read shows (ADR 0044).

The head commit names its tree and its parents, so when the commit itself cannot be
read nothing of the branch can be found from its ref, and when its root tree cannot be
read, nothing of that state. The mount still starts: such a branch shows its newest
first-parent ancestor whose commit and root tree read, read-only (a save on top would
commit that older tree over the head's changes), or an empty folder when no ancestor
can be found. One line in the log says which, and how to get out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from helixfs.errors import CorruptObject, NotFound
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.vcs.objects import Commit
from helixfs.vcs.treeops import EMPTY_TREE_ID

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)

ANCESTORS_TRIED = 1000  # first parents looked at before an empty folder is shown instead
Unreadable = (CorruptObject, NotFound)


@dataclass(frozen=True)
class Shown:
    """What a branch shows: a commit's tree (None: an empty folder, no commit read)."""

    commit: CommitId | None
    tree: ObjectId
    time_ns: int


def readable(repo: Repository, head: CommitId) -> Commit | None:
    """The head commit, when it and its root tree read; None when either does not."""
    try:
        commit = repo.commit_info(head)
        repo.trees.get(commit.tree)
    except Unreadable:
        return None
    return commit


def fallback(repo: Repository, branch: str, head: CommitId) -> Shown:
    """The newest first-parent ancestor of `head` that reads (logged, once per call)."""
    shown, cid, steps = Shown(None, EMPTY_TREE_ID, 0), head, 0
    while steps < ANCESTORS_TRIED:
        try:
            commit = repo.commit_info(cid)
        except Unreadable:
            break  # its parents are named inside it: nothing older can be found
        good = readable(repo, cid)
        if good is not None:
            shown = Shown(cid, good.tree, good.time_ns)
            break
        if not commit.parents:
            break
        cid, steps = commit.parents[0], steps + 1
    what = (
        f"its ancestor {hex_id(shown.commit)[:12]} ({steps} commit(s) older)"
        if shown.commit is not None
        else "an empty folder (no ancestor can be read)"
    )
    log.error(
        "branch %s: head %s cannot be read; showing %s, read-only. `helix fsck` names the"
        " damage, `helix fsck --salvage DEST` copies out what is intact, and `helix reset"
        " --hard ID` moves the branch to a commit that reads",
        branch,
        hex_id(head)[:12],
        what,
    )
    return shown
