"""Shared memory through a remote: signed batches of memory operations (ADR 0065).

Each machine writes what its memory learnt since its last batch (memory/shared.py) as
one batch, `PREFIX/memory/SIGNER/SEQ` on the remote (SIGNER: the hex public key of the
store's identity, strand.py's; SEQ: 12 digits, from 1), created with `If-None-Match: *`
so two writers never share a number. It reads the batches of every other signer it has
not applied, and applies only those signed by a key it trusts (`helix remote trust KEY`,
kept in STORE/trusted-keys.json); the others are counted, never opened.

A batch (the strand's layout, without its passphrase):

    magic   8 bytes   b"HELIXMOP"
    version 1 byte    1
    body    JSON      {"signer": hex, "seq": n, "created": unix seconds, "ops": [...]}
    sig     64 bytes  Ed25519 signature of everything before it

On an encrypted remote the whole batch is sealed as an object is (store/seal.py),
bound to its key, so only ciphertext leaves the machine and a batch moved to another
name fails to open. A batch whose signature, name or operations do not check is
refused whole, with the reason, and changes nothing.

A purge erases the content where the batch arrives, and in the batches on the remote
of the machine that wrote the content: that machine writes those holding the purged
memory again without it, when it purges or when it applies the purge.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3
import nacl.exceptions
import nacl.signing

from helixfs.errors import CorruptObject, InvalidInput, UnsupportedVersion
from helixfs.memory import validate
from helixfs.memory.engine import Memory
from helixfs.memory.shared import EDIT_FIELDS, ROLLBACK_FIELDS
from helixfs.memory.strand import identity, public_key, remember_arguments
from helixfs.memory.types import MEMORY_TYPES, STATUSES
from helixfs.store.s3client import S3Client, S3Location
from helixfs.store.seal import Sealed

PREFIX = "memory/"
MAGIC, VERSION, LATEST = b"HELIXMOP", 1, 2
# the operations each batch version may hold (2: memory lifecycle and relations, ADR 0078)
OPS: dict[int, tuple[str, ...]] = {
    1: ("remember", "forget", "purge"),
    2: ("remember", "forget", "purge", "archive", "edit", "rollback", "relate"),
}
TRUST_FILE = "trusted-keys.json"
STATE_FILE = "memory-sync.json"  # per remote location: the history row sent up to
TRUST_FORMAT = "helix-trusted-keys"
_SIG = 64
MAX_OPS = 20_000  # in a batch read: a writer sends at most shared.BATCH_OPS
_KEY = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"memory/([0-9a-f]{64})/([0-9]{12})")
_ID = re.compile(r"[0-9A-Za-z]{1,64}")
_locks: dict[Path, threading.Lock] = {}
# (store, batch name, stored size) of batches refused: not read again each round while
# they stay as they are (a mount's syncer exchanges every second)
_refused: set[tuple[Path, str, int]] = set()
_locks_lock = threading.Lock()


# ---------------------------------------------------------------- trust


def check_key(text: str) -> str:
    key = text.strip().lower()
    if not _KEY.fullmatch(key):
        raise InvalidInput(
            f"{text[:80]!r} is not a public key (64 hex digits, as `helix remote keys` shows)"
        )
    return key


def trusted(store: Path) -> dict[str, dict[str, Any]]:
    """The keys whose batches this store applies: key -> {"added", "label"}."""
    path = store / TRUST_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InvalidInput(f"{path} is unreadable ({err}): fix or remove it") from None
    if not isinstance(data, dict) or data.get("format") != TRUST_FORMAT:
        raise InvalidInput(f"{path} is not a HelixFS trusted-keys file")
    if data.get("version") != 1:
        raise UnsupportedVersion(f"{path} is version {data.get('version')!r}: upgrade HelixFS")
    return dict(data["keys"])


def _save_trusted(store: Path, keys: dict[str, dict[str, Any]]) -> None:
    text = json.dumps({"format": TRUST_FORMAT, "version": 1, "keys": keys}, indent=2)
    temp = store / (TRUST_FILE + ".tmp")
    temp.write_text(text + "\n")
    os.replace(temp, store / TRUST_FILE)


def trust(store: Path, key: str, label: str = "") -> bool:
    """Trust `key`'s batches; False if it was trusted already."""
    key, keys = check_key(key), trusted(store)
    if key == own_key(store):
        raise InvalidInput("that is this store's own key: its batches are its own")
    if key in keys:
        return False
    keys[key] = {"added": time.time(), "label": label}
    _save_trusted(store, keys)
    return True


