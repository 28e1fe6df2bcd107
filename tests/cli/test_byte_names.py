"""Names that are not UTF-8 (ADR 0020): JSON stays Unicode and lossless, human output
never fails on a strict terminal, and such a name can be given back on input."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from .conftest import Helix, fails, make_tree, ok, run_helix

NAME = b"caf\xe9.txt"  # latin-1 "café.txt": not UTF-8
AS_JSON = {"bytes_b64": base64.b64encode(NAME).decode()}
STRICT = {"PYTHONIOENCODING": "utf-8:strict"}  # what a UTF-8 desktop locale gives


def _write(root: Path, name: bytes, data: bytes) -> None:
    with open(os.path.join(os.fsencode(root), name), "wb") as f:
        f.write(data)


def _two_commits(helix: Helix, tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src", {"a.txt": "a\n"})
    _write(src, NAME, b"one\n")
    ok(helix("import", "src"))
    _write(src, NAME, b"two\n")
    ok(helix("import", "src"))


def _assert_unicode(doc: Any) -> None:
    """Every string of a parsed document is real Unicode (no lone surrogate)."""
    if isinstance(doc, str):
        doc.encode("utf-8")
    elif isinstance(doc, dict):
        for key, value in doc.items():
            _assert_unicode(key)
            _assert_unicode(value)
    elif isinstance(doc, list):
        for value in doc:
            _assert_unicode(value)


def test_json_gives_a_name_that_is_not_utf8_as_base64(helix: Helix, tmp_path: Path) -> None:
    _two_commits(helix, tmp_path)
    (tmp_path / "three").write_bytes(b"three\n")
    ok(helix("commit", "-m", "m", os.fsdecode(NAME) + "=three"))
    docs = {
        args: ok(helix(*args)).json()
        for args in (("ls", "--json", "HEAD"), ("diff", "--json", "HEAD~2"), ("log", "--json"))
    }
    for doc in docs.values():
        _assert_unicode(doc)
    assert [e["name"] for e in docs["ls", "--json", "HEAD"]] == ["a.txt", AS_JSON]
    assert docs["diff", "--json", "HEAD~2"]["changes"][0]["path"] == AS_JSON
    assert docs["log", "--json"][0]["meta"]["changed"] == [AS_JSON]


def test_human_output_escapes_such_a_name_on_a_strict_terminal(
    helix: Helix, tmp_path: Path
) -> None:
    """`diff --name-status` used to die with UnicodeEncodeError under a UTF-8 locale."""
    _two_commits(helix, tmp_path)
    assert ok(helix("diff", "--name-status", "HEAD~1", env=STRICT)).out == "M  caf\\xe9.txt\n"
    assert "caf\\xe9.txt" in ok(helix("ls", "HEAD", env=STRICT)).out
    assert "caf\\xe9.txt" in ok(helix("diff", "HEAD~1", env=STRICT)).out


def test_merge_conflict_on_such_a_name(helix: Helix, tmp_path: Path) -> None:
    _two_commits(helix, tmp_path)
    ok(helix("branch", "other", "HEAD~1"))
    other = tmp_path / "other.txt"
    other.write_bytes(b"three\n")
    ok(helix("commit", "-m", "o", "--branch", "other", os.fsdecode(NAME + b"=") + str(other)))
    result = helix("merge", "--json", "other", env=STRICT)
    assert result.code == 1 and result.json()["conflicts"] == [AS_JSON]
    result = helix("merge", "other", env=STRICT)
    assert result.code == 1 and result.out == "conflict: caf\\xe9.txt\n"


def test_such_a_name_is_taken_back_raw_or_as_base64(helix: Helix, tmp_path: Path) -> None:
    _two_commits(helix, tmp_path)
    b64 = AS_JSON["bytes_b64"]
    assert ok(helix("cat", "HEAD", os.fsdecode(NAME))).out == "two\n"
    assert ok(helix("cat", "--path-b64", "HEAD", b64)).out == "two\n"
    assert ok(helix("cat", "--json", "--path-b64", "HEAD", b64)).json()["path"] == AS_JSON
    (entry,) = ok(helix("ls", "--json", "--path-b64", "HEAD", b64)).json()
    assert entry["name"] == AS_JSON
    ok(helix("commit", "-m", "drop", "--path-b64", "--delete", b64))
    assert [e["name"] for e in ok(helix("ls", "--json", "HEAD")).json()] == ["a.txt"]
    wrapped = base64.encodebytes(b"deep/" * 20 + NAME).decode()  # as `base64` prints it
    assert "\n" in wrapped.strip()
    fails(helix("cat", "--path-b64", "HEAD", wrapped), says="no such path: deep")
    result = helix("cat", "--path-b64", "HEAD", "not base64!")
    assert result.code == 2 and "is not base64" in result.err


def test_error_names_such_a_path_with_escapes(helix: Helix, tmp_path: Path) -> None:
    """QA: an error naming a path that is not UTF-8 showed its bytes as `\\udce9`
    (`--store`: a path no shell reads back) or, from the daemon, as a raw byte."""
    missing = Path(os.fsdecode(os.fsencode(tmp_path) + b"/" + NAME))
    result = fails(helix("export", "HEAD", missing / "out", env=STRICT))
    assert "caf\\xe9.txt" in result.err and "\\udc" not in result.err
    result = fails(run_helix("log", store=missing, env=STRICT))
    assert "caf\\xe9.txt" in result.err and "\\udc" not in result.err
