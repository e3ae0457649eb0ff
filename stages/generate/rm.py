"""LLM retrospective-memory probes, generated then verified (paper appendix A.7).

Step 1: the LLM writes a factual question about the constraint turn(s), a full answer and
3-5 short aliases (:class:`RMProbeDraft`); a draft is rejected when no alias or answer
occurs in the constraint turns, or when the question already contains an alias. Step 2: a
separate call (``ctx.services["llm_judge"]`` when set, else the same client) answers the
question appended to the full Pos-Clean dialogue under the benchmark's assistant prompt;
the probe is admitted only if one alias is a (case-insensitive) substring of that answer.
A rejected probe is regenerated (``attempts`` in all); when none is admitted, the row keeps
the blueprint's hand-written probe and the provenance says why.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pipeline.bounds import Temperature, Tokens

from pipeline.hashing import sha256_json
from pipeline.llm import ChatRequest
from pipeline.stage import Item, StageContext
from pipeline.text import mentions
from stages.generate.prompts import rm_messages
from stages.oracles.prompts import assistant_prompt

ANSWER_CHARS = 300  # how much of the oracle's answer is kept in provenance


class RMParams(BaseModel):
    """Knobs of the LLM RM path of ``variants``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    temperature: Temperature = 0.7
    max_tokens: Tokens = 200
    answer_max_tokens: Tokens = 200
    attempts: int = Field(default=2, ge=1)


class RMProbeDraft(BaseModel):
    """What the LLM writes in step 1."""

    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    aliases: list[str] = Field(min_length=3, max_length=5)

    @field_validator("aliases")
    @classmethod
    def _short_and_distinct(cls, aliases: list[str]) -> list[str]:
        cleaned = list(dict.fromkeys(a.strip() for a in aliases if a.strip()))
        if len(cleaned) < 3:
            raise ValueError("give 3 to 5 distinct, non-empty short answers")
        if any(len(a.split()) > 6 for a in cleaned):
            raise ValueError("each short answer must be at most 6 words")
        return cleaned


def draft_problem(draft: RMProbeDraft, constraint_texts: list[str]) -> str | None:
    """Why a draft cannot be used before asking the oracle, or None."""
    source = " ".join(constraint_texts)
    if not any(mentions(source, text) for text in [draft.answer, *draft.aliases]):
        return "no alias occurs in the constraint turn(s)"
    leaked = [a for a in draft.aliases if mentions(draft.question, a)]
    return f"the question contains its answer {leaked[0]!r}" if leaked else None


def recovered(answer: str, aliases: list[str]) -> str | None:
    """The first alias that is a case-insensitive substring of ``answer``, or None."""
    lowered = answer.lower()
    return next((a for a in aliases if a.lower() in lowered), None)


def oracle_messages(dimension: str, messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The RM row's messages (question appended) under the benchmark's assistant prompt."""
    return [{"role": "system", "content": assistant_prompt(dimension)}, *messages]


def generate_probe(item: Item, constraint_texts: list[str], ask: Any, ctx: StageContext, llm: Any,
                   params: RMParams) -> tuple[dict[str, Any] | None, dict[str, Any]]:  # fmt: skip
    """(admitted probe ``{"question", "answer", "aliases"}`` or None, provenance record).

    ``ask(question)`` returns the rendered messages of the Pos-Clean dialogue with the question appended.
    """
    dimension = item["blueprint"]["dimension"]
    judge = ctx.services.get("llm_judge") or llm
    rng = ctx.rng(item["id"], "llm-rm")
    attempts: list[dict[str, Any]] = []
    for attempt in range(params.attempts):
        messages = rm_messages(dimension, constraint_texts)
        request = ChatRequest(messages, temperature=params.temperature, max_tokens=params.max_tokens, sample=attempt,
                              seed=rng.randrange(2**31), schema=RMProbeDraft, tag=f"{item['id']}:rm{attempt}")
        note: dict[str, Any] = {"attempt": attempt + 1, "prompt_hash": sha256_json(request.wire_messages())[:16]}
        attempts.append(note)
        result = llm.complete(request)
        if not result.ok:
            note["rejected"] = f"llm_{result.error}: {result.detail[:300]}"
            continue
        draft = result.parsed(RMProbeDraft)
        note["question"] = draft.question
        problem = draft_problem(draft, constraint_texts)
        if problem is not None:
            note["rejected"] = problem
            continue
        check = ChatRequest(oracle_messages(dimension, ask(draft.question)), temperature=0.0,
                            max_tokens=params.answer_max_tokens, tag=f"{item['id']}:rm{attempt}:oracle")
        verdict = judge.complete(check)
        if not verdict.ok:
            note["rejected"] = f"oracle llm_{verdict.error}: {verdict.detail[:300]}"
            continue
        note["oracle_answer"] = (verdict.text or "")[:ANSWER_CHARS]
        alias = recovered(verdict.text or "", draft.aliases)
        if alias is None:
            note["rejected"] = "the oracle's answer contains none of the aliases"
            continue
        note["matched_alias"] = alias
        record = {"source": f"llm:{llm.model}", "oracle": f"llm:{judge.model}", "attempts": attempts}
        return {"question": draft.question, "answer": draft.answer, "aliases": draft.aliases}, record
    reason = "; ".join(f"attempt {a['attempt']}: {a.get('rejected')}" for a in attempts)
    return None, {"source": "hand-written", "fallback_reason": reason[:1000], "attempts": attempts}
