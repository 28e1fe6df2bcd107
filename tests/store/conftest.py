"""The `backend` fixture: every contract test runs once per ObjectStore implementation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_backends import Backend, memory_backend, rocks_backend


@pytest.fixture(params=["memory", "rocks"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "memory":
        yield from memory_backend()
    else:
        yield from rocks_backend(tmp_path / "store")
