"""``dialogues``: a scaled blueprint -> its base dialogue (one conversation, no surface cue).

In: scaled blueprints that passed the oracles (main), ``load_fillers`` (side: story and filler
pools) and ``load_blueprints`` (side: the seeds whose constraint shapes the story choice matches).
Out: one item per blueprint with ``turns`` (role, content without timestamp, ``at`` on user turns,
``kind`` in constraint / interruption / filler / update / trigger) and ``parity_index`` (the user
turn where a Neg-Clean twin carries its resolution, or None).

The rules (issue "Base dialogues v2"; the positions and times are computed in :mod:`stages.dialogue_layout`):

- **One story**: thematic exchanges come from the pool the blueprint's ``topic`` names; a
  ``kind: story`` pool keeps its order (an ordered subset, weighted towards the shapes of the
  dimension's constraint turns: ``stages.story_shape``), a shared filler pool is drawn in any
  order. No exchange mentions a gold slot or slot value.
- **The constraint among equals**: it sits at a seeded position anywhere but the last two units
  before the trigger (so position alone stays near chance); an if-then pair takes a uniform pair of the
  allowed positions; for attention recovery the user's own task comes first, the interruption last
  before the trigger. Its shape is that of a story exchange drawn for it (``like:`` in the seed), and
  in the zero-overlap dimensions the story turns share no content word with the trigger, as the
  constraint does not (when the story has enough such exchanges).
- **Variant parity**: where Neg-Clean resolves the risk (state tracking, safe coding), one unit
  after the constraints is the *parity slot*: the blueprint's benign ``update`` exchange, else a
  thematic exchange. Neg-Clean replaces that slot with the resolution, so turn counts, positions
  and times match.
- **Times from one process**: every gap between user turns comes from the typing-and-reading model
  (``stages.timing``), jittered, never rounded. Only the trigger's time is anchored (shifted by a
  seeded few minutes); temporal grounding also anchors the constraint, with one scale on every gap
  of the row so the constraint-to-trigger span, and so the deadline's meaning, is kept. Gaps run on
  a waking clock (``stages.timing.WakingClock``, 07:00-23:30): a row stretched over days crosses
  nights between turns instead of putting turns at 3 a.m.
"""

from __future__ import annotations

import math
import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.blueprints.schema import Blueprint
from pipeline.bounds import CountRange
from pipeline.hashing import combine, sha256_json, source_digest
from pipeline.stage import Drop, Item, MapStage, StageContext
from pipeline.text import content_words, mentions, word_count
from pipeline.vocabulary import ZERO_OVERLAP_DIMENSIONS, DropReason
from pipeline.blueprints.slots import render
from pipeline.blueprints.stories import placed_turns
from stages.generate.fillers import FillerGenerator, FillerParams, slot_values_of
from stages import dialogue_layout, story_shape, timing, trigger_affinity
from stages.audit.embeddings import Embedder, resolved_model
from stages.story_shape import ShapeMatcher
from stages.dialogue_layout import assign_times, layout, position_fraction, units_in_window
from stages.timing import TimingParams, TypingModel
from stages.trigger_affinity import TriggerAffinity

DEFAULT_FILLER = {
    "state_tracking": (7, 8),
    "temporal_grounding": (8, 9),
    "logical_adherence": (7, 8),
    "attention_recovery": (6, 7),
    "safe_coding": (5, 7),
}
JITTER = 0.35  # log-distance noise in the story subset, so renderings of one seed take different exchanges


class DialogueParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    filler_exchanges: dict[str, CountRange] = DEFAULT_FILLER
    # how story exchanges are chosen: "matched" (an ordered subset weighted towards the shapes of the
    # dimension's placed turns, stages/story_shape.py), "random" (an ordered random subset) or "closest"
    # (those nearest the row's own constraint in length)
    story_choice: Literal["matched", "random", "closest"] = "matched"
    shape_bandwidth: float = Field(1.0, gt=0, description="kernel bandwidth of the shape densities (x Scott's rule)")
    # 100 rather than 20: with tight shape twins in the stories, a wider range lets the draw take them (release
    # audit of 90b7e0f: failing shortcut cells 23 -> 14, logical adherence's learned_form 0.30 -> 0.25)
    shape_weight_cap: float = Field(100.0, ge=1, description="largest (and 1/smallest) weight of a story exchange")
    # in the zero-overlap dimensions, story exchanges are also weighted so that their user turns' cosine to the
    # row's trigger follows the constraints' (stages/trigger_affinity.py); the model is the audit's resolution
    trigger_affinity: bool = True
    affinity_weight_cap: float = Field(20.0, ge=1, description="largest (and 1/smallest) trigger-affinity weight")
    embedding_model: str | None = None
    # dimensions whose story turns share no content word with the trigger when the story allows (as the constraint)
    apart_from_trigger: tuple[str, ...] = tuple(ZERO_OVERLAP_DIMENSIONS)
    timing: TimingParams = TimingParams()
    llm: FillerParams = FillerParams()


