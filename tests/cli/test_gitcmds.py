"""show, revert, cherry-pick and blame through the real `helix` process (issue 33)."""

from __future__ import annotations

import random
from pathlib import Path

from .conftest import Helix, fails, ok, store_state


def _repo(store: Path):  # type: ignore[no-untyped-def]
    from helixfs.vcs.repo import Repository

    return Repository.open(store)


def test_show_gives_message_meta_processes_and_diff(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        repo.commit({"a.txt": b"a\nb\n"}, "first")
        saved = {"process": "vim", "pid": 42, "experiment": "x1"}
        cid = repo.commit({"a.txt": b"a\nB\n", "new.txt": b"n\n"}, "second\n\nbody", saved)
    doc = ok(helix("show", "--json")).json()
    assert doc["id"] == cid.hex() and doc["message"] == "second\n\nbody"
    assert doc["meta"]["experiment"] == "x1"
    assert doc["processes"] == [{"process": "vim", "pid": 42}]
    assert sorted((c["status"], c["path"]) for c in doc["changes"]) == [
        ("A", "new.txt"),
        ("M", "a.txt"),
    ]
    assert "-b\n+B\n" in doc["text"]
    human = ok(helix("show")).out
    assert f"commit {cid.hex()}" in human and "[vim 42]" in human
    assert "Meta:   experiment=x1" in human and "    body" in human and "+B" in human
    first = ok(helix("show", "HEAD~1", "--name-status")).out
    assert "first" in first and "A\ta.txt" in first and "diff" not in first
    root = ok(helix("show", "--json", "HEAD~2")).json()  # the root: against nothing
    assert root["message"] == "init" and root["changes"] == []


def test_revert_undoes_one_commit_and_keeps_later_ones(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        repo.commit({"f.txt": b"1\n2\n3\n4\n5\n6\n7\n"}, "base")
        bad = repo.commit({"f.txt": b"1\nBAD\n3\n4\n5\n6\n7\n"}, "bad edit")
        repo.commit({"f.txt": b"1\nBAD\n3\n4\n5\n6\nlater\n", "g.txt": b"g\n"}, "later")
    doc = ok(helix("revert", "--json", bad.hex()[:10])).json()
    assert doc["status"] == "applied" and doc["source"] == bad.hex() and doc["branch"] == "main"
    assert ok(helix("cat", "HEAD", "f.txt")).out == "1\n2\n3\n4\n5\n6\nlater\n"
    assert ok(helix("cat", "HEAD", "g.txt")).out == "g\n"
    shown = ok(helix("show", "--json")).json()
    assert shown["message"] == 'revert "bad edit"' and shown["meta"]["reverts"] == bad.hex()
    assert len(shown["parents"]) == 1 and shown["meta"]["changed"] == ["f.txt"]
    again = ok(helix("revert", "--json", bad.hex())).json()  # already undone: no commit
    assert again["status"] == "empty" and again["commit"] == doc["commit"]


def test_revert_conflict_names_the_paths_and_changes_nothing(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        repo.commit({"f.txt": b"one\n", "keep.txt": b"k\n"}, "base")
        edit = repo.commit({"f.txt": b"two\n", "keep.txt": b"k2\n"}, "edit")
        repo.commit({"f.txt": b"three\n"}, "edit again")
    before = store_state(store)
    result = helix("revert", edit.hex())
    assert result.code == 1 and "conflict: f.txt" in result.out
    assert "nothing was changed" in result.err and "f.txt" in result.err
    doc = helix("revert", "--json", edit.hex()).json()
    assert doc["status"] == "conflicts" and doc["conflicts"] == ["f.txt"]
    assert store_state(store) == before


def test_cherry_pick_applies_another_branchs_commit(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        repo.commit({"f.txt": b"1\n2\n3\n4\n5\n"}, "base")
        repo.create_branch("feat")
        repo.commit({"f.txt": b"1\n2\n3\n4\nFIVE\n"}, "feat: noise", branch="feat")
        fix = repo.commit({"f.txt": b"ONE\n2\n3\n4\nFIVE\n"}, "feat: fix line 1", branch="feat")
        repo.commit({"f.txt": b"1\n2\nTHREE\n4\n5\n"}, "main edit")
    doc = ok(helix("cherry-pick", "--json", "feat")).json()
    assert doc["status"] == "applied" and doc["source"] == fix.hex()
    assert ok(helix("cat", "HEAD", "f.txt")).out == "ONE\n2\nTHREE\n4\n5\n"  # not FIVE
    shown = ok(helix("show", "--json")).json()
    assert shown["message"] == "feat: fix line 1" and shown["meta"]["picked"] == fix.hex()
    human = ok(helix("cherry-pick", "feat~1", "-m", "take five")).out
    assert human.startswith("picked ") and "on main" in human
    assert ok(helix("log", "--json", "-n", "1")).json()[0]["message"] == "take five"


def test_revert_and_pick_refuse_bad_input_changing_nothing(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        repo.commit({"f.txt": b"1\n"}, "base")
        repo.create_branch("feat")
        repo.commit({"g.txt": b"g\n"}, "on feat", branch="feat")
        repo.commit({"h.txt": b"h\n"}, "on main")
        repo.merge("feat")
    before = store_state(store)
    fails(helix("revert", "nosuch"), says="unknown revision")
    fails(helix("cherry-pick", "nosuch"), says="unknown revision")
    fails(helix("revert", "HEAD"), says="merge commit")
    fails(helix("show", "nosuch"), says="unknown revision")
    fails(helix("revert"), code=2)
    assert store_state(store) == before


def test_blame_names_the_commit_and_process_of_each_line(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        first = repo.commit({"f.py": b"a\nb\nc\n"}, "first", {"process": "claude", "pid": 7})
        second = repo.commit({"f.py": b"a\nB\nc\nd\n"}, "second", {"process": "vim", "pid": 9})
        repo.commit({"other": b"x\n"}, "elsewhere")
    doc = ok(helix("blame", "--json", "f.py")).json()
    assert [(x["line"], x["text"]) for x in doc["lines"]] == [
        (1, "a"),
        (2, "B"),
        (3, "c"),
        (4, "d"),
    ]
    owners = [x["commit"] for x in doc["lines"]]
    assert owners == [first.hex(), second.hex(), first.hex(), second.hex()]
    assert doc["commits"][first.hex()]["processes"] == [{"process": "claude", "pid": 7}]
    assert doc["commits"][second.hex()]["subject"] == "second"
    human = ok(helix("blame", "f.py")).out.splitlines()
    assert human[0].startswith(first.hex()[:12]) and "[claude 7]" in human[0]
    assert human[1].endswith("2) B") and "[vim 9]" in human[1]
    old = ok(helix("blame", "--json", "f.py", "--rev", first.hex())).json()
    assert [x["commit"] for x in old["lines"]] == [first.hex()] * 3


def test_blame_refuses_what_it_cannot_blame(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        repo.commit({"bin": b"\0\1\2", "d/f": b"x\n"}, "base")
    fails(helix("blame", "missing"), says="missing is not in commit")
    fails(helix("blame", "bin"), says="binary")
    fails(helix("blame", "d"), says="folder")
    fails(helix("blame", "d/f", "--rev", "nosuch"), says="unknown revision")


def test_blame_follows_many_random_edits(store: Path) -> None:
    """Against the owners the test itself tracks while editing (every line unique, so
    the line diff has one right answer)."""
    from helixfs.vcs.blame import blame

    rng = random.Random(33)
    lines = [f"line {i}\n".encode() for i in range(60)]
    with _repo(store) as repo:
        owners = [repo.commit({"f": b"".join(lines)}, "start")] * len(lines)
        for step in range(80):
            at = rng.randrange(len(lines))
            kind = rng.choice(("edit", "insert", "delete"))
            new = f"step {step}\n".encode()
            if kind == "delete" and len(lines) > 5:
                del lines[at]
                del owners[at]
                cid = repo.commit({"f": b"".join(lines)}, f"delete {step}")
                continue
            if kind == "edit":
                lines[at] = new
            else:
                lines.insert(at, new)
                owners.insert(at, owners[0])
            cid = repo.commit({"f": b"".join(lines)}, f"{kind} {step}")
            owners[at] = cid
            if step % 10 == 0:
                repo.commit({"unrelated": new}, "noise")
        got = blame(repo, repo.resolve("HEAD"), b"f")
    assert [b.text for b in got] == lines
    assert [b.commit for b in got] == owners


def test_status_without_a_mount_names_the_branch_and_commit(helix: Helix, store: Path) -> None:
    with _repo(store) as repo:
        cid = repo.commit({"f": b"x\n"}, "the subject\n\nbody")
        repo.create_branch("feat")
    doc = ok(helix("status", "--json")).json()
    assert doc == {
        "branch": "main",
        "commit": cid.hex(),
        "subject": "the subject",
        "mounted": False,
        "pending": False,
        "pending_paths": [],
        "ignored": [],
        "experiment": None,
        "remotes": [],
    }
    human = ok(helix("status")).out
    assert f"on branch main at {cid.hex()[:12]}" in human and "no mount" in human
    ok(helix("checkout", "feat"))
    assert ok(helix("status", "--json")).json()["branch"] == "feat"


def test_blame_after_a_big_rewrite_takes_the_merges_diff(store: Path) -> None:
    """More changed lines than the Myers walk takes (blame.NEAR): the anchored diff."""
    from helixfs.vcs.blame import NEAR, blame

    old = [f"old {n}\n".encode() for n in range(100)]
    new = old[:10] + [f"new {n}\n".encode() for n in range(NEAR + 8)] + old[60:]
    with _repo(store) as repo:
        first = repo.commit({"f": b"".join(old)}, "first")
        second = repo.commit({"f": b"".join(new)}, "rewrite")
        got = blame(repo, second, b"f")
    expected = [first] * 10 + [second] * (NEAR + 8) + [first] * 40
    assert [b.commit for b in got] == expected and [b.text for b in got] == new
