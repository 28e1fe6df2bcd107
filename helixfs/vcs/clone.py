"""`helix clone`: a new store holding every branch of a remote, HEAD on the remote's.

The store is initialised as any other (its root commit is left behind: the branches
are moved to the remote's commits in one write), and the folder is removed again if
the clone fails, since nothing of it would be worth keeping. A lazy clone
(`remote.lazy`) downloads commits and folders only: file contents are read from the
remote when first read (vcs/ondemand.py), and kept.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixfs.errors import NotFound
from helixfs.ids import CommitId
from helixfs.vcs import remotes
from helixfs.vcs.refs import BRANCHES, DEFAULT_BRANCH, HEAD
from helixfs.vcs.repo import Repository
from helixfs.vcs.sync import BranchSync, Sync, host_name


def clone(folder: Path, remote: remotes.Remote, key: bytes | None = None) -> list[BranchSync]:
    created = not folder.exists()
    try:
        repo = Repository.init(folder)
    except BaseException:
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    try:
        remotes.add(folder, remote)
        if key is not None:
            remotes.write_key(folder, remote.name, key)
        results = _fill(repo, folder, remote)
    except BaseException:
        repo.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    repo.close()
    return results


def _fill(repo: Repository, folder: Path, remote: remotes.Remote) -> list[BranchSync]:
    store = remotes.open_store(folder, remote)
    try:
        sync = Sync(repo, store, remote.name, host_name(repo.settings), lazy=remote.lazy)
        tips = sync.remote_branches()
        if not tips:
            raise NotFound(f"the remote {remote.location} has no branches to clone")
        results = []
        for branch, tip in sorted(tips.items()):
            result = BranchSync(branch, "new", tip.hex(), tip.hex())
            result.objects = sync.download(tip)
            results.append(result)
        repo.move_refs({BRANCHES + b: CommitId(t) for b, t in tips.items()})
        for branch, tip in tips.items():
            sync.track(branch, tip)
        _take_head(repo, store.ref(HEAD), tips)
        return results
    finally:
        store.close()


def _take_head(repo: Repository, head: bytes | None, tips: dict[str, CommitId]) -> None:
    """HEAD on the remote's HEAD branch (else main, else the first); the init's `main`
    goes if the remote has none."""
    wanted = head.decode() if head is not None and head.decode() in tips else None
    if wanted is None:
        wanted = DEFAULT_BRANCH if DEFAULT_BRANCH in tips else sorted(tips)[0]
    if wanted != repo.head_branch():
        repo.checkout(wanted)
    if DEFAULT_BRANCH not in tips:
        repo.delete_branch(DEFAULT_BRANCH)
