"""Revision syntax: which commit a user means by `HEAD~2`, `feat`, `snap^2` or `3fa9c1`.

Grammar: BASE then any number of `~N` (N first parents back, default 1) and `^N` (the Nth
parent, default 1; `^0` is the commit itself). BASE is `HEAD`/`@` (the branch HEAD
names; in a mount, the branch, snapshot or commit of the folder a command runs in),
`branches/NAME`, `snapshots/NAME`, a bare NAME (branch first, then snapshot), or a
commit id in hex: all 64 digits, or a prefix of at least 4 that only one commit has.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

from helixfs.errors import AmbiguousRevision, CorruptObject, InvalidInput, NotFound
from helixfs.ids import ID_SIZE, CommitId, ObjectId, hex_id
from helixfs.vcs.objects import KIND_COMMIT, KIND_NAMES, kind_of
from helixfs.vcs.refs import (
    BRANCHES,
    HEAD,
    SNAPSHOTS,
    branch_ref,
    shown_name,
    snapshot_ref,
    storable,
)

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

# [0-9], not \d: `HEAD~٣` (an Arabic-Indic three) is not revision syntax
_REV = re.compile(r"^(?P<base>[^~^]+)(?P<suffix>(?:[~^][0-9]*)*)$")
_STEP = re.compile(r"[~^][0-9]*")
_COUNT_DIGITS = 18
"""A count with more digits is beyond any history (and int() refuses 4,301 digits)."""
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")


def resolve(repo: Repository, rev: str) -> CommitId:
    if not isinstance(rev, str) or not rev.strip():
        raise InvalidInput("empty revision")
    match = _REV.match(rev.strip())
    if match is None:
        raise NotFound(f"unknown revision {shown_name(rev)}")
    cid = _resolve_base(repo, match["base"])
    for step in _STEP.findall(match["suffix"]):
        cid = _walk_back(repo, rev, cid, step)
    return cid


def resolve_id(repo: Repository, prefix: str) -> CommitId:
    """A commit by its id or a unique id prefix only, never a ref of that name: a branch
    named `cafe` does not hide the commit `cafe...` (`.helix/commits/ID`)."""
    if not isinstance(prefix, str) or not _HEX.fullmatch(prefix):
        raise NotFound(f"{shown_name(str(prefix))} is not a commit id (4 to 64 hex digits)")
    return _resolve_hex(repo, prefix.lower())


def _walk_back(repo: Repository, rev: str, cid: CommitId, step: str) -> CommitId:
    count = _count(step[1:])
    if step[0] == "^":
        if count == 0:
            return cid
        parents = repo.commit_info(cid).parents
        if count > len(parents):
            raise NotFound(f"{shown_name(rev)}: commit {hex_id(cid)[:12]} has no parent {count}")
        return parents[count - 1]
    for _ in range(count):
        parents = repo.commit_info(cid).parents
        if not parents:
            raise NotFound(f"{shown_name(rev)} goes back past the first commit")
        cid = parents[0]
    return cid


def _count(digits: str) -> int:
    """N of `~N` / `^N` (1 when absent); a count no history can reach stays finite."""
    digits = digits.lstrip("0") or ("0" if digits else "1")
    return int(digits) if len(digits) <= _COUNT_DIGITS else sys.maxsize


def _head(repo: Repository) -> CommitId:
    """HEAD: the commit of the folder the command runs in (`Repository.heading`), else
    the head of the branch HEAD names."""
    head = repo.folder_head()
    if head is None or head.kind == "branch":
        return repo.branch_head(repo.current_branch())
    if head.kind == "commit":
        return resolve_id(repo, head.name)
    value = repo.store.ref(snapshot_ref(head.name))
    if value is None:
        raise NotFound(f"no snapshot named {shown_name(head.name)}")
    return CommitId(value)


def _resolve_base(repo: Repository, base: str) -> CommitId:
    if base in (HEAD, "@"):
        return _head(repo)
    if "\0" in base:
        raise InvalidInput("a revision cannot contain NUL")
    if not storable(base):  # no ref can have this name: the store would refuse the lookup
        raise NotFound(f"unknown revision {shown_name(base)}: not a branch, snapshot or commit id")
    if base.startswith((BRANCHES, SNAPSHOTS)):
        value = repo.store.ref(base)
        if value is None:
            raise NotFound(f"unknown revision {shown_name(base)}")
        return CommitId(value)
    for ref in (branch_ref(base), snapshot_ref(base)):
        value = repo.store.ref(ref)
        if value is not None:
            return CommitId(value)
    if _HEX.fullmatch(base):
        return _resolve_hex(repo, base.lower())
    raise NotFound(f"unknown revision {shown_name(base)}: not a branch, snapshot or commit id")


def _resolve_hex(repo: Repository, prefix: str) -> CommitId:
    if len(prefix) == 2 * ID_SIZE:
        oid = ObjectId(bytes.fromhex(prefix))
        if repo.store.contains(oid) and is_commit(repo, oid):
            return CommitId(oid)
        raise NotFound(f"no commit {prefix}{_what_else(repo, [oid])}")
    matching = _ids_with_prefix(repo, prefix)
    found = [oid for oid in matching if is_commit(repo, oid)]
    if not found:
        raise NotFound(
            f"unknown revision {prefix!r}: no commit id starts with it{_what_else(repo, matching)}"
        )
    if len(found) > 1:
        shown = ", ".join(hex_id(o)[:12] for o in sorted(found)[:5])
        raise AmbiguousRevision(
            f"{prefix!r} matches {len(found)} commits: {shown}; give more digits"
        )
    return CommitId(found[0])


def _what_else(repo: Repository, oids: list[ObjectId]) -> str:
    """What a user gave instead of a commit (a tree id from `log --json`, a file's id
    from `ls --json`), so the message says why it is refused."""
    kinds = set()
    for oid in oids[:5]:
        try:
            kinds.add(KIND_NAMES.get(kind_of(repo.store.get(oid)), "object"))
        except (CorruptObject, NotFound):
            continue
    return f" (it is the id of a {' or '.join(sorted(kinds))}, not a commit)" if kinds else ""


def _ids_with_prefix(repo: Repository, prefix: str) -> list[ObjectId]:
    """Every stored id starting with a hex prefix (a range of the sorted ids, not a scan)."""
    whole = bytes.fromhex(prefix[: len(prefix) // 2 * 2])
    odd = int(prefix[-1], 16) if len(prefix) % 2 else None
    size = len(whole)
    return [oid for oid in repo.store.ids(whole) if odd is None or oid[size] >> 4 == odd]


def is_commit(repo: Repository, oid: ObjectId) -> bool:
    try:
        return kind_of(repo.store.get(oid)) == KIND_COMMIT
    except (CorruptObject, NotFound):
        return False
