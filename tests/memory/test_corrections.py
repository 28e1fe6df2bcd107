"""A person's corrections of a memory: edit and confirm (the web view's forms, and
`helix edit` / `helix confirm`), each one op in history that rollback undoes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from helixfs.cli.main import run
from helixfs.errors import InvalidInput, NotFound
from helixfs.memory import Memory


def test_edit_changes_text_type_and_tags_and_is_searchable(vmem: Memory) -> None:
    memory_id = vmem.remember("the API listens on port 8080", type="fact").id
    edited = vmem.edit(memory_id, "the API listens on port 9090", type="decision", tags=["api"])
    assert (edited.content, edited.type, edited.tags) == (
        "the API listens on port 9090",
        "decision",
        ("api",),
    )
    assert [e.op for e in vmem.history(memory_id)] == ["add", "edit"]
    hits = vmem.recall("which port does the API listen on", reinforce=False)
    assert hits[0].id == memory_id and "9090" in hits[0].content
    assert vmem.recall("9090", mode="lexical", reinforce=False)[0].id == memory_id
    restored = vmem.rollback(memory_id)
    assert restored.content == "the API listens on port 8080" and restored.type == "fact"


def test_edit_redacts_and_refuses_what_changes_nothing(mem: Memory) -> None:
    memory_id = mem.remember("deploys go through the staging cluster").id
    secret = mem.edit(memory_id, "deploy with token ghp_" + "a" * 36)
    assert "ghp_" not in secret.content
    with pytest.raises(InvalidInput, match="changes nothing"):
        mem.edit(memory_id, secret.content)
    with pytest.raises(InvalidInput, match="unknown memory type"):
        mem.edit(memory_id, type="poem")
    with pytest.raises(NotFound):
        mem.edit("NOSUCHID", "text")
    assert [e.op for e in mem.history(memory_id)] == ["add", "edit"]


def test_a_forgotten_memory_is_restored_before_it_is_edited(mem: Memory) -> None:
    memory_id = mem.remember("the cache is Redis").id
    mem.forget(memory_id)
    with pytest.raises(InvalidInput, match="restore it"):
        mem.edit(memory_id, "the cache is memcached")
    with pytest.raises(InvalidInput, match="only an active one"):
        mem.confirm(memory_id)


def test_confirm_raises_confidence_and_salience(mem: Memory) -> None:
    memory_id = mem.remember("tests run with pytest", confidence=0.4, salience=0.3).id
    confirmed = mem.confirm(memory_id)
    assert confirmed.confidence == 1.0 and confirmed.salience > 0.3
    assert mem.history(memory_id)[-1].op == "confirm"


def test_counts_by_type_and_status(mem: Memory) -> None:
    mem.remember("we chose PostgreSQL", type="decision")
    gone = mem.remember("never log tokens", type="gotcha").id
    mem.forget(gone)
    assert mem.counts() == {"decision": {"active": 1}, "gotcha": {"forgotten": 1}}


def test_the_cli_edits_and_confirms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")
    store = tmp_path / "store"
    store.mkdir()

    def helix(*argv: str) -> dict[str, object]:
        out, err = io.StringIO(), io.StringIO()
        assert run(["--store", str(store), *argv, "--json"], out, err) == 0, err.getvalue()
        doc: dict[str, object] = json.loads(out.getvalue())
        return doc

    memory_id = str(helix("remember", "the frontend uses React")["id"])
    edited = helix("edit", memory_id, "the frontend uses Svelte", "--tags", "ui,web")
    assert edited["content"] == "the frontend uses Svelte" and edited["tags"] == ["ui", "web"]
    assert helix("confirm", memory_id)["confidence"] == 1.0
    out, err = io.StringIO(), io.StringIO()
    assert run(["--store", str(store), "edit", memory_id], out, err) == 1
    assert "changes nothing" in err.getvalue()