def untrust(store: Path, key: str) -> None:
    key, keys = check_key(key), trusted(store)
    if key not in keys:
        raise InvalidInput(f"the key {key} is not trusted here (helix remote keys)")
    del keys[key]
    _save_trusted(store, keys)


def own_key(store: Path) -> str:
    return public_key(identity(store))


# ---------------------------------------------------------------- batches


def batch_name(signer: str, seq: int) -> str:
    return f"{PREFIX}{signer}/{seq:012d}"


def encode(ops: list[dict[str, Any]], seq: int, key: nacl.signing.SigningKey) -> bytes:
    """A signed batch: version 1 when it holds only what version 1 had, so a machine
    not yet upgraded still reads those; version 2 (which it refuses, saying to
    upgrade) when it holds an archive, edit, rollback or relate."""
    version = VERSION if all(op["op"] in OPS[VERSION] for op in ops) else LATEST
    body = {"signer": public_key(key), "seq": seq, "created": time.time(), "ops": ops}
    signed = MAGIC + bytes((version,)) + json.dumps(body, sort_keys=True).encode()
    return signed + key.sign(signed).signature


def decode(data: bytes, signer: str, seq: int) -> list[dict[str, Any]]:
    """The checked operations of the batch stored as (`signer`, `seq`), or InvalidInput:
    its signature, its name and every operation must check."""
    if len(data) < len(MAGIC) + 1 + _SIG or not data.startswith(MAGIC):
        raise InvalidInput("not a HelixFS memory batch")
    version = data[len(MAGIC)]
    if version not in OPS:
        raise UnsupportedVersion(f"batch version {version}: upgrade HelixFS to read it")
    signed, signature = data[:-_SIG], data[-_SIG:]
    try:
        nacl.signing.VerifyKey(bytes.fromhex(signer)).verify(signed, signature)
        body = json.loads(signed[len(MAGIC) + 1 :])
    except (ValueError, nacl.exceptions.BadSignatureError, nacl.exceptions.TypeError):
        raise InvalidInput(
            f"its signature does not verify against {signer[:16]}…: altered or damaged"
        ) from None
    if not isinstance(body, dict) or body.get("signer") != signer or body.get("seq") != seq:
        raise InvalidInput("it names another signer or number than its place: moved")
    ops = body.get("ops")
    if not isinstance(ops, list) or len(ops) > MAX_OPS:
        raise InvalidInput(f"it has no list of at most {MAX_OPS} operations")
    return [_checked(n, op, version) for n, op in enumerate(ops)]


def _checked(n: int, op: Any, version: int) -> dict[str, Any]:
    allowed = OPS[version]
    if not isinstance(op, dict) or op.get("op") not in allowed:
        raise InvalidInput(f"operation {n} is not one of {', '.join(allowed)}")
    checked: dict[str, Any] = {"op": op["op"], "ids": _ids(n, op.get("ids"))}
    if op["op"] == "purge":
        return checked
    at = op.get("at")
    if not (isinstance(at, int | float) and math.isfinite(at) and at > 0):
        raise InvalidInput(f"operation {n} has no time")
    checked["at"] = float(at)
    if op["op"] == "forget":
        checked["reason"] = str(op.get("reason") or "")[:1000]
        return checked
    if op["op"] in ("archive", "edit", "rollback", "relate"):
        return _checked_change(n, op, checked)
    checked["args"] = remember_arguments(n, op.get("args"), "the batch")
    for name in ("branch", "base_commit"):
        value = op.get(name)
        if value is not None and not (isinstance(value, str) and value.isprintable()):
            raise InvalidInput(f"operation {n} has a {name} that is not a name")
        checked[name] = value
    return checked


