"""Trigger-affinity weights: story exchanges drawn so that their closeness in meaning to the row's trigger is
distributed like the constraint's.

In the zero-overlap dimensions (state tracking, temporal grounding, attention recovery) the constraint
shares no word with the trigger, yet it is about what the trigger acts on (a badge, a side door). Among
story turns drawn without regard to the trigger it is then one of the turns closest in meaning to it:
on the release of a9fabde an embedding retriever following the trigger put the constraint among its six
nearest user turns in 78% of state-tracking rows, chance 60%.

Here each story exchange of a row gets a weight, the ratio of two densities of its user turn's cosine
to the row's trigger: under the cosines of the dimension's constraint turns to their own triggers, over
under the cosines of the dimension's story turns to the triggers of the seeds that use them (1-D
Gaussian kernels, Silverman's bandwidth), clipped to ``[1/cap, cap]``. Multiplied into the shape
weights (:mod:`stages.story_shape`), the draw makes a row's story turns as close to its trigger as
constraints are, in distribution, and never looks at the row's own constraint.

In: seeds (``stages.dialogues.seed_view``), story pools and an :class:`~stages.audit.embeddings.Embedder`.
Out: one weight per exchange of a story, for a row's trigger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from stages.audit.embeddings import Embedder
from stages.story_shape import WEIGHT_DIGITS


class CosineDensity:
    """Gaussian kernel density of 1-D points (Silverman's rule of thumb for the bandwidth)."""

    def __init__(self, points: Sequence[float]) -> None:
        self.points = np.asarray(points, dtype=np.float64)
        spread = min(self.points.std(), np.subtract(*np.percentile(self.points, [75, 25])) / 1.34) or self.points.std()
        self.bandwidth = 0.9 * (spread or 0.05) * len(self.points) ** -0.2

    def __call__(self, x: np.ndarray) -> np.ndarray:
        z = (x[:, None] - self.points[None, :]) / self.bandwidth
        return np.exp(-0.5 * z * z).mean(axis=1) + 1e-12


class TriggerAffinity:
    """Per dimension: weights that turn story turns' cosine-to-trigger distribution into the constraints'.

    ``seeds``: ``seed_view`` entries (id, dimension, topic, trigger, placed turns); ``pools``: story pools
    by topic; ``dimensions``: where weights apply (elsewhere every weight is 1.0); ``candidates(seed,
    pool)``: the exchange indices a row of that seed may draw from (the background is taken over those).
    """

    def __init__(self, embedder: Embedder, seeds: Sequence[dict], pools: dict[str, dict], dimensions: Sequence[str],
                 candidates: Callable[[dict, dict], list[int]], cap: float) -> None:
        self.embedder = embedder
        self.pools = pools
        self.cap = cap
        self.user_vectors: dict[str, np.ndarray] = {}
        constraint_cos: dict[str, list[float]] = {}
        story_cos: dict[str, list[float]] = {}
        used = [seed for seed in seeds if seed["dimension"] in dimensions
                and (pools.get(seed["topic"]) or {}).get("kind") == "story"]
        # every seed's trigger and placed turns in one batched call
        texts = [text for seed in used for text in (seed["trigger"], *(turn for turn, _ in seed["placed"]))]
        vectors = iter(self.embedder.embed(texts))
        self._embed_users(sorted({seed["topic"] for seed in used}))
        for seed in used:
            trigger = next(vectors)
            placed = np.array([next(vectors) for _ in seed["placed"]]).reshape(-1, len(trigger))
            constraint_cos.setdefault(seed["dimension"], []).extend((placed @ trigger).tolist())
            pool = pools[seed["topic"]]
            picked = candidates(seed, pool)
            story_cos.setdefault(seed["dimension"], []).extend((self._users(seed["topic"])[picked] @ trigger).tolist())
        self.target = {d: CosineDensity(c) for d, c in constraint_cos.items() if len(c) > 1}
        self.background = {d: CosineDensity(c) for d, c in story_cos.items() if len(c) > 1}

    def _embed_users(self, topics: Sequence[str]) -> None:
        """The user turns of every story of ``topics`` in one batched call (one call per story cost more than
        the encoding in a cold build)."""
        topics = [topic for topic in topics if topic not in self.user_vectors]
        if not topics:
            return
        vectors = self.embedder.embed([ex["user"] for topic in topics for ex in self.pools[topic]["exchanges"]])
        start = 0
        for topic in topics:
            end = start + len(self.pools[topic]["exchanges"])
            self.user_vectors[topic] = vectors[start:end]
            start = end

    def prepare(self, rows: Sequence[tuple[str, str]]) -> None:
        """Embed the triggers of ``rows`` (dimension, trigger) that :meth:`weights` will compare, in one batched
        call rather than one call per row."""
        wanted = list(dict.fromkeys(trigger for dimension, trigger in rows if self.applies(dimension)))
        if wanted:  # (an empty call would load the model for its width)
            self.embedder.embed(wanted)

    def _users(self, topic: str) -> np.ndarray:
        """Unit vectors of the user turns of story ``topic`` (embedded once per stage run)."""
        self._embed_users([topic])
        return self.user_vectors[topic]

    def applies(self, dimension: str) -> bool:
        """Whether rows of ``dimension`` get weights (it has both densities); elsewhere every weight is 1.0."""
        return dimension in self.target and dimension in self.background

    def weights(self, dimension: str, topic: str, trigger: str) -> list[float]:
        """One weight per exchange of story ``topic`` for a row whose trigger is ``trigger``, in ``[1/cap, cap]``
        (rounded like the shape weights, so the draw never hangs on a float's last bits); all 1.0 where the
        dimension has no densities."""
        if not self.applies(dimension):
            return [1.0] * len(self.pools[topic]["exchanges"])
        cosines = self._users(topic) @ self.embedder.embed([trigger])[0]
        ratio = np.clip(self.target[dimension](cosines) / self.background[dimension](cosines), 1.0 / self.cap, self.cap)
        return [float(f"{r:.{WEIGHT_DIGITS}g}") for r in ratio]

    def describe(self) -> dict[str, dict[str, float]]:
        """Per dimension: mean constraint-to-trigger and candidate story-to-trigger cosine (for logs)."""
        return {d: {"constraint": round(float(self.target[d].points.mean()), 3),
                    "story": round(float(self.background[d].points.mean()), 3)} for d in self.target if self.applies(d)}
