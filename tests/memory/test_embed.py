"""The offline embedder, with the real model (assembled from the `model` extra)."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from helixfs import config
from helixfs.errors import InvalidInput
from helixfs.memory import embed
from helixfs.memory.embed import (
    DEFAULT_DIM,
    ENV_MODEL_DIR,
    MAX_BATCH,
    MINILM_MAX_TOKENS,
    TOKENS_PER_RUN,
    FastEmbedder,
    ModelUnavailableWarning,
    assemble_packaged_model,
    assembled_dir_name,
    default_threads,
    find_model_dir,
    load_configured,
    load_embedder,
    runs,
)
from helixfs.memory.types import Embedder

ENV_CACHE_DIR = config.KEYS["memory.cache_dir"].env
ENV_THREADS = config.KEYS["memory.embed_threads"].env


@pytest.fixture(scope="module")
def embedder() -> FastEmbedder:
    loaded = load_embedder()
    assert loaded is not None, "the packaged model (extra `model`) must be installed"
    return loaded


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv(ENV_MODEL_DIR, raising=False)
    yield monkeypatch


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_reports_provider_model_and_dimension(embedder: FastEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.name == "fastembed"
    assert embedder.dim == DEFAULT_DIM
    assert embedder.model.startswith("sentence-transformers/all-MiniLM-L6-v2#")


def test_vectors_are_normalised_rows_in_input_order(embedder: FastEmbedder) -> None:
    texts = ["cat", "the deploy script needs AWS_PROFILE set", "feline"]
    batch = embedder.embed(texts)
    assert batch.shape == (3, DEFAULT_DIM)
    assert batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    for row, text in zip(batch, texts, strict=True):
        assert np.allclose(row, embedder.embed([text])[0], atol=1e-4)


def test_similar_meanings_are_close_and_unrelated_ones_are_not(embedder: FastEmbedder) -> None:
    cat, feline, tax = embedder.embed(["cat", "feline", "quarterly tax filing deadline"])
    assert _cosine(cat, feline) > 0.45
    assert abs(_cosine(cat, tax)) < 0.25
    query = embedder.embed_query("how do we refresh expired auth tokens?")
    right, wrong = embedder.embed(
        [
            "The API client renews the OAuth access token when it gets a 401.",
            "CSS grid is used for the dashboard layout.",
        ]
    )
    assert _cosine(query, right) > _cosine(query, wrong) + 0.2


def test_empty_batch_and_bad_input(embedder: FastEmbedder) -> None:
    assert embedder.embed([]).shape == (0, DEFAULT_DIM)
    with pytest.raises(InvalidInput):
        embedder.embed("a single string is a mistake")
    with pytest.raises(InvalidInput):
        embedder.embed(["ok", 42])  # type: ignore[list-item]


def test_query_cache_returns_the_same_vector(embedder: FastEmbedder) -> None:
    first = embedder.embed_query("where is parseConfig defined")
    again = embedder.embed_query("where is parseConfig defined")
    assert again is first
    assert not first.flags.writeable


def test_long_text_is_truncated_not_rejected(embedder: FastEmbedder) -> None:
    long_text = "retry_backoff doubles the delay after each failure. " * 400
    vector = embedder.embed([long_text])[0]
    assert vector.shape == (DEFAULT_DIM,)


def test_loading_never_goes_online(embedder: FastEmbedder) -> None:
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_missing_model_returns_none_with_a_warning(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = config.load(None, {ENV_MODEL_DIR: str(tmp_path / "nowhere")})
    with pytest.warns(ModelUnavailableWarning, match="lexical"):
        assert load_configured(settings) is None


def test_broken_model_folder_returns_none_with_a_warning(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes(b"not a model")
    with pytest.warns(ModelUnavailableWarning, match="cannot load"):
        assert load_embedder(tmp_path) is None


def test_memory_lexical_loads_no_model(tmp_path: Path) -> None:
    config.set_value(config.store_file(tmp_path), "memory.lexical", "true")
    assert load_configured(config.load(tmp_path, {})) is None


def test_env_override_points_at_another_folder(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, embedder: FastEmbedder
) -> None:
    source, _ = find_model_dir()
    assert source is not None
    copy = tmp_path / "my-model"
    shutil.copytree(source, copy)
    settings = config.load(None, {ENV_MODEL_DIR: str(copy), ENV_THREADS: "1"})
    assert find_model_dir(settings["memory.model_dir"]) == (copy, "")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelUnavailableWarning)
        other = load_configured(settings)
    assert other is not None
    assert other.model == embedder.model  # same bytes, same pinned id
    assert np.allclose(other.embed(["cat"]), embedder.embed(["cat"]), atol=1e-5)


def test_explicit_argument_beats_the_environment(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source, _ = find_model_dir()
    assert source is not None
    settings = config.load(None, {ENV_MODEL_DIR: str(tmp_path / "nowhere")})
    flagged = settings.with_flags({"memory.model_dir": str(source)})
    assert find_model_dir(flagged["memory.model_dir"]) == (source, "")


def test_assembles_the_packaged_model_into_a_fresh_cache(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = config.load(None, {ENV_CACHE_DIR: str(tmp_path / "cache")})["memory.cache_dir"]
    folder, reason = find_model_dir(None, cache)
    assert reason == ""
    name = assembled_dir_name()
    assert name is not None and name.startswith("all-MiniLM-L6-v2-int8-")
    assert folder == tmp_path / "cache" / "models" / name
    expected = {
        "model.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "config.json",
    }
    assert {p.name for p in folder.iterdir()} == expected
    tokenizer = json.loads((folder / "tokenizer_config.json").read_text())
    assert tokenizer["max_length"] == MINILM_MAX_TOKENS
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".assemble-")]
    assert assemble_packaged_model(folder) == folder  # idempotent, no re-copy


def test_thread_count_is_sane_and_configurable(clean_env: pytest.MonkeyPatch) -> None:
    assert 1 <= default_threads() <= 4
    assert config.load(None, {ENV_THREADS: "3"})["memory.embed_threads"] == 3
    with pytest.raises(InvalidInput, match="HELIX_EMBED_THREADS"):
        config.load(None, {ENV_THREADS: "lots"})  # refused, not silently the default


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 2), (4, 2), (8, 4), (64, 4)])
def test_default_threads_by_core_count(
    clean_env: pytest.MonkeyPatch, cores: int, threads: int
) -> None:
    clean_env.setattr(os, "cpu_count", lambda: cores)
    assert default_threads() == threads


def test_long_texts_are_embedded_a_few_at_a_time_short_ones_many() -> None:
    """ONNX keeps the arena of its largest run: 64 workspace chunks in one run took the
    daemon to 2.7 GB, so a run holds at most TOKENS_PER_RUN tokens."""
    assert [len(r) for r in runs(["a short fact about ports"] * 100)] == [MAX_BATCH, 36]
    assert runs(["x" * 2400, "short"]) == [[1, 0]]  # shortest first; 2 x 256 tokens fit
    assert len(runs(["x" * 2400] * 9)) == 2  # 8 x 256 tokens per run
    assert runs(["x" * 10**6]) == [[0]]
    texts = ["x" * n for n in (900, 30, 2400, 300, 60, 1500)] * 5
    for run in runs(texts):
        longest = min(max(len(texts[i]) for i in run) // 3 + 1, MINILM_MAX_TOKENS)
        assert len(run) * longest <= TOKENS_PER_RUN
    assert sorted(i for run in runs(texts) for i in run) == list(range(len(texts)))


def test_texts_embedded_together_come_back_in_their_order(embedder: FastEmbedder) -> None:
    """Runs go shortest first: each row still answers its own text."""
    texts = [
        "The deploy runs from the release branch every Friday afternoon, after the checks",
        "cats",
        "A database migration adds the users.email index",
    ]
    together = embedder.embed(texts)
    for row, text in zip(together, texts, strict=True):
        alone = embedder.embed([text])[0]
        assert float(row @ alone) > 0.999


def test_the_model_keeps_no_arena_and_freed_memory_goes_back(
    embedder: FastEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ONNX Runtime's arena kept the peak of the biggest run for the daemon's life
    (538 MB after indexing a workspace, against 201 MB without it and trimmed)."""
    session = embedder._engine.model.model
    assert session.get_session_options().enable_cpu_mem_arena is False
    trims: list[int] = []
    monkeypatch.setattr(embed, "_MALLOC_TRIM", lambda pad: trims.append(pad) or 1)
    embedder.embed(["short"] * (embed.TRIM_AFTER - 1))
    assert trims == []
    embedder.embed(["a workspace chunk"] * embed.TRIM_AFTER)
    assert trims == [0]
