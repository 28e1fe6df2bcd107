"""The `backend` fixture: every contract test runs once per ObjectStore implementation."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_backends import Backend, memory_backend, rocks_backend, s3_backend


@pytest.fixture(params=["memory", "rocks", "s3", "s3-sealed"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "memory":
        yield from memory_backend()
    elif request.param == "rocks":
        yield from rocks_backend(tmp_path / "store")
    else:  # a real S3 server (SeaweedFS), one prefix per test; plain or encrypted
        server = request.getfixturevalue("s3_server")
        prefix = f"contract/{uuid.uuid4().hex}"
        yield from s3_backend(server.endpoint, prefix, sealed=request.param == "s3-sealed")
