"""helix remote / clone / push / fetch / pull against a real S3 server (SeaweedFS)."""

from __future__ import annotations

import json
from pathlib import Path

from cli.conftest import fails, ok, run_helix, store_state
from seaweed import ACCESS_KEY, SECRET_KEY

from .conftest import Place, commit, helix_on, new_store


def log_ids(helix_result: str) -> list[str]:
    return [c["id"] for c in json.loads(helix_result)]


def branches(refs: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    return [(name, value) for name, value in refs if not name.startswith("remotes/")]


def test_remote_add_list_remove(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place, "--region", "eu-west-3")
    listed = ok(helix("remote", "list", "--json")).json()["remotes"]
    assert listed == [
        {
            "name": "origin",
            "url": place.url,
            "endpoint": place.endpoint,
            "region": "eu-west-3",
            "encrypt": False,
            "lazy": False,
        }
    ]
    fails(helix("remote", "add", "origin", place.url), says="exists")
    ok(helix("remote", "remove", "origin"))
    assert ok(helix("remote", "list", "--json")).json()["remotes"] == []
    fails(helix("remote", "remove", "origin"), says="no remote named")


def test_bad_locations_are_refused_and_change_nothing(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    before = (tmp_path / "a" / "remotes.json").read_text()
    for args in (
        ("other", "http://bucket/x"),
        ("other", "s3://Bad_Bucket/x"),
        ("other", "s3://bucket/x", "--endpoint", "http://user:secret@127.0.0.1:9000"),
        ("bad/name", "s3://bucket/x"),
    ):
        result = fails(helix("remote", "add", *args))
        assert "secret" not in result.err
    assert (tmp_path / "a" / "remotes.json").read_text() == before


def test_push_then_clone_has_the_same_history(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    commit(helix, tmp_path, "src/app.py", "print('hello')\n")
    commit(helix, tmp_path, "README.md", "# demo\n")
    ok(helix("branch", "feature"))
    commit(helix, tmp_path, "big.bin", "x" * 300_000, "--branch", "feature")
    pushed = ok(helix("push", "origin", "main", "feature", "--json")).json()
    assert [b["status"] for b in pushed["branches"]] == ["created", "created"]
    clone = tmp_path / "b"
    ok(run_helix("clone", place.url, clone, "--endpoint", place.endpoint, store=None))
    other = helix_on(clone)
    for rev in ("main", "feature"):
        mine = log_ids(ok(helix("log", rev, "--json")).out)
        theirs = log_ids(ok(other("log", rev, "--json")).out)
        assert mine == theirs
    assert ok(other("cat", "feature", "big.bin")).out == "x" * 300_000
    assert ok(other("fsck", "--json")).json()["problems"] == []
    assert ok(other("remote", "list", "--json")).json()["remotes"][0]["url"] == place.url


def test_a_second_push_sends_only_new_objects(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    for i in range(5):
        commit(helix, tmp_path, f"f{i}.txt", f"file {i}\n" * 100)
    first = ok(helix("push", "--json")).json()["branches"][0]
    assert first["objects"] >= 6
    again = ok(helix("push", "--json")).json()["branches"][0]
    assert again["status"] == "up-to-date" and again["objects"] == 0
    commit(helix, tmp_path, "f0.txt", "changed\n")
    third = ok(helix("push", "--json")).json()["branches"][0]
    # the new commit, its root tree and the one new blob
    assert third["status"] == "pushed" and third["objects"] == 3


def test_a_remote_added_again_elsewhere_gets_every_object(tmp_path: Path, place: Place) -> None:
    """Tracking refs speak of the remote that was removed, never of its successor."""
    helix = new_store(tmp_path / "a", place)
    commit(helix, tmp_path, "a.txt", "a\n")
    ok(helix("push"))
    ok(helix("remote", "remove", "origin"))
    elsewhere = Place(place.server, place.prefix + "-again")
    ok(helix("remote", "add", "origin", elsewhere.url, "--endpoint", elsewhere.endpoint))
    assert ok(helix("push", "--json")).json()["branches"][0]["objects"] >= 3
    clone = tmp_path / "b"
    ok(run_helix("clone", elsewhere.url, clone, "--endpoint", elsewhere.endpoint, store=None))
    assert ok(helix_on(clone)("cat", "main", "a.txt")).out == "a\n"


def test_a_push_over_a_moved_ref_is_refused_then_merged(tmp_path: Path, place: Place) -> None:
    alpha = new_store(tmp_path / "a", place, host="alpha")
    commit(alpha, tmp_path, "shared.txt", "base\n")
    ok(alpha("push"))
    ok(run_helix("clone", place.url, tmp_path / "b", "--endpoint", place.endpoint, store=None))
    beta = helix_on(tmp_path / "b", host="beta")
    commit(beta, tmp_path, "beta.txt", "from beta\n")
    ok(beta("push"))
    commit(alpha, tmp_path, "alpha.txt", "from alpha\n")
    with place.store() as remote:
        before = remote.ref("branches/main")
    fails(alpha("push"), says="not merged")
    with place.store() as remote:
        assert remote.ref("branches/main") == before
    merged = ok(alpha("push", "--merge", "--json")).json()["branches"][0]
    assert merged["status"] == "merged"
    pulled = ok(beta("pull", "--json")).json()["branches"]
    assert [b["status"] for b in pulled] == ["fast-forward"]
    for name in ("alpha.txt", "beta.txt", "shared.txt"):
        assert ok(beta("cat", "main", name)).out == ok(alpha("cat", "main", name)).out


def test_a_conflicting_merge_changes_nothing_remote_or_keeps_ours_apart(
    tmp_path: Path, place: Place
) -> None:
    alpha = new_store(tmp_path / "a", place, host="alpha")
    commit(alpha, tmp_path, "shared.txt", "base\n")
    ok(alpha("push"))
    ok(run_helix("clone", place.url, tmp_path / "b", "--endpoint", place.endpoint, store=None))
    beta = helix_on(tmp_path / "b", host="beta")
    commit(beta, tmp_path, "shared.txt", "beta's line\n")
    ok(beta("push"))
    commit(alpha, tmp_path, "shared.txt", "alpha's line\n")
    with place.store() as remote:
        before = dict(remote.refs())
    local_before = store_state(tmp_path / "a")
    fails(alpha("push", "--merge"), says="conflicts")
    with place.store() as remote:
        assert dict(remote.refs()) == before
    # the branches are as they were (the tracking ref learnt where the remote is)
    assert branches(store_state(tmp_path / "a")[0]) == branches(local_before[0])
    kept = ok(alpha("push", "--merge", "--keep", "--json")).json()["branches"][0]
    assert kept["status"] == "kept" and kept["kept_as"] == "main@alpha"
    fetched = {b["branch"]: b["status"] for b in ok(beta("fetch", "--json")).json()["branches"]}
    assert fetched == {"main": "up-to-date", "main@alpha": "new"}
    assert ok(beta("cat", "main@alpha", "shared.txt")).out == "alpha's line\n"


def test_fetch_brings_new_branches_and_pull_merges(tmp_path: Path, place: Place) -> None:
    alpha = new_store(tmp_path / "a", place, host="alpha")
    commit(alpha, tmp_path, "a.txt", "a\n")
    ok(alpha("push"))
    ok(run_helix("clone", place.url, tmp_path / "b", "--endpoint", place.endpoint, store=None))
    beta = helix_on(tmp_path / "b", host="beta")
    ok(beta("branch", "topic"))
    commit(beta, tmp_path, "t.txt", "topic\n", "--branch", "topic")
    commit(beta, tmp_path, "b.txt", "b\n")
    ok(beta("push", "origin", "main", "topic"))
    commit(alpha, tmp_path, "c.txt", "c\n")
    assert "1 commit(s) ahead of origin/main" in ok(alpha("status")).out  # as last pushed
    fetched = {b["branch"]: b["status"] for b in ok(alpha("fetch", "--json")).json()["branches"]}
    assert fetched == {"main": "diverged", "topic": "new"}
    (tracked,) = ok(alpha("status", "--json")).json()["remotes"]
    assert (tracked["remote"], tracked["ahead"], tracked["behind"]) == ("origin", 1, 1)
    assert "diverged from origin/main" in ok(alpha("status")).out
    assert ok(alpha("cat", "topic", "t.txt")).out == "topic\n"
    pulled = {b["branch"]: b["status"] for b in ok(alpha("pull", "--json")).json()["branches"]}
    assert pulled["main"] == "merged"
    assert ok(alpha("cat", "main", "b.txt")).out == "b\n"
    assert ok(alpha("fsck", "--json")).json()["problems"] == []


def test_wrong_credentials_say_so_and_change_nothing(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    commit(helix, tmp_path, "a.txt", "a\n")
    before = store_state(tmp_path / "a")
    wrong = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": "not-the-secret-9876"}
    for args in (("push",), ("fetch",), ("push", "--json")):
        result = fails(helix(*args, env=dict(wrong)), says="credentials")
        assert "not-the-secret-9876" not in result.err + result.out
        assert SECRET_KEY not in result.err + result.out
    assert store_state(tmp_path / "a") == before
    assert place.keys() == []
    clone = tmp_path / "b"
    fails(
        run_helix(
            "clone", place.url, clone, "--endpoint", place.endpoint, store=None, env=dict(wrong)
        ),
        says="credentials",
    )
    assert not clone.exists()


def test_no_credentials_reach_the_store_or_its_output(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    commit(helix, tmp_path, "a.txt", "a\n")
    outputs = [ok(helix("push", "--json")).out, ok(helix("remote", "list", "--json")).out]
    outputs.append(ok(helix("fetch", "--json")).out)
    for path in (tmp_path / "a").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET_KEY.encode() not in data and ACCESS_KEY.encode() not in data, path
    for text in outputs:
        assert SECRET_KEY not in text and ACCESS_KEY not in text


def test_an_object_corrupted_on_the_server_is_refused(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    commit(helix, tmp_path, "precious.txt", "precious words\n" * 50)
    ok(helix("push"))
    entries = ok(helix("ls", "main", "--json")).json()
    oid = next(e["id"] for e in entries if e["name"] == "precious.txt")
    with place.store() as remote:
        key = f"objects/{oid}"
        frame = remote._client.get(key)
        assert frame is not None
        remote._client.raw_put(key, frame[:-1] + bytes([frame[-1] ^ 0x55]))
    clone = tmp_path / "b"
    fails(
        run_helix("clone", place.url, clone, "--endpoint", place.endpoint, store=None),
        says="corrupt",
    )
    assert not clone.exists()
    # the machine that has the good copy is unharmed, and fsck says so
    assert ok(helix("fsck", "--json")).json()["problems"] == []


def test_credentials_come_from_a_credentials_file_or_say_where_to_put_them(
    tmp_path: Path, place: Place
) -> None:
    helix = new_store(tmp_path / "a", place)
    commit(helix, tmp_path, "a.txt", "a\n")
    profile = tmp_path / "aws" / "credentials"
    profile.parent.mkdir()
    profile.write_text(
        f"[helix]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    )
    none_in_env = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    from_file = {**none_in_env, "AWS_SHARED_CREDENTIALS_FILE": str(profile)}
    before = store_state(tmp_path / "a")
    missing = fails(helix("push", env=dict(none_in_env)), says="no AWS credentials")
    assert "~/.aws/credentials" in missing.err
    assert store_state(tmp_path / "a") == before and place.keys() == []
    pushed = ok(helix("push", "--json", env={**from_file, "AWS_PROFILE": "helix"}))
    assert pushed.json()["branches"][0]["status"] == "created"
    assert SECRET_KEY not in pushed.out + pushed.err
    assert SECRET_KEY.encode() not in b"".join(
        p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()
    )


def test_pull_of_named_branches_moves_only_those(tmp_path: Path, place: Place) -> None:
    alpha = new_store(tmp_path / "a", place, host="alpha")
    commit(alpha, tmp_path, "a.txt", "a\n")
    ok(alpha("branch", "topic"))
    ok(alpha("push", "origin", "main", "topic"))
    ok(run_helix("clone", place.url, tmp_path / "b", "--endpoint", place.endpoint, store=None))
    beta = helix_on(tmp_path / "b", host="beta")
    commit(beta, tmp_path, "t.txt", "topic\n", "--branch", "topic")
    commit(beta, tmp_path, "b.txt", "b\n")
    ok(beta("push", "origin", "main", "topic"))
    main_before = ok(alpha("log", "main", "--json")).json()
    pulled = ok(alpha("pull", "origin", "topic", "--json")).json()["branches"]
    assert [b["branch"] for b in pulled] == ["topic"]
    assert ok(alpha("cat", "topic", "t.txt")).out == "topic\n"
    assert ok(alpha("log", "main", "--json")).json() == main_before  # not named: unmoved
    before = store_state(tmp_path / "a")
    fails(alpha("pull", "origin", "no-such-branch"), says="no-such-branch")
    assert store_state(tmp_path / "a") == before