def _ids(n: int, ids: Any) -> list[str]:
    if not (isinstance(ids, list) and 0 < len(ids) <= 64):
        raise InvalidInput(f"operation {n} names no memory")
    if not all(isinstance(i, str) and _ID.fullmatch(i) for i in ids):
        raise InvalidInput(f"operation {n} names a memory by something that is not an id")
    return list(ids)


def _checked_change(n: int, op: dict[str, Any], checked: dict[str, Any]) -> dict[str, Any]:
    """An archive, edit, rollback or relate (version 2), checked onto `checked`."""
    if op["op"] == "relate":
        checked["to"] = _ids(n, op.get("to"))
        try:
            checked["rel"] = validate.check_relation(op.get("rel"))  # type: ignore[arg-type]
        except InvalidInput as err:
            raise InvalidInput(f"operation {n}: {err}") from None
    elif op["op"] != "archive":
        checked["state"] = _checked_state(n, op["op"], op.get("state"))
    return checked


def _checked_state(n: int, op: str, state: Any) -> dict[str, Any]:
    fields = EDIT_FIELDS if op == "edit" else ROLLBACK_FIELDS
    if not isinstance(state, dict) or not state or not set(state) <= set(fields):
        raise InvalidInput(f"operation {n} sets no state, or columns an {op} does not set")
    try:
        return {name: _STATE_CHECKS[name](value) for name, value in state.items()}
    except (InvalidInput, TypeError, ValueError) as err:
        raise InvalidInput(f"operation {n} sets a state that does not check: {err}") from None


def _one_of(kind: str, allowed: Iterable[str]) -> Any:
    def check(value: Any) -> str:
        if value not in tuple(allowed):
            raise InvalidInput(f"unknown {kind} {value!r}")
        return str(value)

    return check


