"""Semantic anti-leakage filter: snippets too close in meaning to a row's constraint or trigger.

The gold-slot filter only catches snippets that name a key entity; a hotel booking made with no
policy check can still echo a "hotel rate cap" constraint. Here each snippet turn is embedded once
(batched, through the audit's cached :class:`~stages.audit.embeddings.Embedder`), and a snippet is
dropped for a blueprint when any of its turns is closer (cosine) to one of the blueprint's
constraints (or to one sentence of a constraint turn that holds several), or to its trigger, than that
blueprint's own background: a percentile of the cosines between the constraint (sentence, trigger) and
the base dialogue's topic filler turns, never below a floor
(with a background of unrelated filler the percentile alone sits where any two unrelated texts
fall, around 0.1-0.2 for MiniLM, and would drop most of a corpus for reasons that are not meaning).

In: snippets (``{"id", "source", "messages"}``) and, per blueprint, its constraint, trigger and
filler texts. Out: which snippets to keep, the reason for each dropped one, the thresholds, and
the cosine distribution before and after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pipeline.vocabulary import DropReason
from stages.audit.embeddings import Embedder


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`])")
MIN_SENTENCE_WORDS = 4


def constraint_sentences(constraints: list[str]) -> list[str]:
    """The sentences of constraint turns that hold more than one (of at least ``MIN_SENTENCE_WORDS`` words).

    A constraint usually rides inside a question about the story ("My talk got accepted ... hotels can't go
    over $180 a night ... Where do I even start?"): embedded whole, the turn is closest to its story, and a
    hotel booking from the corpus sits below the turn's threshold. Each sentence is checked on its own, with
    its own background threshold, so the rule's sentence is compared with the snippets as the rule.
    """
    found: list[str] = []
    for text in constraints:
        pieces = [p for p in _SENTENCE_END.split(" ".join(text.split())) if len(p.split()) >= MIN_SENTENCE_WORDS]
        if len(pieces) > 1:
            found += [p for p in pieces if p not in found]
    return found


@dataclass(frozen=True)
class Verdict:
    """One blueprint's filter result over one source's snippets (row-aligned with the snippets)."""

    reasons: list[DropReason | None]  # None (kept), SEMANTIC_CONSTRAINT or SEMANTIC_TRIGGER
    constraint_threshold: float
    trigger_threshold: float
    nearest_constraint: np.ndarray  # per snippet: highest cosine of any turn to any constraint


class SemanticFilter:
    """Snippet turn vectors by source, computed once; ``judge`` compares them with one blueprint."""

    def __init__(self, embedder: Embedder, snippets: list[dict], percentile: float, floor: float) -> None:
        self.embedder = embedder
        self.percentile = percentile
        self.floor = floor
        self.by_source: dict[str, list[dict]] = {}
        for snippet in snippets:
            self.by_source.setdefault(snippet["source"], []).append(snippet)
        self.index: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}

    def snippet_vectors(self, source: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Turn vectors of one source's snippets, embedded in one batched call the first time it is asked for."""
        if source not in self.index:
            group = self.by_source.get(source, [])
            texts = [content for snippet in group for _, content in snippet["messages"]]
            starts = np.cumsum([0] + [len(snippet["messages"]) for snippet in group[:-1]])
            self.index[source] = ([snippet["id"] for snippet in group], self.embedder.embed(texts), starts)
        return self.index[source]

    @staticmethod
    def query_texts(constraints: list[str], trigger: str | None, background: list[str]) -> list[str]:
        """What :meth:`judge` embeds for one blueprint, in its order: constraints, their sentences, the
        trigger ("" for none) and the background (a stage may embed these for many blueprints at once)."""
        return [*constraints, *constraint_sentences(constraints), trigger or "", *background]

    def threshold(self, background: np.ndarray) -> float:
        """The background percentile, rounded to 4 places (stable across batchings), never below the floor."""
        return max(self.floor, round(float(np.percentile(background, self.percentile)), 4)) if background.size else 1.0

    def judge(self, source: str, snippet_ids: list[str], constraints: list[str], trigger: str | None,
              background: list[str]) -> Verdict:
        """Reasons to drop each of ``snippet_ids`` (snippets of ``source``) for one blueprint.

        ``trigger`` None skips the trigger comparison (attention recovery: the trigger is about the
        interruption, which the injected problem-solving traces continue by design).
        """
        ids, vectors, starts = self.snippet_vectors(source)
        texts = self.query_texts(constraints, trigger, background)
        n_c, n_p = len(constraints), len(texts) - len(constraints) - 1 - len(background)
        queries = self.embedder.embed(texts)
        c_vec, p_vec = queries[:n_c], queries[n_c:n_c + n_p]
        t_vec, b_vec = queries[n_c + n_p], queries[n_c + n_p + 1:]
        c_threshold = self.threshold(b_vec @ c_vec.T)
        p_thresholds = np.array([self.threshold(b_vec @ vector) for vector in p_vec])
        t_threshold = self.threshold(b_vec @ t_vec) if trigger is not None else 1.0
        if not ids:
            return Verdict([], c_threshold, t_threshold, np.zeros(0))
        to_constraint = np.round(np.maximum.reduceat((vectors @ c_vec.T).max(axis=1), starts), 4)
        to_trigger = np.round(np.maximum.reduceat(vectors @ t_vec, starts), 4)
        near_part = (np.logical_or.reduceat((np.round(vectors @ p_vec.T, 4) > p_thresholds).any(axis=1), starts)
                     if n_p else np.zeros(len(ids), dtype=bool))
        position = {snippet_id: i for i, snippet_id in enumerate(ids)}
        rows = np.array([position[snippet_id] for snippet_id in snippet_ids], dtype=int)
        reasons: list[DropReason | None] = []
        for row in rows:
            if to_constraint[row] > c_threshold or near_part[row]:
                reasons.append(DropReason.SEMANTIC_CONSTRAINT)
            elif to_trigger[row] > t_threshold:
                reasons.append(DropReason.SEMANTIC_TRIGGER)
            else:
                reasons.append(None)
        return Verdict(reasons, c_threshold, t_threshold, to_constraint[rows] if len(rows) else np.zeros(0))
