"""Which store a command works on: `--store` > `$HELIX_STORE` > the mount holding the
current directory > `~/.helix/default`; and, in a mount, which branch, snapshot or
commit HEAD means to it and which folder of the tree it runs in (`tree_place`).

A mount is recognised in the mount table, whose source is the store (fsname=STORE), or
else by its virtual file `.helix/store`, which holds the store's path: walking up from
the cwd finds the innermost mount.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from helixfs.daemon.lock import LOCK_NAME
from helixfs.daemon.mountinfo import HelixMount, helix_mounts_in
from helixfs.errors import InvalidInput

if TYPE_CHECKING:
    from helixfs.vcs.refs import FolderHead

ENV_VAR = "HELIX_STORE"
HELIX_DIR = b".helix"  # the mount's virtual folder (fs/helixdir.py), named here without
# importing the filesystem layer, which loads pyfuse3
MOUNT_MARKER = Path(os.fsdecode(HELIX_DIR)) / "store"
FOLDER_KINDS: dict[bytes, Literal["branch", "snapshot", "commit"]] = {
    b"branches": "branch",
    b"snapshots": "snapshot",
    b"commits": "commit",
}


def default_store() -> Path:
    return Path.home() / ".helix" / "default"


def store_of_mount(start: Path) -> Path | None:
    """The store of the nearest mount at or above `start`, if any."""
    return _store_in_mount_table(start) or _store_by_marker(start)


def _store_in_mount_table(start: Path) -> Path | None:
    """The store of the innermost HelixFS mount holding `start`, as the mount table
    names it (the daemon mounts with fsname=STORE). Read without touching the mount:
    a daemon that cannot answer (stopped) would hang the reader of `.helix/store` in
    the kernel, where the CLI can tell nothing, rather than in `forward`, which names it.
    """
    mount = _innermost_mount(start)
    if mount is None:
        return None
    store = Path(mount.source)
    # an fsname of the user's own (-o fsname=...) names no store: the marker does
    return store if (store / LOCK_NAME).is_file() else None


def _innermost_mount(start: Path) -> HelixMount | None:
    try:
        mounts = helix_mounts_in()
    except OSError:
        return None
    here = Path(os.path.abspath(start))
    holding = [m for m in mounts if m.point == here or m.point in here.parents]
    return max(holding, key=lambda m: len(m.point.parts)) if holding else None


@dataclass(frozen=True)
class TreePlace:
    """Where in a mount of the store a command runs: what HEAD means there (None: the
    store's HEAD) and the folder of that tree the cwd is (b"": the tree's root)."""

    head: FolderHead | None
    folder: bytes


def tree_place(store: Path, cwd: Path) -> TreePlace | None:
    """`cwd`'s place in a mount of `store`, if it is in one. In `.helix/branches/NAME/`
    (and `snapshots/NAME/`, `commits/ID/`) HEAD is that folder's; in the rest of `.helix/`
    the cwd is no folder of a tree, and paths go from the root."""
    mount = _innermost_mount(cwd)
    if mount is None or not same_store(Path(mount.source), store):
        return None
    # a bind mount of one of its folders (`docker -v MNT/proj:/work`) starts there
    inside = Path(mount.root.lstrip("/")) / Path(os.path.abspath(cwd)).relative_to(mount.point)
    parts = [os.fsencode(p) for p in inside.parts]
    if not parts or parts[0] != HELIX_DIR:
        return TreePlace(None, b"/".join(parts))
    kind = FOLDER_KINDS.get(parts[1]) if len(parts) > 2 else None
    if kind is None:
        return TreePlace(None, b"")
    from helixfs.vcs.refs import FolderHead  # here: helixfs.vcs takes 50 ms to import

    return TreePlace(FolderHead(kind, os.fsdecode(parts[2])), b"/".join(parts[3:]))


def same_store(a: Path, b: Path) -> bool:
    """Whether two paths name the same store folder (False if either is gone)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _store_by_marker(start: Path) -> Path | None:
    """The store path advertised by the nearest mount at or above `start`, if any."""
    for directory in (start, *start.parents):
        marker = directory / MOUNT_MARKER
        try:
            text = marker.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            return Path(text)
    return None


def resolve_store(explicit: str | None, cwd: Path | None = None) -> Path:
    if explicit is not None:
        if not explicit:
            raise InvalidInput("--store: an empty path is not a store")
        return Path(explicit).expanduser()
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env).expanduser()
    try:
        here = cwd if cwd is not None else Path.cwd()
    except OSError:  # the cwd was deleted under us: fall through to the default
        here = None
    mounted = store_of_mount(here) if here is not None else None
    return mounted if mounted is not None else default_store()
