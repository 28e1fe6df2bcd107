"""The pages of a big live directory: which ones a save must rewrite.

A directory of more than FLAT_MAX entries is stored as a paged tree (vcs/objects.py):
pages of ~128 entries and a short index. The work tree keeps, per paged directory, each
page's last name and id, and the names of children changed since the last save; a
save rewrites only the pages those names fall in. So a save in a directory of 20,000
entries writes ~14 KB instead of the whole ~1.2 MB listing, and costs about what a save
in a small directory costs.
"""

from __future__ import annotations

import bisect
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import cast

from helixfs.ids import ObjectId
from helixfs.vcs.objects import Tree, is_page_end


@dataclass(slots=True)
class Page:
    """One stored page of a live directory."""

    end: bytes | None  # its last name; None for the last page, which takes every name after
    oid: ObjectId
    count: int
    pure: bool  # no editor temp file in it or below (see Worktree._commit_tree)


def pages_of(tree: Tree, pure: bool) -> list[Page] | None:
    """The pages of a loaded tree; None for a flat one."""
    if not tree.pages:
        return None
    pages, at = [], 0
    for oid, count in tree.pages:
        at += count
        pages.append(Page(tree.names[at - 1], oid, count, pure))
    pages[-1].end = None
    return pages


def runs_to_rewrite(
    pages: list[Page], stale: Iterable[bytes], present: Container[bytes]
) -> list[tuple[int, int]]:
    """Runs (first, last) of pages to rewrite, in order: every page a changed name falls
    in, extended over the next page while its last name no longer ends a page (the name
    is gone, or PAGE_MAX had ended the page): past that point the page cuts may move.
    Before a run and after it, the cuts stay where they are."""
    ends = [cast(bytes, page.end) for page in pages[:-1]]  # only the last page's is None
    runs: list[list[int]] = []
    for i in sorted({bisect.bisect_left(ends, name) for name in stale}):
        if runs and i <= runs[-1][1] + 1:
            runs[-1][1] = max(runs[-1][1], i)
        else:
            runs.append([i, i])
        while runs[-1][1] < len(ends) and not _still_ends(ends[runs[-1][1]], present):
            runs[-1][1] += 1
    return [(first, last) for first, last in runs]


def _still_ends(name: bytes, present: Container[bytes]) -> bool:
    return name in present and is_page_end(name)
