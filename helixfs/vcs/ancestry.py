"""Ancestry questions (merge bases) answered by walking only the commits that matter.

Every commit has a generation: 1 for a root, else 1 + the highest of its parents'. A
commit's ancestors all have lower generations, so walking from the highest generation
down, every commit is reached by all of its descendants in the walk before it is
visited. The merge-base walk can then stop as soon as what is left below is known to be
common to both sides, instead of reading the whole history (1.6 s for 20,000 commits).

Commits record their generation (`meta["generation"]`, written by vcs like `changed`).
Commits from before that are computed once per process from their parents and kept in
memory. Generations are a function of ancestry alone, never of commit times: clocks
skew, and imported git history keeps author dates, so a parent can be newer than its
child.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from helixfs.ids import CommitId

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

GENERATION = "generation"  # the meta key vcs owns
_OURS, _THEIRS, _STALE = 1, 2, 4
_BOTH = _OURS | _THEIRS
_MEMO_LIMIT = 1 << 20  # computed generations kept per repository (old commits only)


def stored_generation(meta: object) -> int | None:
    """A commit's recorded generation, if it has a valid one."""
    value = meta.get(GENERATION) if isinstance(meta, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def next_generation(repo: Repository, parents: tuple[CommitId, ...] | list[CommitId]) -> int:
    """The generation of a new commit with these parents."""
    return 1 + max((generation(repo, p) for p in parents), default=0)


def remember_generation(repo: Repository, cid: CommitId, value: int) -> None:
    """A commit just written: the next one on it finds its generation without a read."""
    memo = repo.generations
    if len(memo) > _MEMO_LIMIT:
        memo.clear()
    memo[cid] = value


def generation(repo: Repository, cid: CommitId) -> int:
    """`cid`'s generation: recorded, or computed from its parents (iteratively: a
    history of 100,000 commits would overflow Python's stack)."""
    found = _known(repo, cid)
    if found is not None:
        return found
    memo = repo.generations
    if len(memo) > _MEMO_LIMIT:
        memo.clear()
    todo = [cid]
    while todo:
        current = todo[-1]
        if current in memo:  # reached twice (a diamond) before it was computed
            todo.pop()
            continue
        parents = repo.commit_info(current).parents
        missing = [p for p in parents if _known(repo, p) is None]
        if missing:
            todo.extend(missing)
            continue
        todo.pop()
        memo[current] = 1 + max((_known(repo, p) or 0 for p in parents), default=0)
    return memo[cid]


def _known(repo: Repository, cid: CommitId) -> int | None:
    """Memoised, or recorded in the commit (then memoised)."""
    known = repo.generations.get(cid)
    if known is None:
        known = stored_generation(repo.commit_info(cid).meta)
        if known is not None:
            repo.generations[cid] = known
    return known


def merge_base(repo: Repository, a: CommitId, b: CommitId) -> CommitId | None:
    """A best common ancestor of two commits (None for unrelated histories). Of several
    best bases (criss-cross merges) the newest is taken; a merge does not use this pick
    but all of them (merge._base_tree)."""
    bases = merge_bases(repo, a, b)
    if not bases:
        return None
    return max(bases, key=lambda cid: (repo.commit_info(cid).time_ns, cid))


def merge_bases(repo: Repository, a: CommitId, b: CommitId) -> list[CommitId]:
    """Every common ancestor of `a` and `b` that is not an ancestor of another one."""
    return best_common(repo, [a], b)


def best_common(repo: Repository, heads: list[CommitId], b: CommitId) -> list[CommitId]:
    """merge_bases of `b` and a commit whose parents would be `heads` (a virtual base).

    Paints down from both sides, highest generation first. A commit reached from both
    is a best common ancestor unless a common one above it already was (then it is
    marked stale, and so is everything below it). The walk ends when every commit left
    to visit is stale: nothing below can be a better base.
    """
    walk = _Paint(repo)
    for head in heads:
        walk.reach(head, _OURS)
    walk.reach(b, _THEIRS)
    found: list[CommitId] = []
    # the queue is the walk's frontier: a few commits per line of work in flight
    while walk.left(_STALE):
        cid, flag = walk.pop()
        if flag & _BOTH == _BOTH and not flag & _STALE:
            found.append(cid)
            flag = walk.flags[cid] = flag | _STALE
        walk.down(cid, flag)
    return found


def ahead_behind(
    repo: Repository, a: CommitId, b: CommitId, limit: int = 10_000
) -> tuple[int, int, bool]:
    """(commits only `a` reaches, commits only `b` reaches, whether counted to the end),
    as `git rev-list --count --left-right a...b`. The same walk as best_common: a
    commit's flags are final when it is popped (its descendants all were, generations
    being higher), and it ends when only commits both reach are left. Past `limit`
    commits walked it stops and says the counts are lower bounds."""
    walk = _Paint(repo)
    walk.reach(a, _OURS)
    walk.reach(b, _THEIRS)
    counts = {_OURS: 0, _THEIRS: 0}
    walked = 0
    while walk.left(_BOTH):
        if walked >= limit:
            return counts[_OURS], counts[_THEIRS], False
        cid, flag = walk.pop()
        walked += 1
        flag &= _BOTH
        if flag != _BOTH:
            counts[flag] += 1
        walk.down(cid, flag)
    return counts[_OURS], counts[_THEIRS], True


def only_reached(repo: Repository, tip: CommitId, others: list[CommitId]) -> list[CommitId]:
    """The commits `tip` reaches and none of `others` does (`git rev-list tip ^others`),
    newest generation first. The same walk as ahead_behind: it reads only the commits
    above the common part, not the history below it (a push reads the commits it sends,
    not every commit its tracking refs reach)."""
    walk = _Paint(repo)
    walk.reach(tip, _OURS)
    for other in others:
        walk.reach(other, _THEIRS)
    found: list[CommitId] = []
    while walk.left(_THEIRS):
        cid, flag = walk.pop()
        if not flag & _THEIRS:
            found.append(cid)
        walk.down(cid, flag)
    return found


class _Paint:
    """Flags painted down the history from some commits, visited highest generation
    first: a commit's flags are final when it is popped, all its descendants in the
    walk having been visited before it."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.flags: dict[CommitId, int] = {}
        self._queue: list[tuple[int, CommitId]] = []

    def reach(self, cid: CommitId, flag: int) -> None:
        had = self.flags.get(cid, 0)
        if had | flag != had:
            self.flags[cid] = had | flag
            heapq.heappush(self._queue, (-generation(self.repo, cid), cid))

    def left(self, done: int) -> bool:
        """Whether a commit still to visit lacks some flag of `done`."""
        return any(self.flags[cid] & done != done for _, cid in self._queue)

    def pop(self) -> tuple[CommitId, int]:
        _, cid = heapq.heappop(self._queue)
        return cid, self.flags[cid]

    def down(self, cid: CommitId, flag: int) -> None:
        for parent in self.repo.commit_info(cid).parents:
            self.reach(parent, flag)
