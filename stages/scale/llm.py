"""LLM scaling: one seed blueprint -> the seed's own rendering plus up to ``max_per_seed - 1``
new blueprints written by the LLM, few-shot from renderings of the seed.

Same output shape and checks as the offline scaler: ``{"id": "<seed>--sNN", "seed_id",
"blueprint", "slot_choice", "provenance"}``, every kept blueprint passes
``Blueprint.model_validate`` and ``check_rendered``. The LLM answers in a draft schema (the
blueprint without identity fields, times as strings); identity fields (dimension, subtype,
domain, topic, CWE) are copied from the seed. A draft that breaks a lint rule gets
``lint_repairs`` rounds of feedback; an embedding near-duplicate of an already kept blueprint
of the seed is dropped. Each failure is a :class:`Dropped` entry with its reason:
``llm_<error>`` (the request failed), ``llm_schema`` / ``llm_lint`` (still invalid after
repairs) or ``near_duplicate_embedding``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pipeline.bounds import Similarity, Temperature, Tokens

from pipeline.blueprints.rules import check_rendered
from pipeline.blueprints.schema import Blueprint, to_json
from pipeline.blueprints.slots import Choice, render
from pipeline.hashing import sha256_json
from pipeline.llm import ChatRequest, LLMResult
from pipeline.stage import Drop, Dropped, Item, StageContext
from pipeline.vocabulary import DropReason, llm_drop_reason
from stages.generate.prompts import lint_feedback, scale_messages
from stages.scale.similarity import EmbeddingIndex

TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$")
_Fix = tuple[int, ChatRequest, LLMResult, list[str], str]  # number, request, answer, problems, reason
IDENTITY = ("id", "dimension", "subtype", "domain", "topic", "cwe", "slots", "notes")


class LLMScaleParams(BaseModel):
    """Knobs of the LLM path of ``scale`` (``stages.scale.llm``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    examples: int = Field(default=2, ge=1)
    temperature: Temperature = 0.9
    max_tokens: Tokens = 1500
    lint_repairs: int = Field(default=1, ge=0)
    max_cosine: Similarity = 0.9
    embedding_model: str | None = None


def _minute(value: str) -> str:
    if not TIME.match(value.strip()):
        raise ValueError(f"expected a time like 2026-05-12T10:27, got {value!r}")
    return value.strip()


# checked by a validator, not a JSON-schema ``pattern``: llama-cpp-python's server crashes
# (SIGSEGV in its grammar sampler) on a schema with ``pattern`` in json_object_schema mode
Minute = Annotated[str, AfterValidator(_minute), Field(description="YYYY-MM-DDTHH:MM")]


class _Draft(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The JSON schema without ``title`` entries (a third shorter: it is sent with every request)."""
        return _untitled(super().model_json_schema(*args, **kwargs))


def _untitled(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untitled(v) for k, v in value.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(value, list):
        return [_untitled(v) for v in value]
    return value


class TurnDraft(_Draft):
    text: str
    at: Minute
    reply: str | None = None


class InterruptionDraft(TurnDraft):
    source: Literal["math", "coding"]


class NegativeDraft(_Draft):
    kind: Literal["resolution", "flip_trigger", "flip_state"]
    text: str
    at: Minute | None = None
    reply: str | None = None
    constraint: int | None = None


class ExplicitDraft(_Draft):
    method: Literal["append", "rewrite"]
    text: str
    constraint: int = 0


class TimingDraft(_Draft):
    kind: Literal["absolute", "relative"]
    deadline: Minute
    duration_minutes: int | None = None


class RMDraft(_Draft):
    question: str
    answer: str
    aliases: list[str] = Field(min_length=3, max_length=5)


class BlueprintDraft(_Draft):
    """What the LLM writes: a blueprint without its identity fields and slots."""

    constraints: list[TurnDraft] = Field(min_length=1, max_length=2)
    interruption: InterruptionDraft | None = None
    trigger: TurnDraft
    overload: str
    negative: NegativeDraft | None = None
    explicit: ExplicitDraft | None = None
    reference_intent: str
    gold_slots: list[str] = Field(min_length=1)
    timing: TimingDraft | None = None
    rm: RMDraft | None = None


def draft_of(blueprint: Blueprint) -> dict[str, Any]:
    """A rendered blueprint in the draft shape (what the few-shot examples look like)."""
    return {k: v for k, v in to_json(blueprint).items() if k not in IDENTITY}


def assemble(seed: Blueprint, new_id: str, data: dict[str, Any]) -> tuple[Blueprint | None, list[str]]:
    """The full blueprint from a draft and the seed's identity, or None and the problems."""
    identity = {"id": new_id, "dimension": seed.dimension, "subtype": seed.subtype, "domain": seed.domain,
                "topic": seed.topic, "cwe": seed.cwe}  # fmt: skip
    try:
        blueprint = Blueprint.model_validate({**{k: v for k, v in data.items() if v is not None}, **identity})
    except ValidationError as error:
        return None, [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()][:8]
    return blueprint, [f"{p.field}: {p.message}" for p in check_rendered(blueprint)]


def _sort_answers(seed: Blueprint, numbered: list[tuple[int, ChatRequest, LLMResult]], round_index: int,
                  candidates: dict[int, tuple[Blueprint, ChatRequest, LLMResult, int]],
                  out: list[Item | Dropped]) -> list[_Fix]:
    """File each answer: a failed call is dropped, a valid blueprint becomes a candidate (with the
    repair round that produced it), anything else is returned to be repaired."""
    fixes: list[_Fix] = []
    for number, request, result in numbered:
        new_id = f"{seed.id}--s{number:02d}"
        if not result.ok:
            out.append(Dropped(new_id, llm_drop_reason(result.error), result.detail[:1000]))
            continue
        blueprint, problems = assemble(seed, new_id, result.data or {})
        if blueprint is not None and not problems:
            candidates[number] = (blueprint, request, result, round_index)
        else:
            fixes.append((number, request, result, problems, DropReason.LLM_LINT if blueprint else DropReason.LLM_SCHEMA))
    return fixes


class LLMScaler:
    """The LLM path of ``scale``; one per stage run (holds the lazily loaded embedding model)."""

    def __init__(self, params: LLMScaleParams, max_per_seed: int, code_version: str) -> None:
        self.params = params
        self.max_per_seed = max_per_seed
        self.code_version = code_version
        self._index: EmbeddingIndex | None = None

    def index(self) -> EmbeddingIndex:
        if self._index is None:
            self._index = EmbeddingIndex.load(self.params.max_cosine, self.params.embedding_model)
        return self._index

    def scale(self, item: Item, ctx: StageContext, llm: Any, choices: list[Choice]) -> list[Item | Dropped] | Drop:
        """Seed item -> kept scaled items and Dropped entries; ``choices`` are the seed's slot choices."""
        seed = Blueprint.model_validate(item["blueprint"])
        base = render(seed, choices[0], new_id=f"{seed.id}--s00")
        problems = check_rendered(base)
        if problems:
            return Drop(DropReason.LINT, f"{base.id}: {problems[0].field}: {problems[0].message}")
        labels = {name: _label(seed.slots[name][index]) for name, index in sorted(choices[0].items())}
        kept: list[Item] = [{
            "id": base.id, "seed_id": seed.id, "blueprint": to_json(base), "slot_choice": labels,
            "provenance": {"generator": "offline-rules", "scale": self.code_version[:12]},
        }]  # fmt: skip
        examples = [draft_of(render(seed, choice)) for choice in choices[: self.params.examples]]
        requests = [self._request(seed, examples, number, ctx) for number in range(1, self.max_per_seed)]
        results = llm.map(requests, desc=f"scale {seed.id}")
        out: list[Item | Dropped] = []
        candidates: dict[int, tuple[Blueprint, ChatRequest, LLMResult, int]] = {}
        numbered = list(zip(range(1, self.max_per_seed), requests, results))
        fixes = _sort_answers(seed, numbered, 0, candidates, out)
        for round_index in range(1, self.params.lint_repairs + 1):
            if not fixes:
                break
            retries = [_repair(request, result, problems) for _, request, result, problems, _ in fixes]
            answers = llm.map(retries, desc=f"scale {seed.id}: lint repairs")
            numbered = [(number, request, result) for (number, *_), request, result in zip(fixes, retries, answers)]
            fixes = _sort_answers(seed, numbered, round_index, candidates, out)
        for number, _, _, problems, reason in fixes:
            out.append(Dropped(f"{seed.id}--s{number:02d}", reason, "; ".join(problems)[:1000]))
        index = self.index().fresh() if candidates else None  # per seed, so a resumed run decides the same
        if index is not None:
            index.add(kept[0])
        for number in sorted(candidates):
            blueprint, request, result, repairs = candidates[number]
            scaled = self._item(seed, blueprint, request, result, repairs, llm.model, number)
            assert index is not None
            duplicate = index.is_duplicate(scaled)
            if duplicate is not None:
                detail = f"cosine {duplicate.cosine:.3f} with {duplicate.other_id} ({index.model_name})"
                out.append(Dropped(scaled["id"], DropReason.NEAR_DUPLICATE_EMBEDDING, detail))
                continue
            index.add(scaled)
            kept.append(scaled)
        return [*kept, *out]

    def _request(self, seed: Blueprint, examples: list[dict[str, Any]], number: int, ctx: StageContext) -> ChatRequest:
        messages = scale_messages(examples, seed.dimension, seed.subtype, number)
        sampling_seed = ctx.rng(seed.id, "llm", str(number)).randrange(2**31)
        return ChatRequest(messages, temperature=self.params.temperature, max_tokens=self.params.max_tokens,
                           seed=sampling_seed, sample=number, schema=BlueprintDraft, tag=f"{seed.id}--s{number:02d}")

    def _item(self, seed: Blueprint, blueprint: Blueprint, request: ChatRequest, result: LLMResult, repairs: int,
              model: str, number: int) -> Item:  # fmt: skip
        return {
            "id": blueprint.id,
            "seed_id": seed.id,
            "blueprint": to_json(blueprint),
            "slot_choice": {"llm_sample": str(number)},
            "provenance": {"generator": f"llm:{model}", "prompt_hash": sha256_json(request.wire_messages())[:16],
                           "request_key": result.key[:16], "lint_repairs": repairs, "scale": self.code_version[:12]},
        }  # fmt: skip


def _label(value: str | dict[str, str]) -> str:
    """A slot alternative as the offline scaler labels it."""
    return value if isinstance(value, str) else " / ".join(value.values())


def _repair(request: ChatRequest, result: LLMResult, problems: list[str]) -> ChatRequest:
    """The same request continued with the rejected answer and the lint problems."""
    messages = [*request.messages, {"role": "assistant", "content": result.text or ""},
                {"role": "user", "content": lint_feedback(problems)}]  # fmt: skip
    return ChatRequest(messages, temperature=request.temperature, max_tokens=request.max_tokens, seed=request.seed,
                       sample=request.sample, schema=request.schema, tag=f"{request.tag}:lint")
