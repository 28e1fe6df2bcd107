"""Sealed objects for an encrypted remote: only ciphertext leaves the machine (ADR 0057).

One repository key (32 random bytes, shared out of band) gives two keys by BLAKE3's key
derivation: one names objects (the keyed BLAKE3 of an id, so names reveal no content
id and the same id always has the same name: uploads stay idempotent), one seals them
with XChaCha20-Poly1305 (libsodium, through pynacl), a fresh random 24-byte nonce per
object. The associated data binds each sealed blob to what it is (the object id, or
the ref's name), so a blob moved to another name fails to open. The id is still
verified after opening, as for any fetched object.

Sealed blob: b"HXE" + version(1) + nonce(24) + ciphertext (+ 16-byte tag).
"""

from __future__ import annotations

import blake3
import nacl.bindings
import nacl.exceptions
import nacl.utils

from helixfs.errors import CorruptObject, InvalidInput, UnsupportedVersion
from helixfs.ids import ObjectId

KEY_SIZE = 32
MAGIC, VERSION = b"HXE", 1
NONCE_SIZE = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
_NAMES_CONTEXT = "helixfs remote 2026-12 object names"
_SEAL_CONTEXT = "helixfs remote 2026-12 object sealing"


def new_key() -> bytes:
    return nacl.utils.random(KEY_SIZE)


def parse_key(text: str) -> bytes:
    """A key as `helix remote key export` prints it (64 hex digits)."""
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) != KEY_SIZE:
        raise InvalidInput(f"a remote key is {KEY_SIZE * 2} hex digits (helix remote key export)")
    return key


class Sealed:
    """The Sealer of store/s3.py for one repository key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise InvalidInput(f"a remote key is {KEY_SIZE} bytes")
        self._names = blake3.blake3(key, derive_key_context=_NAMES_CONTEXT).digest()
        self._seal = blake3.blake3(key, derive_key_context=_SEAL_CONTEXT).digest()

    def object_name(self, oid: ObjectId) -> str:
        return str(blake3.blake3(oid, key=self._names).hexdigest())

    def seal(self, data: bytes, bound_to: bytes) -> bytes:
        nonce = nacl.utils.random(NONCE_SIZE)
        sealed = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
            data, bound_to, nonce, self._seal
        )
        return MAGIC + bytes((VERSION,)) + nonce + sealed

    def unseal(self, what: str, blob: bytes, bound_to: bytes) -> bytes:
        if blob[:3] != MAGIC or len(blob) < 4 + NONCE_SIZE:
            raise CorruptObject(f"{what} on the remote is not sealed: refused")
        if blob[3] != VERSION:
            raise UnsupportedVersion(f"{what} is sealed by a newer HelixFS: upgrade to read it")
        nonce, sealed = blob[4 : 4 + NONCE_SIZE], blob[4 + NONCE_SIZE :]
        try:
            opened: bytes = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
                sealed, bound_to, nonce, self._seal
            )
        except nacl.exceptions.CryptoError:
            raise CorruptObject(
                f"{what} on the remote fails authentication: damaged, or sealed with "
                "another key (helix remote key import)"
            ) from None
        return opened
