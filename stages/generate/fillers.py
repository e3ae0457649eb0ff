"""LLM filler exchanges for base dialogues: topic-aligned, checked against leakage.

``dialogues`` draws its filler exchanges from the blueprint's topic pool as usual; with an
LLM, :meth:`FillerGenerator.replace` writes a new exchange for each drawn one (same topic,
the drawn pool exchange as the example, a sampling seed from the stage's generator) and
rejects an exchange that mentions a gold slot or any slot alternative of the blueprint's
seed, shares a content word with the trigger, or is too short to pass for conversation.
A rejected or failed exchange is regenerated (``attempts`` rounds in all); when the rounds
run out, the drawn pool exchange stays in its place and the reasons go to the provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pipeline.bounds import NonNegative, Temperature, Tokens

from pipeline.blueprints.schema import Blueprint
from pipeline.blueprints.slots import values_of
from pipeline.hashing import sha256_json
from pipeline.llm import ChatRequest
from pipeline.stage import Item, StageContext
from pipeline.text import content_words, mentions
from stages.generate.prompts import filler_messages


class FillerParams(BaseModel):
    """Knobs of the LLM filler path of ``dialogues``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    temperature: Temperature = 0.8
    max_tokens: Tokens = 450
    attempts: int = Field(default=3, ge=1)
    example_chars: NonNegative = 600
    min_user_words: NonNegative = 4
    min_answer_words: NonNegative = 12


class FillerExchange(BaseModel):
    """One generated exchange."""

    user: str = Field(min_length=1)
    assistant: str = Field(min_length=1)


def leak(exchange: dict[str, str], terms: list[str], trigger_words: frozenset[str]) -> str | None:
    """Why ``exchange`` leaks (a named term or words shared with the trigger), or None."""
    text = f"{exchange['user']}\n{exchange['assistant']}"
    named = [term for term in terms if mentions(text, term)]
    if named:
        return f"mentions {named[0]!r}"
    shared = sorted(content_words(text) & trigger_words)
    return f"shares trigger words {', '.join(shared[:5])}" if shared else None


def too_short(exchange: dict[str, str], params: FillerParams) -> str | None:
    """Why ``exchange`` is too thin to stand as a turn of conversation, or None."""
    user, answer = len(exchange["user"].split()), len(exchange["assistant"].split())
    if user < params.min_user_words or answer < params.min_answer_words:
        return f"too short ({user}-word question, {answer}-word answer)"
    return None


def slot_values_of(blueprint: Blueprint) -> list[str]:
    """Every value of every slot alternative of a seed: the words its fillers must avoid."""
    return sorted({v for slot, alts in blueprint.slots.items() for alt in alts for v in values_of(alt, slot).values()})


@dataclass
class _Slot:
    position: int
    example: dict[str, str]
    rejections: list[str]


class FillerGenerator:
    """Writes a blueprint's filler exchanges with the LLM; see the module docstring."""

    def __init__(self, params: FillerParams, pools: dict[str, dict[str, Any]], slot_values: dict[str, list[str]]) -> None:
        self.params = params
        self.pools = pools
        self.slot_values = slot_values

    @classmethod
    def create(cls, params: FillerParams, fillers: list[Item], slot_values: dict[str, list[str]]) -> FillerGenerator:
        """From the ``load_fillers`` items and each seed's slot values (seed id -> :func:`slot_values_of`)."""
        pools = {item["pool"]["topic"]: item["pool"] for item in fillers}
        return cls(params, pools, slot_values)

    def terms(self, item: Item) -> list[str]:
        """Gold slots and the seed's slot alternatives, longest first."""
        bp = item["blueprint"]
        found = set(bp["gold_slots"]) | set(self.slot_values.get(item.get("seed_id", ""), []))
        return sorted((t for t in found if t.strip()), key=lambda t: (-len(t), t))

    def replace(self, item: Item, drawn: list[dict[str, str]], drawn_ids: list[str], ctx: StageContext,
                llm: Any) -> tuple[list[dict[str, str]], list[str], dict[str, Any]]:  # fmt: skip
        """Generated exchanges in place of the ``drawn`` pool ones, their ids, and the provenance record."""
        bp = item["blueprint"]
        pool = self.pools.get(bp["topic"], {})
        terms, trigger_words = self.terms(item), content_words(bp["trigger"]["text"])
        rng = ctx.rng(item["id"], "llm-fillers")
        exchanges, ids = list(drawn), list(drawn_ids)
        slots = [_Slot(i, example, []) for i, example in enumerate(drawn)]
        pending = list(slots)
        generated = 0
        prompt_hashes: list[str] = []
        for attempt in range(self.params.attempts):
            if not pending:
                break
            requests = [self._request(item["id"], bp["topic"], pool, slot, attempt, rng.randrange(2**31)) for slot in pending]
            prompt_hashes += [sha256_json(r.wire_messages())[:16] for r in requests]
            still: list[_Slot] = []
            for slot, result in zip(pending, llm.map(requests, desc=f"fillers {item['id']}")):
                if not result.ok:
                    slot.rejections.append(f"attempt {attempt + 1}: llm_{result.error}")
                    still.append(slot)
                    continue
                answer = {"user": result.data["user"].strip(), "assistant": result.data["assistant"].strip()}
                why = leak(answer, terms, trigger_words) or too_short(answer, self.params)
                if why is not None:
                    slot.rejections.append(f"attempt {attempt + 1}: {why}")
                    still.append(slot)
                    continue
                exchanges[slot.position] = answer
                ids[slot.position] = f"llm:{result.key[:12]}"
                generated += 1
            pending = still
        record = {
            "generator": f"llm:{llm.model}",
            "generated": generated,
            "from_pool": len(pending),
            "rejected": {str(s.position): s.rejections for s in slots if s.rejections},
            "fallback": [{"position": s.position, "pool_id": drawn_ids[s.position], "reason": "; ".join(s.rejections)}
                         for s in pending],
            "prompt_hashes": prompt_hashes,
        }
        return exchanges, ids, record

    def _request(self, item_id: str, topic: str, pool: dict[str, Any], slot: _Slot, attempt: int, seed: int) -> ChatRequest:
        messages = filler_messages(topic, pool.get("description", ""), slot.example, slot.position + 1,
                                   self.params.example_chars)  # fmt: skip
        return ChatRequest(messages, temperature=self.params.temperature, max_tokens=self.params.max_tokens, seed=seed,
                           sample=attempt, schema=FillerExchange, tag=f"{item_id}:filler{slot.position}:{attempt}")

