"""Memory that follows the tree (ADR 0063): staleness of memories about files, renames
followed, branch-scoped memories, their merge and their archive on a branch's end.

The engine against a real Repository (on the in-memory object store) through the
BranchView that every surface hands it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from helixfs.errors import InvalidInput
from helixfs.memory import Memory, Source
from helixfs.memory.tree import STALE_WEIGHT
from helixfs.store.memory import MemoryStore
from helixfs.vcs.repo import Repository
from helixfs.vcs.sourceview import BranchView

AUTH = b"def login(user):\n    return token(user)\n"


@pytest.fixture()
def repo() -> Iterator[Repository]:
    repository = Repository.create(MemoryStore())
    repository.commit({"src/auth.py": AUTH, "README": b"hello\n"}, "start")
    yield repository
    repository.close()


def _about_auth(mem: Memory, view: BranchView, text: str = "login returns a token") -> str:
    result = mem.remember(text, source=Source(agent="t", file="./src/auth.py", line=2), view=view)
    assert result.id is not None
    return result.id


def test_a_memory_records_its_files_blob_and_turns_stale_when_the_file_changes(
    repo: Repository, mem: Memory
) -> None:
    memory_id = _about_auth(mem, BranchView(repo, None))
    record = mem.get(memory_id)
    assert record.source.file == "src/auth.py"
    assert record.source.blob == repo.entry("HEAD", "src/auth.py").oid.hex()  # type: ignore[union-attr]

    fresh = mem.recall("login token", view=BranchView(repo, None))
    assert fresh[0].id == memory_id and fresh[0].stale is None

    changed = repo.commit({"src/auth.py": AUTH + b"# now cached\n"}, "cache tokens")
    view = BranchView(repo, None)
    hit = mem.recall("login token", view=view)[0]
    assert hit.stale is not None and hit.stale.how == "changed"
    assert hit.stale.commit == changed.hex()
    assert [r.id for r in mem.stale(view)] == [memory_id]
    assert "stale: src/auth.py changed" in mem.context(500, view=view).text

    mem.confirm(memory_id, view=view)
    assert mem.recall("login token", view=view)[0].stale is None
    assert mem.stale(view) == []
    assert mem.history(memory_id)[-1].op == "confirm"


def test_a_stale_memory_weighs_less_than_a_fresh_one(repo: Repository, mem: Memory) -> None:
    repo.commit({"src/other.py": b"x = 1\n"}, "other")
    view = BranchView(repo, None)
    mem.remember(
        "the refresh token is kept in redis", source=Source(file="src/other.py"), view=view
    )
    _about_auth(mem, view, "the login token is signed by hmac")
    before = {h.content: h.score for h in mem.recall("token", view=view, reinforce=False)}
    repo.commit({"src/auth.py": b"changed\n"}, "rewrite")
    after = {
        h.content: h.score
        for h in mem.recall("token", view=BranchView(repo, None), reinforce=False)
    }
    signed, kept = "the login token is signed by hmac", "the refresh token is kept in redis"
    assert after[kept] == pytest.approx(before[kept])
    assert after[signed] == pytest.approx(before[signed] * STALE_WEIGHT["changed"])


def test_a_deleted_file_makes_its_memory_say_so(repo: Repository, mem: Memory) -> None:
    memory_id = _about_auth(mem, BranchView(repo, None))
    gone = repo.commit({"src/auth.py": None}, "drop auth")
    (record,) = mem.stale(BranchView(repo, None))
    assert record.id == memory_id
    assert record.stale is not None and (record.stale.how, record.stale.commit) == (
        "deleted",
        gone.hex(),
    )


def test_a_renamed_file_is_followed(repo: Repository, mem: Memory) -> None:
    memory_id = _about_auth(mem, BranchView(repo, None))
    moved = repo.commit({"src/auth.py": None, "src/login.py": AUTH}, "rename auth")
    view = BranchView(repo, None)
    hit = mem.recall("login token", view=view)[0]
    assert hit.stale is not None
    assert (hit.stale.how, hit.stale.path, hit.stale.moved_from, hit.stale.commit) == (
        "renamed",
        "src/login.py",
        "src/auth.py",
        moved.hex(),
    )
    record = mem.get(memory_id)
    assert (record.source.file, record.source.moved_from) == ("src/login.py", "src/auth.py")
    assert mem.history(memory_id)[-1].op == "follow"
    assert [r.id for r in mem.about_files(["src/login.py"], view=view)] == [memory_id]
    mem.confirm(memory_id, view=view)
    assert mem.stale(view) == [] and mem.get(memory_id).source.moved_from is None


def test_a_rename_in_a_branch_moves_no_trunk_memory(repo: Repository, mem: Memory) -> None:
    memory_id = _about_auth(mem, BranchView(repo, None))
    repo.create_branch("moving")
    repo.commit({"src/auth.py": None, "src/login.py": AUTH}, "rename", branch="moving")
    hit = mem.recall("login token", view=BranchView(repo, "moving"))[0]
    assert hit.stale is not None and (hit.stale.how, hit.stale.path) == ("renamed", "src/login.py")
    assert mem.get(memory_id).source.file == "src/auth.py"  # the trunk still has it there
    assert mem.recall("login token", view=BranchView(repo, None))[0].stale is None


def test_an_update_from_the_same_file_makes_it_fresh(repo: Repository, mem: Memory) -> None:
    memory_id = _about_auth(mem, BranchView(repo, None))
    repo.commit({"src/auth.py": AUTH + b"# more\n"}, "edit")
    view = BranchView(repo, None)
    assert mem.stale(view)
    again = mem.remember(
        "login returns a token", source=Source(agent="t", file="src/auth.py"), view=view
    )
    assert (again.action, again.id) == ("noop", memory_id)
    assert mem.stale(view) == []


def test_new_text_from_a_person_is_about_the_file_as_it_is(repo: Repository, mem: Memory) -> None:
    memory_id = _about_auth(mem, BranchView(repo, None))
    repo.commit({"src/auth.py": AUTH + b"# cached\n"}, "cache")
    view = BranchView(repo, None)
    mem.edit(memory_id, type="gotcha", view=view)  # no new text: still stale
    assert [r.id for r in mem.stale(view)] == [memory_id]
    mem.edit(memory_id, "login returns a cached token", view=view)
    assert mem.stale(view) == []


def test_a_branch_memory_is_seen_in_its_branch_and_its_children_only(
    repo: Repository, mem: Memory
) -> None:
    repo.create_branch("feat")
    repo.commit({"feat.txt": b"1\n"}, "work on feat", branch="feat")
    memory_id = mem.remember("the feat flag is off in tests", view=BranchView(repo, "feat")).id
    assert mem.get(memory_id).branch == "feat"
    repo.create_branch("child", "feat")
    repo.create_branch("sibling", "main")

    def seen(branch: str | None) -> bool:
        view = BranchView(repo, branch)
        return any(h.id == memory_id for h in mem.recall("feat flag tests", view=view))

    assert seen("feat") and seen("child")
    assert not seen(None) and not seen("main") and not seen("sibling")
    assert not mem.recall("feat flag tests")  # no view: the trunk's


def test_a_branch_write_never_retires_what_the_trunk_knows(repo: Repository, mem: Memory) -> None:
    trunk = mem.remember("the api listens on port 8080").id
    repo.create_branch("feat")
    on_feat = mem.remember("the api listens on port 9090", view=BranchView(repo, "feat"))
    assert on_feat.action == "add" and on_feat.superseded == ()
    assert mem.get(trunk).status == "active"
    # in the branch its new value hides the trunk's; the trunk still reads its own
    from_feat = [h.id for h in mem.recall("api port", view=BranchView(repo, "feat"))]
    assert from_feat == [on_feat.id]
    assert [h.id for h in mem.recall("api port", view=BranchView(repo, None))] == [trunk]


def test_a_merge_brings_the_branch_memories_over_through_consolidation(
    repo: Repository, mem: Memory
) -> None:
    port = mem.remember("the api listens on port 8080").id
    same = mem.remember("deploys go through the staging cluster first").id
    repo.create_branch("feat")
    feat = BranchView(repo, "feat")
    new_port = mem.remember("the api listens on port 9090", view=feat).id
    duplicate = mem.remember("deploys go through the staging cluster first", view=feat).id
    fresh = mem.remember("the feature cache lives in redis", view=feat).id

    report = mem.merge_branch("feat")
    assert sorted(report.moved) == sorted([new_port, fresh])
    assert report.duplicates == [duplicate] and report.superseded == [port]
    assert mem.get(port).status == "superseded"
    assert mem.get(duplicate).status == "superseded" and mem.get(same).status == "active"
    assert mem.get(new_port).branch is None
    trunk_hits = [h.id for h in mem.recall("api port", view=BranchView(repo, None))]
    assert trunk_hits[0] == new_port and port not in trunk_hits
    assert mem.history(duplicate)[-1].op == "merge"
    assert mem.merge_branch("feat").moved == []  # nothing left: a second merge is a no-op


def test_deleting_a_branch_archives_its_memories(repo: Repository, mem: Memory) -> None:
    repo.create_branch("spike")
    memory_id = mem.remember("the spike uses a bloom filter", view=BranchView(repo, "spike")).id
    assert mem.archive_branch("spike") == [memory_id]
    assert mem.get(memory_id).status == "archived"
    assert mem.recall("spike bloom filter", view=BranchView(repo, "spike")) == []
    listed = mem.memories(status="archived", branch="spike")
    assert [r.id for r in listed] == [memory_id]
    assert mem.archive_branch("spike") == []


def test_a_renamed_branch_keeps_its_memories(repo: Repository, mem: Memory) -> None:
    repo.create_branch("old")
    memory_id = mem.remember("old work uses sqlite", view=BranchView(repo, "old")).id
    repo.rename_branch("old", "new")
    assert mem.rename_branch("old", "new") == [memory_id]
    assert mem.get(memory_id).branch == "new"
    assert [h.id for h in mem.recall("sqlite work", view=BranchView(repo, "new"))] == [memory_id]


def test_bad_branch_names_are_refused(mem: Memory) -> None:
    with pytest.raises(InvalidInput):
        mem.merge_branch("")
    with pytest.raises(InvalidInput):
        mem.merge_branch("feat", into="feat")


def test_a_database_from_before_the_columns_opens_and_reads_as_before(
    tmp_path: Path, clock: object
) -> None:
    path = tmp_path / "old.db"
    with Memory.open(path, None, warn_lexical=False) as mem:
        old_id = mem.remember("the old fact about caching", source=Source(file="a.py")).id
    _drop_new_columns(path)
    with Memory.open(path, None, warn_lexical=False) as mem:
        assert [h.id for h in mem.recall("old fact caching")] == [old_id]
        record = mem.get(old_id)
        assert (record.branch, record.source.blob) == (None, None)
        assert mem.remember("a new fact about queues").action == "add"
        mem.forget(old_id)
        assert mem.rollback(old_id).status == "active"
    conn = apsw.Connection(str(path))
    columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    assert {"branch", "base_commit", "source_blob", "moved_from"} <= columns
    conn.close()


def _drop_new_columns(path: Path) -> None:
    """The memories table as it was before the branch and blob columns."""
    conn = apsw.Connection(str(path))
    conn.execute("DROP INDEX memories_branch")
    for column in ("branch", "base_commit", "source_blob", "moved_from"):
        conn.execute(f"ALTER TABLE memories DROP COLUMN {column}")
    conn.close()
