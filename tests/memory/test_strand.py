"""Memory strands (.dna): signed, encrypted exports that another store imports.

Real SQLite memory databases and real libsodium; the key derivation runs at its real
cost (~0.6 s a strand)."""

from __future__ import annotations

import base64
import json
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

import nacl.pwhash
import nacl.secret
import nacl.signing
import nacl.utils
import pytest

from helixfs.errors import InvalidInput, UnsupportedVersion
from helixfs.memory import Memory, Source
from helixfs.memory import strand as strands

PASSPHRASE = "correct horse battery"


@pytest.fixture()
def other(tmp_path: Path) -> Iterator[Memory]:
    """A second store's memory: where strands are imported."""
    with Memory.open(tmp_path / "other" / "memory.db", None) as memory:
        yield memory


@pytest.fixture()
def key(tmp_path: Path) -> nacl.signing.SigningKey:
    return strands.identity(tmp_path)


def sealed(mem: Memory, key: nacl.signing.SigningKey, **filters: str) -> bytes:
    memories, edges = strands.export_memories(mem, **filters)
    return strands.seal(memories, edges, PASSPHRASE, key)


def contents(mem: Memory) -> list[str]:
    return sorted(record.content for record in mem.memories(status=None, limit=1000))


def test_a_strand_carries_memories_and_their_relations_to_another_store(
    mem: Memory, other: Memory, key: nacl.signing.SigningKey
) -> None:
    source = Source(agent="claude", file="auth/tokens.py", line=12, when=1_700_000_000.0)
    deploy = mem.remember("We deploy on Fridays after the freeze", type="decision")
    tokens = mem.remember(
        "Access tokens are refreshed hourly", tags=["auth"], scope="api", source=source
    )
    mem.relate(str(tokens.id), str(deploy.id), "depends_on")
    report = strands.import_strand(other, strands.unseal(sealed(mem, key), PASSPHRASE))
    assert report["signer"] == strands.public_key(key)
    assert report["add"] == 2 and report["related"] == 1
    (carried,) = other.memories(scope="api")
    assert carried.content == "Access tokens are refreshed hourly"
    assert "auth" in carried.tags and carried.source == source
    (edge,) = other.edges(carried.id)
    assert edge.rel == "depends_on"
    assert other.get(edge.dst).content == "We deploy on Fridays after the freeze"


def test_importing_a_strand_twice_stores_nothing_twice(
    mem: Memory, other: Memory, key: nacl.signing.SigningKey
) -> None:
    mem.remember("The cache is warmed at boot", type="fact")
    data = sealed(mem, key)
    strands.import_strand(other, strands.unseal(data, PASSPHRASE))
    again = strands.import_strand(other, strands.unseal(data, PASSPHRASE))
    assert again.get("noop") == 1 and "add" not in again
    assert contents(other) == ["The cache is warmed at boot"]


def test_an_export_takes_only_what_its_filters_name(
    mem: Memory, key: nacl.signing.SigningKey
) -> None:
    mem.remember("Tokens are refreshed hourly", tags=["auth"])
    mem.remember("Builds use ccache", tags=["build"])
    memories, _ = strands.export_memories(mem, tag="auth")
    assert [m["content"] for m in memories] == ["Tokens are refreshed hourly"]


@pytest.mark.parametrize("where", ["header", "ciphertext", "signature"])
def test_a_changed_byte_is_refused_and_imports_nothing(
    mem: Memory, other: Memory, key: nacl.signing.SigningKey, where: str
) -> None:
    mem.remember("The cache is warmed at boot")
    data = bytearray(sealed(mem, key))
    at = {"header": 20, "ciphertext": len(data) - 100, "signature": len(data) - 10}[where]
    data[at] ^= 0x01
    with pytest.raises(InvalidInput, match="signature does not verify|header is damaged"):
        strands.unseal(bytes(data), PASSPHRASE)
    assert contents(other) == []


def test_a_wrong_passphrase_opens_nothing(mem: Memory, key: nacl.signing.SigningKey) -> None:
    mem.remember("The cache is warmed at boot")
    with pytest.raises(InvalidInput, match="wrong passphrase"):
        strands.unseal(sealed(mem, key), "not the passphrase")


def test_an_importer_can_require_a_signer_it_trusts(
    mem: Memory, key: nacl.signing.SigningKey, tmp_path: Path
) -> None:
    mem.remember("The cache is warmed at boot")
    data = sealed(mem, key)
    (tmp_path / "elsewhere").mkdir()
    stranger = strands.public_key(strands.identity(tmp_path / "elsewhere"))
    with pytest.raises(InvalidInput, match="not a trusted key"):
        strands.unseal(data, PASSPHRASE, trusted=[stranger])
    assert strands.unseal(data, PASSPHRASE, trusted=[strands.public_key(key)]).memories


