"""The distractor part of the dataset card: pool filters, timing, semantic filter, coverage gaps.

In: a build's :class:`~pipeline.runner.RunResult` (the ``distractor_pool``, ``stretch`` and ``split``
outputs). Out: markdown (``distractor_section``), asked for by the release writer through
:meth:`DistractorPool.card_text <stages.distractors.pool.DistractorPool.card_text>`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime
from statistics import median
from typing import TYPE_CHECKING

from pipeline.stats import DIMENSION_ORDER
from pipeline.vocabulary import DropReason
from stages.distractors.units import TIME_PATTERNS

if TYPE_CHECKING:
    from pipeline.runner import RunResult


def distractor_section(run: RunResult) -> str:
    """Drop counts per filter and source (pool), and unfillable lengths per dimension (stretch)."""
    if "distractor_pool" not in run.outputs:
        return ""
    filters = run.outputs["distractor_pool"].stats.get("filters", {})
    lines = ["Snippets are runs of whole user/assistant exchanges cut from each corpus. An exchange holding a time "
             "expression is dropped (timestamps stay consistent); a snippet naming a blueprint's gold slot is never "
             "injected into that blueprint's rows.\n",
             "| source | conversations | exchanges dropped: time expression | dropped: too long | snippets | "
             "opening mid-conversation | skipped for a gold slot (blueprint x snippet) |", "|---|---|---|---|---|---|---|"]
    stretch = run.outputs.get("stretch")
    gold: Counter[str] = Counter()
    seen: set[str] = set()
    for plan in stretch.items if stretch else []:
        if plan["blueprint_id"] not in seen:
            seen.add(plan["blueprint_id"])
            gold[plan["source"]] += plan["filtered"]["gold_slot"]
    for source, counts in sorted(filters.items()):
        time_dropped, too_long = counts[DropReason.TIME_EXPRESSION.value], counts[DropReason.TOO_LONG.value]
        lines.append(f"| {source} | {counts['conversations']} | {time_dropped} | {too_long} | "
                     f"{counts['snippets']} | {counts.get('mid_conversation', 0)} | {gold.get(source, 0)} |")
    multiwoz = filters.get("multiwoz", {})
    if multiwoz.get("mid_conversation"):
        lines += ["", "A snippet *opening mid-conversation* starts after a cut exchange, so its first user turn may answer "
                  "a question the reader never saw (\"Yes, book it for me\"). Keeping only dialogue openings would leave "
                  f"this MultiWOZ corpus ({multiwoz['conversations']} dialogues, about {multiwoz['opening_tokens'] / 1000:.0f}k "
                  "tokens of openings) too small for 80k and 100k "
                  "rows; the full corpus (`pfb30/multi_woz_v22`) would allow it, which this release does not do.", ""]
    lines += _time_pattern_table(filters)
    lines += _timing_table(stretch.items if stretch else [])
    dimension_of = {item["id"]: item["blueprint"]["dimension"] for item in run.outputs["split"].items}
    lines += _semantic_table(stretch.items if stretch else [], dimension_of)
    gaps: dict[str, Counter[tuple[str, str]]] = {DropReason.POOL_TOO_SMALL.value: Counter(),
                                                 DropReason.TIME_WINDOW_TOO_SHORT.value: Counter()}
    for dropped in stretch.dropped if stretch else []:
        if dropped.reason in gaps:
            blueprint, _, context = dropped.item_id.partition("@")
            gaps[dropped.reason][(dimension_of.get(blueprint, "?"), context)] += 1
    unfillable, too_short = gaps[DropReason.POOL_TOO_SMALL.value], gaps[DropReason.TIME_WINDOW_TOO_SHORT.value]
    if too_short:
        lines.insert(0, _time_gap(too_short) + "\n")
    if unfillable:
        lines.insert(0, _coverage_gap(unfillable) + "\n")
    if unfillable or too_short:
        lines += ["", "Plans without a row (listed in `exclusions/stretch.jsonl`): `pool_too_small`, the corpus cannot "
                  "fill the length; `time_window_too_short`, a deadline leaves too little time for a person to read and "
                  "type the injected exchanges:", "",
                  "| dimension | context | pool_too_small | time_window_too_short |", "|---|---|---|---|"]
        order = {name: index for index, name in enumerate(DIMENSION_ORDER)}
        for dimension, context in sorted(set(unfillable) | set(too_short),
                                         key=lambda k: (order.get(k[0], 9), int(k[1][:-1]))):
            lines.append(f"| {dimension} | {context} | {unfillable[(dimension, context)]} | "
                         f"{too_short[(dimension, context)]} |")
    return "\n".join(lines) + "\n"


GAP_FILLERS = {  # Hub datasets that would fill a gap the offline corpora leave
    "safe_coding": "nebius/SWE-agent-trajectories (SWE-agent runs; needs a loader for its row format)",
    "attention_recovery": "nebius/SWE-agent-trajectories for coding interruptions; open-thoughts/OpenThoughts-114k "
                          "for math",
}


def _coverage_gap(unfillable: Counter) -> str:
    """One quoted line naming the lengths that have too few rows and the Hub source that fills them."""
    parts = [f"{dimension} at {context}: {count} blueprints" for (dimension, context), count
             in sorted(unfillable.items(), key=lambda kv: (kv[0][0], int(kv[0][1][:-1])))]
    sources = sorted({GAP_FILLERS.get(dimension, "a larger local corpus via --distractors-dir")
                      for dimension, _ in unfillable})
    return (f"> **Coverage gap**: the offline distractor corpora cannot fill {'; '.join(parts)} "
            f"(no rows at those lengths, reason `pool_too_small`). Filled from the Hub by: {'; '.join(sources)}.")


def _time_gap(too_short: Counter) -> str:
    """One quoted line naming the temporal-grounding rows a deadline keeps out of long contexts."""
    parts = [f"{dimension} at {context}: {count} blueprints" for (dimension, context), count
             in sorted(too_short.items(), key=lambda kv: (kv[0][0], int(kv[0][1][:-1])))]
    return (f"> **Deadline gap**: {'; '.join(parts)} have no row (reason `time_window_too_short`): the time between "
            "their constraint and trigger is fixed by the deadline and cannot hold that much conversation at a "
            "person's pace. Seeds with longer deadlines (hours or days) fill these lengths.")


def _semantic_table(plans: list[dict], dimension_of: dict[str, str]) -> list[str]:
    """Snippets skipped by the semantic filter per dimension, and nearest-to-constraint cosines before/after."""
    seen: dict[str, dict] = {}
    for plan in plans:
        if plan.get("semantic") and plan["blueprint_id"] not in seen:
            seen[plan["blueprint_id"]] = plan
    if not seen:
        return []
    by_dimension: dict[str, list[dict]] = defaultdict(list)
    for blueprint, plan in seen.items():
        by_dimension[dimension_of.get(blueprint, "?")].append(plan)
    lines = ["", "Semantic anti-leakage filter (per blueprint; the same at every length): snippets skipped because a "
             "turn is closer to a constraint (or to one sentence of a constraint turn), or to the trigger, than the "
             "blueprint's background (p95 of its constraint-, sentence- or trigger-to-filler cosines, floor 0.3); "
             "the threshold is the whole constraint turn's; cosines are each snippet's closest turn to a "
             "constraint, median over blueprints of the per-blueprint p95:", "",
             "| dimension | blueprints | skipped: constraint | skipped: trigger | median threshold | "
             "p95 cosine before | p95 cosine after |", "|---|---|---|---|---|---|---|"]
    order = {name: index for index, name in enumerate(DIMENSION_ORDER)}
    for dimension in sorted(by_dimension, key=lambda d: order.get(d, 9)):
        group = by_dimension[dimension]
        before = [p["semantic"]["nearest_constraint_before"]["p95"] for p in group if p["semantic"]["nearest_constraint_before"]]
        after = [p["semantic"]["nearest_constraint_after"]["p95"] for p in group if p["semantic"]["nearest_constraint_after"]]
        skipped = [sum(p["filtered"].get(reason.value, 0) for p in group)
                   for reason in (DropReason.SEMANTIC_CONSTRAINT, DropReason.SEMANTIC_TRIGGER)]
        lines.append(f"| {dimension} | {len(group)} | {skipped[0]} | {skipped[1]} | "
                     f"{median(p['semantic']['constraint_threshold'] for p in group):.3f} | "
                     f"{median(before) if before else 0:.3f} | {median(after) if after else 0:.3f} |")
    return lines


def _timing_table(plans: list[dict]) -> list[str]:
    """Per length: gaps between injected user turns, the busiest minute, spans, compressed plans."""
    by_context: dict[str, list[dict]] = defaultdict(list)
    for plan in plans:
        by_context[plan["context"]].append(plan)
    if not by_context:
        return []
    lines = ["", "Injected snippets are spread over the conversation's exchange boundaries (attention recovery: one "
             "block after the interruption). Their user turns' timestamps follow a seeded typing-and-reading model "
             "(`stages/timing.py`) on a waking clock (07:00-23:30; nights do not count); base gaps are kept, the "
             "trigger keeps its time and earlier turns move back. "
             "Temporal-grounding rows also keep the constraint's time, so the deadline keeps its meaning; what does not "
             "fit the base gaps' slack is compressed (scale < 1). Share after the constraint: the part of the injected "
             "tokens that lies between the constraint and the trigger.", "",
             "| context | plans | median gap (min) | most injected user turns in one minute | median span (h) | "
             "median share after the constraint | compressed plans | median scale of those |",
             "|---|---|---|---|---|---|---|---|"]
    for context in sorted(by_context, key=lambda c: int(c[:-1])):
        group = by_context[context]
        gaps, busiest = [], 0
        for plan in group:
            stamps = plan["timestamps"]
            busiest = max([busiest, *Counter(stamps).values()])
            minutes = [datetime.fromisoformat(at) for at in stamps]  # TIME_FORMAT is ISO; 20x faster than strptime
            gaps += [(b - a).total_seconds() / 60 for a, b in zip(minutes, minutes[1:])]
        spans = [plan["timing"]["span_minutes"] / 60 for plan in group]
        shares = [plan["share_after_constraint"] for plan in group]
        squeezed = [plan["timing"]["scale"] for plan in group if plan["timing"]["scale"] < 1]
        lines.append(f"| {context} | {len(group)} | {median(gaps) if gaps else 0:g} | {busiest} | {median(spans):.1f} | "
                     f"{median(shares):.2f} | {len(squeezed)} | {f'{median(squeezed):.2f}' if squeezed else '-'} |")
    return lines


def _time_pattern_table(filters: dict) -> list[str]:
    """Exchanges dropped per time pattern and source (an exchange may match several patterns)."""
    patterns = [name for name in TIME_PATTERNS if any(name in c.get("time-patterns", {}) for c in filters.values())]
    if not patterns:
        return []
    lines = ["", "Exchanges dropped per time pattern (clock times, durations such as \"15 minutes\", parts of the day, "
             "relative days, weekdays, dates; one exchange can match several):", "",
             f"| source | {' | '.join(patterns)} |", "|---|" + "---|" * len(patterns)]
    for source, counts in sorted(filters.items()):
        found = counts.get("time-patterns", {})
        lines.append(f"| {source} | {' | '.join(str(found.get(name, 0)) for name in patterns)} |")
    return lines
