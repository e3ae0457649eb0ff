"""``dedupe``: reject near-duplicate scaled blueprints and keep each dimension's target.

In: ``scale`` items. Out: the kept items. Dropped, with reasons: ``duplicate_slots``
(same seed and same slot choice), ``near_duplicate`` (word-trigram Jaccard of the
constraint+trigger text at or above ``max_similarity`` against an already kept item
of the same dimension), ``over_target`` (beyond the dimension's target count).
Selection is round-robin over seed families, so every seed contributes evenly.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict
from pipeline.bounds import Count, Similarity

from pipeline.hashing import canonical_json
from pipeline.stage import Dropped, Item, Stage, StageContext, StageOutput
from pipeline.text import words
from pipeline.vocabulary import DropReason


class DedupeParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_similarity: Similarity = 0.92
    targets: dict[str, Count] = {}


def scenario_text(item: Item) -> str:
    bp = item["blueprint"]
    return " ".join([c["text"] for c in bp["constraints"]] + [bp["trigger"]["text"]])


def shingles(text: str) -> frozenset[tuple[str, ...]]:
    tokens = words(text)
    return frozenset(zip(tokens, tokens[1:], tokens[2:])) if len(tokens) >= 3 else frozenset([tuple(tokens)])


def jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class Dedupe(Stage):
    """Near-duplicate rejection and per-dimension selection."""

    name = "dedupe"
    inputs = ("scale",)
    Params = DedupeParams

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        by_family: dict[str, dict[str, list[Item]]] = defaultdict(lambda: defaultdict(list))
        for item in inputs["scale"]:
            by_family[item["blueprint"]["dimension"]][item["seed_id"]].append(item)
        kept: list[Item] = []
        dropped: list[Dropped] = []
        for dimension in sorted(by_family):
            target = self.params.targets.get(dimension)
            families = by_family[dimension]
            seen_choices: set[str] = set()
            kept_shingles: list[frozenset] = []
            rounds = max(len(v) for v in families.values())
            chosen_here = 0
            for round_index in range(rounds):
                for seed_id in sorted(families):
                    if round_index >= len(families[seed_id]):
                        continue
                    item = families[seed_id][round_index]
                    choice_key = seed_id + canonical_json(item["slot_choice"])
                    if choice_key in seen_choices:
                        dropped.append(Dropped(item["id"], DropReason.DUPLICATE_SLOTS, "same seed and slot choice as a kept item"))
                        continue
                    signature = shingles(scenario_text(item))
                    similar = max((jaccard(signature, other) for other in kept_shingles), default=0.0)
                    if similar >= self.params.max_similarity:
                        dropped.append(Dropped(item["id"], DropReason.NEAR_DUPLICATE, f"trigram Jaccard {similar:.3f} with a kept item"))
                        continue
                    if target is not None and chosen_here >= target:
                        dropped.append(Dropped(item["id"], DropReason.OVER_TARGET, f"{dimension} target {target} reached"))
                        continue
                    seen_choices.add(choice_key)
                    kept_shingles.append(signature)
                    kept.append(item)
                    chosen_here += 1
        kept.sort(key=lambda item: item["id"])
        return StageOutput(items=kept, dropped=dropped)
