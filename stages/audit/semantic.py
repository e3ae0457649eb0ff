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


def row_similarities(c: np.ndarray, t: np.ndarray, theta: np.ndarray) -> dict[str, float | None]:
    """Mean cosines for one row from unit vectors: ``c`` (k, d), ``t`` (d,), ``theta`` (m, d)."""
    result: dict[str, float | None] = {pair: None for pair in PAIRS}
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
    return {k: (round(v, ROUND_DIGITS) if v is not None else None) for k, v in result.items()}


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
        audited.append({f"cos_{pair}": value for pair, value in sims.items()} | {"n_theta": len(part.filler)})
    return audited


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Table-9 figures (mean and population std per pair) for one group of audited rows."""
    summary: dict[str, Any] = {"n": len(rows)}
    for pair in PAIRS:
        values = [r[f"cos_{pair}"] for r in rows if r.get(f"cos_{pair}") is not None]
        summary[f"{pair}_mean"], summary[f"{pair}_std"] = mean_std(values)
    return summary
