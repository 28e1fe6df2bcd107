"""`helix dna`: strands written and read through the CLI, in subprocesses."""

from __future__ import annotations

from pathlib import Path

from .conftest import Result, fails, ok, run_helix

PASSPHRASE = {"HELIX_DNA_PASSPHRASE": "correct horse battery", "HELIX_MEMORY_LEXICAL": "1"}


def new_store(path: Path) -> Path:
    ok(run_helix("init", store=path))
    return path


def dna(store: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return run_helix("dna", *args, store=store, env=PASSPHRASE if env is None else env)


def test_memories_travel_from_one_store_to_another(tmp_path: Path) -> None:
    mine, theirs = new_store(tmp_path / "mine"), new_store(tmp_path / "theirs")
    ok(run_helix("remember", "--type", "decision", "We deploy on Fridays", store=mine))
    strand = tmp_path / "team.dna"
    written = ok(dna(mine, "export", str(strand), "--json")).json()
    assert written["memories"] == 1 and strand.stat().st_size == written["bytes"]
    key = ok(dna(mine, "identity")).out.strip()
    assert written["signer"] == key
    done = ok(dna(theirs, "import", str(strand), "--trust", key, "--json")).json()
    assert done["add"] == 1 and done["signer"] == key
    listed = ok(run_helix("memories", "--json", store=theirs)).json()
    assert [m["content"] for m in listed] == ["We deploy on Fridays"]


def test_a_strand_is_never_written_over(tmp_path: Path) -> None:
    mine = new_store(tmp_path / "mine")
    ok(run_helix("remember", "We deploy on Fridays", store=mine))
    strand = tmp_path / "team.dna"
    strand.write_bytes(b"precious")
    fails(dna(mine, "export", str(strand)), says="never written over")
    assert strand.read_bytes() == b"precious"


def test_without_a_passphrase_or_a_terminal_it_says_how_to_give_one(tmp_path: Path) -> None:
    mine = new_store(tmp_path / "mine")
    ok(run_helix("remember", "We deploy on Fridays", store=mine))
    result = dna(mine, "export", str(tmp_path / "x.dna"), env={"HELIX_MEMORY_LEXICAL": "1"})
    fails(result, 2, says="--passphrase-file")
    assert not (tmp_path / "x.dna").exists()


def test_a_passphrase_file_works_and_a_damaged_strand_imports_nothing(tmp_path: Path) -> None:
    mine, theirs = new_store(tmp_path / "mine"), new_store(tmp_path / "theirs")
    ok(run_helix("remember", "We deploy on Fridays", store=mine))
    secret = tmp_path / "passphrase"
    secret.write_text("correct horse battery\n")
    strand = tmp_path / "team.dna"
    lexical = {"HELIX_MEMORY_LEXICAL": "1"}
    ok(dna(mine, "export", str(strand), "--passphrase-file", str(secret), env=lexical))
    data = bytearray(strand.read_bytes())
    data[-100] ^= 1
    strand.write_bytes(bytes(data))
    damaged = dna(theirs, "import", str(strand), "--passphrase-file", str(secret), env=lexical)
    fails(damaged, says="signature does not verify")
    assert ok(run_helix("memories", "--json", store=theirs)).json() == []


def test_a_trusted_key_must_be_a_key(tmp_path: Path) -> None:
    theirs = new_store(tmp_path / "theirs")
    fails(dna(theirs, "import", str(tmp_path / "x.dna"), "--trust", "abc"), 2, says="64 hex")
