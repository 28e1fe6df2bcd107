"""Ref names and the rules for branch and snapshot names.

Branches and snapshots appear as folders under `.helix/branches/` and
`.helix/snapshots/`, so a name is one path component a user can type: no `/`, no NUL,
no leading `.` or `-`, nothing revision syntax would misread (`~`, `^`, `:`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from helixfs.errors import InvalidName
from helixfs.ids import CommitId
from helixfs.vcs.text import show_path


@dataclass(frozen=True)
class RefInfo:
    """A branch's or snapshot's name and the commit it points at."""

    name: str
    commit: CommitId


HEAD = "HEAD"
BRANCHES = "branches/"
SNAPSHOTS = "snapshots/"
WORK = "work/"
REMOTES = "remotes/"  # remotes/NAME/BRANCH: a remote's branch as last seen (vcs/sync.py)
DEFAULT_BRANCH = "main"

_BAD_NAME = re.compile(r"[\x00-\x20/\\~^:?*\[\]\x7f]")
_HEXLIKE = re.compile(r"[0-9a-f]{40,64}")


def check_name(name: object, what: str = "branch") -> str:
    """A valid branch/snapshot name, or InvalidName saying what is wrong with it."""
    if not isinstance(name, str) or not name:
        raise InvalidName(f"{what} name must be a non-empty string")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # surrogate escapes: bytes from argv that are not UTF-8
        shown = show_path(name.encode("utf-8", "surrogateescape"))
        raise InvalidName(f"{what} name '{shown}' is not valid UTF-8") from None
    if len(name.encode("utf-8")) > 200:
        raise InvalidName(f"{what} name is longer than 200 bytes: {name[:40]!r}...")
    if name[0] in ".-" or name in (HEAD, "@"):
        # `@` is revision syntax for HEAD: a branch of that name could never be named
        raise InvalidName(f"{what} name {name!r} may not start with '.' or '-', nor be HEAD or @")
    if name.endswith(".lock"):
        raise InvalidName(f"{what} name {name!r} may not end with '.lock'")
    # isprintable: the store refuses other refs (a no-break or zero-width space, U+2028)
    if _BAD_NAME.search(name) or not name.isprintable():
        raise InvalidName(
            f"{what} name {name!r} may not contain spaces, control characters, "
            "'/', '\\', '~', '^', ':', '?', '*', '[' or ']'"
        )
    if _HEXLIKE.fullmatch(name):
        raise InvalidName(f"{what} name {name!r} looks like a commit id")
    return name


def storable(name: str) -> bool:
    """Whether a ref could have this name: printable UTF-8 text (the store refuses to
    even look up any other, so a lookup of one would fail with the store's message)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return name.isprintable()


SHOWN_CHARACTERS = 80  # a longer name is cut in messages: it is not one anyone typed


def shown_name(name: str) -> str:
    """A name from the command line, quoted, on one line: bytes that are not UTF-8 and
    control characters escaped as show_path does (repr shows a byte 0xff as a surrogate),
    and a long one cut to its start and its length."""
    shown = show_path(name.encode("utf-8", "surrogateescape"))
    if len(shown) > SHOWN_CHARACTERS:
        return f"'{shown[: SHOWN_CHARACTERS - 20]}...' ({len(name):,} characters)"
    return f"'{shown}'"


def branch_ref(name: str) -> str:
    return BRANCHES + name


def snapshot_ref(name: str) -> str:
    return SNAPSHOTS + name


def work_ref(name: str) -> str:
    return WORK + name


@dataclass(frozen=True)
class FolderHead:
    """What HEAD means to a command run inside one folder of a mount: the branch of
    `.helix/branches/NAME/`, the snapshot of `.helix/snapshots/NAME/`, the commit of
    `.helix/commits/ID/`, as a git worktree has its own HEAD. Only a branch can move."""

    kind: Literal["branch", "snapshot", "commit"]
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {shown_name(self.name)}"
