"""Learned shortcut finders, cross-validated by seed family so that no family is memorised.

- :func:`learned_finder`: a classifier over per-turn surface features (lengths, punctuation,
  timestamp features, position, reply length; optionally similarity scores) ranks a row's
  candidates; the top-ranked candidate is its pick (ties as in :mod:`finders`).
- :func:`label_finder`: a classifier over row-level structure (turn counts, reply and user-turn
  lengths, timestamps, positions of extremes) predicts a row's variant.

Both use scikit-learn's ``HistGradientBoostingClassifier`` (fixed ``random_state``) inside
``GroupKFold`` over seed families, so the result is deterministic. The constraint finder repeats the
cross-validation over ``REPEATS`` seeded assignments of families to folds and scores each row by its mean
hit: one split decided by which families happened to train together moved a cell by up to 0.1 between
configs that share their base dialogues (logical adherence at 60k 0.30, at 40k and 80k 0.20).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from stages.audit.shortcuts.finders import top1_hit
from stages.audit.shortcuts.turns import RowTurns

MAX_FOLDS = 5
REPEATS = 3  # fold assignments per learned constraint finder (the first is GroupKFold's own)
TRAIN_NEGATIVES_PER_ROW = 64  # long rows: every constraint turn plus this many other candidates per row
SHORT_REPLY_WORDS = 30
PARALLEL_MIN_ROWS = 2000  # fewer rows fit in seconds: starting worker processes would cost more than it saves


def _rank_pct(values: np.ndarray) -> np.ndarray:
    if len(values) < 2:
        return np.zeros(len(values))
    order = values.argsort(kind="stable").argsort(kind="stable")
    return order / (len(values) - 1)


def turn_features(turns: RowTurns, similarity: np.ndarray | None = None) -> np.ndarray:
    """One row of surface features per candidate turn (plus ``similarity`` columns when given)."""
    n = turns.n
    position = np.arange(n, dtype=float)
    minute = turns.minute.astype(float)
    columns = [
        turns.user_words, turns.user_chars, turns.question, turns.punctuation, turns.reply_words,
        (minute >= 0) & (minute % 5 == 0), (minute >= 0) & (minute % 10 == 0), turns.gap_before,
        position / max(n - 1, 1), n - 1 - position, position == 0, position == n - 1,
        _rank_pct(turns.user_words), _rank_pct(turns.reply_words), _rank_pct(turns.gap_before),
        turns.row_position, turns.injected_after, _rank_pct(turns.injected_after),
    ]
    matrix = np.column_stack([np.asarray(c, dtype=float) for c in columns]) if n else np.zeros((0, len(columns)))
    if similarity is not None:
        matrix = np.hstack([matrix, similarity])
    return matrix


def row_features(turns: RowTurns, with_trigger: bool) -> np.ndarray:
    """Row-level structure: counts, length statistics, timestamps, positions of extremes."""
    reply, user, gaps = turns.reply_words.astype(float), turns.user_words.astype(float), turns.gap_before[1:]
    n = max(turns.n, 1)

    def stats(x: np.ndarray) -> list[float]:
        return [float(x.mean()), float(x.std()), float(x.min()), float(x.max())] if len(x) else [0.0] * 4

    values = [float(turns.n), *stats(reply), *stats(user), float((reply < SHORT_REPLY_WORDS).sum()),
              float(turns.question.mean()) if turns.n else 0.0,
              float(((turns.minute >= 0) & (turns.minute % 5 == 0)).sum()), turns.span_minutes, *stats(gaps),
              float(reply.argmin()) / n if turns.n else 0.0, float(gaps.argmax() + 1) / n if len(gaps) else 0.0]
    if with_trigger:
        values.append(float(turns.trigger_words))
    return np.asarray(values, dtype=float)


def _folds(groups: Sequence[str], repeat: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Row-index folds with no family on both sides: ``GroupKFold`` for ``repeat`` 0, else families dealt
    to folds in an order seeded by ``repeat``."""
    from sklearn.model_selection import GroupKFold

    families = sorted(set(groups))
    if len(families) < 2:
        return []
    n_splits = min(MAX_FOLDS, len(families))
    if repeat == 0:
        return list(GroupKFold(n_splits=n_splits).split(np.zeros(len(groups)), groups=list(groups)))
    order = np.random.default_rng(repeat).permutation(len(families))
    fold_of = {families[f]: position % n_splits for position, f in enumerate(order)}
    assigned = np.array([fold_of[g] for g in groups])
    return [(np.flatnonzero(assigned != k), np.flatnonzero(assigned == k)) for k in range(n_splits)]


def _classifier(rows: int):
    """Boosted trees; leaves may be small when the training set is (label finders see ~100 rows)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=50, min_samples_leaf=max(2, min(20, rows // 20)), random_state=0)


def _fit(rows: int, x: np.ndarray, y: np.ndarray):
    return _classifier(rows).fit(x, y)


@dataclass(frozen=True)
class Candidates:
    """What a learned finder reads of a row's turns besides their features: which candidates are constraints."""

    is_constraint: np.ndarray

    @property
    def n(self) -> int:
        return len(self.is_constraint)


