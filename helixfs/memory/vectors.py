"""The engine's side of the Embedder protocol: batching, normalising, counting.

Vectors are L2-normalised here, once, so cosine distance in sqlite-vec and the dot
products in MMR agree whatever the embedder returns (list of lists or numpy array).
Queries go through `embed_query` when the embedder has one (it may cache repeats).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from helixfs.errors import HelixError
from helixfs.memory.extract import without_speaker
from helixfs.memory.types import Embedder

BATCH = 64
# Fewer passages than this go through `embed`: the passage session takes about a second
# to load, and the pass after a save embeds a passage or two (ADR 0067).
BULK_AFTER = 32


class EmbedderRunner:
    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.name = str(embedder.name)
        self.model = str(embedder.model)
        self.dim = int(embedder.dim)
        self.texts_embedded = 0
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._batched(self._embedder.embed, texts)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """`embed` for workspace passages: on the embedder's bulk path if it has one and
        they are BULK_AFTER or more."""
        bulk = getattr(self._embedder, "embed_passages", None)
        if bulk is None or len(texts) < BULK_AFTER:
            return self.embed(texts)
        return self._batched(bulk, texts)

    def _batched(
        self, embed: Callable[[list[str]], Any], texts: Sequence[str]
    ) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = list(texts[start : start + BATCH])
            self.calls += 1
            self.texts_embedded += len(batch)
            out.extend(self.checked(embed(batch), len(batch)))
        return out

    def passages_done(self) -> None:
        """An index pass is over: the embedder may free what its bulk path holds."""
        release = getattr(self._embedder, "release_passage_session", None)
        if release is not None:
            release()

    def passage_texts(self, texts: Sequence[str]) -> list[str]:
        """What each workspace passage is embedded by: its head where the embedder cuts
        one (`FastEmbedder.passage_heads`), else the whole passage."""
        heads = getattr(self._embedder, "passage_heads", None)
        return list(texts) if heads is None else list(heads(texts))

    def embed_memories(self, contents: Sequence[str]) -> list[list[float]]:
        """Vectors of memories, each without its speaker header: "Caroline: Okay, gotta
        run." is not about Caroline, and with her name embedded it was the nearest
        memory to every question that named her (issue 30). The name stays in the
        text, so BM25 still tells her turns from her friend's."""
        return self.embed([without_speaker(content)[1] for content in contents])

    def embed_query(self, text: str) -> list[float]:
        query = getattr(self._embedder, "embed_query", None)
        if query is None:
            return self.embed([text])[0]
        return self.checked([query(text)], 1)[0]

    def checked(self, raw: Any, expected: int) -> list[list[float]]:
        rows: list[list[float]] = self.normalised(raw, expected).tolist()
        return rows

    def normalised(self, raw: Any, expected: int) -> npt.NDArray[np.float32]:
        """`expected` rows of this model's dimension, L2-normalised (else HelixError)."""
        matrix = np.asarray(raw, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape != (expected, self.dim):
            raise HelixError(
                f"embedder {self.model} returned shape {matrix.shape} for {expected} texts "
                f"(expected dimension {self.dim})"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0.0] = 1.0
        normalised: npt.NDArray[np.float32] = matrix / norms
        return normalised
