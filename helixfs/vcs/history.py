"""Walking history and showing changes: log orders and the unified text diff."""

from __future__ import annotations

import difflib
import heapq
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from helixfs.errors import NotADirectory, NotFound
from helixfs.ids import CommitId, ObjectId
from helixfs.vcs.attrs import change_key, metadata_changes, owner_text
from helixfs.vcs.links import relinked
from helixfs.vcs.objects import Commit, TreeEntry
from helixfs.vcs.text import as_text
from helixfs.vcs.treeops import Change, show_path

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository


def first_parent(repo: Repository, cid: CommitId) -> Iterator[Commit]:
    """The branch's own line: what `log` shows by default."""
    current: CommitId | None = cid
    while current is not None:
        commit = repo.commit_info(current)
        yield commit
        current = commit.parents[0] if commit.parents else None


def touching(repo: Repository, cid: CommitId, path: bytes) -> Iterator[Commit]:
    """The first-parent commits that changed `path` (made, edited, deleted it, or a file
    below it if it is a folder): `log REV PATH`. A root commit counts if it holds it."""
    text = _normal(path.decode("utf-8", "surrogateescape"))
    for commit in first_parent(repo, cid):
        if not commit.parents:
            if _entry_at(repo, commit.tree, path) is not None:
                yield commit
            return
        if _changed(repo, commit, repo.commit_info(commit.parents[0]), path, text):
            yield commit


def ancestors(repo: Repository, cid: CommitId) -> Iterator[Commit]:
    """Every ancestor once, newest first (by commit time): what `log --graph` draws."""
    first = repo.commit_info(cid)
    seen = {cid}
    heap = [(-first.time_ns, 0, first)]
    tick = 1
    while heap:
        _, _, commit = heapq.heappop(heap)
        yield commit
        for parent in commit.parents:
            if parent not in seen:
                seen.add(parent)
                info = repo.commit_info(parent)
                heapq.heappush(heap, (-info.time_ns, tick, info))
                tick += 1


class LastChanges:
    """`last_change` answers kept by (commit, path). A commit never changes, so the
    newest change of a path as of a commit is true forever: a later query walks back
    only to the first commit it knows the answer at (a file read again and again, as
    `user.helix.commit` is, costs a step per commit made since). An answer is kept with
    its distance in first-parent steps, so a query meets it only if its own walk would
    have reached it within its limit: an answer never depends on the queries before it."""

    KEPT = 4096

    def __init__(self) -> None:
        self._known: dict[tuple[CommitId, bytes, int | None], tuple[CommitId | None, int]] = {}

    def get(
        self, commit: CommitId, path: bytes, limit: int | None = None
    ) -> tuple[CommitId | None, int] | None:
        """(answer, steps to it) as of `commit`, if kept; `limit` None for a walked
        answer, else the limit that cut the walk short."""
        return self._known.get((commit, path, limit))

    def keep(
        self, commit: CommitId, path: bytes, limit: int | None, answer: CommitId | None, steps: int
    ) -> None:
        if len(self._known) >= self.KEPT:
            del self._known[next(iter(self._known))]  # the oldest kept
        self._known[(commit, path, limit)] = (answer, steps)


def last_change(
    repo: Repository,
    head: CommitId,
    path: bytes,
    limit: int = 1000,
    known: LastChanges | None = None,
) -> CommitId | None:
    """The newest first-parent commit that changed `path` (the `user.helix.commit` xattr).

    Commits list the paths they touched in `meta["changed"]`, so most steps read only
    the commit; a commit that lists the path (or has no complete list: merges, imports,
    huge saves) is settled by comparing the path's entry with its parent's, so a save
    that rewrote identical bytes does not count as a change. `known` keeps answers for
    the next query (LastChanges).
    """
    if not path:
        return head  # every commit changes the root
    if known is not None:
        walked, cut_short = known.get(head, path), known.get(head, path, limit)
        if walked is not None and (walked[1] < limit or walked[0] is None):
            return walked[0]
        if cut_short is not None:  # cut short by this same limit
            return cut_short[0]
    answer, steps, cut = _last_change(repo, head, path, limit, known)
    if known is not None:
        known.keep(head, path, limit if cut else None, answer, steps)
    return answer