@dataclass(frozen=True)
class LearnedRows:
    """Rows of one training group: their candidate turns (:class:`RowTurns` or :class:`Candidates`), features
    and families."""

    turns: Sequence[RowTurns | Candidates]
    features: list[np.ndarray]
    families: list[str]

    def slim(self) -> LearnedRows:
        """The same rows with only what a finder reads (what a worker process is sent)."""
        return LearnedRows([Candidates(t.is_constraint) for t in self.turns], self.features, self.families)


def usable_cores() -> int:
    return len(os.sched_getaffinity(0))


def submit(group: LearnedRows, seed: int = 0, jobs: int | None = None) -> Future:
    """Start :func:`learned_finder` of one group in a worker process now (joblib's loky executor, reused by
    every call with the same ``jobs``, default the usable cores); the future's result is its hits."""
    from joblib.externals.loky import get_reusable_executor

    return get_reusable_executor(max_workers=jobs or usable_cores()).submit(_finder_one_thread, group.slim(), seed)


def learned_finders(groups: Sequence[LearnedRows], seed: int = 0, jobs: int | None = None,
                    min_rows: int = PARALLEL_MIN_ROWS) -> list[list[float | None]]:
    """:func:`learned_finder` of every group, spread over ``jobs`` worker processes (default: the usable cores;
    :func:`submit`, one OpenMP thread each) when the groups hold ``min_rows`` rows or more. Each fit has its own
    fixed random state and one thread, so the numbers are those of one group after another; the largest
    groups are sent first."""
    jobs = jobs or usable_cores()
    if jobs < 2 or len(groups) < 2 or sum(len(group.turns) for group in groups) < min_rows:
        return [_finder_one_thread(group, seed) for group in groups]
    order = sorted(range(len(groups)), key=lambda g: -sum(t.n for t in groups[g].turns))
    futures = {g: submit(groups[g], seed, jobs) for g in order}
    return [futures[g].result() for g in range(len(groups))]


def _finder_one_thread(group: LearnedRows, seed: int) -> list[float | None]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return learned_finder(group, seed)


def learned_finder(group: LearnedRows, seed: int = 0, repeats: int = REPEATS) -> list[float | None]:
    """Cross-validated top-1 hit per row, the mean over ``repeats`` fold assignments (None where it could
    not be scored)."""
    runs = [_cross_validated(group, seed, repeat) for repeat in range(repeats)]
    means: list[float | None] = []
    for row_hits in zip(*runs):
        scored = [h for h in row_hits if h is not None]
        means.append(round(sum(scored) / len(scored), 6) if scored else None)
    return means


def _cross_validated(group: LearnedRows, seed: int, repeat: int) -> list[float | None]:
    """Top-1 hit per row under one fold assignment (``repeat``)."""
    hits: list[float | None] = [None] * len(group.turns)
    rng = np.random.default_rng([seed, repeat])
    for train, test in _folds(group.families, repeat):
        xs, ys = [], []
        for r in train:
            turns, x = group.turns[r], group.features[r]
            keep = np.arange(turns.n)
            if turns.n > TRAIN_NEGATIVES_PER_ROW + 2:
                others = np.flatnonzero(~turns.is_constraint)
                chosen = rng.choice(others, size=TRAIN_NEGATIVES_PER_ROW, replace=False)
                keep = np.sort(np.concatenate([np.flatnonzero(turns.is_constraint), chosen]))
            xs.append(x[keep])
            ys.append(turns.is_constraint[keep])
        y = np.concatenate(ys) if ys else np.zeros(0, dtype=bool)
        if y.all() or not y.any():
            continue
        model = _fit(len(y), np.vstack(xs), y)
        scored = [r for r in test if group.turns[r].n]
        if not scored:
            continue
        # one call for the fold (a sample's probability does not depend on the others predicted with it)
        proba = np.round(model.predict_proba(np.vstack([group.features[r] for r in scored]))[:, 1], 6)
        ends = np.cumsum([group.turns[r].n for r in scored])
        for r, row_proba in zip(scored, np.split(proba, ends[:-1])):
            hits[r] = top1_hit(row_proba, group.turns[r].is_constraint)
    return hits


def label_finder(features: np.ndarray, labels: Sequence[str], families: Sequence[str]) -> list[bool | None]:
    """Cross-validated correctness per row of a variant classifier (None where not scored)."""
    correct: list[bool | None] = [None] * len(labels)
    y = np.asarray(labels)
    for train, test in _folds(families):
        if len(set(y[train])) < 2:
            continue
        model = _fit(len(train), features[train], y[train])
        for r, predicted in zip(test, model.predict(features[test])):
            correct[r] = bool(predicted == y[r])
    return correct
