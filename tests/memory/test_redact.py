"""No secret from a corpus of real-format fake secrets ever reaches the database file."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from secrets_corpus import CORPUS, NOT_SECRETS

from helixfs.memory import Memory
from helixfs.memory.redact import redact


@pytest.mark.parametrize(("secret", "text"), CORPUS, ids=[s[:12] for s, _ in CORPUS])
def test_each_secret_is_scrubbed_from_its_sentence(secret: str, text: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert secret[4:-4] not in result.text  # not even most of it
    assert result.count >= 1
    assert "[REDACTED:" in result.text


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_hashes_ids_paths_and_identifiers_are_left_alone(text: str) -> None:
    assert redact(text).text == text


def _every_regex(text: str) -> tuple[str, tuple[str, ...]]:
    """Redaction with every regex run: a text that is not ASCII skips the cues."""
    result = redact("\u00e9\n" + text)
    return result.text.removeprefix("\u00e9\n"), result.kinds


def _texts_to_compare() -> list[str]:
    sources = Path(__file__).resolve().parents[2] / "helixfs"
    texts = [text for _, text in CORPUS] + list(NOT_SECRETS)
    texts += [p.read_text() for p in sorted(sources.rglob("*.py"))]  # redact.py's own cues
    rng = random.Random(5)
    for _ in range(300):  # secrets and near-misses dropped into ordinary code
        words = rng.choice(texts).split(" ")
        words.insert(rng.randrange(len(words) + 1), rng.choice(CORPUS)[1])
        words.insert(rng.randrange(len(words) + 1), "Client_Secret :")
        texts.append(" ".join(words))
    return texts


def test_the_cues_never_change_what_is_redacted() -> None:
    """Each pattern runs only on a text holding one of its cues (280 us a code chunk for
    all the regexes): the result must be exactly that of running them all."""
    for text in _texts_to_compare():
        result = redact(text)
        assert (result.text, result.kinds) == _every_regex(text), text[:80]


def _raw_bytes(db_path: Path) -> bytes:
    """The database file and its WAL/SHM siblings, as bytes on disk."""
    data = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        sibling = db_path.with_name(db_path.name + suffix)
        if sibling.exists():
            data += sibling.read_bytes()
    return data


def _needles(secret: str) -> list[bytes]:
    """The secret, and its middle for long ones (short middles match hex by chance)."""
    return [secret.encode()] + ([secret[4:-4].encode()] if len(secret) >= 16 else [])


def _assert_no_secret(db_path: Path) -> None:
    raw = _raw_bytes(db_path)
    assert raw, "the database file must exist"
    leaked = [s for s, _ in CORPUS if any(n in raw for n in _needles(s))]
    assert not leaked, f"secrets reached the database file: {leaked}"


def test_no_secret_reaches_the_db_file_through_any_write_path(db_path: Path) -> None:
    with Memory.open(db_path, None) as mem:
        for _, text in CORPUS:
            mem.remember(text, tags=["creds"])
        mem.ingest("\n".join(text for _, text in CORPUS))
        mem.checkpoint(
            "rotate keys " + CORPUS[0][1],
            done=[CORPUS[2][1]],
            next=[CORPUS[6][1]],
            blocked=[CORPUS[12][1]],
        )
        env_file = "\n".join(text for _, text in CORPUS).encode()
        mem.index_workspace({".env": env_file, "config/settings.py": env_file}, "c0ffee")
        mem.context(4000, query="key token password")
        _assert_no_secret(db_path)  # while open: the WAL holds the writes
    _assert_no_secret(db_path)  # after close: checkpointed into the main file


def test_no_secret_reaches_the_db_file_with_the_real_embedder(
    db_path: Path, real_embedder: object
) -> None:
    with Memory.open(db_path, real_embedder) as mem:  # type: ignore[arg-type]
        for _, text in CORPUS:
            mem.remember(text)
        mem.index_workspace({".env": "\n".join(t for _, t in CORPUS).encode()}, "c0ffee")
    _assert_no_secret(db_path)


def test_redacted_memory_stays_useful(mem: Memory) -> None:
    result = mem.remember("OPENAI_API_KEY=sk-proj-Tq7Wz9Xb2Lm4Np6Rv8Ys0Uc3Ef5Gh7Jk9Ma1Qd3")
    assert result.redactions == 1
    assert result.memory is not None
    assert result.memory.content.startswith("OPENAI_API_KEY=[REDACTED:")
    assert mem.recall("openai api key")[0].id == result.id
