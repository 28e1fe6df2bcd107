"""Typed identifiers. An object id is the 32-byte BLAKE3 digest of its canonical record."""

from __future__ import annotations

from typing import NewType

import blake3

ObjectId = NewType("ObjectId", bytes)
CommitId = NewType("CommitId", bytes)
BranchName = NewType("BranchName", str)

ID_SIZE = 32


def object_id(record: bytes) -> ObjectId:
    return ObjectId(blake3.blake3(record).digest())


def hex_id(oid: bytes) -> str:
    return oid.hex()
