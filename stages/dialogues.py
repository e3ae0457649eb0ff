"""``dialogues``: a scaled blueprint -> its base dialogue skeleton.

In: scaled blueprints that passed the oracles (main) and ``load_fillers`` (side). Out: one item per blueprint with
``turns`` (role, content without timestamp, ``at`` for user turns, ``kind`` in
constraint / interruption / filler / trigger) and ``resolution_index`` (where a
Neg-Clean resolving turn goes). The layout: 0-2 filler exchanges, the constraint turn
and the assistant's reply (the offline setting), for if-then some filler and the second
constraint, for attention recovery the interruption, then filler, then the trigger.
Filler exchanges come from the blueprint's topic pool, never mention a gold slot, and
are drawn with the blueprint's own seeded generator. Filler user turns get times
interpolated between the fixed times around them, so timestamps never go backwards.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict
from pipeline.bounds import CountRange, NonNegative

from pipeline.blueprints.schema import TIME_FORMAT
from pipeline.stage import Drop, Item, MapStage, StageContext
from pipeline.text import mentions
from stages.generate.fillers import FillerGenerator, FillerParams

DEFAULT_FILLER = {
    "state_tracking": (7, 9),
    "temporal_grounding": (8, 9),
    "logical_adherence": (7, 8),
    "attention_recovery": (5, 6),
    "safe_coding": (3, 5),
}


class DialogueParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    filler_exchanges: dict[str, CountRange] = DEFAULT_FILLER
    max_leading_exchanges: NonNegative = 2
    llm: FillerParams = FillerParams()


class Dialogues(MapStage):
    name = "dialogues"
    inputs = ("oracle_necessity", "load_fillers")
    Params = DialogueParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("llm", "blueprints_digest")

    def setup(self, side_inputs: dict[str, list[Item]], ctx: StageContext) -> None:
        self.pools = {item["pool"]["topic"]: item["pool"]["exchanges"] for item in side_inputs["load_fillers"]}
        llm = ctx.services.get("llm") is not None  # with an LLM, fillers are written by stages/generate/fillers.py
        self.filler_llm = FillerGenerator.create(self.params.llm, side_inputs["load_fillers"], ctx) if llm else None

    def process(self, item: Item, ctx: StageContext) -> list[Item] | Drop:
        bp = item["blueprint"]
        pool = self.pools.get(bp["topic"])
        if pool is None:
            return Drop("no-filler-topic", f"no filler pool for topic {bp['topic']!r}")
        clean = [i for i, ex in enumerate(pool) if not any(mentions(ex["user"], s) or mentions(ex["assistant"], s) for s in bp["gold_slots"])]
        low, high = self.params.filler_exchanges[bp["dimension"]]
        rng = ctx.rng(item["id"])
        wanted = rng.randint(low, high)
        if len(clean) < wanted:
            return Drop("too-little-filler", f"topic {bp['topic']!r} has {len(clean)} slot-free exchanges, need {wanted}")
        picked = rng.sample(clean, wanted)
        leading = min(rng.randint(0, self.params.max_leading_exchanges), max(0, wanted - 2))
        exchanges, filler_ids, generated = [pool[i] for i in picked], [f"{bp['topic']}#{i}" for i in picked], {}
        if self.filler_llm is not None:
            exchanges, filler_ids, record = self.filler_llm.replace(item, exchanges, filler_ids, ctx, ctx.services["llm"])
            generated = {"fillers": record}
        turns = _layout(bp, exchanges, leading, rng.random())
        _assign_times(turns)
        resolution_index = next((i for i, t in enumerate(turns) if t["role"] == "marker"), None)
        turns = [t for t in turns if t["role"] != "marker"]
        return [{
            "id": item["id"],
            "seed_id": item["seed_id"],
            "split": item["split"],
            "blueprint": bp,
            "turns": turns,
            "resolution_index": resolution_index,
            "filler_ids": filler_ids,
            "provenance": {**item["provenance"], "dialogues": self.code_version()[:12], "oracles": item.get("oracles"),
                           **generated},
        }]


def _pair(user: str, at: str | None, kind: str, reply: str | None) -> list[dict]:
    turns = [{"role": "user", "content": user, "at": at, "kind": kind}]
    if reply is not None:
        turns.append({"role": "assistant", "content": reply, "at": None, "kind": kind})
    return turns


def _filler(exchange: dict) -> list[dict]:
    return _pair(exchange["user"], None, "filler", exchange["assistant"])


def _layout(bp: dict, fillers: list[dict], leading: int, draw: float) -> list[dict]:
    """Order the turns; a ``marker`` turn (timed at the resolution) marks where a resolving turn goes."""
    turns: list[dict] = []
    queue = list(fillers)
    for _ in range(leading):
        turns += _filler(queue.pop(0))
    first = bp["constraints"][0]
    turns += _pair(first["text"], first["at"], "constraint", first.get("reply"))
    if bp.get("interruption"):
        inter = bp["interruption"]
        turns += _pair(inter["text"], inter["at"], "interruption", inter.get("reply"))
    if len(bp["constraints"]) > 1:
        between = max(1, len(queue) // 3)
        for _ in range(between):
            turns += _filler(queue.pop(0))
        second = bp["constraints"][1]
        turns += _pair(second["text"], second["at"], "constraint", second.get("reply"))
    negative = bp.get("negative")
    resolves = bool(negative and negative["kind"] == "resolution")
    # the resolving turn goes before the last one or two filler exchanges
    marker_position = len(queue) - min(len(queue), 1 + int(draw * 2))
    for position, exchange in enumerate(queue):
        if resolves and position == marker_position:
            turns.append({"role": "marker", "content": "", "at": negative["at"], "kind": "resolution"})
        turns += _filler(exchange)
    if resolves and marker_position >= len(queue):
        turns.append({"role": "marker", "content": "", "at": negative["at"], "kind": "resolution"})
    trigger = bp["trigger"]
    turns.append({"role": "user", "content": trigger["text"], "at": trigger["at"], "kind": "trigger"})
    return turns


def _assign_times(turns: list[dict]) -> None:
    """Fill ``at`` of filler user turns between the fixed times around them (non-decreasing)."""
    anchors = [(i, datetime.strptime(t["at"], TIME_FORMAT)) for i, t in enumerate(turns) if t["at"]]
    user_slots = [i for i, t in enumerate(turns) if t["role"] == "user" and not t["at"]]
    for index in user_slots:
        before = [(i, at) for i, at in anchors if i < index]
        after = [(i, at) for i, at in anchors if i > index]
        if not before:
            first_index, first_at = after[0]
            steps_to_anchor = sum(1 for j in user_slots if index <= j < first_index)
            at = first_at - timedelta(minutes=4 * steps_to_anchor)
        elif not after:
            at = before[-1][1]
        else:
            (i0, t0), (i1, t1) = before[-1], after[0]
            between = [j for j in user_slots if i0 < j < i1]
            fraction = (between.index(index) + 1) / (len(between) + 1)
            at = t0 + timedelta(minutes=int((t1 - t0).total_seconds() // 60 * fraction))
        turns[index]["at"] = at.strftime(TIME_FORMAT)
