"""Embedding near-duplicate check for LLM-scaled blueprints.

A blueprint's scenario text (constraint turns + trigger, as in ``dedupe``) is embedded with
the audit's embedding model (:func:`stages.audit.load_embedding_model`: bge-base when cached,
else the bundled all-MiniLM-L6-v2); a candidate whose cosine similarity with an already
kept blueprint of the same dimension reaches the threshold is a near-duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.stage import Item
from stages.audit.embeddings import Embedder, load_embedding_model
from stages.scale.dedupe import scenario_text


@dataclass
class NearDuplicate:
    """The most similar kept item and the cosine similarity with it."""

    other_id: str
    cosine: float


@dataclass
class EmbeddingIndex:
    """Kept scenario vectors by dimension; ``check`` then ``add`` each candidate in order."""

    embedder: Embedder
    threshold: float
    _kept: dict[str, list[tuple[str, np.ndarray]]] = field(default_factory=dict)

    @classmethod
    def load(cls, threshold: float, model: str | None = None) -> EmbeddingIndex:
        """An empty index over the resolved embedding model (no on-disk cache)."""
        return cls(Embedder(load_embedding_model(model)), threshold)

    @property
    def model_name(self) -> str:
        return self.embedder.choice.name

    def vector(self, item: Item) -> np.ndarray:
        return self.embedder.embed([scenario_text(item)])[0]

    def closest(self, item: Item) -> NearDuplicate | None:
        """The most similar kept item of the same dimension (None when there is none)."""
        kept = self._kept.get(item["blueprint"]["dimension"], [])
        if not kept:
            return None
        vector = self.vector(item)
        scores = [(float(np.dot(vector, other)), other_id) for other_id, other in kept]
        cosine, other_id = max(scores)
        return NearDuplicate(other_id, cosine)

    def is_duplicate(self, item: Item) -> NearDuplicate | None:
        """The kept item that ``item`` nearly duplicates (cosine >= threshold), else None."""
        found = self.closest(item)
        return found if found is not None and found.cosine >= self.threshold else None

    def add(self, item: Item) -> None:
        self._kept.setdefault(item["blueprint"]["dimension"], []).append((item["id"], self.vector(item)))

    def fresh(self) -> EmbeddingIndex:
        """An empty index over the same loaded model (one per seed: results never depend on other items)."""
        return EmbeddingIndex(self.embedder, self.threshold)