class Dialogues(MapStage):
    name = "dialogues"
    inputs = ("oracle_necessity", "load_fillers", "load_blueprints")
    Params = DialogueParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("llm",)  # the corpus comes in through the inputs (their digests are in every item key)

    def code_version(self) -> str:
        """This module, the shape matcher, the trigger affinity (and its embedding model) and the typing model."""
        model = (resolved_model(self.params.embedding_model).choice.key if self.params.trigger_affinity
                 else "no-trigger-affinity")
        return combine(self.version, source_digest(type(self), dialogue_layout, timing, story_shape, trigger_affinity), model)

    def side_input_digest(self, name: str, items: list[Item]) -> str:
        """Of the seeds, only what :func:`seed_view` keeps (editing a seed's intent or RM probe keeps every item)."""
        return sha256_json(seed_view(items)) if name == "load_blueprints" else super().side_input_digest(name, items)

    def setup(self, side_inputs: dict[str, list[Item]], ctx: StageContext) -> None:
        self.pools = {item["pool"]["topic"]: item["pool"] for item in side_inputs["load_fillers"]}
        seeds = seed_view(side_inputs["load_blueprints"])
        llm = ctx.services.get("llm") is not None  # with an LLM, fillers are written by stages/generate/fillers.py
        self.filler_llm = (FillerGenerator.create(self.params.llm, side_inputs["load_fillers"],
                                                  {seed["id"]: seed["slot_values"] for seed in seeds}) if llm else None)
        self.typing = TypingModel(self.params.timing)
        self.shapes = shape_matcher(seeds, self.pools, self.params)
        self.user_words: dict[str, list[frozenset[str]]] = {}
        self.affinity = None
        if self.params.trigger_affinity:
            embedder = Embedder(resolved_model(self.params.embedding_model), ctx.embedding_cache)
            self.affinity = TriggerAffinity(embedder, seeds, self.pools, ZERO_OVERLAP_DIMENSIONS, self._seed_candidates,
                                            self.params.affinity_weight_cap)
            ctx.log.info("dialogues: trigger affinity (mean cosine to the trigger) %s", self.affinity.describe())

    def prepare(self, items: list[Item], ctx: StageContext) -> None:
        """Embed the triggers of the rows whose story draw the trigger affinity weighs, in one batched call."""
        if self.affinity is not None and self.params.story_choice == "matched":
            self.affinity.prepare([(item["blueprint"]["dimension"], item["blueprint"]["trigger"]["text"])
                                   for item in items
                                   if (self.pools.get(item["blueprint"]["topic"]) or {}).get("kind") == "story"])

    def _seed_candidates(self, seed: dict, pool: dict) -> list[int]:
        """The exchanges of ``pool`` a row of ``seed`` may draw from (slot mentions aside): the trigger-apart ones."""
        everything = list(range(len(pool["exchanges"])))
        if seed["dimension"] not in self.params.apart_from_trigger:
            return everything
        low = self.params.filler_exchanges.get(seed["dimension"], DEFAULT_FILLER.get(seed["dimension"], (1, 1)))[0]
        return _apart_from_trigger(everything, self._user_words(seed["topic"]), seed["trigger"], low)

    def _user_words(self, topic: str) -> list[frozenset[str]]:
        """Content words of each user turn of pool ``topic``, tokenized once per build, not once per item."""
        if topic not in self.user_words:
            self.user_words[topic] = [content_words(ex["user"]) for ex in self.pools[topic]["exchanges"]]
        return self.user_words[topic]

    def process(self, item: Item, ctx: StageContext) -> list[Item] | Drop:
        bp = item["blueprint"]
        pool = self.pools.get(bp["topic"])
        if pool is None:
            return Drop(DropReason.NO_FILLER_TOPIC, f"no filler pool for topic {bp['topic']!r}")
        exchanges_all = pool["exchanges"]
        clean = [i for i, ex in enumerate(exchanges_all)
                 if not any(mentions(ex["user"], s) or mentions(ex["assistant"], s) for s in bp["gold_slots"])]
        low, high = self.params.filler_exchanges[bp["dimension"]]
        rng = ctx.rng(item["id"])
        wanted = rng.randint(low, high)
        if bp["dimension"] in self.params.apart_from_trigger:
            clean = _apart_from_trigger(clean, self._user_words(bp["topic"]), bp["trigger"]["text"], wanted)
        if len(clean) < wanted:
            return Drop(DropReason.TOO_LITTLE_FILLER, f"topic {bp['topic']!r} has {len(clean)} slot-free exchanges, need {wanted}")
        story = pool.get("kind") == "story"
        if story and self.params.story_choice == "matched":  # a story keeps the order a person would have it in
            weights = self.shapes.weights(bp["dimension"], bp["topic"], exchanges_all)
            if self.affinity is not None:  # 1.0 everywhere outside the zero-overlap dimensions
                affinity = self.affinity.weights(bp["dimension"], bp["topic"], bp["trigger"]["text"])
                weights = [shape * near for shape, near in zip(weights, affinity)]
            picked = story_shape.weighted_subset(clean, weights, wanted, rng)
        elif story and self.params.story_choice == "random":
            picked = sorted(rng.sample(clean, wanted))
        elif story:
            first = bp["constraints"][0]
            picked = sorted(closest_exchanges(clean, wanted, exchanges_all, first["text"], first.get("reply"), rng))
        else:
            picked = rng.sample(clean, wanted)
        exchanges, filler_ids, generated = [exchanges_all[i] for i in picked], [f"{bp['topic']}#{i}" for i in picked], {}
        if self.filler_llm is not None:
            exchanges, filler_ids, record = self.filler_llm.replace(item, exchanges, filler_ids, ctx, ctx.services["llm"])
            generated = {"fillers": record}
        window = units_in_window(bp, exchanges, self.typing)
        turns, parity = layout(bp, exchanges, story, rng, window, position_fraction(item, ctx))
        assign_times(turns, bp, self.typing, rng)
        return [{
            "id": item["id"],
            "seed_id": item["seed_id"],
            "split": item["split"],
            "blueprint": bp,
            "turns": turns,
            "parity_index": parity,
            "filler_ids": filler_ids,
            "provenance": {**item["provenance"], "dialogues": self.code_version()[:12], "oracles": item.get("oracles"),
                           **generated},
        }]