def test_what_is_not_a_strand_of_this_version_is_refused(
    mem: Memory, key: nacl.signing.SigningKey
) -> None:
    with pytest.raises(InvalidInput, match="not a HelixFS memory strand"):
        strands.unseal(b"PK\x03\x04" + bytes(100), PASSPHRASE)
    mem.remember("The cache is warmed at boot")
    newer = bytearray(sealed(mem, key))
    newer[8] = 2
    with pytest.raises(UnsupportedVersion, match="upgrade"):
        strands.unseal(bytes(newer), PASSPHRASE)


def test_a_short_passphrase_is_refused_at_export(mem: Memory, key: nacl.signing.SigningKey) -> None:
    with pytest.raises(InvalidInput, match="at least 8"):
        strands.seal([], [], "short", key)


def test_a_signed_strand_with_one_bad_memory_imports_none_of_them(
    other: Memory, key: nacl.signing.SigningKey
) -> None:
    """A strand from a newer or careless writer: checked whole before the first write."""
    good = {"content": "The cache is warmed at boot", "scope": "global"}
    bad = {"content": "Tokens rotate", "scope": "no spaces allowed"}
    data = strands.seal([good, bad], [], PASSPHRASE, key)
    with pytest.raises(InvalidInput, match="memory 1 of the strand"):
        strands.import_strand(other, strands.unseal(data, PASSPHRASE))
    assert contents(other) == []


def test_the_signing_key_is_made_once_and_kept_private(tmp_path: Path) -> None:
    first = strands.identity(tmp_path)
    assert strands.public_key(strands.identity(tmp_path)) == strands.public_key(first)
    mode = (tmp_path / strands.IDENTITY_FILE).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600


def forged(key: nacl.signing.SigningKey, payload: object, **kdf: int) -> bytes:
    """A strand built by hand from the layout in strand.py's docstring, signed by `key`:
    what a careless or hostile writer could send."""
    salt = nacl.utils.random(nacl.pwhash.argon2id.SALTBYTES)
    ops = kdf.get("ops", nacl.pwhash.argon2id.OPSLIMIT_INTERACTIVE)
    mem = kdf.get("mem", nacl.pwhash.argon2id.MEMLIMIT_INTERACTIVE)
    header = {
        "signer": strands.public_key(key),
        "kdf": {
            "alg": "argon2id13",
            "salt": base64.b64encode(salt).decode(),
            "ops": ops,
            "mem": mem,
        },
        "cipher": "xsalsa20poly1305",
    }
    affordable = mem <= strands.MAX_MEM  # else no key: the import must refuse first
    secret = (
        nacl.pwhash.argon2id.kdf(32, PASSPHRASE.encode(), salt, opslimit=ops, memlimit=mem)
        if affordable
        else bytes(32)
    )
    box = nacl.secret.SecretBox(secret).encrypt(json.dumps(payload).encode())
    head = json.dumps(header).encode()
    body = b"HELIXDNA" + bytes([1]) + struct.pack(">I", len(head)) + head + bytes(box)
    return body + key.sign(body).signature


def test_a_strand_built_to_the_documented_layout_opens(key: nacl.signing.SigningKey) -> None:
    memory = {"content": "The cache is warmed at boot", "scope": "global"}
    opened = strands.unseal(forged(key, {"memories": [memory], "edges": []}), PASSPHRASE)
    assert opened.memories == [memory] and opened.signer == strands.public_key(key)


def test_a_key_derivation_too_costly_to_pay_is_refused(key: nacl.signing.SigningKey) -> None:
    """A signer can sign anything: 16 GiB of Argon2 memory (libsodium tries it) would
    take the importer's machine, before the passphrase is even tried."""
    data = forged(key, {"memories": [], "edges": []}, mem=16 << 30)
    with pytest.raises(InvalidInput, match="key derivation"):
        strands.unseal(data, PASSPHRASE)


@pytest.mark.parametrize("payload", [[], {"memories": []}, {"memories": [], "edges": [[0, 1]]}])
def test_a_payload_of_the_wrong_shape_is_refused_with_a_reason(
    key: nacl.signing.SigningKey, payload: object
) -> None:
    with pytest.raises(InvalidInput, match="cannot be read"):
        strands.unseal(forged(key, payload), PASSPHRASE)
