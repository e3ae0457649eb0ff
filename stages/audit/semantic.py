"""Semantic leakage audit (TriggerBench Table 9): cosine C-T, C-Θ, T-Θ, Θ-Θ on base rows.

Per row: C are the constraint utterances (one or two), T the trigger utterance, Θ the
topic-aligned filler messages (both roles; the row's ``filler_turns``), timestamps stripped.
Each utterance is embedded on its own (unit vectors, so cosine is a dot product), then:
C-T = mean over constraint turns of cos(C_i, T); C-Θ = mean over (C_i, Θ_j); T-Θ = mean over
Θ_j; Θ-Θ = mean over unordered pairs of distinct filler turns (None with fewer than two).
All distinct texts of the release are embedded in one batched, cached call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.text import strip_timestamp
from stages.audit.embeddings import Embedder
from stages.audit.lexical import mean_std

PAIRS = ("ct", "c_theta", "t_theta", "theta_theta")
ROUND_DIGITS = 6


@dataclass(frozen=True)
class Utterances:
    """The C, T and Θ texts of one base row."""

    constraint: tuple[str, ...]
    trigger: str
    filler: tuple[str, ...]


def filler_indices(row: dict[str, Any]) -> list[int]:
    """The row's Θ turns: ``filler_turns`` when present, else every message that is not a
    constraint, trigger, resolution or injected turn."""
    if row.get("filler_turns") is not None:
        return list(row["filler_turns"])
    special = set(row.get("constraint_turns") or []) | set(row.get("injected_turns") or [])
    for key in ("trigger_turn", "resolution_turn"):
        if row.get(key) is not None:
            special.add(row[key])
    special.add(len(row["messages"]) - 1)
    return [i for i in range(len(row["messages"])) if i not in special]


def utterances(row: dict[str, Any]) -> Utterances:
    """Extract C, T and Θ texts (timestamps stripped) from a row."""
    messages = row["messages"]

    def text(index: int) -> str:
        return strip_timestamp(messages[index]["content"] or "")

    trigger_index = row.get("trigger_turn")
    return Utterances(
        constraint=tuple(text(i) for i in row.get("constraint_turns") or []),
        trigger=text(len(messages) - 1 if trigger_index is None else trigger_index),
        filler=tuple(text(i) for i in filler_indices(row)),
    )


def row_similarities(c: np.ndarray, t: np.ndarray, theta: np.ndarray) -> dict[str, float | int | None]:
    """Mean cosines for one row from unit vectors: ``c`` (k, d), ``t`` (d,), ``theta`` (m, d).

    Also ``t_rank``: the trigger's rank among {T} ∪ Θ by mean cosine to the constraint turns
    (1 = a retriever querying with C would fetch the trigger before every filler turn).
    """
    result: dict[str, float | int | None] = {pair: None for pair in PAIRS}
    if len(c):
        result["ct"] = float((c @ t).mean())
    if len(theta):
        result["t_theta"] = float((theta @ t).mean())
        if len(c):
            result["c_theta"] = float((c @ theta.T).mean())
    if len(theta) >= 2:
        gram = theta @ theta.T
        upper = gram[np.triu_indices(len(theta), k=1)]
        result["theta_theta"] = float(upper.mean())
    rounded = {k: (round(v, ROUND_DIGITS) if v is not None else None) for k, v in result.items()}
    rank = None
    if len(c) and len(theta):
        rank = 1 + int(np.sum((theta @ c.T).mean(axis=1) > (c @ t).mean()))
    return rounded | {"t_rank": rank}


def audit_rows(rows: Sequence[dict[str, Any]], embedder: Embedder) -> list[dict[str, Any]]:
    """Per-row ``cos_*`` columns (plus ``n_theta``) for base rows, row-aligned with ``rows``."""
    parts = [utterances(row) for row in rows]
    texts: list[str] = []
    for part in parts:
        texts.extend(part.constraint)
        texts.append(part.trigger)
        texts.extend(part.filler)
    distinct = list(dict.fromkeys(texts))
    matrix = embedder.embed(distinct)
    index = {text: i for i, text in enumerate(distinct)}
    audited = []
    for part in parts:
        c = matrix[[index[x] for x in part.constraint]] if part.constraint else matrix[:0]
        theta = matrix[[index[x] for x in part.filler]] if part.filler else matrix[:0]
        sims = row_similarities(c, matrix[index[part.trigger]], theta)
        audited.append({f"cos_{pair}": sims[pair] for pair in PAIRS}
                       | {"t_rank": sims["t_rank"], "n_theta": len(part.filler)})
    return audited


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Table-9 figures for one group of audited rows: mean and population std per pair, and the
    share of rows whose trigger is the constraint's nearest neighbour among {T} ∪ Θ beside its
    chance level (mean of 1 / (|Θ| + 1))."""
    summary: dict[str, Any] = {"n": len(rows)}
    for pair in PAIRS:
        values = [r[f"cos_{pair}"] for r in rows if r.get(f"cos_{pair}") is not None]
        summary[f"{pair}_mean"], summary[f"{pair}_std"] = mean_std(values)
    ranked = [r for r in rows if r.get("t_rank") is not None]
    summary["t_top1_pct"] = 100.0 * sum(1 for r in ranked if r["t_rank"] == 1) / len(ranked) if ranked else None
    summary["t_top1_chance_pct"] = (100.0 * float(np.mean([1 / (r["n_theta"] + 1) for r in ranked]))
                                    if ranked else None)
    return summary
