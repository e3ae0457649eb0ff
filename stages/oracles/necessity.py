"""``oracle_necessity``: does the trigger alone already give the intervention away? (paper A.5)

In: items of ``oracle_sufficiency``. Out: the same items with ``item["oracles"]["necessity"]``
and ``provenance["oracle_necessity"]``; dropped: blueprints whose intervention is guessed
(``necessity_guessed``) or, offline, whose trigger leaks the constraint (``necessity_leak``).

With an LLM: the Pos-Clean trigger alone, under the benchmark's assistant prompt, is
answered ``rollouts`` times (default 5) at ``temperature`` (default 0.8); each rollout is
judged for the reference intent; more than ``max_guessed`` (default 0) YES drops it.
Each rollout has its own sample index and seed (from the build seed), so reruns hit the
cache. Offline: the rule-based stand-in in :mod:`stages.oracles.rules`, labelled as such.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pipeline.bounds import Temperature, Tokens

from pipeline.vocabulary import ZERO_OVERLAP_DIMENSIONS, DropReason, llm_drop_reason
from pipeline.seeding import derive_seed
from pipeline.stage import Dropped, Item, Stage, StageContext, StageOutput
from stages.oracles import llm_checks, rules
from stages.oracles.outcome import OFFLINE_METHOD, Outcome


class NecessityParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    rollouts: int = Field(default=5, ge=1)
    temperature: Temperature = 0.8
    max_guessed: int = Field(default=0, ge=0)
    answer_max_tokens: Tokens = 512
    judge_max_tokens: Tokens = 200
    word_check_dimensions: tuple[str, ...] = ZERO_OVERLAP_DIMENSIONS


class OracleNecessity(Stage):
    """Necessity oracle (prior-reliance probe)."""

    name = "oracle_necessity"
    inputs = ("oracle_sufficiency",)
    Params = NecessityParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("llm",)

    def check(self, pairs: list[tuple[str, dict[str, Any]]], ctx: StageContext) -> list[Outcome]:
        """Probe ``(item id, blueprint)`` pairs with the LLM when configured, else by rules."""
        llm = ctx.services.get("llm")
        if llm is None:
            return [rules.necessity(bp, self.params.word_check_dimensions) for _, bp in pairs]
        p = self.params
        return llm_checks.necessity(
            pairs, llm, ctx.services.get("llm_judge") or llm, rollouts=p.rollouts, temperature=p.temperature,
            max_guessed=p.max_guessed, answer_max_tokens=p.answer_max_tokens, judge_max_tokens=p.judge_max_tokens,
            seed_for=lambda item_id, k: derive_seed(ctx.seed, item_id, self.name, str(k)) % 2**31,
        )

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        items = inputs[self.inputs[0]]
        llm = ctx.services.get("llm")
        before = llm.stats.snapshot() if llm is not None else None
        outcomes = self.check([(item["id"], item["blueprint"]) for item in items], ctx)
        kept: list[Item] = []
        dropped: list[Dropped] = []
        for item, outcome in zip(items, outcomes):
            if outcome.llm_error:
                dropped.append(Dropped(item["id"], llm_drop_reason(outcome.llm_error), outcome.llm_detail))
            elif outcome.passed:
                record = outcome.record(status="pass")
                provenance = {**item.get("provenance", {}), "oracle_necessity": record["method"]}
                kept.append({**item, "oracles": {**item.get("oracles", {}), "necessity": record}, "provenance": provenance})
            else:
                reason = DropReason.NECESSITY_LEAK if outcome.method == OFFLINE_METHOD else DropReason.NECESSITY_GUESSED
                dropped.append(Dropped(item["id"], reason, "; ".join(outcome.reasons)[:1000]))
        stats: dict[str, Any] = {
            "oracle": "necessity",
            "method": outcomes[0].method if outcomes else None,
            "passed": len(kept),
            "failed": sum(1 for d in dropped if d.reason.startswith("necessity_")),
        }
        if llm is not None and before is not None:
            stats["llm"] = llm.stats.since(before).as_dict()
        return StageOutput(items=kept, dropped=dropped, stats=stats)
