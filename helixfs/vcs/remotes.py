"""A store's remotes: names for S3 locations, kept in `remotes.json` in the store folder.

The file holds where a remote is (bucket, prefix, endpoint, region) and whether it is
encrypted, never a credential: those come from boto3's chain (environment,
~/.aws/credentials, instance roles) when the remote is opened. An encrypted remote's
repository key lives beside it in `remote-keys/NAME.key` (mode 0600), out of the file a
user would share or paste. What this machine learnt of a remote's packs (their indexes,
which never change) is cached in `remote-cache/NAME-HASH/` (HASH: of the location), so
that each run fetches only the indexes of packs new since.

Schema of remotes.json (one JSON object):
    format   "helix-remotes"
    version  1
    remotes  {NAME: {"url": "s3://BUCKET/PREFIX", "endpoint": URL | null,
                     "region": R | null, "encrypt": bool, "lazy": bool}}
             lazy: this store is a lazy clone of it (`clone --lazy`): file contents not
             here yet are read from it (vcs/ondemand.py); absent means false
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from helixfs.errors import AlreadyExists, InvalidInput, InvalidName, NotFound, UnsupportedVersion
from helixfs.store.s3client import S3Location

if TYPE_CHECKING:
    from helixfs.store.s3 import S3Store
    from helixfs.store.seal import Sealed

FILE = "remotes.json"
KEYS = "remote-keys"
CACHE = "remote-cache"
FORMAT, VERSION = "helix-remotes", 1
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


@dataclass(frozen=True)
class Remote:
    name: str
    location: S3Location
    encrypt: bool = False
    lazy: bool = False  # file contents are fetched from it when read (clone --lazy)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "url": str(self.location),
            "endpoint": self.location.endpoint,
            "region": self.location.region,
            "encrypt": self.encrypt,
            "lazy": self.lazy,
        }


def check_remote_name(name: str) -> str:
    if not _NAME.fullmatch(name) or name.endswith(".lock"):
        raise InvalidName(
            f"remote name {name!r:.80} must be letters, digits, '_', '.' or '-' "
            "(64 at most), starting with a letter or digit"
        )
    return name


def _path(store: Path) -> Path:
    return store / FILE


def load(store: Path) -> dict[str, Remote]:
    path = _path(store)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InvalidInput(f"{path} is unreadable ({err}): fix or remove it") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidInput(f"{path} is not a HelixFS remotes file")
    if data.get("version") != VERSION:
        raise UnsupportedVersion(
            f"{path} is version {data.get('version')!r}; this HelixFS reads version "
            f"{VERSION}: upgrade HelixFS"
        )
    return {name: _remote(name, entry) for name, entry in dict(data["remotes"]).items()}


def _remote(name: str, entry: dict[str, Any]) -> Remote:
    location = S3Location.parse(entry["url"], entry.get("endpoint"), entry.get("region"))
    return Remote(name, location, bool(entry.get("encrypt", False)), bool(entry.get("lazy", False)))


def _save(store: Path, remotes: dict[str, Remote]) -> None:
    entries = {
        name: {k: v for k, v in remote.as_json().items() if k != "name"}
        for name, remote in sorted(remotes.items())
    }
    text = json.dumps({"format": FORMAT, "version": VERSION, "remotes": entries}, indent=2)
    temp = _path(store).with_suffix(".tmp")
    temp.write_text(text + "\n")
    os.replace(temp, _path(store))


def add(store: Path, remote: Remote) -> None:
    remotes = load(store)
    if remote.name in remotes:
        raise AlreadyExists(f"a remote named {remote.name!r} exists (remove it first)")
    remotes[remote.name] = remote
    _save(store, remotes)


def remove(store: Path, name: str) -> Remote:
    remotes = load(store)
    if name not in remotes:
        raise NotFound(f"no remote named {name!r}")
    if remotes[name].lazy:
        raise InvalidInput(
            f"the remote {name!r} is where this lazy clone's file contents come from: "
            f"`helix fetch --contents {name}` first, then remove it"
        )
    gone = remotes.pop(name)
    _save(store, remotes)
    key = key_path(store, name)
    if key.exists():
        key.unlink()
    shutil.rmtree(cache_path(store, gone), ignore_errors=True)
    return gone


def cache_path(store: Path, remote: Remote) -> Path:
    """Where this store keeps what it learnt of `remote`'s packs: by name and location,
    so a remote added again elsewhere under the same name starts with none."""
    place = f"{remote.location.endpoint} {remote.location}"
    where = blake3.blake3(place.encode()).hexdigest()[:16]
    return store / CACHE / f"{check_remote_name(remote.name)}-{where}"


def get(store: Path, name: str | None) -> Remote:
    """The remote called `name`, or the only one (or `origin`) when none is named."""
    remotes = load(store)
    if name is None:
        if "origin" in remotes:
            return remotes["origin"]
        if len(remotes) == 1:
            return next(iter(remotes.values()))
        raise NotFound(
            "no remote given, and this store has "
            + (
                "none (helix remote add NAME s3://BUCKET/PREFIX)"
                if not remotes
                else f"{len(remotes)}: name one of {', '.join(sorted(remotes))}"
            )
        )
    if name not in remotes:
        raise NotFound(f"no remote named {name!r} (helix remote list)")
    return remotes[name]


def set_lazy(store: Path, name: str, lazy: bool) -> Remote:
    """Mark remote `name` the source of a lazy clone's contents, or no longer."""
    known = load(store)
    if name not in known:
        raise NotFound(f"no remote named {name!r}")
    known[name] = dataclasses.replace(known[name], lazy=lazy)
    _save(store, known)
    return known[name]


def lazy_source(store: Path) -> Remote | None:
    """The remote a lazy clone reads its missing file contents from, if this is one."""
    return next((remote for remote in load(store).values() if remote.lazy), None)


def key_path(store: Path, name: str) -> Path:
    return store / KEYS / f"{check_remote_name(name)}.key"


def write_key(store: Path, name: str, key: bytes) -> None:
    path = key_path(store, name)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(key)


def read_key(store: Path, name: str) -> bytes | None:
    path = key_path(store, name)
    return path.read_bytes() if path.exists() else None


def sealer(store: Path, remote: Remote) -> Sealed | None:
    """What seals the remote's objects (and memory batches) with its key, if encrypted."""
    if not remote.encrypt:
        return None
    from helixfs.store.seal import Sealed

    key = read_key(store, remote.name)
    if key is None:
        raise NotFound(
            f"the remote {remote.name!r} is encrypted and this store has no key for it: "
            f"`helix remote key import {remote.name} FILE` (from `helix remote key export`)"
        )
    return Sealed(key)


def open_store(store: Path, remote: Remote) -> S3Store:
    """The remote's ObjectStore, sealed with its key when it is encrypted."""
    from helixfs.store.s3 import S3Store

    opened = S3Store(remote.location, sealer=sealer(store, remote), cache=cache_path(store, remote))
    try:
        opened.ensure_layout()
    except BaseException:
        opened.close()
        raise
    return opened
