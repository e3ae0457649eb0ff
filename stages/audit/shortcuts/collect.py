"""Collect the shortcut audit while the release's rows stream past, then score every cell.

``ShortcutCollector.add(config, split, row)`` is called once per row of every ``pm_*``,
``explicit_*`` and ``rm_*`` config (rm rows: invariants only); ``finish(embed)`` returns the
table (one record per cell and finder, gate applied) and the family statistics.

Cost control: form finders, the learned form finder and invariants read every row (a row's form
features are a few numbers per candidate turn); the text finders read every base row and, in long
contexts, the Pos-Clean implicit rows of a seeded share of blueprints (``long_sample_fraction``),
scored as they stream so their texts are never held. (The learned form finder once used only that
sample in long contexts: trained and scored on a fifth of the rows, its long cells swung by
+-0.15 around the base cell's value and failed the gate on noise.)
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stages.audit.shortcuts import finders, learned
from stages.audit.shortcuts.gate import ShortcutSettings
from stages.audit.shortcuts.turns import RowInvariants, RowTurns, TextCache, extract

Cell = tuple[str, str, str, str]  # context, constraint_form, dimension, variant
Embed = Callable[[list[str]], np.ndarray]


@dataclass
class _Row:
    cell: Cell
    family: str
    blueprint: str
    turns: RowTurns | None = None  # its candidate turns, until the learned finders have scored them
    hits: dict[str, float] = field(default_factory=dict)


def row_keys(config: str, row: dict[str, Any]) -> tuple[str, str]:
    """A row's (context, constraint_form), from its columns or its config name."""
    context = row.get("context") or config.split("_", 1)[-1]
    form = row.get("constraint_form") or ("explicit" if config.startswith("explicit_") else "implicit")
    return context, form


class ShortcutCollector:
    """Streams rows in, keeps what each finder needs, scores cells at the end."""

    def __init__(self, settings: ShortcutSettings) -> None:
        self.settings = settings
        self.rows: list[_Row] = []                     # every pm/explicit row
        self.invariants: dict[tuple[str, str, str], list[RowInvariants]] = defaultdict(list)
        self.label_rows: list[tuple[Cell, str, str, np.ndarray, np.ndarray]] = []
        self._texts = TextCache()

    def sampled(self, blueprint: str) -> bool:
        """Whether a blueprint's long rows get the costly finders (seeded hash, stable across runs)."""
        digest = hashlib.sha256(f"{self.settings.seed}:{blueprint}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.settings.long_sample_fraction

    def add(self, config: str, split: str, row: dict[str, Any]) -> None:
        context, form = row_keys(config, row)
        if not row.get("messages"):  # not a conversation: an invariant failure, nothing to find in it
            self.invariants[(config, context, row.get("dimension") or "")].append(RowInvariants(no_messages=True))
            return
        dimension = row.get("dimension") or ""
        blueprint = row.get("blueprint_id") or row.get("id")
        variant = row.get("variant") or ("rm" if config.startswith("rm_") else "")
        is_base = context == "base"
        finding = config.startswith(("pm_", "explicit_"))
        text_now = (finding and not is_base and variant == "pos_clean" and form == "implicit"
                    and self.sampled(blueprint))
        turns, invariants = extract(row, keep_texts=(finding and is_base) or text_now, cache=self._texts)
        self.invariants[(config, context, dimension)].append(invariants)
        if not finding or turns.n == 0:
            return
        cell = (context, form, dimension, variant)
        record = _Row(cell, row.get("seed_id") or blueprint, blueprint, turns)
        record.hits = {name: finders.top1_hit(score(turns), turns.is_constraint)
                       for name, score in finders.FORM_FINDERS.items()}
        record.hits["chance"] = finders.chance_top1(turns)
        record.hits["chance_topk"] = finders.chance_topk(turns, finders.TOP_K)
        if text_now:
            record.hits |= finders.similarity(turns, None)[0]
            turns.texts = None
        self.rows.append(record)
        self.label_rows.append((cell, record.family, blueprint, learned.row_features(turns, True),
                                learned.row_features(turns, False)))

    # -- scoring -------------------------------------------------------------------------------------

    def _base_similarity(self, embed: Embed | None) -> dict[int, np.ndarray]:
        """Text-finder hits of base rows (in place) and their similarity features for the learned finder."""
        vectors: dict[str, np.ndarray] = {}
        positions = [p for p, record in enumerate(self.rows) if record.cell[0] == "base"]  # texts kept for these
        if embed is not None and positions:
            base = [self.rows[p].turns for p in positions]
            texts = sorted({t for turns in base for t in [*(turns.texts or []), turns.trigger_text]})
            vectors = dict(zip(texts, embed(texts)))
        features = {}
        for position in positions:
            turns = self.rows[position].turns
            pair = None
            if vectors:
                pair = (np.vstack([vectors[t] for t in turns.texts]), vectors[turns.trigger_text])
            hits, features[position] = finders.similarity(turns, pair)
            self.rows[position].hits |= hits
            turns.texts = None
        return features

    def _learned(self, similarity: dict[int, np.ndarray]) -> None:
        """The learned constraint finders' hits, per (context, dimension) group, fitted in parallel."""
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for position, record in enumerate(self.rows):
            context, _, dimension, _ = record.cell
            groups[(context, dimension)].append(position)
        tasks: list[tuple[str, list[int], learned.LearnedRows]] = []
        for (context, _), positions in sorted(groups.items()):
            turns = [self.rows[p].turns for p in positions]
            variants = [("learned_form", False)] + ([("learned_all", True)] if context == "base" else [])
            for name, with_similarity in variants:
                feats = [learned.turn_features(t, similarity.get(p) if with_similarity else None)
                         for p, t in zip(positions, turns)]
                families = [self.rows[p].family for p in positions]
                tasks.append((name, positions, learned.LearnedRows(turns, feats, families)))
        scored = learned.learned_finders([rows for _, _, rows in tasks], self.settings.seed)
        for (name, positions, _), hits in zip(tasks, scored):
            for position, hit in zip(positions, hits):
                if hit is not None:
                    self.rows[position].hits[name] = hit

    def finish(self, embed: Embed | None) -> list[dict[str, Any]]:
        """Score every cell: the records of the shortcut table (finders, labels, invariants), unjudged."""
        from threadpoolctl import threadpool_limits

        from stages.audit.shortcuts.table import finder_records, invariant_records, label_records

        similarity = self._base_similarity(embed)
        with threadpool_limits(limits=1):  # deterministic, and no OpenMP oversubscription on a busy machine
            self._learned(similarity)
            for record in self.rows:
                record.turns = None
            labels = label_records(self.label_rows, self.settings)
        return [*finder_records(self.rows, self.settings), *labels, *invariant_records(self.invariants)]
