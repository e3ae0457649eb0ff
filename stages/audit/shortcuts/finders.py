"""Constraint finders: heuristics that pick "the constraint" among a row's candidate user turns.

Each finder maps a :class:`~stages.audit.shortcuts.turns.RowTurns` to one score per candidate;
the finder picks the highest score. Ties are broken uniformly at random *in expectation*: the
row's hit is the share of constraint turns among the tied best candidates, so a finder that
cannot tell the turns apart (all scores equal, e.g. no turn lacks a question mark) scores
exactly chance. Top-k retrieval hits use the same tie rule.

Form finders read lengths, punctuation, timestamps and positions only; similarity finders
read the text (TF-IDF, BM25 via ``bm25s``, the audit's embedding model).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from math import comb

import numpy as np

from stages.audit.shortcuts.turns import RowTurns

Scores = np.ndarray
TOP_K = 6  # the paper's RAG baseline retrieves six turns


def _first(mask: np.ndarray) -> Scores:
    """Highest score for the first candidate where ``mask`` holds; all tied when none does."""
    scores = np.full(len(mask), -1.0)
    hits = np.flatnonzero(mask)
    if len(hits):
        scores[hits[0]] = 0.0
    return scores


FORM_FINDERS: dict[str, Callable[[RowTurns], Scores]] = {
    "shortest_reply": lambda t: -t.reply_words.astype(float),
    "longest_reply": lambda t: t.reply_words.astype(float),
    "first_without_question": lambda t: _first(~t.question),
    "first_round_minute": lambda t: _first((t.minute >= 0) & (t.minute % 5 == 0)),
    "first_position": lambda t: -np.arange(t.n, dtype=float),
    "last_position": lambda t: np.arange(t.n, dtype=float),
    "largest_gap_before": lambda t: t.gap_before.astype(float),
    "shortest_user_turn": lambda t: -t.user_words.astype(float),
    "longest_user_turn": lambda t: t.user_words.astype(float),
    "most_injected_after": lambda t: t.injected_after.astype(float),
}


def top1_hit(scores: Scores, is_constraint: np.ndarray) -> float:
    """Share of constraint turns among the best-scoring candidates."""
    if len(scores) == 0:
        return 0.0
    best = scores == scores.max()
    return float(is_constraint[best].sum() / best.sum())


def topk_hit(scores: Scores, is_constraint: np.ndarray, k: int) -> float:
    """Probability that a constraint turn is among the top ``k`` (ties broken at random; the best
    constraint turn counts)."""
    best = 0.0
    for value in scores[is_constraint]:
        above = int((scores > value).sum())
        tied = int((scores == value).sum())
        if above >= k:
            continue
        best = max(best, 1.0 if above + tied <= k else (k - above) / tied)
    return best


def chance_top1(turns: RowTurns) -> float:
    """Chance of a uniform random pick: constraint turns / candidates."""
    return float(turns.is_constraint.sum() / turns.n) if turns.n else 0.0


def chance_topk(turns: RowTurns, k: int) -> float:
    """Chance that a random set of ``k`` candidates contains a constraint turn."""
    n, c = turns.n, int(turns.is_constraint.sum())
    if n == 0 or c == 0:
        return 0.0
    if k >= n:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def outlier_scores(vectors) -> Scores:
    """Least mean cosine to the other candidates scores highest (rows of ``vectors``, dense or
    sparse, unit-norm or zero). O(non-zeros): sum_j x_i.x_j = x_i . sum_j x_j."""
    n = vectors.shape[0]
    if n < 2:
        return np.zeros(n)
    total = np.asarray(vectors.sum(axis=0)).ravel()
    own = np.asarray(vectors.multiply(vectors).sum(axis=1)).ravel() if hasattr(vectors, "multiply") \
        else (vectors * vectors).sum(axis=1)
    mean_to_others = (np.asarray(vectors @ total).ravel() - own) / (n - 1)
    return -np.round(mean_to_others, 6)


def tfidf_vectors(texts: list[str], query: str):
    """TF-IDF fitted on the row's candidates and trigger (sparse, unit rows): (candidates, query)."""
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        matrix = TfidfVectorizer(stop_words="english").fit_transform([*texts, query]).tocsr()
    except ValueError:  # every text is stopwords only
        return sparse.csr_matrix((len(texts), 1)), np.zeros(1)
    return matrix[:-1], matrix[-1].toarray().ravel()


def bm25_scores(texts: list[str], query: str) -> Scores:
    """BM25 scores of the candidates for the trigger as query (``bm25s``, English stopwords)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at INFO
    corpus = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    query_tokens = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
    if not query_tokens:
        return np.zeros(len(texts))
    return np.round(np.asarray(retriever.get_scores(query_tokens), dtype=float), 6)


def similarity(turns: RowTurns, embeddings: tuple[np.ndarray, np.ndarray] | None) -> tuple[dict[str, float], np.ndarray]:
    """Hits of the similarity and retrieval finders for one row (texts must be kept), and the
    per-candidate similarity features the learned finder reads (TF-IDF outlier score and cosine to
    the trigger, BM25 score; with ``embeddings`` also the embedding outlier score and cosine).

    ``embeddings``: unit vectors of the candidates and of the trigger, or None to skip the
    embedding finders.
    """
    texts = turns.texts or []
    constraint = turns.is_constraint
    vectors, query = tfidf_vectors(texts, turns.trigger_text)
    bm25 = bm25_scores(texts, turns.trigger_text)
    outliers = outlier_scores(vectors)
    hits = {
        "tfidf_outlier": top1_hit(outliers, constraint),
        "bm25_trigger_top1": top1_hit(bm25, constraint),
        f"bm25_trigger_top{TOP_K}": topk_hit(bm25, constraint, TOP_K),
    }
    columns = [outliers, np.asarray(vectors @ query).ravel(), bm25]
    if embeddings is not None:
        candidates, trigger = embeddings
        by_trigger = np.round(candidates @ trigger, 6)
        embedded = outlier_scores(candidates)
        hits |= {
            "embedding_outlier": top1_hit(embedded, constraint),
            "embedding_trigger_top1": top1_hit(by_trigger, constraint),
            f"embedding_trigger_top{TOP_K}": topk_hit(by_trigger, constraint, TOP_K),
        }
        columns += [embedded, by_trigger]
    features = np.column_stack(columns) if turns.n else np.zeros((0, len(columns)))
    return hits, features


SIMILARITY_FINDERS = ("tfidf_outlier", "bm25_trigger_top1", f"bm25_trigger_top{TOP_K}",
                      "embedding_outlier", "embedding_trigger_top1", f"embedding_trigger_top{TOP_K}")
TOPK_FINDERS = {f"bm25_trigger_top{TOP_K}", f"embedding_trigger_top{TOP_K}"}
