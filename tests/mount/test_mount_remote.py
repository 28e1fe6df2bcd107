"""`helix mount --remote`: two machines (two stores, two daemons) on one S3 server.

The server is this test's own (tests/seaweed.py), so that it can be killed: the mounts
work on offline and catch up when it is back.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_harness import Mount, MountFactory, helix, wait_until
from seaweed import ACCESS_KEY, SECRET_KEY, SeaweedServer, serving

WAIT = 90.0  # seconds a change may take to cross, on a loaded machine


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SeaweedServer]:
    with serving(tmp_path / "seaweed") as started:
        yield started


def two_machines(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> tuple[Mount, Mount]:
    url = f"s3://{server.bucket}/{uuid.uuid4().hex[:8]}"
    first = tmp_path / "alpha-store"
    helix("init", first)
    helix("--store", first, "remote", "add", "origin", url, "--endpoint", server.endpoint)
    helix("--store", first, "push")
    second = tmp_path / "beta-store"
    helix("clone", url, second, "--endpoint", server.endpoint)
    mounts = []
    for store, host in ((first, "alpha"), (second, "beta")):
        env = {**os.environ, "HELIX_HOST": host}
        mounts.append(make_mount(0, "--remote", "origin", store=store, env=env))
    return mounts[0], mounts[1]


def test_commits_cross_between_mounts_and_survive_an_outage(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    alpha, beta = two_machines(make_mount, tmp_path, server)
    (alpha.path / "hello.txt").write_text("from alpha\n")
    wait_until(lambda: (beta.path / "hello.txt").exists(), WAIT, "alpha's file on beta")
    assert (beta.path / "hello.txt").read_text() == "from alpha\n"
    (beta.path / ".helix" / "branches" / "topic").mkdir()
    (beta.path / ".helix" / "branches" / "topic" / "t.txt").write_text("topic\n")
    topic = alpha.path / ".helix" / "branches" / "topic" / "t.txt"
    wait_until(topic.exists, WAIT, "beta's branch on alpha")
    _memory_crosses(alpha, beta)

    server.kill()  # offline: saves still work, and are committed locally
    (alpha.path / "offline.txt").write_text("written offline\n")
    assert any("offline.txt" in str(c) for c in alpha.log(limit=3))
    # beta changes the same branch meanwhile, another file: merged in on both sides
    (beta.path / "beta-offline.txt").write_text("beta, offline too\n")
    server.start()
    wait_until(lambda: (beta.path / "offline.txt").exists(), WAIT, "the offline save on beta")
    assert (beta.path / "offline.txt").read_text() == "written offline\n"
    merged = alpha.path / "beta-offline.txt"
    wait_until(merged.exists, WAIT, "beta's offline save merged into alpha's main")
    assert merged.read_text() == "beta, offline too\n"
    assert (alpha.path / "hello.txt").read_text() == "from alpha\n"
    _no_credentials_in_logs_or_stores(alpha, beta)


def _no_credentials_in_logs_or_stores(*mounts: Mount) -> None:
    """What the daemons said (their syncers' rounds) and every file of their stores
    hold neither the access key nor the secret (issue 31)."""
    for mount in mounts:
        mount.stop()
        said = "".join(mount.output)
        assert "remote origin: main" in said  # the syncer's log was read
        assert SECRET_KEY not in said and ACCESS_KEY not in said
        for path in mount.store.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert SECRET_KEY.encode() not in data and ACCESS_KEY.encode() not in data, path


def _memory_crosses(alpha: Mount, beta: Mount) -> None:
    """A memory alpha's daemon learns reaches beta's through the syncers, once beta
    trusts alpha's key (ADR 0065)."""
    key = json.loads(alpha.helix("remote", "keys", "--json").stdout)["own"]
    beta.helix("remote", "trust", key)
    alpha.helix("remember", "The nightly job runs at 02:00 UTC")

    def arrived() -> bool:
        return "02:00" in beta.helix("recall", "when does the nightly job run").stdout

    wait_until(arrived, WAIT, "alpha's memory on beta")


def test_a_conflict_from_elsewhere_is_kept_apart_and_reported(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    alpha, beta = two_machines(make_mount, tmp_path, server)
    (alpha.path / "shared.txt").write_text("base\n")
    wait_until(lambda: (beta.path / "shared.txt").exists(), WAIT, "the base on beta")
    server.kill()  # both edit the same line while apart
    (alpha.path / "shared.txt").write_text("alpha's version\n")
    (beta.path / "shared.txt").write_text("beta's version\n")
    server.start()

    def reported() -> bool:
        return any(
            (m.path / ".helix" / "log").read_text().startswith("! remote origin: main conflicts")
            for m in (alpha, beta)
        )

    wait_until(reported, WAIT, "the conflict reported in .helix/log")
    # each machine still has its own version; the remote holds both
    assert (alpha.path / "shared.txt").read_text() == "alpha's version\n"
    assert (beta.path / "shared.txt").read_text() == "beta's version\n"
    branches = set(os.listdir(alpha.path / ".helix" / "branches")) | set(
        os.listdir(beta.path / ".helix" / "branches")
    )
    assert branches & {"main@alpha", "main@beta"}


ROUNDS = 100  # saves into main on each machine, as issue 31's race asks


def _names_seen(mount: Mount) -> set[str]:
    """The files of main here, and of every main@HOST a lost race kept apart."""
    seen = {p.name for p in mount.path.iterdir()}
    for kept in (mount.path / ".helix" / "branches").glob("main@*"):
        seen |= {p.name for p in kept.iterdir()}
    return seen


def test_two_mounts_saving_into_one_branch_lose_no_save(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    """Two daemons, each saving ROUNDS files into the same branch while both push it:
    every save ends on both machines, merged into main or kept as main@HOST; fsck clean."""
    alpha, beta = two_machines(make_mount, tmp_path, server)
    wanted = set()
    for i in range(ROUNDS):
        for mount, host in ((alpha, "alpha"), (beta, "beta")):
            name = f"{host}-{i}.txt"
            (mount.path / name).write_text(f"{host} {i}\n")
            wanted.add(name)
    for mount in (alpha, beta):
        wait_until(lambda m=mount: wanted <= _names_seen(m), WAIT * 2, "every save on both")
        checked = json.loads(mount.helix("fsck", "--json").stdout)
        assert checked["problems"] == [], checked
    merges = [c for c in alpha.log() + beta.log() if len(c.get("parents", ())) > 1]
    assert merges  # the two raced: main was merged, not only fast-forwarded


SAVES = 150  # a run of saves the background push has not caught up with at umount


def _saving_mount(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> tuple[Mount, str]:
    url = f"s3://{server.bucket}/{uuid.uuid4().hex[:8]}"
    store = tmp_path / "alpha-store"
    helix("init", store)
    helix("--store", store, "remote", "add", "origin", url, "--endpoint", server.endpoint)
    helix("--store", store, "push")
    mount = make_mount(0, "--remote", "origin", store=store)
    (mount.path / "run").mkdir()
    for i in range(SAVES):
        (mount.path / "run" / f"f{i}.txt").write_text(f"save {i}\n")
    return mount, url


def _remote_holds(tmp_path: Path, url: str, server: SeaweedServer, store: Path) -> None:
    """A fresh clone of the remote has the store's main, with every save in it."""
    clone = tmp_path / f"check-{uuid.uuid4().hex[:6]}"
    helix("clone", url, clone, "--endpoint", server.endpoint)
    heads = [helix("--store", s, "log", "main", "-n", "1", "--json").stdout for s in (store, clone)]
    assert json.loads(heads[0])[0]["id"] == json.loads(heads[1])[0]["id"]
    names = [
        line.split()[-1]
        for line in helix("--store", clone, "ls", "main", "run").stdout.splitlines()
    ]
    assert sorted(names) == sorted(f"f{i}.txt" for i in range(SAVES))


def test_umount_waits_for_the_push_of_the_last_saves(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    """ADR 0082: the daemon's way out pushes what its rounds had not (none deferred),
    and `helix umount` waits for it (showing its progress): once it returns, the
    remote has every save."""
    mount, url = _saving_mount(make_mount, tmp_path, server)
    done = helix("umount", mount.path)
    assert "unmounted" in done.stdout
    _remote_holds(tmp_path, url, server, mount.store)
    mount.stop()
    assert "Traceback" not in "".join(mount.output)


def test_a_final_push_cut_short_loses_nothing(
    make_mount: MountFactory, tmp_path: Path, server: SeaweedServer
) -> None:
    """The daemon killed (-9) on its way out, wherever its push was: every save is in
    the store, and the next `helix push` brings the remote up to it."""
    mount, url = _saving_mount(make_mount, tmp_path, server)
    subprocess.run(["fusermount3", "-u", str(mount.path)], check=True)
    assert mount.proc is not None
    mount.proc.kill()
    mount.proc.wait()
    helix("--store", mount.store, "push")
    assert json.loads(helix("--store", mount.store, "fsck", "--json").stdout)["problems"] == []
    _remote_holds(tmp_path, url, server, mount.store)
