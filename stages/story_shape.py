"""Shape-matched story choice: story exchanges drawn so that, per dimension, they look like the placed turns.

A base dialogue places the seed's own turns (constraints, update, resolution) among an ordered subset
of its story's exchanges. If placed turns have a shape story turns rarely have (45-55 words with
digits and a question; code identifiers that raise the characters per word), a classifier over
surface shape finds them. Taken at random, the subset follows the story's shape distribution;
here each exchange is weighted by how much more typical its shape is of the dimension's placed
turns than of the dimension's story turns (a density ratio, both densities Gaussian kernel
estimates over standardized shape features), and the subset is a weighted draw without
replacement. Across rows, the story turns then follow the placed turns' shape distribution as far
as the pools allow, and the weights never look at the row's own constraint, so its rank among the
row's turns stays to chance (a draw centred on the row's own constraint would make it the median).

In: exchanges (``{"user", "assistant"}``) and the dimension's placed and story shapes. Out: weights,
and an ordered weighted subset.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np

from pipeline.blueprints.stories import turn_shape

WEIGHT_DIGITS = 6  # weights are rounded so that the draw does not depend on the last bits of a float


def shape(user: str, reply: str | None) -> np.ndarray:
    """Shape of one exchange: log words, characters per word, log punctuation count, question, log reply words."""
    words, per_word, marks, asks = turn_shape(user)
    reply_words = max(len((reply or "").split()), 1)
    return np.array([math.log(words), per_word, math.log1p(marks), float(asks), math.log(reply_words)])


class ShapeDensity:
    """Gaussian kernel density over standardized shapes (Scott's bandwidth times ``bandwidth``)."""

    def __init__(self, shapes: Sequence[np.ndarray], bandwidth: float) -> None:
        self.points = np.vstack(shapes)
        n, dims = self.points.shape
        self.scale = (self.points.std(axis=0) + 1e-6) * bandwidth * n ** (-1.0 / (dims + 4))

    def __call__(self, x: np.ndarray) -> float:
        z = (self.points - x) / self.scale
        return float(np.exp(-0.5 * (z * z).sum(axis=1)).mean()) + 1e-12


class ShapeMatcher:
    """Per dimension: weights that turn story exchanges' shape distribution into the placed turns'."""

    def __init__(self, placed: dict[str, list[np.ndarray]], story: dict[str, list[np.ndarray]],
                 bandwidth: float, cap: float) -> None:
        self.cap = cap
        self.placed = {d: ShapeDensity(s, bandwidth) for d, s in placed.items() if s}
        self.story = {d: ShapeDensity(s, bandwidth) for d, s in story.items() if s}
        self._weights: dict[tuple[str, str], list[float]] = {}

    def weights(self, dimension: str, topic: str, exchanges: Sequence[dict]) -> list[float]:
        """One weight per exchange of the story ``topic`` (computed once per dimension and story), in
        ``[1/cap, cap]``; all 1.0 for a dimension with no shapes."""
        key = (dimension, topic)
        if key not in self._weights:
            self._weights[key] = self._compute(dimension, exchanges)
        return self._weights[key]

    def _compute(self, dimension: str, exchanges: Sequence[dict]) -> list[float]:
        target, background = self.placed.get(dimension), self.story.get(dimension)
        if target is None or background is None:
            return [1.0] * len(exchanges)
        out = []
        for exchange in exchanges:
            x = shape(exchange["user"], exchange.get("assistant"))
            ratio = min(self.cap, max(1.0 / self.cap, target(x) / background(x)))
            out.append(float(f"{ratio:.{WEIGHT_DIGITS}g}"))
        return out


def weighted_subset(candidates: Sequence[int], weights: Sequence[float], k: int, rng: random.Random) -> list[int]:
    """``k`` of ``candidates`` (indices into ``weights``), drawn without replacement with probability
    proportional to weight (Efraimidis-Spirakis keys), returned in story order."""
    keyed = [(rng.random() ** (1.0 / weights[i]), i) for i in candidates]
    keyed.sort(key=lambda pair: -pair[0])
    return sorted(i for _, i in keyed[:k])
