"""``split``: assign every scaled blueprint to ``test`` or ``dev`` by seed family.

In: ``dedupe`` items. Out: the same items with ``"split"``. In each dimension, about
``dev_fraction`` of the seed families (at least one when the dimension has two or more)
go to ``dev``, chosen by a seeded hash of the family id, so dev and test never share a
seed family and the choice does not move when other families are added.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict
from pipeline.bounds import Fraction

from pipeline.seeding import stable_fraction
from pipeline.stage import Item, Stage, StageContext, StageOutput


class SplitParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    dev_fraction: Fraction = 0.10


class Split(Stage):
    name = "split"
    inputs = ("dedupe",)
    Params = SplitParams

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        families: dict[str, set[str]] = defaultdict(set)
        for item in inputs["dedupe"]:
            families[item["blueprint"]["dimension"]].add(item["seed_id"])
        dev: set[str] = set()
        for dimension, seeds in families.items():
            ranked = sorted(seeds, key=lambda seed_id: stable_fraction(str(ctx.seed), self.name, seed_id))
            n_dev = round(len(ranked) * self.params.dev_fraction)
            if n_dev == 0 and len(ranked) >= 2 and self.params.dev_fraction > 0:
                n_dev = 1
            dev.update(ranked[:n_dev])
        items = [{**item, "split": "dev" if item["seed_id"] in dev else "test"} for item in inputs["dedupe"]]
        return StageOutput(items=items)
