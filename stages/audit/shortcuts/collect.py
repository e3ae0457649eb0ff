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
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stages.audit.shortcuts import finders, learned
from stages.audit.shortcuts.gate import ShortcutSettings
from stages.audit.shortcuts.turns import RowInvariants, RowTurns, TextCache, extract

Cell = tuple[str, str, str, str]  # context, constraint_form, dimension, variant
Embed = Callable[[list[str]], np.ndarray]
FINDING = ("pm_", "explicit_")  # configs whose rows the finders score (rm_ rows: invariants only)
EARLY_MIN_ROWS = 50  # a complete group is fitted while the audit reads on when it has this many rows


@dataclass
class _Row:
    cell: Cell
    family: str
    blueprint: str
    turns: RowTurns | None = None  # its candidate turns, until the learned finders have scored them
    hits: dict[str, float] = field(default_factory=dict)


def config_context(config: str) -> str:
    """The context a config's name says its rows are in (``pm_40k`` -> ``40k``)."""
    return config.split("_", 1)[-1]


def row_keys(config: str, row: dict[str, Any]) -> tuple[str, str]:
    """A row's (context, constraint_form), from its columns or its config name."""
    context = row.get("context") or config_context(config)
    form = row.get("constraint_form") or ("explicit" if config.startswith("explicit_") else "implicit")
    return context, form


class ShortcutCollector:
    """Streams rows in, keeps what each finder needs, scores cells at the end."""

    def __init__(self, settings: ShortcutSettings, early_min_rows: int = EARLY_MIN_ROWS) -> None:
        self.settings = settings
        self.rows: list[_Row] = []                     # every pm/explicit row
        self.invariants: dict[tuple[str, str, str], list[RowInvariants]] = defaultdict(list)
        self.label_rows: list[tuple[Cell, str, str, np.ndarray, np.ndarray]] = []
        self._texts = TextCache()
        self.early_min_rows = early_min_rows
        self._early: dict[tuple[str, str], tuple[list[int], Future]] = {}  # group -> its positions, started fit

    def read_only(self, configs: Sequence[str]) -> None:
        """Say that only ``configs`` remain to be added. The contexts that none of them holds (by name) are
        complete: their learned form finders start in worker processes (:func:`learned.submit`), fitting while
        the rest is read (groups of ``early_min_rows`` rows or more; base's learned_all waits for its similarity
        features, which :meth:`finish` computes).
        Same numbers as fitting at :meth:`finish`, which fits a group again if a row came for it afterwards."""
        if learned.usable_cores() < 2:
            return
        still = {config_context(config) for config in configs if config.startswith(FINDING)}
        for key, positions in self._groups().items():
            if key[0] not in still and key not in self._early and len(positions) >= self.early_min_rows:
                fit = learned.submit(self._learned_rows(positions, None), self.settings.seed)
                self._early[key] = (positions, fit)

    @property
    def started(self) -> list[tuple[str, str]]:
        """The (context, dimension) groups whose learned form finders were started while reading."""
        return sorted(self._early)

    def _groups(self) -> dict[tuple[str, str], list[int]]:
        """Row positions by (context, dimension): the learned constraint finders' training groups."""
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for position, record in enumerate(self.rows):
            groups[(record.cell[0], record.cell[2])].append(position)
        return groups

    def _learned_rows(self, positions: list[int], similarity: dict[int, np.ndarray] | None) -> learned.LearnedRows:
        turns = [self.rows[p].turns for p in positions]
        features = [learned.turn_features(t, similarity.get(p) if similarity is not None else None)
                    for p, t in zip(positions, turns)]
        return learned.LearnedRows(turns, features, [self.rows[p].family for p in positions])

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
        finding = config.startswith(FINDING)
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
        """The learned constraint finders' hits, per (context, dimension) group: those started while reading
        (:meth:`read_only`), then the rest, fitted in parallel."""
        tasks: list[tuple[str, list[int], learned.LearnedRows | Future]] = []
        for key, positions in sorted(self._groups().items()):
            early = self._early.get(key)
            started = early[1] if early is not None and early[0] == positions else None
            form = started if started is not None else self._learned_rows(positions, None)
            tasks.append(("learned_form", positions, form))
            if key[0] == "base":
                tasks.append(("learned_all", positions, self._learned_rows(positions, similarity)))
        todo = [rows for _, _, rows in tasks if not isinstance(rows, Future)]
        fitted = iter(learned.learned_finders(todo, self.settings.seed))
        for name, positions, rows in tasks:
            hits = rows.result() if isinstance(rows, Future) else next(fitted)
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
