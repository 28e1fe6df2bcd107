"""A lazy clone's file contents: the local store first, else its remote (ADR 0064).

`helix clone --lazy` brings every commit and folder but no file content. The content
readers of such a repository read through `OnDemand`: the local RocksStore is the cache,
and what it lacks is fetched from the remote the clone came from (the remote store
verifies each record against its id), written locally, and served. The remote store
is opened at the first miss, not before: a mount of a lazy clone starts offline too.

With the remote unreachable (or refusing, or missing the object), the read fails with
NotFetched (EIO at the mount) and the log names the object and the reason; contents
already fetched read on.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from helixfs.errors import (
    CorruptObject,
    HelixError,
    NotFetched,
    NotFound,
    RemoteDenied,
    RemoteUnavailable,
)
from helixfs.ids import ObjectId, hex_id
from helixfs.store import ObjectStore

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)


class RemoteReads(Protocol):
    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]: ...

    def close(self) -> None: ...


class OnDemand:
    """What a ContentReader reads (`get`, `get_run`): local records, else fetched ones."""

    def __init__(self, local: ObjectStore, open_remote: Callable[[], RemoteReads], name: str):
        self._local = local
        self._open_remote = open_remote
        self._name = name
        self._remote: RemoteReads | None = None
        self._lock = threading.Lock()
        self.fetched = 0  # records fetched so far

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        try:
            return self._local.get(oid, keep=keep)
        except NotFound:
            return self._fetch([oid])[0]

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]:
        try:
            return self._local.get_run(oids)
        except NotFound:
            absent = [oid for oid in dict.fromkeys(oids) if not self._local.contains(oid)]
            self._fetch(absent)
            return self._local.get_run(oids)

    def _fetch(self, oids: list[ObjectId]) -> list[bytes]:
        try:
            records = self._remote_store().get_run(oids)
        except (RemoteUnavailable, RemoteDenied, NotFound, CorruptObject) as err:
            what = f"{len(oids)} file content(s) of this lazy clone (first {hex_id(oids[0])})"
            log.error("%s cannot be fetched from the remote %s: %s", what, self._name, err)
            raise NotFetched(
                f"{what} not fetched yet, and the remote {self._name!r} cannot give it now "
                f"({type(err).__name__}): try again when it answers"
            ) from None
        self._local.write(dict(zip(oids, records, strict=True)))
        with self._lock:
            self.fetched += len(records)
        return records

    def open_remote(self) -> None:
        """Open the remote before the first miss needs it; a failure is only logged."""
        try:
            self._remote_store()
        except HelixError as err:
            log.info("the remote %s is not open yet (%s): the first read tries", self._name, err)

    def _remote_store(self) -> RemoteReads:
        with self._lock:
            if self._remote is None:
                self._remote = self._open_remote()
            return self._remote

    def close(self) -> None:
        with self._lock:
            if self._remote is not None:
                self._remote.close()
                self._remote = None


_LAZY = re.compile(rb'"lazy"\s*:\s*true')  # in remotes.json (vcs/remotes.py)


def read_through(local: ObjectStore, folder: Path) -> OnDemand | None:
    """The OnDemand reads of the store at `folder` if it is a lazy clone, else None.
    A remotes file that cannot be read leaves the store local (remote commands say why)."""
    try:  # every command opens a store: vcs/remotes (and S3's modules) only for a lazy one
        text = (folder / "remotes.json").read_bytes()
    except OSError:
        return None  # no remote at all (most stores)
    if not _LAZY.search(text):
        return None  # none of its remotes is lazy
    from helixfs.vcs import remotes

    try:
        source = remotes.lazy_source(folder)
    except HelixError as err:
        log.warning("%s: %s (file contents are read locally only)", folder, err)
        return None
    if source is None:
        return None
    return OnDemand(local, lambda: remotes.open_store(folder, source), source.name)


BATCH = 256  # records fetched and written per step of `fill`


def fill(repo: Repository, fetch: Callable[[Sequence[ObjectId]], list[bytes]]) -> int:
    """Fetch every file content the store's refs reach and the store lacks (`helix
    fetch --contents`: a lazy clone made whole); how many. A chunked file's chunks are
    known once its record is here, so it walks again until nothing is absent."""
    from helixfs.vcs.maint import CONSTANTS, mark, roots

    fetched = 0
    while True:
        reached = mark(repo, roots(repo)) - set(CONSTANTS)  # those may be unwritten anywhere
        absent = [oid for oid in reached if not repo.store.contains(oid)]
        if not absent:
            return fetched
        for start in range(0, len(absent), BATCH):
            batch = absent[start : start + BATCH]
            repo.store.write(dict(zip(batch, fetch(batch), strict=True)))
        fetched += len(absent)