def _short_text(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 4000:
        raise InvalidInput("a subject or value that is not text under 4000 characters")
    return value


def _a_time(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"valid_to {value!r} is not a time")
    return float(value)


_STATE_CHECKS: dict[str, Any] = {
    "content": lambda v: validate.check_text("memory content", v),
    "type": _one_of("memory type", MEMORY_TYPES),
    "tags": lambda v: list(validate.check_tags(v if isinstance(v, list) else str(v))),
    "scope": lambda v: validate.check_name("scope", v),
    "confidence": lambda v: validate.check_unit("confidence", v),
    "salience": lambda v: validate.check_unit("salience", v),
    "status": _one_of("status", STATUSES),
    "valid_to": _a_time,
    "subject": _short_text,
    "value": _short_text,
}


# ---------------------------------------------------------------- the exchange


@dataclass
class MemorySync:
    """What one exchange did (push/pull/fetch print it under `memory`)."""

    sent: int = 0  # operations sent
    batches_sent: int = 0
    applied: int = 0  # batches applied here
    actions: dict[str, int] = field(default_factory=dict)  # what their operations did
    untrusted: dict[str, int] = field(default_factory=dict)  # signer -> batches left
    refused: list[str] = field(default_factory=list)  # why each refused batch was
    scrubbed: int = 0  # own batches written again without purged content
    waiting: int = 0  # trusted batches an exchange with apply=False left to apply

    def add(self, other: MemorySync) -> MemorySync:
        """This report followed by `other`'s (an exchange made in two passes)."""
        self.sent += other.sent
        self.batches_sent += other.batches_sent
        self.applied += other.applied
        for action, n in other.actions.items():
            self.actions[action] = self.actions.get(action, 0) + n
        self.untrusted = other.untrusted or self.untrusted
        self.refused += other.refused
        self.scrubbed += other.scrubbed
        self.waiting = other.waiting
        return self

    def as_json(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "batches_sent": self.batches_sent,
            "applied": self.applied,
            "actions": self.actions,
            "untrusted": self.untrusted,
            "refused": self.refused,
            "scrubbed": self.scrubbed,
        }

    def summary(self) -> str:
        parts = [f"memory: {self.sent} operation(s) sent, {self.applied} batch(es) applied"]
        if self.actions:
            parts.append(", ".join(f"{n} {a}" for a, n in sorted(self.actions.items())))
        if self.untrusted:
            total = sum(self.untrusted.values())
            parts.append(
                f"{total} batch(es) of {len(self.untrusted)} untrusted key(s) left "
                "(helix remote keys; helix remote trust KEY)"
            )
        return "; ".join(parts)


class SharedMemory:
    """This store's memory and one remote location (sealed with `sealer` if encrypted)."""

    def __init__(
        self, store: Path, location: S3Location, memory: Memory, sealer: Sealed | None = None
    ) -> None:
        self.store = store
        self.location = location
        self.memory = memory
        self._sealer = sealer
        self._key = identity(store)
        self.signer = public_key(self._key)
        self._sizes: dict[str, int] = {}  # batch name -> stored size, as listed
        self._client: S3Client | None = None  # kept between rounds (a mount's syncer)

    def exchange(
        self, *, send: bool = True, receive: bool = True, apply: bool = True
    ) -> MemorySync:
        """One round: one listing, then what is new each way. `apply=False`: trusted
        batches are counted (`waiting`), not applied (a memory opened without its model
        can send, and say whether the model is needed)."""
        report = MemorySync()
        with _store_lock(self.store):
            if self._client is None:
                self._client = S3Client(self.location)
            stored = self._listing(self._client)
            if send:
                self._send(self._client, stored, report)
            if receive:
                self._receive(self._client, stored, report, apply=apply)
        return report

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> SharedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _listing(self, client: S3Client) -> dict[str, list[int]]:
        """signer -> the numbers of its batches on the remote, in order (less those
        refused before and unchanged since)."""
        found: dict[str, list[int]] = {}
        for key, size in client.listing(PREFIX):
            match = _NAME.fullmatch(key)
            if match and (self.store, key, size) not in _refused:
                found.setdefault(match[1], []).append(int(match[2]))
            self._sizes[key] = size
        return {signer: sorted(seqs) for signer, seqs in found.items()}

    # -- sending -------------------------------------------------------------------------

    def _send(self, client: S3Client, stored: dict[str, list[int]], report: MemorySync) -> None:
        mine = stored.setdefault(self.signer, [])
        sent = self._sent()
        purged: set[str] = set()
        while True:
            ops, reached = self.memory.own_operations(sent)
            if ops:
                seq = self._put_new(client, ops, (mine[-1] if mine else 0) + 1)
                mine.append(seq)
                report.sent += len(ops)
                report.batches_sent += 1
                purged.update(i for op in ops if op["op"] == "purge" for i in op["ids"])
            if reached == sent:
                break
            sent = reached
            self._save_sent(sent)
        if purged:
            report.scrubbed = self._scrub(client, mine, purged)

    def _put_new(self, client: S3Client, ops: list[dict[str, Any]], seq: int) -> int:
        """Store `ops` as this signer's next batch from `seq`: a number another process
        of this machine took meanwhile is passed over."""
        while True:
            blob = self._sealed(batch_name(self.signer, seq), encode(ops, seq, self._key))
            if client.put(batch_name(self.signer, seq), blob, if_none_match=True, size=len(blob)):
                return seq
            seq += 1

    def _scrub(self, client: S3Client, mine: Iterable[int], purged: set[str]) -> int:
        """Write this signer's batches holding a purged memory again without it."""
        scrubbed = 0
        for seq in mine:
            name = batch_name(self.signer, seq)
            blob = client.get(name)
            if blob is None:
                continue
            ops = decode(self._opened(name, blob), self.signer, seq)
            kept = [op for op in ops if op["op"] == "purge" or not purged & set(op["ids"])]
            if len(kept) < len(ops):
                fresh = self._sealed(name, encode([_wire(op) for op in kept], seq, self._key))
                client.put(name, fresh, if_none_match=False, size=len(fresh))
                scrubbed += 1
        return scrubbed

    # -- receiving -----------------------------------------------------------------------

    def _receive(
        self, client: S3Client, stored: dict[str, list[int]], report: MemorySync, *, apply: bool
    ) -> None:
        """Apply the trusted batches not applied yet; a purge among them also leaves
        this signer's own batches (only it can sign them again)."""
        trust = trusted(self.store)
        purged: set[str] = set()
        for signer, seqs in sorted(stored.items()):
            if signer == self.signer:
                continue
            waiting = [s for s in seqs if not self.memory.batch_applied(signer, s)]
            if waiting and signer not in trust:
                report.untrusted[signer] = len(waiting)
                continue
            if not apply:
                report.waiting += len(waiting)
                continue
            for seq in waiting:
                purged |= self._apply_one(client, signer, seq, report)
        if purged:
            report.scrubbed += self._scrub(client, stored.get(self.signer, []), purged)

    def _apply_one(self, client: S3Client, signer: str, seq: int, report: MemorySync) -> set[str]:
        """Apply one batch; the ids it purged."""
        name = batch_name(signer, seq)
        blob = client.get(name)
        if blob is None:
            return set()
        try:
            ops = decode(self._opened(name, blob), signer, seq)
        except (InvalidInput, CorruptObject, UnsupportedVersion) as err:
            report.refused.append(f"batch {name} refused: {err}")
            _refused.add((self.store, name, self._sizes.get(name, len(blob))))
            return set()
        counts = self.memory.apply_batch(signer, seq, ops)
        if counts is None:
            return set()
        report.applied += 1
        for action, n in counts.items():
            report.actions[action] = report.actions.get(action, 0) + n
        return {i for op in ops if op["op"] == "purge" for i in op["ids"]}

    # -- sealing and state ---------------------------------------------------------------

    def _sealed(self, name: str, batch: bytes) -> bytes:
        return batch if self._sealer is None else self._sealer.seal(batch, name.encode())

    def _opened(self, name: str, blob: bytes) -> bytes:
        if self._sealer is None:
            return blob
        return self._sealer.unseal(f"memory batch {name}", blob, name.encode())

    def _state_key(self) -> str:
        place = f"{self.location.endpoint} {self.location}"
        return blake3.blake3(place.encode()).hexdigest()[:16]

    def _sent(self) -> int:
        path = self.store / STATE_FILE
        try:
            return int(json.loads(path.read_text()).get(self._state_key(), 0))
        except FileNotFoundError:
            return 0
        except (OSError, ValueError, AttributeError) as err:
            raise InvalidInput(
                f"{path} is unreadable ({err}): remove it to send all again"
            ) from None

    def _save_sent(self, seq: int) -> None:
        path = self.store / STATE_FILE
        state = json.loads(path.read_text()) if path.exists() else {}
        state[self._state_key()] = seq
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(temp, path)


def _wire(op: dict[str, Any]) -> dict[str, Any]:
    """A checked operation as a batch carries it again (its source a plain object)."""
    if "args" not in op:
        return op
    args = dict(op["args"])
    source = args["source"]
    args["source"] = {
        "agent": source.agent,
        "file": source.file,
        "line": source.line,
        "when": source.when,
    }
    return {**op, "args": args}


def _store_lock(store: Path) -> threading.Lock:
    """One exchange at a time per store in this process (the syncer and a forwarded
    push would otherwise send the same operations twice)."""
    with _locks_lock:
        return _locks.setdefault(store.resolve(), threading.Lock())
