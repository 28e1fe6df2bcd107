"""Fixtures of the remote tests: a fresh prefix of the session's SeaweedFS per test, and
stores with that remote added (the CLI in a subprocess, as a user runs it)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli.conftest import Result, ok, run_helix
from seaweed import SeaweedServer

from helixfs.store.s3 import S3Store
from helixfs.store.s3client import S3Location


@dataclass
class Place:
    """One remote (bucket prefix) of one server, and how to reach it."""

    server: SeaweedServer
    prefix: str

    @property
    def url(self) -> str:
        return f"s3://{self.server.bucket}/{self.prefix}"

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

    def store(self) -> S3Store:
        """The remote itself, read behind the CLI's back (close it)."""
        return S3Store(S3Location(self.server.bucket, self.prefix, self.endpoint))

    def keys(self) -> list[str]:
        with self.store() as remote:
            return [key for key, _ in remote._client.listing("")]


@pytest.fixture
def place(s3_server: SeaweedServer) -> Place:
    return Place(s3_server, f"t/{uuid.uuid4().hex[:12]}")


Helix = Callable[..., Result]


def helix_on(store: Path, **env: str) -> Helix:
    """`helix(...)` against `store`, as machine HELIX_HOST=env['host'] if given."""
    extra = {"HELIX_HOST": env.pop("host")} if "host" in env else {}

    def call(*args: str | Path, **kwargs: Any) -> Result:
        kwargs.setdefault("env", {}).update(extra)
        return run_helix(*args, store=store, **kwargs)

    return call


def new_store(folder: Path, place: Place, *extra: str, host: str = "alpha") -> Helix:
    """A new store with `place` added as origin."""
    ok(run_helix("init", store=folder))
    helix = helix_on(folder, host=host)
    ok(helix("remote", "add", "origin", place.url, "--endpoint", place.endpoint, *extra))
    return helix


def commit(helix: Helix, tmp: Path, path: str, text: str, *more: str) -> None:
    source = tmp / f"src-{uuid.uuid4().hex[:8]}"
    source.write_text(text)
    ok(helix("commit", "-m", f"write {path}", f"{path}={source}", *more))
