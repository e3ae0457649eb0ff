"""The shortcut table: one record per (cell, finder), label pair or invariant.

Record columns (``audits/shortcuts.csv``): ``section`` (constraint_finder, label_finder,
invariant), ``config`` (invariants) , ``context``, ``constraint_form``, ``dimension``,
``variant`` (a label pair such as ``pos_clean~neg_clean`` for label finders), ``finder``,
``kind`` (form or text), ``n`` rows, ``families``, ``value`` (hit rate, accuracy or count),
``baseline`` (chance, majority share or limit), ``ci_low`` / ``ci_high`` (95%, family
bootstrap), then ``gated`` and ``fails`` from :func:`stages.audit.shortcuts.gate.judge`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.audit.shortcuts import finders, learned
from stages.audit.shortcuts.gate import ShortcutSettings
from stages.audit.shortcuts.stats import family_bootstrap
from stages.audit.shortcuts.turns import RowInvariants

FORM = (*finders.FORM_FINDERS, "learned_form")
TEXT = (*finders.SIMILARITY_FINDERS, "learned_all")
COLUMNS = ("section", "config", "context", "constraint_form", "dimension", "variant", "finder", "kind", "n",
           "families", "value", "baseline", "ci_low", "ci_high", "gated", "fails")
LABEL_PAIRS = {"pos_clean~neg_clean": ("pos_clean", "neg_clean", True),
               "pos_clean~pos_over": ("pos_clean", "pos_over", False)}  # (a, b, trigger-turn features used)


def _record(section: str, **values: Any) -> dict[str, Any]:
    return {column: values.get(column) for column in COLUMNS} | {"section": section}


def _cell_order(keys: Sequence[str]):
    from stages.audit.run import group_key_order  # the paper's orders (base first); lazy: run imports us

    return group_key_order(keys)


CELL_KEYS = ("context", "constraint_form", "dimension", "variant")


def finder_records(rows: Sequence[Any], settings: ShortcutSettings) -> list[dict[str, Any]]:
    """Hit rate vs chance for every finder in every (context, form, dimension, variant) cell."""
    cells: dict[tuple, list[Any]] = defaultdict(list)
    for row in rows:
        cells[row.cell].append(row)
    records = []
    for cell in sorted(cells, key=_cell_order(CELL_KEYS)):
        members = cells[cell]
        context, form, dimension, variant = cell
        for finder in (*FORM, *TEXT):
            scored = [r for r in members if finder in r.hits]
            if not scored:
                continue
            chance_key = "chance_topk" if finder in finders.TOPK_FINDERS else "chance"
            families = [r.family for r in scored]
            value, low, high = family_bootstrap([r.hits[finder] for r in scored], families, seed=settings.seed)
            records.append(_record(
                "constraint_finder", context=context, constraint_form=form, dimension=dimension, variant=variant,
                finder=finder, kind="form" if finder in FORM else "text", n=len(scored), families=len(set(families)),
                value=value, baseline=float(np.mean([r.hits[chance_key] for r in scored])), ci_low=low, ci_high=high))
    return records


def label_records(label_rows: Sequence[tuple], settings: ShortcutSettings) -> list[dict[str, Any]]:
    """Cross-validated variant-classifier accuracy vs majority per (context, form, dimension, pair)."""
    groups: dict[tuple[str, str, str], list[tuple]] = defaultdict(list)
    for entry in label_rows:
        context, form, dimension, _ = entry[0]
        groups[(context, form, dimension)].append(entry)
    records = []
    for (context, form, dimension), entries in sorted(groups.items(), key=lambda g: _cell_order(CELL_KEYS[:3])(g[0])):
        for pair, (a, b, with_trigger) in LABEL_PAIRS.items():
            chosen = [e for e in entries if e[0][3] in (a, b)]
            labels = [e[0][3] for e in chosen]
            if len(set(labels)) < 2:
                continue
            features = np.vstack([e[3] if with_trigger else e[4] for e in chosen])
            families = [e[1] for e in chosen]
            correct = learned.label_finder(features, labels, families)
            scored = [(float(c), f) for c, f in zip(correct, families) if c is not None]
            majority = max(labels.count(a), labels.count(b)) / len(labels)
            value, low, high = (family_bootstrap([c for c, _ in scored], [f for _, f in scored], seed=settings.seed)
                                if scored else (None, None, None))
            records.append(_record(
                "label_finder", context=context, constraint_form=form, dimension=dimension, variant=pair,
                finder="structure_classifier", kind="form", n=len(scored), families=len(set(families)),
                value=value, baseline=majority, ci_low=low, ci_high=high))
    return records



def invariant_records(invariants: dict[tuple[str, str, str], list[RowInvariants]]) -> list[dict[str, Any]]:
    """Per (config, dimension): rows breaking each invariant, user turns per minute, smallest gap,
    injected turns with time expressions (and per pattern)."""
    records = []
    order = _cell_order(("context", "dimension"))
    for (config, context, dimension), rows in sorted(invariants.items(), key=lambda g: (order(g[0][1:]), g[0][0])):
        gaps = [r.min_gap_minutes for r in rows if r.min_gap_minutes is not None]
        patterns: dict[str, int] = defaultdict(int)
        for r in rows:
            for name, count in r.injected_time_patterns.items():
                patterns[name] += count
        values = {
            "no_messages_rows": sum(r.no_messages for r in rows),
            "role_break_rows": sum(r.role_breaks > 0 for r in rows),
            "not_user_first_rows": sum(r.first_not_user for r in rows),
            "not_user_last_rows": sum(r.last_not_user for r in rows),
            "backwards_rows": sum(r.backwards > 0 for r in rows),
            "missing_stamp_rows": sum(r.missing_stamps > 0 for r in rows),
            "max_user_turns_per_minute": max((r.max_user_per_minute for r in rows), default=0),
            "median_max_user_turns_per_minute": float(np.median([r.max_user_per_minute for r in rows])),
            "min_gap_minutes": min(gaps) if gaps else None,
            "injected_time_turns": sum(r.injected_time_turns for r in rows),
            **{f"injected_time_{name}": count for name, count in sorted(patterns.items())},
        }
        for name, value in values.items():
            records.append(_record("invariant", config=config, context=context, dimension=dimension, finder=name,
                                   kind="form", n=len(rows), value=value))
    return records