def _last_change(
    repo: Repository, head: CommitId, path: bytes, limit: int, known: LastChanges | None
) -> tuple[CommitId | None, int, bool]:
    """The answer, its distance from `head`, and whether `limit` cut the walk short."""
    text = _normal(path.decode("utf-8", "surrogateescape"))
    current = repo.commit_info(head)
    if _entry_at(repo, current.tree, path) is None:
        return None, 0, False
    child, steps, cut = current, 0, True
    while steps < limit:
        if not current.parents:
            cut = False
            break
        parent = repo.commit_info(current.parents[0])
        if _changed(repo, current, parent, path, text):
            return current.id, steps, False
        child, current, steps = current, parent, steps + 1
        met = known.get(current.id, path) if known is not None else None
        if met is not None and met[0] is not None and steps + met[1] < limit:
            return met[0], steps + met[1], False  # no change since, and our walk reaches it
    # A list of changed paths that missed this one (stores from before the lists were
    # normalised) must not make us name a commit that does not even hold the path.
    if _entry_at(repo, current.tree, path) is None:
        return child.id, steps - 1, cut
    return current.id, steps, cut


def _changed(repo: Repository, commit: Commit, parent: Commit, path: bytes, text: str) -> bool:
    if commit.tree == parent.tree:
        return False
    listed = commit.meta.get("changed")
    if isinstance(listed, list) and len(listed) < 1000 and "merge" not in commit.meta:
        touched = any(
            p == text or text.startswith(p + "/") or p.startswith(text + "/")
            for p in (_normal(p) for p in listed if isinstance(p, str))
        )
        if not touched:
            return False  # the list is complete: no tree needs decoding
    new, old = _entry_at(repo, commit.tree, path), _entry_at(repo, parent.tree, path)
    if change_key(new) != change_key(old):
        return True
    if new is None or old is None or not relinked(old, new):
        return False
    # The name moved to another file's node (`rm b; ln a b`): a change, unless only new
    # names joined it (`ln a b` changes b, not a); the diff knows which (ADR 0043). Rare.
    return any(change.path == path for change in repo.trees.diff(parent.tree, commit.tree))


def _normal(path: str) -> str:
    """`/a//b/` as `a/b`: older commits listed paths as they were given."""
    return "/".join(part for part in path.split("/") if part)


def _entry_at(repo: Repository, tree: ObjectId, path: bytes) -> TreeEntry | None:
    try:
        return repo.trees.entry(tree, path)
    except (NotFound, NotADirectory):
        return None


def unified_diff(repo: Repository, changes: Iterable[Change], context: int = 3) -> str:
    out: list[str] = []
    for change in changes:
        out.extend(_file_diff(repo, change, context))
    return "".join(out)


def _lines(text: str) -> list[str]:
    """Lines ended by \n only, as git counts them: str.splitlines also ends a line at
    form feeds, U+2028 and other separators, which shifts hunks and splits lines."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def _mode_lines(change: Change) -> str:
    """git's mode lines: a chmod +x (or a file turned symlink) is a change worth seeing."""
    old, new = change.old, change.new
    if old is None and new is not None:
        return f"new file mode {new.mode:o}\n"
    if new is None and old is not None:
        return f"deleted file mode {old.mode:o}\n"
    lines = ""
    if old is not None and new is not None and old.mode != new.mode:
        lines = f"old mode {old.mode:o}\nnew mode {new.mode:o}\n"
    changed = metadata_changes(old, new) if old is not None and new is not None else []
    if "owner" in changed:
        assert old is not None and new is not None
        lines += f"old owner {owner_text(old.xattrs)}\nnew owner {owner_text(new.xattrs)}\n"
    if "link" in changed:  # not git's: the name now shares another file's node
        lines += "new hard link\n"
    return lines


def _file_diff(repo: Repository, change: Change, context: int) -> list[str]:
    name = show_path(change.path)
    old = repo.contents.read(change.old.oid) if change.old else b""
    new = repo.contents.read(change.new.oid) if change.new else b""
    src = f"a/{name}" if change.old else "/dev/null"
    dst = f"b/{name}" if change.new else "/dev/null"
    header = f"diff --helix a/{name} b/{name}\n" + _mode_lines(change)
    old_text, new_text = as_text(old), as_text(new)
    if old_text is None or new_text is None:
        return [header, f"Binary files {src} and {dst} differ\n"]
    lines = difflib.unified_diff(
        _lines(old_text),
        _lines(new_text),
        src,
        dst,
        n=context,
    )
    return [
        header,
        *(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines),
    ]


def meta_matches(meta: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    """Whether a commit's meta holds each KEY=VALUE of `wanted`, a value compared as
    text (a list or a number as its JSON): `helix log --meta K=V`."""
    return all(key in meta and _meta_text(meta[key]) == value for key, value in wanted.items())


def _meta_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)
