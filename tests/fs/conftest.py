"""Fixtures for calling the Operations class directly: a real Repository on a real
RocksDB store in a tmp dir, no kernel, no mount. Async tests run under trio."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from fs_client import Client, make_ops

from helixfs.fs.operations import Operations
from helixfs.vcs.repo import Repository


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in this folder under trio (no pytest-trio needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    trio.run(functools.partial(pyfuncitem.obj, **kwargs))
    return True


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def repo(store: Path) -> Iterator[Repository]:
    repo = Repository.init(store)
    yield repo
    repo.close()


@pytest.fixture
def ops(repo: Repository) -> Iterator[Operations]:
    ops = make_ops(repo)
    yield ops
    ops.close()


@pytest.fixture
def client(ops: Operations) -> Client:
    return Client(ops)
