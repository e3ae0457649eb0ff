"""``stretch``: a base dialogue -> one injection plan per target length (20K ... 100K tokens).

In: ``dialogues`` items (main) and ``distractor_pool`` snippets (side). Out: plan items
``{"id": "<blueprint>@<length>", "blueprint_id", "context", "source", "chunks",
"snippets", "timestamps", "base_shifts", "injected_tokens", "filtered"}``. A plan is shared by every row
of its blueprint at that length (Pos-Clean, Pos-Over, Neg-Clean, explicit, RM): a
controlled comparison. ``stages.long_configs.materialize`` (at release) turns a base row and
its plan into the long row.

Placement and time (``stages.injection``): attention recovery keeps one block after the
interruption's reply; the other dimensions spread whole snippets over every exchange boundary of
the dialogue, so the block's edges never mark the constraint. Base gaps are kept, injected turns
take the typing model's gaps, the trigger keeps its time (temporal grounding: the constraint too).
Constraint and trigger text are byte-identical to the base.
Snippets mentioning a gold slot of the blueprint are skipped (``gold_slot``); the rest are
drawn in a seeded order and added whole while they fit; a remaining gap is closed with runs
of consecutive whole exchanges of further snippets, so each row lands within 1% of its target. A
blueprint whose source cannot reach a length is dropped (``pool_too_small``). Token counts
are sums of per-snippet counts, never a re-tokenization.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache, lru_cache
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict

from pipeline import tokenizer
from pipeline.hashing import combine, source_digest
from pipeline.stage import Drop, Dropped, Item, MapStage, StageContext
from pipeline.text import mentions, word_count
from pipeline.vocabulary import DropReason
from stages import injection, timing
from stages.audit.embeddings import Embedder, resolved_model
from stages.distractors import fill as filling
from stages.distractors import semantic
from stages.distractors.fill import fill_budget
from stages.distractors.semantic import SemanticFilter
from stages.injection import Layout, boundaries, lay_out, share_after_constraint, split_into_chunks
from stages.long_configs import shifted, write_long_configs
from stages.timing import TimingParams, TypingModel
from stages.variants import explicit_turns, render_messages, variant_turns

if TYPE_CHECKING:
    from pipeline.release import ReleaseWriter
    from pipeline.runner import RunResult
    from pipeline.stats import RowStats

TOLERANCE = 0.01


class StretchParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    lengths: tuple[int, ...] = (20000, 40000, 60000, 80000, 100000)
    timing: TimingParams = TimingParams()
    semantic_filter: bool = True
    # sources whose snippets the filter embeds: not the MATH problems of attention recovery's math interruption,
    # compared with the user's own task only (with them, at most 10 of 275,820 blueprint x snippet pairs were skipped on
    # the default build of 4fdd817, for 9,194 long texts to embed in every cold build)
    semantic_sources: tuple[str, ...] = ("multiwoz", "swe-agent")
    semantic_percentile: float = 95.0  # of constraint (trigger) to filler-turn cosines in the base dialogue
    semantic_floor: float = 0.3  # thresholds never below this cosine
    embedding_model: str | None = None  # a directory or Hub id; default: the audit's resolution


def context_name(length: int) -> str:
    return f"{length // 1000}k"


@lru_cache(maxsize=4096)
def prefix_tokens(at: str) -> int:
    """Tokens of ``[YYYY-MM-DDTHH:MM]``; the message body is counted with its leading space."""
    return tokenizer.count(f"[{at}]")


def base_token_range(dialogue: Item) -> tuple[int, int]:
    """Smallest and largest token total over every row the dialogue yields."""
    variants = variant_turns(dialogue)
    turn_sets = [turns for turns, _ in variants.values()]
    turn_sets += [t for turns, _ in variants.values() if (t := explicit_turns(dialogue, turns)) is not None]
    rm = dialogue["blueprint"].get("rm")
    if rm:
        pos = [dict(t) for t in dialogue["turns"]]
        pos[-1]["content"] = f"{pos[-1]['content']} {rm['question']}"
        turn_sets.append(pos)
    counts: dict[str, int] = {}
    totals = []
    for turns in turn_sets:
        total = 0
        for message in render_messages(turns):
            text = message["content"]
            if text not in counts:
                counts[text] = tokenizer.count(text)
            total += counts[text]
        totals.append(total)
    return min(totals), max(totals)


class Stretch(MapStage):
    name = "stretch"
    inputs = ("dialogues", "distractor_pool")
    Params = StretchParams
    forkable = True  # plans are pure CPU work over what prepare embedded

    def environment_keys(self) -> tuple[str, ...]:
        return ("distractors",)

    def write_release(self, writer: ReleaseWriter, run: RunResult, stats: RowStats) -> None:
        """``pm_<N>k``, ``rm_<N>k`` and ``explicit_40k``: base rows with this stage's plans injected."""
        write_long_configs(writer, run, stats)

    def code_version(self) -> str:
        """This module, its helpers and the embedding model the semantic filter uses."""
        model = (resolved_model(self.params.embedding_model).choice.key if self.params.semantic_filter
                 else "no-semantic-filter")
        return combine(self.version, source_digest(type(self), timing, injection, filling, semantic), model)

    def setup(self, side_inputs: dict[str, list[Item]], ctx: StageContext) -> None:
        self.by_source: dict[str, list[Item]] = {}
        self.lowered: dict[str, str] = {}
        for snippet in side_inputs["distractor_pool"]:
            self.by_source.setdefault(snippet["source"], []).append(snippet)
            self.lowered[snippet["id"]] = "\n".join(content for _, content in snippet["messages"]).lower()
        self.routes = ctx.environment["distractors"]["routes"]
        # nights come from the waking clock of ``stages.injection``, not from the model's breaks
        self.model = TypingModel(self.params.timing.model_copy(update={"night_probability": 0.0}))
        self.count_words = cache(word_count)  # lay_out's: every row and length reads the same snippets
        self.semantic = None
        if self.params.semantic_filter:  # vectors kept in the build's embedding cache, which the audit shares
            embedder = Embedder(resolved_model(self.params.embedding_model), ctx.embedding_cache)
            self.semantic = SemanticFilter(embedder, side_inputs["distractor_pool"], self.params.semantic_percentile,
                                           self.params.semantic_floor)

    def prepare(self, items: list[Item], ctx: StageContext) -> None:
        """Embed every text the semantic filter will compare (snippet turns, and each item's constraints,
        trigger and background) in one batched call: per item, the background alone is a dozen replies
        of every length, and small padded batches of them took two thirds of a cold stretch."""
        if self.semantic is None:
            return
        texts: list[str] = []
        for item in items:
            source = self._source_of(item["blueprint"])
            if source in self.params.semantic_sources:
                self.semantic.snippet_vectors(source)
                texts += self.semantic.query_texts(*_semantic_texts(item))
        self.semantic.embedder.embed(texts)

    def _source_of(self, bp: dict) -> str | None:
        """The distractor source routed to a blueprint's dimension/subtype, else to its dimension."""
        return self.routes.get(f"{bp['dimension']}/{bp['subtype']}") or self.routes.get(bp["dimension"])

    def _mentions_slot(self, snippet: Item, slots: list[str]) -> bool:
        text = self.lowered[snippet["id"]]
        return any(slot.lower() in text and mentions(text, slot) for slot in slots)

    def process(self, item: Item, ctx: StageContext) -> list[Item | Dropped] | Drop:
        bp = item["blueprint"]
        source = self._source_of(bp)
        if source is None:
            return Drop(DropReason.NO_DISTRACTOR_SOURCE, f"no source configured for {bp['dimension']}")
        candidates = [s for s in self.by_source.get(source, []) if not self._mentions_slot(s, bp["gold_slots"])]
        filtered = {"gold_slot": len(self.by_source.get(source, [])) - len(candidates)}
        candidates, semantic_record, semantic_drops = self._semantic(item, source, candidates, filtered)
        low, high = base_token_range(item)
        turns = item["turns"]
        slots = boundaries(turns, bp["dimension"])
        fixed = _fixed_turns(item)
        plans = []
        for length in self.params.lengths:
            rng = ctx.rng(item["id"], str(length))
            order = list(range(len(candidates)))
            rng.shuffle(order)
            chosen = fill_budget(candidates, order, length - (low + high) // 2, prefix_tokens(turns[-1]["at"]))
            picked = [candidates[i]["messages"][start:end] for i, start, end in chosen]
            costs = [sum(candidates[i]["tokens"][start:end]) for i, start, end in chosen]
            opens = [start == 0 and candidates[i]["id"].endswith("#0") for i, start, _ in chosen]
            chunks = split_into_chunks(costs, slots, ctx.rng(item["id"], str(length), "chunks"), opens)
            layout = lay_out(turns, chunks, picked, fixed, self.model, ctx.rng(item["id"], str(length), "timing"),
                             self.count_words)
            plan_id = plan_id_of(item, length)
            if not layout.plausible:
                plans.append(Dropped(plan_id, DropReason.TIME_WINDOW_TOO_SHORT,
                                     f"{layout.injected_minutes:.0f} min of reading and typing do not fit between "
                                     "the constraint and the trigger the deadline fixes"))
                continue
            injected = (sum(costs) + sum(map(prefix_tokens, layout.stamps))
                        + _base_token_delta(turns, layout.base_shifts))
            if not (abs(low + injected - length) <= TOLERANCE * length and abs(high + injected - length) <= TOLERANCE * length):
                plans.append(Dropped(plan_id, DropReason.POOL_TOO_SMALL, f"{source}: reached {low + injected} of {length} tokens"))
                continue
            plans.append({
                "id": plan_id,
                "blueprint_id": item["id"],
                "context": context_name(length),
                "source": source,
                "chunks": [list(chunk) for chunk in layout.chunks],
                "snippets": [[candidates[i]["id"], start, end] for i, start, end in chosen],
                "timestamps": list(layout.stamps),
                "base_shifts": list(layout.base_shifts),
                "timing": {"scale": round(layout.scale, 6), "injected_minutes": round(layout.injected_minutes, 1),
                           "span_minutes": _span_minutes(turns, layout)},
                "share_after_constraint": round(share_after_constraint(turns, layout.chunks, costs), 4),
                "injected_tokens": injected,
                "filtered": filtered,
                "semantic": semantic_record,
                "stretch": self.code_version()[:12],
            })
        return [*semantic_drops, *plans]

    def _semantic(self, item: Item, source: str, candidates: list[Item], filtered: dict[str, int]
                  ) -> tuple[list[Item], dict | None, list[Dropped]]:
        """Candidates that pass the semantic filter; counts go into ``filtered``, one record per reason."""
        if self.semantic is None or source not in self.params.semantic_sources:
            return candidates, None, []
        verdict = self.semantic.judge(source, [c["id"] for c in candidates], *_semantic_texts(item))
        kept = [c for c, reason in zip(candidates, verdict.reasons) if reason is None]
        drops = []
        for reason, threshold in ((DropReason.SEMANTIC_CONSTRAINT, verdict.constraint_threshold),
                                  (DropReason.SEMANTIC_TRIGGER, verdict.trigger_threshold)):
            count = filtered[reason.value] = verdict.reasons.count(reason)
            if count:
                sentences = " (or a sentence's own)" if reason is DropReason.SEMANTIC_CONSTRAINT else ""
                drops.append(Dropped(f"{item['id']}~{reason}", reason,
                                     f"{count} {source} snippets: a turn above cosine {threshold:.3f}{sentences} "
                                     f"(p{self.params.semantic_percentile:g} of the base dialogue's filler turns, "
                                     f"floor {self.params.semantic_floor:g})"))
        nearest = verdict.nearest_constraint
        after = nearest[[reason is None for reason in verdict.reasons]]
        record = {"constraint_threshold": round(verdict.constraint_threshold, 4),
                  "trigger_threshold": round(verdict.trigger_threshold, 4),
                  "nearest_constraint_before": _quantiles(nearest), "nearest_constraint_after": _quantiles(after)}
        return kept, record, drops


def _semantic_texts(item: Item) -> tuple[list[str], str | None, list[str]]:
    """What the semantic filter compares snippets with: the base dialogue's constraint turns, its trigger
    (None for attention recovery, whose trigger is about the interruption the injected traces continue)
    and its filler turns (the background that sets the thresholds)."""
    turns = item["turns"]
    return ([t["content"] for t in turns if t["role"] == "user" and t["kind"] == "constraint"],
            None if item["blueprint"]["dimension"] == "attention_recovery" else turns[-1]["content"],
            [t["content"] for t in turns if t["kind"] == "filler"])


def _quantiles(values) -> dict[str, float] | None:
    """Median, 95th percentile and maximum, rounded (None for no values)."""
    if len(values) == 0:
        return None
    p50, p95, top = np.percentile(values, [50, 95, 100])
    return {"p50": round(float(p50), 4), "p95": round(float(p95), 4), "max": round(float(top), 4)}


def plan_id_of(item: Item, length: int) -> str:
    """The id of one (dialogue, length) plan, as in ``exclusions/stretch.jsonl``."""
    return f"{item['id']}@{context_name(length)}"


def _fixed_turns(item: Item) -> set[int]:
    """Base user turns that keep their time besides the trigger: temporal grounding's constraint (its
    deadline counts from it or names a clock time of its day)."""
    if item["blueprint"]["dimension"] != "temporal_grounding":
        return set()
    turns = item["turns"]
    return {next(i for i, t in enumerate(turns) if t["role"] == "user" and t["kind"] == "constraint")}


def _span_minutes(turns: list[dict], layout: Layout) -> float:
    """Minutes from the long row's first user turn to its trigger."""
    first_base = shifted(next(t["at"] for t in turns if t["role"] == "user"), layout.base_shifts[0])
    first = min([first_base, *layout.stamps[:1]])
    return round((datetime.fromisoformat(turns[-1]["at"]) - datetime.fromisoformat(first)).total_seconds() / 60, 1)


def _base_token_delta(turns: list[dict], shifts: tuple[int, ...]) -> int:
    """Token change of the base user turns' timestamp prefixes when they move by ``shifts`` minutes."""
    users = [t for t in turns if t["role"] == "user"]
    return sum(prefix_tokens(shifted(t["at"], shift)) - prefix_tokens(t["at"]) for t, shift in zip(users, shifts) if shift)
