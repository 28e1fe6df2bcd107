"""Revert and cherry-pick: one commit's change applied to a branch by a three-way merge.

A cherry-pick of C merges C's tree into the branch with C's parent as the base, so only
what C changed is carried; a revert merges C's parent with C as the base, which undoes
exactly C. Both reuse merge.py's tree merge, so the same policy holds: a conflict
raises MergeConflictError with the paths and changes nothing. The new commit has the
branch head as its only parent (it is not a merge) and names C in its meta.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from helixfs.errors import InvalidInput
from helixfs.ids import CommitId, hex_id
from helixfs.vcs.merge import MergeConflictError, conflict_list, merge_trees
from helixfs.vcs.treeops import EMPTY_TREE_ID

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository


@dataclass(frozen=True)
class PickResult:
    status: str  # "applied" | "empty" (the branch has that change / lacks it already)
    commit: CommitId  # the new commit, or the unchanged head when "empty"
    source: CommitId  # the commit reverted or picked


def apply_commit(
    repo: Repository, rev: str, target: str, *, undo: bool, message: str | None = None
) -> PickResult:
    """Cherry-pick (`undo=False`) or revert (`undo=True`) commit `rev` onto `target`.
    The caller holds the repository lock and has settled the branch."""
    source = repo.commit_info(rev)
    if len(source.parents) > 1:
        raise InvalidInput(
            f"{hex_id(source.id)[:12]} is a merge commit: which side to take is not"
            " defined; revert or pick the commits of the merged branch instead"
        )
    parent_tree = repo.commit_info(source.parents[0]).tree if source.parents else EMPTY_TREE_ID
    head = repo.resolve(f"branches/{target}")
    ours_tree = repo.commit_info(head).tree
    short = hex_id(source.id)[:12]
    if undo:
        trees, label, verb = (source.tree, ours_tree, parent_tree), f"revert {short}", "reverting"
    else:
        trees, label, verb = (parent_tree, ours_tree, source.tree), short, "picking"
    merger, tree = merge_trees(repo, trees, (target, label))
    if merger.conflicts:
        raise MergeConflictError(
            f"{verb} {short} onto {target!r} conflicts in {conflict_list(merger)};"
            " nothing was changed",
            merger.conflicts,
            merger.marked,
            merger.reasons,
        )
    # by the diff, not the tree id: a merged file gets a new mtime even when unchanged
    changes = repo.trees.diff(ours_tree, tree)
    changed = sorted(c.path.decode("utf-8", "surrogateescape") for c in changes)
    if not changed:
        return PickResult("empty", head, source.id)
    subject = source.message.splitlines()[0] if source.message else short
    key = "reverts" if undo else "picked"
    text = message or (f'revert "{subject}"' if undo else source.message or subject)
    meta: dict[str, object] = {key: hex_id(source.id), "changed": changed[:1000]}
    cid = repo.write_commit(target, tree, [head], text, meta, merger.objects)
    return PickResult("applied", cid, source.id)
