"""Intervals by bootstrap over seed families, and the family statistics of a release.

Rows of one seed family are not independent (renderings of one scenario), so every interval
resamples whole families: a cell's value is sum(values) / rows over the resampled families.
Resampling is seeded, so the same rows give the same interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

RESAMPLES = 1000


def family_bootstrap(values: Sequence[float], families: Sequence[str], *, seed: int = 0,
                     resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """Mean of ``values`` and its 95% interval from resampling families; (nan, nan, nan) if empty."""
    if not values:
        return float("nan"), float("nan"), float("nan")
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for value, family in zip(values, families):
        sums[family] += value
        counts[family] += 1
    keys = sorted(sums)
    s = np.array([sums[k] for k in keys])
    c = np.array([counts[k] for k in keys], dtype=float)
    mean = float(s.sum() / c.sum())
    if len(keys) < 2:
        return mean, mean, mean
    picks = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    boot = s[picks].sum(axis=1) / c[picks].sum(axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    return mean, float(low), float(high)


def half_width_at_half(families: Sequence[str], *, seed: int = 0, draws: int = 20) -> tuple[float, float]:
    """95% half-width of a 50% accuracy under a family bootstrap, for this family structure.

    Returns (rows independent, each row right with p = 0.5; whole families right or wrong
    together, half of them right): the range a real model's interval falls in.
    """
    rng = np.random.default_rng(seed)
    names = sorted(set(families))
    if len(names) < 2:
        return float("nan"), float("nan")
    independent, clustered = [], []
    for draw in range(draws):
        rows = rng.random(len(families)) < 0.5
        _, low, high = family_bootstrap(rows.astype(float).tolist(), families, seed=seed + draw)
        independent.append((high - low) / 2)
        right = dict(zip(names, rng.permutation(len(names)) < len(names) / 2))
        _, low, high = family_bootstrap([float(right[f]) for f in families], families, seed=seed + draw)
        clustered.append((high - low) / 2)
    return float(np.mean(independent)), float(np.mean(clustered))


def family_table(rows: Sequence[dict]) -> list[dict]:
    """Per dimension: seed families (the effective sample size), rows per family, half-widths.

    ``rows``: dicts with ``dimension`` and ``family`` (one per Pos-Clean base row).
    """
    by_dimension: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_dimension[row["dimension"]].append(row["family"])
    table = []
    for dimension, families in by_dimension.items():
        per_family = np.array(list(_counts(families).values()))
        independent, clustered = half_width_at_half(families)
        table.append({"dimension": dimension, "rows": len(families), "families": len(per_family),
                      "rows_per_family_mean": float(per_family.mean()), "rows_per_family_max": int(per_family.max()),
                      "half_width_independent": independent, "half_width_family": clustered})
    return table


def _counts(items: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for item in items:
        counts[item] += 1
    return counts
