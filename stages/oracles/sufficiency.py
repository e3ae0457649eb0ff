"""``oracle_sufficiency``: is each blueprint solvable from its open-book skeleton? (paper A.5)

In: scaled blueprint items (``{"id", "seed_id", "blueprint", "provenance", ...}``).
Out: the same items with ``item["oracles"]["sufficiency"]`` (decision, method, checks,
reasons) and ``provenance["oracle_sufficiency"]``; dropped: blueprints that fail and
are not rescued by review.

With an LLM (``ctx.services["llm"]``, judge ``ctx.services["llm_judge"]`` or the same), the
Pos-Clean and Neg-Clean skeletons are answered under the benchmark's assistant prompt and
judged for the reference intent; without one, the rule-based stand-in of
:mod:`stages.oracles.rules` decides, and every record says ``offline-rules``.
A failing blueprint is flagged into the review queue (``review_file``). A reviewer's
``accept`` keeps it, ``reject`` drops it, ``fix`` edits it and checks it again (a second
pass): dropped if it still fails. Until it is reviewed it is dropped (``keep_pending``
keeps it instead, marked ``flagged_pending_review``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pipeline.bounds import Tokens

from pipeline.blueprints.rules import check_rendered
from pipeline.blueprints.schema import Blueprint, to_json
from pipeline.hashing import combine
from pipeline.review import Decision, ReviewFileError, apply_fix, content_hash, decisions_digest, export_queue, load_decisions
from pipeline.stage import Dropped, Item, Stage, StageContext, StageOutput
from pipeline.vocabulary import DropReason, llm_drop_reason
from stages.oracles import llm_checks, rules
from stages.oracles.outcome import Outcome


class SufficiencyParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    answer_max_tokens: Tokens = 512
    judge_max_tokens: Tokens = 200
    review_file: str | None = None
    keep_pending: bool = False


class OracleSufficiency(Stage):
    """Sufficiency oracle with a human review round."""

    name = "oracle_sufficiency"
    inputs = ("split",)
    Params = SufficiencyParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("llm",)

    def review_path(self) -> Path | None:
        return Path(self.params.review_file) if self.params.review_file else None

    def fingerprint(self, input_fingerprints: list[str], ctx: StageContext) -> str:
        """The usual fingerprint plus the review decisions (editing them reruns this stage)."""
        return combine(super().fingerprint(input_fingerprints, ctx), decisions_digest(self.review_path()))

    def check(self, pairs: list[tuple[str, dict[str, Any]]], ctx: StageContext) -> list[Outcome]:
        """Judge ``(item id, blueprint)`` pairs with the LLM when configured, else by rules."""
        llm = ctx.services.get("llm")
        if llm is None:
            return [rules.sufficiency(bp) for _, bp in pairs]
        judge = ctx.services.get("llm_judge") or llm
        return llm_checks.sufficiency(pairs, llm, judge, self.params.answer_max_tokens, self.params.judge_max_tokens)

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        items = inputs[self.inputs[0]]
        llm = ctx.services.get("llm")
        before = llm.stats.snapshot() if llm is not None else None
        decisions = load_decisions(self.review_path())
        first = self.check([(item["id"], item["blueprint"]) for item in items], ctx)
        kept: dict[int, Item] = {}
        dropped: list[Dropped] = []
        flagged: list[dict[str, Any]] = []
        fixes: list[tuple[int, Item, dict[str, Any], Outcome, Decision]] = []
        counts = {"passed": 0, "flagged_pending": 0, "accepted": 0, "rejected": 0, "fixed": 0, "fix_failed": 0}
        for index, (item, outcome) in enumerate(zip(items, first)):
            if outcome.llm_error:
                dropped.append(Dropped(item["id"], llm_drop_reason(outcome.llm_error), outcome.llm_detail))
                continue
            if outcome.passed:
                counts["passed"] += 1
                kept[index] = _mark(item, outcome.record(status="pass"))
                continue
            digest = content_hash(item["blueprint"])
            entry = _entry(item, digest, outcome)
            decision = decisions.get((item["id"], digest))
            if decision is None:
                counts["flagged_pending"] += 1
                flagged.append(entry)
                if self.params.keep_pending:
                    kept[index] = _mark(item, outcome.record(status="flagged_pending_review"))
                else:
                    dropped.append(Dropped(item["id"], DropReason.SUFFICIENCY_FLAGGED, _why(outcome, self.review_path())))
            elif decision.decision == "accept":
                counts["accepted"] += 1
                flagged.append({**entry, "outcome": "kept (accepted in review)"})
                kept[index] = _mark(item, outcome.record(status="accepted_in_review", review=_review(decision)))
            elif decision.decision == "reject":
                counts["rejected"] += 1
                flagged.append({**entry, "outcome": "dropped (rejected in review)"})
                dropped.append(Dropped(item["id"], DropReason.SUFFICIENCY_REJECTED_IN_REVIEW, decision.note))
            else:
                try:
                    fixed = _fixed_blueprint(item["blueprint"], decision)
                except (ReviewFileError, ValidationError, ValueError) as error:
                    counts["fix_failed"] += 1
                    flagged.append({**entry, "outcome": f"dropped (fix is invalid: {error})"[:500]})
                    dropped.append(Dropped(item["id"], DropReason.SUFFICIENCY_FIX_INVALID, str(error)[:500]))
                    continue
                fixes.append((index, item, fixed, outcome, decision))
        second = self.check([(item["id"], fixed) for _, item, fixed, _, _ in fixes], ctx)
        for (index, item, fixed, before_fix, decision), outcome in zip(fixes, second):
            entry = _entry(item, content_hash(item["blueprint"]), before_fix)
            if outcome.passed and not outcome.llm_error:
                counts["fixed"] += 1
                flagged.append({**entry, "outcome": "kept (fixed, passed the second check)"})
                record = outcome.record(status="pass_after_fix", first_check=before_fix.record(), review=_review(decision))
                kept[index] = _mark({**item, "blueprint": fixed}, record)
            else:
                counts["fix_failed"] += 1
                why = outcome.llm_detail if outcome.llm_error else "; ".join(outcome.reasons)
                flagged.append({**entry, "outcome": f"dropped (fixed version still fails: {why})"[:500]})
                reason = llm_drop_reason(outcome.llm_error) if outcome.llm_error else DropReason.SUFFICIENCY_FAILED_AFTER_FIX
                dropped.append(Dropped(item["id"], reason, why[:500]))
        if self.review_path() is not None:
            export_queue(self.review_path(), flagged)  # type: ignore[arg-type]
        stats: dict[str, Any] = {"oracle": "sufficiency", "method": first[0].method if first else None, **counts}
        if llm is not None and before is not None:
            stats["llm"] = llm.stats.since(before).as_dict()
        return StageOutput(items=[kept[i] for i in sorted(kept)], dropped=dropped, stats=stats)


def _mark(item: Item, record: dict[str, Any]) -> Item:
    provenance = {**item.get("provenance", {}), "oracle_sufficiency": record["method"]}
    return {**item, "oracles": {**item.get("oracles", {}), "sufficiency": record}, "provenance": provenance}


def _entry(item: Item, digest: str, outcome: Outcome) -> dict[str, Any]:
    return {"id": item["id"], "content_hash": digest, "oracle": "sufficiency", "method": outcome.method,
            "reasons": outcome.reasons, "checks": outcome.checks, "blueprint": item["blueprint"]}  # fmt: skip


def _review(decision: Decision) -> dict[str, Any]:
    return {"decision": decision.decision, "fix": decision.fix, "note": decision.note}


def _why(outcome: Outcome, path: Path | None) -> str:
    where = f"; awaiting review in {path}" if path else "; no review file configured"
    return ("; ".join(outcome.reasons) + where)[:1000]


def _fixed_blueprint(blueprint: dict[str, Any], decision: Decision) -> dict[str, Any]:
    """The reviewer's fix applied, re-validated against the schema and the lint rules."""
    fixed = Blueprint.model_validate(apply_fix(blueprint, decision.fix))
    problems = check_rendered(fixed)
    if problems:
        raise ValueError("; ".join(f"{p.field}: {p.message}" for p in problems[:5]))
    return to_json(fixed)
