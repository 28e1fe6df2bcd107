"""Which pages of a big directory a change must rewrite (ADR 0015).

A directory of more than FLAT_MAX entries is stored as a paged tree (vcs/objects.py):
pages of ~128 entries and a short index. Given its pages and the names that changed,
`repage` rewrites only the pages those names fall in. The work tree keeps, per paged
directory, its pages and the names of children changed since the last save; path
copying (`Trees.encode`) knows the previous tree and the names it changes. So a save
or a commit in a directory of 20,000 entries writes ~14 KB instead of the whole ~1.2 MB
listing, and costs about what it costs in a small directory.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from helixfs.ids import ObjectId, object_id
from helixfs.vcs.objects import Tree, encode_tree_raw, is_page_end, page_lengths


@dataclass(slots=True)
class Page:
    """One stored page of a directory (live in the work tree, or being path-copied)."""

    end: bytes | None  # its last name; None for the last page, which takes every name after
    oid: ObjectId
    count: int
    pure: bool  # known to hold no editor temp file, even below (see Worktree._commit_tree)


T = TypeVar("T")


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


def repage(
    pages: list[Page] | None,
    listing: Sequence[T],
    name_of: Callable[[T], bytes],
    stale: Iterable[bytes],
    write: Callable[[int, int], list[Page]],
) -> list[Page]:
    """The pages of `listing` (in name order) after changes to the `stale` names.

    Each run of pages to rewrite is replaced by `write(start, stop)`, given the slice of
    the listing that run now covers; it starts and ends at page cuts. Other pages stay.
    Without pages yet, the whole listing is one run.
    """
    if pages is None:
        pages = write(0, len(listing))
    else:

        def after(name: bytes) -> int:
            return bisect.bisect_right(listing, name, key=name_of)

        def present(name: bytes) -> bool:
            at = after(name)
            return at > 0 and name_of(listing[at - 1]) == name

        for first, last in reversed(runs_to_rewrite(pages, stale, present)):
            low, high = pages[first - 1].end if first else None, pages[last].end
            start = 0 if low is None else after(low)
            stop = len(listing) if high is None else after(high)
            pages[first : last + 1] = write(start, stop)
    pages[-1].end = None
    return pages


def write_pages(
    names: Sequence[bytes],
    raws: Sequence[bytes],
    objects: dict[ObjectId, bytes],
    stored: Callable[[ObjectId], bool] = lambda _: False,
) -> list[Page]:
    """A run of entries (names and encoded entries, from one page cut to another) as
    page records in `objects`, leaving out those `stored` already. Purity is not known
    here: the pages say "not known pure", for the work tree to find out."""
    pages, start = [], 0
    for length in page_lengths(names):
        record = encode_tree_raw(raws[start : start + length])
        oid = object_id(record)
        if oid not in objects and not stored(oid):
            objects[oid] = record
        start += length
        pages.append(Page(names[start - 1], oid, length, False))
    return pages


def runs_to_rewrite(
    pages: list[Page], stale: Iterable[bytes], present: Callable[[bytes], bool]
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


def _still_ends(name: bytes, present: Callable[[bytes], bool]) -> bool:
    return is_page_end(name) and present(name)
