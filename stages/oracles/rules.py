"""Offline stand-ins for the oracles, used when no LLM is configured (labelled as such).

- sufficiency: the skeleton has what a solver needs: non-empty constraint(s), trigger and
  reference intent; every gold slot is stated in a constraint turn; a negative exists
  exactly where the dimension needs one, and it is well formed.
- necessity: the trigger does not give the constraint away: it mentions no gold slot and,
  in the dimensions built for zero lexical overlap (state tracking, temporal grounding,
  attention recovery: the paper's >94% zero-overlap set), shares no content word with the
  constraint(s). Logical-adherence triggers echo the rule by design, and safe-coding
  turns share project vocabulary, so those two are checked on gold slots only.
"""

from __future__ import annotations

from typing import Any

from pipeline.vocabulary import ZERO_OVERLAP_DIMENSIONS
from pipeline.blueprints.taxonomy import NEEDS_NEGATIVE
from pipeline.text import content_words, mentions
from stages.oracles.outcome import OFFLINE_METHOD, Outcome


def _check(name: str, ok: bool, detail: str = "") -> dict[str, Any]:
    return {"rule": name, "ok": ok, "detail": detail}


def sufficiency(bp: dict[str, Any]) -> Outcome:
    """Rule-based sufficiency of a rendered blueprint."""
    constraints = bp.get("constraints") or []
    constraint_text = " ".join(str(c.get("text") or "") for c in constraints)
    checks = [
        _check("constraints_present", bool(constraints) and all(str(c.get("text") or "").strip() for c in constraints)),
        _check("trigger_present", bool(str((bp.get("trigger") or {}).get("text") or "").strip())),
        _check("reference_intent_present", bool(str(bp.get("reference_intent") or "").strip())),
    ]
    slots = [str(s) for s in bp.get("gold_slots") or []]
    missing = [s for s in slots if not mentions(constraint_text, s)]
    detail = f"not stated in the constraint: {', '.join(missing)}" if missing else ""
    checks.append(_check("gold_slots_in_constraint", bool(slots) and not missing, detail or ("" if slots else "none")))
    checks.append(_negative_check(bp))
    failed = [f"{c['rule']}: {c['detail']}".rstrip(": ") for c in checks if not c["ok"]]
    return Outcome(passed=not failed, method=OFFLINE_METHOD, checks=checks, reasons=failed)


def _negative_check(bp: dict[str, Any]) -> dict[str, Any]:
    dimension = bp.get("dimension", "")
    negative = bp.get("negative")
    needed = NEEDS_NEGATIVE.get(dimension, False)
    if not needed:
        return _check("negative_where_required", negative is None, "this dimension has no Neg-Clean" if negative else "")
    if not negative or not str(negative.get("text") or "").strip():
        return _check("negative_where_required", False, f"{dimension} needs a Neg-Clean negative")
    kind = negative.get("kind")
    if kind == "resolution":
        at, last, trigger_at = negative.get("at"), bp["constraints"][-1].get("at"), bp["trigger"].get("at")
        between = bool(at and last and trigger_at and last < at < trigger_at)
        return _check("negative_where_required", between, "" if between else "the resolving turn is not between constraint and trigger")
    if kind == "flip_state":
        index = negative.get("constraint")
        valid = isinstance(index, int) and 0 <= index < len(bp["constraints"])
        return _check("negative_where_required", valid, "" if valid else f"flip_state names constraint {index!r}")
    if kind == "flip_trigger":
        changed = negative["text"].strip() != bp["trigger"]["text"].strip()
        return _check("negative_where_required", changed, "" if changed else "the flipped trigger equals the trigger")
    return _check("negative_where_required", False, f"unknown negative kind {kind!r}")


def necessity(bp: dict[str, Any], word_check_dimensions: tuple[str, ...] = ZERO_OVERLAP_DIMENSIONS) -> Outcome:
    """Rule-based necessity: does the trigger alone leak the constraint?"""
    trigger = str(bp["trigger"]["text"])
    leaked = [s for s in bp.get("gold_slots") or [] if mentions(trigger, str(s))]
    checks = [_check("no_gold_slot_in_trigger", not leaked, f"trigger mentions {', '.join(leaked)}" if leaked else "")]
    if bp.get("dimension") not in word_check_dimensions:
        checks.append(_check("no_shared_content_word", True, f"not checked for {bp.get('dimension')}"))
    else:
        constraint_words = frozenset().union(*(content_words(str(c["text"])) for c in bp["constraints"]))
        shared = sorted(constraint_words & content_words(trigger))
        checks.append(_check("no_shared_content_word", not shared, f"shared: {', '.join(shared)}" if shared else ""))
    failed = [f"{c['rule']}: {c['detail']}" for c in checks if not c["ok"]]
    return Outcome(passed=not failed, method=OFFLINE_METHOD, checks=checks, reasons=failed)
