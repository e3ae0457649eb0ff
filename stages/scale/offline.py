"""``scale``: one seed blueprint -> up to ``max_per_seed`` scaled blueprints (offline rules).

In: ``load_blueprints`` items. Out: ``{"id": "<seed>--sNN", "seed_id", "blueprint",
"slot_choice", "provenance"}``. Candidate 0 is the seed's own rendering; the others are
distinct slot combinations drawn with the seed's own random generator. A rendering
that fails lint is skipped (counted in ``stats``); a seed with no valid rendering is
dropped with the lint messages.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pipeline.bounds import Count

from pipeline.blueprints.rules import check_rendered
from pipeline.blueprints.schema import Blueprint, to_json
from pipeline.blueprints.slots import Choice, all_choices, render
from pipeline.stage import Drop, Dropped, Item, MapStage, StageContext
from pipeline.vocabulary import DropReason
from stages.scale.llm import LLMScaleParams, LLMScaler

MAX_ENUMERATED = 4096


class ScaleParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_per_seed: Count = 8
    llm: LLMScaleParams = LLMScaleParams()


class Scale(MapStage):
    """Offline slot-filling scaler."""

    name = "scale"
    inputs = ("load_blueprints",)
    Params = ScaleParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("llm",)

    def setup(self, side_inputs: dict[str, list[Item]], ctx: StageContext) -> None:
        self.llm_scaler = LLMScaler(self.params.llm, self.params.max_per_seed, self.code_version())

    def process(self, item: Item, ctx: StageContext) -> list[Item | Dropped] | Drop:
        seed = Blueprint.model_validate(item["blueprint"])
        choices = _draw_choices(seed, self.params.max_per_seed, ctx)
        if ctx.services.get("llm") is not None:  # the LLM writes new blueprints (stages/scale/llm.py)
            return self.llm_scaler.scale(item, ctx, ctx.services["llm"], choices)
        out, failures = [], []
        for index, choice in enumerate(choices):
            scaled_id = f"{seed.id}--s{index:02d}"
            rendered = render(seed, choice, new_id=scaled_id)
            problems = check_rendered(rendered)
            if problems:
                failures.append(f"{scaled_id}: {problems[0].field}: {problems[0].message}")
                continue
            out.append({
                "id": scaled_id,
                "seed_id": seed.id,
                "blueprint": to_json(rendered),
                "slot_choice": {name: _label(seed, name, idx) for name, idx in sorted(choice.items())},
                "provenance": {"generator": "offline-rules", "scale": self.code_version()[:12]},
            })
        if not out:
            return Drop(DropReason.LINT, "; ".join(failures)[:2000])
        return out


def _draw_choices(seed: Blueprint, count: int, ctx: StageContext) -> list[Choice]:
    """The seed's own choice first, then distinct seeded draws of full slot combinations."""
    everything = []
    for choice in all_choices(seed):
        everything.append(choice)
        if len(everything) >= MAX_ENUMERATED:
            break
    first, rest = everything[0], everything[1:]
    ctx.rng(seed.id).shuffle(rest)
    picked = [first] + rest[: max(0, count - 1)]
    return [{k: v for k, v in choice.items()} for choice in picked]


def _label(seed: Blueprint, slot: str, index: int) -> str:
    value = seed.slots[slot][index]
    return value if isinstance(value, str) else " / ".join(value.values())