def _apart_from_trigger(candidates: list[int], user_words: list[frozenset[str]], trigger: str, wanted: int) -> list[int]:
    """The candidate exchanges whose user turn shares no content word with the trigger, when ``wanted`` of them
    remain (else all candidates). In these dimensions the constraint shares none by construction (the paper's
    zero-overlap property), so story turns that do would single it out as the one turn the trigger's words
    never reach (a BM25 ranking put it among the trigger's six nearest turns 44% of the time, chance 63%)."""
    words = content_words(trigger)
    apart = [i for i in candidates if not user_words[i] & words]
    return apart if len(apart) >= wanted else candidates


def seed_view(blueprints: list[Item]) -> list[dict]:
    """What the stage reads of the ``load_blueprints`` items: per seed its id, dimension, topic, trigger and
    placed constraint turns (slots filled with their first alternatives; turns as ``(text, reply)``) and slot
    values."""
    view = []
    for item in blueprints:
        seed = Blueprint.model_validate(item["blueprint"])
        bp = render(seed)
        view.append({"id": seed.id, "dimension": str(bp.dimension), "topic": bp.topic, "trigger": bp.trigger.text,
                     "placed": [[text, reply] for field, text, reply in placed_turns(bp) if field.startswith("constraints")],
                     "slot_values": slot_values_of(seed)})
    return view


def shape_matcher(seeds: list[dict], pools: dict[str, dict], params: DialogueParams) -> ShapeMatcher:
    """The shape matcher of a corpus (``seeds``: :func:`seed_view`): per dimension, the placed turns of its
    seeds and the exchanges of the stories they name."""
    placed: dict[str, list] = {}
    story: dict[str, list] = {}
    seen: set[tuple[str, str]] = set()
    for seed in seeds:
        dimension = seed["dimension"]
        placed.setdefault(dimension, []).extend(story_shape.shape(text, reply) for text, reply in seed["placed"])
        pool = pools.get(seed["topic"])
        if pool is not None and pool.get("kind") == "story" and (dimension, seed["topic"]) not in seen:
            seen.add((dimension, seed["topic"]))
            story.setdefault(dimension, []).extend(story_shape.shape(ex["user"], ex["assistant"]) for ex in pool["exchanges"])
    return ShapeMatcher(placed, story, params.shape_bandwidth, params.shape_weight_cap)


def closest_exchanges(candidates: list[int], wanted: int, exchanges: list[dict], text: str, reply: str | None,
                      rng: random.Random) -> list[int]:
    """The ``wanted`` story exchanges that look most like the constraint exchange (``text``, ``reply``) in length.

    A story spreads its user turns from one-liners to long paragraphs; a constraint aside has its own
    typical length. Taken at random, the story turns near that length are few, so a model that learns
    "an exchange of about this shape" finds the constraint. Here the exchanges closest to the
    constraint exchange (log-distance of user-turn plus reply words, with seeded jitter so renderings
    differ) are taken, so across rows the story exchanges follow the constraints' own length
    distribution and within a row the constraint's rank among near-equals is left to chance.
    (Measured on the v2 corpus, logical adherence: a family-grouped classifier over turn features
    finds the constraint in 43% of rows this way, 55% with a rank-balanced draw.)
    """
    user_words, reply_words = word_count(text), word_count(reply)

    def distance(index: int) -> float:
        exchange = exchanges[index]
        gap = abs(math.log((word_count(exchange["user"]) + 1) / (user_words + 1)))
        if reply is not None:
            gap += abs(math.log((word_count(exchange["assistant"]) + 1) / (reply_words + 1)))
        return gap + rng.uniform(0.0, JITTER)

    return sorted(candidates, key=distance)[:wanted]
