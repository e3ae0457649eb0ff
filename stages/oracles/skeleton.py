"""Open-book skeletons of a blueprint: the constraint and trigger turns without filler.

In: a rendered blueprint dict (``item["blueprint"]``, see ``pipeline.blueprints.schema``).
Out: chat messages for Pos-Clean and Neg-Clean, ending with the trigger user turn, and
what the judge may see for each (the paper's context-visibility rule, B.6: flipped
logical-adherence negatives are judged on the intent alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stages.oracles.prompts import assistant_prompt


@dataclass(frozen=True)
class Skeleton:
    """One variant's minimal dialogue and how its judgement is read."""

    variant: str  # pos_clean or neg_clean
    expected: str  # intervene or silent
    messages: list[dict[str, str]]
    judge_constraints: list[str] | None
    judge_trigger: str | None


def stamp(at: str | None, text: str) -> str:
    """A user turn as the benchmark shows it: ``[YYYY-MM-DDTHH:MM] text``."""
    return f"[{at}] {text}" if at else text


def _user_turns(turn: dict[str, Any], text: str | None = None) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": stamp(turn.get("at"), text if text is not None else turn["text"])}]
    if turn.get("reply"):
        messages.append({"role": "assistant", "content": turn["reply"]})
    return messages


def _dialogue(bp: dict[str, Any], constraints: list[dict[str, Any]], middle: list[dict[str, Any]],
              trigger_text: str) -> list[dict[str, str]]:  # fmt: skip
    messages = [{"role": "system", "content": assistant_prompt(bp["dimension"])}]
    for turn in constraints:
        messages += _user_turns(turn)
    for turn in middle:
        messages += _user_turns(turn)
    messages.append({"role": "user", "content": stamp(bp["trigger"].get("at"), trigger_text)})
    return messages


def skeletons(bp: dict[str, Any]) -> list[Skeleton]:
    """Pos-Clean, and Neg-Clean when the blueprint has a negative."""
    constraints = list(bp["constraints"])
    middle = [bp["interruption"]] if bp.get("interruption") else []  # attention recovery's hijack
    trigger = bp["trigger"]["text"]
    constraint_texts = [c["text"] for c in constraints]
    out = [Skeleton("pos_clean", "intervene", _dialogue(bp, constraints, middle, trigger), constraint_texts, trigger)]
    negative = bp.get("negative")
    if not negative:
        return out
    kind = negative["kind"]
    if kind == "resolution":
        resolving = {"at": negative.get("at"), "text": negative["text"], "reply": negative.get("reply")}
        messages = _dialogue(bp, constraints, [*middle, resolving], trigger)
        out.append(Skeleton("neg_clean", "silent", messages, constraint_texts, trigger))
    elif kind == "flip_trigger":
        out.append(Skeleton("neg_clean", "silent", _dialogue(bp, constraints, middle, negative["text"]), None, None))
    elif kind == "flip_state":
        index = int(negative.get("constraint") or 0)
        flipped = [dict(c, text=negative["text"]) if i == index else c for i, c in enumerate(constraints)]
        out.append(Skeleton("neg_clean", "silent", _dialogue(bp, flipped, middle, trigger), None, None))
    else:
        raise ValueError(f"unknown negative kind {kind!r}")
    return out


def trigger_only(bp: dict[str, Any]) -> list[dict[str, str]]:
    """The necessity probe: the assistant prompt and the Pos-Clean trigger, nothing before it."""
    return [
        {"role": "system", "content": assistant_prompt(bp["dimension"])},
        {"role": "user", "content": stamp(bp["trigger"].get("at"), bp["trigger"]["text"])},
    ]
