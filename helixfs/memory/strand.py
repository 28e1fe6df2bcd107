"""Memory strands: memories exported as one signed, encrypted `.dna` file.

A strand carries memories from one store to another: to a teammate's agent, to a new
machine, into a backup. Anyone holding the passphrase can read it. Its signature says
which store wrote it and that no byte changed since, and an importer can require a
signer it trusts.

Layout (all integers big-endian):

    magic   8 bytes   b"HELIXDNA"
    version 1 byte    1
    length  4 bytes   of the header
    header  JSON      {"signer": hex Ed25519 public key, "created": unix seconds,
                       "memories": count, "kdf": {"alg": "argon2id13", "salt": b64,
                       "ops": opslimit, "mem": memlimit}, "cipher": "xsalsa20poly1305"}
    box     rest - 64 libsodium secretbox (24-byte nonce, then ciphertext and MAC) of the
                      payload, under the key Argon2id derives from the passphrase
    sig     64 bytes  Ed25519 signature of everything before it

The payload is JSON: {"memories": [{content, type, tags, scope, source, confidence,
salience}], "edges": [[from, to, relation]]}, edges by index into memories. The
signature covers the ciphertext, so it can be checked before the costly key derivation:
a strand that was altered is refused whatever the passphrase.

The signing key is the store's identity: `STORE/identity.key`, made on first use,
readable by its owner only.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nacl.exceptions
import nacl.pwhash
import nacl.secret
import nacl.signing
import nacl.utils

from helixfs.errors import InvalidInput, UnsupportedVersion
from helixfs.memory import validate
from helixfs.memory.engine import Memory
from helixfs.memory.types import MEMORY_TYPES, Source

MAGIC = b"HELIXDNA"
VERSION = 1
IDENTITY_FILE = "identity.key"
MIN_PASSPHRASE = 8  # characters, at export: a strand is meant to travel
KDF = "argon2id13"
CIPHER = "xsalsa20poly1305"
MAX_OPS = nacl.pwhash.argon2id.OPSLIMIT_SENSITIVE  # what an import accepts to pay
MAX_MEM = nacl.pwhash.argon2id.MEMLIMIT_SENSITIVE  # 1 GiB
_HEAD = struct.Struct(">8sBI")
_SIG = 64


@dataclass(frozen=True)
class Strand:
    """What a strand holds, once verified and opened."""

    signer: str  # hex of the writer's Ed25519 public key
    created: float
    memories: list[dict[str, Any]]
    edges: list[tuple[int, int, str]] = field(default_factory=list)


def seal(
    memories: list[dict[str, Any]],
    edges: list[tuple[int, int, str]],
    passphrase: str,
    signer: nacl.signing.SigningKey,
) -> bytes:
    """The bytes of a strand of `memories`, encrypted under `passphrase`, signed."""
    if len(passphrase) < MIN_PASSPHRASE:
        raise InvalidInput(f"a strand's passphrase needs at least {MIN_PASSPHRASE} characters")
    salt = nacl.utils.random(nacl.pwhash.argon2id.SALTBYTES)
    ops, mem = nacl.pwhash.argon2id.OPSLIMIT_MODERATE, nacl.pwhash.argon2id.MEMLIMIT_MODERATE
    header = {
        "signer": signer.verify_key.encode().hex(),
        "created": time.time(),
        "memories": len(memories),
        "kdf": {"alg": KDF, "salt": base64.b64encode(salt).decode(), "ops": ops, "mem": mem},
        "cipher": CIPHER,
    }
    payload = json.dumps({"memories": memories, "edges": [list(e) for e in edges]}).encode()
    box = nacl.secret.SecretBox(_key(passphrase, salt, ops, mem)).encrypt(payload)
    head = json.dumps(header, sort_keys=True).encode()
    body = _HEAD.pack(MAGIC, VERSION, len(head)) + head + bytes(box)
    return body + signer.sign(body).signature


def unseal(data: bytes, passphrase: str, trusted: Collection[str] = ()) -> Strand:
    """The strand in `data`: its signature checked (and its signer among `trusted`, if
    any are given) before the passphrase opens it."""
    header, body, box, signature = _parts(data)
    signer = str(header.get("signer", ""))
    try:
        nacl.signing.VerifyKey(bytes.fromhex(signer)).verify(body, signature)
    except (ValueError, nacl.exceptions.BadSignatureError, nacl.exceptions.TypeError):
        raise InvalidInput(
            "the strand's signature does not verify: it was altered or damaged"
        ) from None
    if trusted and signer not in {key.lower() for key in trusted}:
        raise InvalidInput(f"the strand is signed by {signer}, which is not a trusted key")
    try:
        key = _strand_key(header, passphrase)
        payload = json.loads(nacl.secret.SecretBox(key).decrypt(box))
        return Strand(
            signer,
            float(header.get("created", 0)),
            list(payload["memories"]),
            [(int(a), int(b), str(rel)) for a, b, rel in payload["edges"]],
        )
    except nacl.exceptions.CryptoError:
        raise InvalidInput("wrong passphrase for this strand") from None
    except (KeyError, ValueError, TypeError, nacl.exceptions.RuntimeError) as err:
        raise InvalidInput(f"the strand's content cannot be read: {err!r}") from None


def _strand_key(header: dict[str, Any], passphrase: str) -> bytes:
    """The key the header's KDF makes of `passphrase`. Its costs are bounded: a signer
    can sign anything, and libsodium would try a memory limit of 16 GiB."""
    kdf = header.get("kdf") or {}
    if kdf.get("alg") != KDF or header.get("cipher") != CIPHER:
        raise UnsupportedVersion(f"the strand uses {kdf.get('alg')}/{header.get('cipher')}")
    ops, mem = int(kdf["ops"]), int(kdf["mem"])
    if not (0 < ops <= MAX_OPS and 0 < mem <= MAX_MEM):
        raise InvalidInput(f"the strand asks a key derivation of {ops} passes over {mem} bytes")
    return _key(passphrase, base64.b64decode(kdf["salt"]), ops, mem)


def export_memories(
    memory: Memory, *, scope: str | None = None, type: str | None = None, tag: str | None = None
) -> tuple[list[dict[str, Any]], list[tuple[int, int, str]]]:
    """The active memories to put in a strand (oldest first, so that an import
    consolidates them in the order they were learned) and the relations between them
    that were made by hand (a supersedes edge is consolidation's own)."""
    records = memory.memories(scope=scope, type=type, tag=tag, status="active", limit=100_000)
    records.reverse()
    index = {record.id: n for n, record in enumerate(records)}
    edges = {
        (index[edge.src], index[edge.dst], edge.rel)
        for record in records
        for edge in memory.edges(record.id)
        if edge.src in index and edge.dst in index and edge.rel not in validate.RESERVED_RELATIONS
    }
    return [record.portable() for record in records], sorted(edges)


def import_strand(memory: Memory, strand: Strand) -> dict[str, Any]:
    """Write a strand's memories through the whole pipeline (redacted, consolidated:
    one already known is not stored twice, a contradiction supersedes), then its
    relations. Every memory is checked first, so a bad one changes nothing."""
    checked = [remember_arguments(n, item) for n, item in enumerate(strand.memories)]
    for a, b, rel in strand.edges:
        if not (0 <= a < len(checked) and 0 <= b < len(checked)):
            raise InvalidInput(f"the strand relates memory {a} to {b}: there is no such memory")
        validate.check_relation(rel)
    actions: dict[str, int] = {}
    ids: list[str | None] = []
    for item in checked:
        result = memory.remember(**item)
        actions[result.action] = actions.get(result.action, 0) + 1
        ids.append(result.id)
    related = 0
    for a, b, rel in strand.edges:
        src, dst = ids[a], ids[b]
        if src is not None and dst is not None and src != dst:
            memory.relate(src, dst, rel)
            related += 1
    return {"signer": strand.signer, "memories": len(checked), **actions, "related": related}


def remember_arguments(n: int, item: Any, carrier: str = "the strand") -> dict[str, Any]:
    """`remember`'s arguments for memory `n` of a strand (or of another `carrier`: a
    batch from another machine), or InvalidInput naming it."""
    try:
        if not isinstance(item, dict):
            raise InvalidInput("not an object")
        kind = item.get("type")
        if kind is not None and kind not in MEMORY_TYPES:
            raise InvalidInput(f"unknown memory type {kind!r}")
        source = item.get("source") or {}
        line = source.get("line")
        return {
            "content": validate.check_text("memory content", item.get("content", "")),
            "type": kind,
            "tags": validate.check_tags(item.get("tags") or ()),
            "scope": validate.check_name("scope", item.get("scope", "global")),
            "source": Source(
                agent=_optional_text(source.get("agent")) or "strand",
                file=_optional_text(source.get("file")),
                line=line if isinstance(line, int) and not isinstance(line, bool) else None,
                when=float(source["when"]) if isinstance(source.get("when"), int | float) else None,
            ),
            "confidence": validate.check_unit("confidence", item.get("confidence", 1.0)),
            "salience": validate.check_unit("salience", item.get("salience", 0.5)),
        }
    except (InvalidInput, AttributeError, TypeError) as err:
        raise InvalidInput(f"memory {n} of {carrier} cannot be imported: {err}") from None


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def identity(store: Path) -> nacl.signing.SigningKey:
    """The store's signing key, made on first use (its seed, hex, owner-only)."""
    path = store / IDENTITY_FILE
    try:
        return nacl.signing.SigningKey(bytes.fromhex(path.read_text().strip()))
    except FileNotFoundError:
        pass
    except ValueError:
        raise InvalidInput(f"{path} is not a signing key (64 hex digits)") from None
    key = nacl.signing.SigningKey.generate()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made meanwhile by another process: that one is the key
        return identity(store)
    except OSError as err:
        raise InvalidInput(f"cannot create the signing key {path}: {err.strerror}") from None
    with os.fdopen(fd, "w") as out:
        out.write(key.encode().hex() + "\n")
    return key


def public_key(key: nacl.signing.SigningKey) -> str:
    return key.verify_key.encode().hex()


def _key(passphrase: str, salt: bytes, ops: int, mem: int) -> bytes:
    if not passphrase:
        raise InvalidInput("the passphrase is empty")
    return nacl.pwhash.argon2id.kdf(
        nacl.secret.SecretBox.KEY_SIZE, passphrase.encode(), salt, opslimit=ops, memlimit=mem
    )


def _parts(data: bytes) -> tuple[dict[str, Any], bytes, bytes, bytes]:
    """Header, signed body, box and signature; a file that is no strand is refused."""
    if len(data) < _HEAD.size + _SIG or not data.startswith(MAGIC):
        raise InvalidInput("not a HelixFS memory strand (.dna)")
    _, version, length = _HEAD.unpack_from(data)
    if version != VERSION:
        raise UnsupportedVersion(
            f"strand version {version}; this HelixFS reads version {VERSION}: upgrade it"
        )
    body, signature = data[:-_SIG], data[-_SIG:]
    try:
        header = json.loads(body[_HEAD.size : _HEAD.size + length])
    except ValueError:
        raise InvalidInput("the strand's header is damaged") from None
    if not isinstance(header, dict) or _HEAD.size + length > len(body):
        raise InvalidInput("the strand's header is damaged")
    return header, body, body[_HEAD.size + length :], signature
