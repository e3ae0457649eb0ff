"""95% intervals by bootstrap over seed families (rows of one family move together).

Rows made from one hand-written seed blueprint (its scaled renderings and their variants)
are not independent, so the resampling unit is the family (``seed_id``), never the row.
Every resample draws from a generator seeded by (seed, cell name), so the same scores give
the same interval in every run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.seeding import derive_seed

RESAMPLES = 1000


def _family_arrays(values: Sequence[float], families: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-family sums and row counts, families in sorted order."""
    names = sorted(set(families))
    index = {name: i for i, name in enumerate(names)}
    sums, counts = np.zeros(len(names)), np.zeros(len(names))
    for value, family in zip(values, families):
        sums[index[family]] += value
        counts[index[family]] += 1
    return sums, counts


def family_interval(values: Sequence[float], families: Sequence[str], name: str, seed: int = 0,
                    resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of the row mean over family resamples (None if no rows)."""
    if len(values) != len(families):
        raise ValueError("one family per value")
    if not values:
        return None
    sums, counts = _family_arrays(values, families)
    rng = np.random.default_rng(derive_seed(seed, name, "eval-bootstrap"))
    picks = rng.integers(0, len(sums), size=(resamples, len(sums)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def paired_difference(a: Sequence[float], b: Sequence[float], families: Sequence[str], name: str, seed: int = 0,
                      resamples: int = RESAMPLES) -> tuple[float, float, float] | None:
    """Mean of ``b - a`` over paired rows and its family-bootstrap 95% interval (None if no pairs)."""
    if not (len(a) == len(b) == len(families)):
        raise ValueError("a, b and families must have one entry per paired row")
    if not a:
        return None
    differences = [float(y) - float(x) for x, y in zip(a, b)]
    interval = family_interval(differences, families, name, seed, resamples)
    assert interval is not None
    return sum(differences) / len(differences), interval[0], interval[1]
