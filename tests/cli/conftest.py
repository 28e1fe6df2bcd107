"""Helpers for the CLI tests: run `helix` in a subprocess against a store in a tmp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Result:
    code: int
    out: str
    err: str
    raw: bytes

    def json(self) -> Any:
        return json.loads(self.out)


Helix = Callable[..., Result]


def run_helix(
    *args: str | os.PathLike[str],
    store: Path | None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    home: Path | None = None,
) -> Result:
    full_env = {k: v for k, v in os.environ.items() if k != "HELIX_STORE"}
    full_env["HELIX_AUTHOR"] = "tester"
    if home is not None:
        full_env["HOME"] = str(home)
    full_env.update(env or {})
    argv = [sys.executable, "-m", "helixfs.cli.main"]
    if store is not None:
        argv += ["--store", str(store)]
    argv += [os.fspath(a) for a in args]
    proc = subprocess.run(argv, capture_output=True, cwd=cwd, env=full_env, timeout=120)
    return Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "surrogateescape"),
        proc.stderr.decode("utf-8", "replace"),
        proc.stdout,
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    result = run_helix("init", store=path)
    assert result.code == 0, result.err
    return path


@pytest.fixture
def helix(store: Path, tmp_path: Path) -> Helix:
    """`helix(...)` against the fixture store, from tmp_path; asserts nothing itself."""

    def call(*args: str | os.PathLike[str], **kwargs: Any) -> Result:
        kwargs.setdefault("cwd", tmp_path)
        return run_helix(*args, store=store, **kwargs)

    return call


def ok(result: Result) -> Result:
    assert result.code == 0, f"exit {result.code}\nstdout: {result.out}\nstderr: {result.err}"
    return result


def fails(result: Result, code: int = 1, *, says: str = "") -> Result:
    assert result.code == code, f"exit {result.code}, wanted {code}\nstderr: {result.err}"
    if code == 1:
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("helix: error: "), result.err
        assert "Traceback" not in result.err
    assert says.lower() in result.err.lower(), result.err
    return result


def make_tree(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def store_state(store: Path) -> tuple[list[tuple[str, bytes]], set[bytes]]:
    """Every ref and every object id: what "changes nothing" is checked against."""
    from helixfs.vcs.repo import Repository

    with Repository.open(store) as repo:
        return list(repo.store.refs()), set(repo.store.ids())
