"""Lexical leakage audit (TriggerBench Table 8), per row and per group.

Content words come from :func:`pipeline.text.content_words` (scikit-learn's English stopword
list, words under 4 characters dropped), the same function the blueprint lint uses.

Per row: the constraint side is the union of the content words of all constraint turns (two
for if-then), the trigger side those of the trigger turn; Jaccard = |C∩T| / |C∪T|, overlap
coefficient = |C∩T| / min(|C|, |T|) (0 when either side is empty). For long contexts the
distractor-side check counts injected turns sharing content words with the gold slots and
injected turns mentioning a gold slot (whole word, case-insensitive).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.text import content_words, mentions, strip_timestamp


@dataclass(frozen=True)
class LexicalScores:
    """Constraint-trigger overlap of one row."""

    jaccard: float
    overlap: float
    shared: tuple[str, ...]
    constraint_words: int
    trigger_words: int

    @property
    def shared_count(self) -> int:
        return len(self.shared)


@dataclass(frozen=True)
class DistractorCheck:
    """How many injected turns touch the gold slots (lexically or by mention)."""

    injected: int
    sharing_slot_words: int
    mentioning_slot: int
    shared_words: tuple[str, ...]


def overlap_scores(constraint_texts: Sequence[str], trigger_text: str) -> LexicalScores:
    """Jaccard / overlap coefficient / shared words between constraint text(s) and the trigger."""
    constraint: set[str] = set()
    for text in constraint_texts:
        constraint |= content_words(text)
    trigger = content_words(trigger_text)
    shared = constraint & trigger
    union = constraint | trigger
    smaller = min(len(constraint), len(trigger))
    return LexicalScores(
        jaccard=len(shared) / len(union) if union else 0.0,
        overlap=len(shared) / smaller if smaller else 0.0,
        shared=tuple(sorted(shared)),
        constraint_words=len(constraint),
        trigger_words=len(trigger),
    )


def distractor_check(injected_texts: Iterable[str], gold_slots: Sequence[str]) -> DistractorCheck:
    """Count injected turns that share content words with, or mention, a gold slot.

    Texts may carry a leading ``[YYYY-MM-DDTHH:MM]`` stamp; it is ignored.
    """
    texts = list(injected_texts)
    slot_words: set[str] = set()
    for slot in gold_slots:
        slot_words |= content_words(slot)
    slots = [(slot.strip().lower(), slot) for slot in gold_slots if slot and slot.strip()]
    # Exact prefilter: a content word or a whole-word mention of a slot is also a substring of the
    # lowercased text, so when no slot word or slot occurs anywhere in the row's injected turns
    # (the usual case) every count is zero and the long turns need no per-turn work.
    blob = "\n".join(texts).lower()
    words = {word for word in slot_words if word in blob}
    phrases = [(low, slot) for low, slot in slots if low in blob]
    if not words and not phrases:
        return DistractorCheck(len(texts), 0, 0, ())
    sharing = mentioning = 0
    shared_words: set[str] = set()
    for index in _candidate_turns(texts, blob, [*words, *(low for low, _ in phrases)]):
        text = strip_timestamp(texts[index])
        lowered = text.lower()
        if any(word in lowered for word in words):
            common = content_words(text) & words
            if common:
                sharing += 1
                shared_words |= common
        if any(low in lowered and mentions(text, slot) for low, slot in phrases):
            mentioning += 1
    return DistractorCheck(len(texts), sharing, mentioning, tuple(sorted(shared_words)))


def _candidate_turns(texts: Sequence[str], blob: str, needles: Sequence[str]) -> list[int]:
    """Indices of the turns whose lowercased text contains any needle, found by scanning ``blob``
    (the turns joined by newlines, lowercased) once per needle."""
    ends = list(accumulate(len(text) + 1 for text in texts))
    if not ends or ends[-1] - 1 != len(blob):  # lowercasing changed lengths (rare Unicode): check every turn
        return list(range(len(texts)))
    found: set[int] = set()
    for needle in needles:
        position = blob.find(needle)
        while position != -1:
            found.add(bisect_right(ends, position))
            position = blob.find(needle, position + 1)
    return sorted(found)


def _message_text(messages: Sequence[dict[str, Any]], index: int) -> str:
    return strip_timestamp(messages[index]["content"] or "")


def audit_row(row: dict[str, Any]) -> dict[str, Any]:
    """Per-row lexical audit columns for one ``pm_*`` / ``explicit_*`` row."""
    messages = row["messages"]
    constraint = [_message_text(messages, i) for i in row.get("constraint_turns") or []]
    trigger_index = row.get("trigger_turn")
    trigger = _message_text(messages, len(messages) - 1 if trigger_index is None else trigger_index)
    scores = overlap_scores(constraint, trigger)
    audit: dict[str, Any] = {
        "jaccard": scores.jaccard,
        "overlap": scores.overlap,
        "shared_count": scores.shared_count,
        "shared_words": list(scores.shared),
        "constraint_words": scores.constraint_words,
        "trigger_words": scores.trigger_words,
        "injected_turns": None,
        "injected_sharing_slot_words": None,
        "injected_mentioning_slot": None,
        "injected_slot_words": None,
    }
    injected_turns = row.get("injected_turns")
    if injected_turns is not None:
        check = distractor_check([messages[i]["content"] or "" for i in injected_turns], row.get("gold_slots") or [])
        audit.update(
            injected_turns=check.injected,
            injected_sharing_slot_words=check.sharing_slot_words,
            injected_mentioning_slot=check.mentioning_slot,
            injected_slot_words=list(check.shared_words),
        )
    return audit


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and population standard deviation (None for an empty group)."""
    if not values:
        return None, None
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std())


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Table-8 figures for one group of audited rows.

    ``n``, Jaccard and overlap mean/std, mean raw shared count, zero-overlap %, and the
    distractor-side check (rows with injected turns; % of those with any injected turn
    sharing slot words / mentioning a slot).
    """
    jaccard_mean, jaccard_std = mean_std([r["jaccard"] for r in rows])
    overlap_mean, overlap_std = mean_std([r["overlap"] for r in rows])
    shared_mean, _ = mean_std([r["shared_count"] for r in rows])
    zero = sum(1 for r in rows if r["shared_count"] == 0)
    long_rows = [r for r in rows if r["injected_turns"]]
    injected_mean, _ = mean_std([r["injected_turns"] for r in long_rows])
    return {
        "n": len(rows),
        "jaccard_mean": jaccard_mean,
        "jaccard_std": jaccard_std,
        "overlap_mean": overlap_mean,
        "overlap_std": overlap_std,
        "shared_mean": shared_mean,
        "zero_overlap_pct": 100.0 * zero / len(rows) if rows else None,
        "rows_with_injected": len(long_rows),
        "injected_turns_mean": injected_mean,
        "injected_slot_word_rows_pct": (
            100.0 * sum(1 for r in long_rows if r["injected_sharing_slot_words"]) / len(long_rows) if long_rows else None
        ),
        "injected_slot_mention_rows_pct": (
            100.0 * sum(1 for r in long_rows if r["injected_mentioning_slot"]) / len(long_rows) if long_rows else None
        ),
    }
