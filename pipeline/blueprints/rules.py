"""Blueprint rules: structure per dimension and the lint of the authoring guide.

Each rule is a small function ``(blueprint) -> list[Problem]`` registered with
``@rule(name)``; ``check(blueprint)`` runs them all. Lint runs on the seed's own
rendering and on every single slot alternative, so that each alternative is checked in
every field it fills. Every rule has a failing-example test in ``tests/test_lint.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from pipeline.blueprints import taxonomy
from pipeline.blueprints.schema import Blueprint
from pipeline.blueprints.slots import PLACEHOLDER, placeholder_names, provided_names, render, single_changes
from pipeline.text import content_words, mentions
from pipeline.vocabulary import ZERO_OVERLAP_DIMENSIONS


@dataclass(frozen=True)
class Problem:
    """One problem: the dotted field it concerns, what is wrong, and the rule's name."""

    field: str
    message: str
    rule: str


RuleFn = Callable[[Blueprint], list[Problem]]
RULES: dict[str, RuleFn] = {}
DELEGATION = re.compile(r"\b(remind me|don'?t let me forget|make sure (?:that )?i|ping me|nudge me|alert me)\b", re.I)


def rule(name: str) -> Callable[[RuleFn], RuleFn]:
    def register(fn: RuleFn) -> RuleFn:
        RULES[name] = fn
        return fn

    return register


def _p(name: str, field: str, message: str) -> Problem:
    return Problem(field, message, name)


@rule("subtype")
def _subtype(bp: Blueprint) -> list[Problem]:
    allowed = taxonomy.SUBTYPES[bp.dimension]
    if bp.subtype not in allowed:
        return [_p("subtype", "subtype", f"{bp.subtype!r} is not a {bp.dimension} subtype; expected one of {', '.join(allowed)}")]
    return []


@rule("cwe")
def _cwe(bp: Blueprint) -> list[Problem]:
    if bp.dimension != "safe_coding":
        return [_p("cwe", "cwe", "only safe_coding blueprints carry a CWE")] if bp.cwe else []
    group = taxonomy.CWE_GROUPS.get(bp.subtype)
    if bp.cwe is None:
        return [_p("cwe", "cwe", "safe_coding blueprints need a CWE id")]
    if group and bp.cwe not in group[1]:
        return [_p("cwe", "cwe", f"{bp.cwe} is not in group {bp.subtype!r} ({', '.join(group[1])})")]
    return []


@rule("parts")
def _parts(bp: Blueprint) -> list[Problem]:
    """Which optional parts a dimension requires or forbids."""
    dim, out = bp.dimension, []
    wanted = {
        "negative": taxonomy.NEEDS_NEGATIVE[dim],
        "explicit": taxonomy.NEEDS_EXPLICIT[dim],
        "rm": taxonomy.NEEDS_RM[dim],
        "timing": dim == "temporal_grounding",
        "interruption": dim == "attention_recovery",
    }
    for part, needed in wanted.items():
        present = getattr(bp, part) is not None
        if needed and not present:
            out.append(_p("parts", part, f"{dim} blueprints need '{part}'"))
        elif present and not needed:
            out.append(_p("parts", part, f"{dim} blueprints must not have '{part}'"))
    expected = 2 if bp.subtype == "if_then" else 1
    if len(bp.constraints) != expected:
        out.append(_p("parts", "constraints", f"{bp.subtype} needs {expected} constraint turn(s), found {len(bp.constraints)}"))
    return out


@rule("replies")
def _replies(bp: Blueprint) -> list[Problem]:
    out = [_p("replies", f"constraints.{i}.reply", "constraint turns need the assistant's reply")
           for i, turn in enumerate(bp.constraints) if not turn.reply]
    if bp.trigger.reply:
        out.append(_p("replies", "trigger.reply", "the trigger is the last message; it has no reply"))
    if bp.interruption and not bp.interruption.reply:
        out.append(_p("replies", "interruption.reply", "the interruption needs the assistant's reply"))
    return out


@rule("negative")
def _negative(bp: Blueprint) -> list[Problem]:
    neg = bp.negative
    if neg is None or bp.dimension not in taxonomy.NEGATIVE_KINDS:
        return []
    kinds = taxonomy.NEGATIVE_KINDS[bp.dimension]
    if neg.kind not in kinds:
        return [_p("negative", "negative.kind", f"{bp.dimension} negatives are {' or '.join(kinds)}, not {neg.kind}")]
    out = []
    if neg.kind == "resolution" and (neg.at is None or not neg.reply):
        out.append(_p("negative", "negative", "a resolution turn needs 'at' and 'reply'"))
    if neg.kind == "flip_state" and (neg.constraint is None or not 0 <= neg.constraint < len(bp.constraints)):
        out.append(_p("negative", "negative.constraint", "flip_state must name the constraint index it replaces"))
    if neg.kind == "flip_trigger" and neg.text == bp.trigger.text:
        out.append(_p("negative", "negative.text", "the flipped trigger is identical to the trigger"))
    return out


@rule("implicit")
def _implicit(bp: Blueprint) -> list[Problem]:
    return [_p("implicit", f"constraints.{i}.text", f"constraint delegates explicitly ({m.group(0)!r}); keep it implicit")
            for i, turn in enumerate(bp.constraints) if (m := DELEGATION.search(turn.text))]


@rule("ct-overlap")
def _ct_overlap(bp: Blueprint) -> list[Problem]:
    if bp.dimension not in ZERO_OVERLAP_DIMENSIONS:
        return []
    trigger = content_words(bp.trigger.text)
    out = []
    for i, turn in enumerate(bp.constraints):
        shared = sorted(content_words(turn.text) & trigger)
        if shared:
            out.append(_p("ct-overlap", "trigger.text", f"shares content words with constraint {i}: {', '.join(shared)}"))
    return out


@rule("trigger-slot")
def _trigger_slot(bp: Blueprint) -> list[Problem]:
    return [_p("trigger-slot", "trigger.text", f"the trigger names gold slot {slot!r}")
            for slot in bp.gold_slots if mentions(bp.trigger.text, slot)]


@rule("gold-in-constraint")
def _gold_in_constraint(bp: Blueprint) -> list[Problem]:
    sources = [turn.text for turn in bp.constraints] + ([bp.interruption.text] if bp.interruption else [])
    return [_p("gold-in-constraint", f"gold_slots.{i}", f"gold slot {slot!r} does not appear in any constraint turn")
            for i, slot in enumerate(bp.gold_slots) if not any(mentions(text, slot) for text in sources)]


@rule("overload-overlap")
def _overload_overlap(bp: Blueprint) -> list[Problem]:
    shared = sorted(content_words(bp.overload) & content_words(bp.trigger.text))
    return [_p("overload-overlap", "overload", f"shares content words with the trigger: {', '.join(shared)}")] if shared else []


@rule("explicit-overlap")
def _explicit_overlap(bp: Blueprint) -> list[Problem]:
    if bp.explicit is None or not 0 <= bp.explicit.constraint < len(bp.constraints):
        return [_p("explicit-overlap", "explicit.constraint", "no such constraint")] if bp.explicit else []
    added = content_words(bp.explicit.text) - content_words(bp.constraints[bp.explicit.constraint].text)
    shared = sorted(added & content_words(bp.trigger.text))
    return [_p("explicit-overlap", "explicit.text", f"foreshadows the trigger with: {', '.join(shared)}")] if shared else []


@rule("timestamps")
def _timestamps(bp: Blueprint) -> list[Problem]:
    points = [(f"constraints.{i}.at", t.at) for i, t in enumerate(bp.constraints)]
    if bp.interruption:
        points.append(("interruption.at", bp.interruption.at))
    if bp.negative and bp.negative.kind == "resolution" and bp.negative.at:
        points.append(("negative.at", bp.negative.at))
    points.append(("trigger.at", bp.trigger.at))
    out = []
    for (_, earlier), (field, later) in zip(points, points[1:]):
        if later <= earlier:
            out.append(_p("timestamps", field, f"{later:%Y-%m-%dT%H:%M} is not after {earlier:%Y-%m-%dT%H:%M}"))
    return out


@rule("time-arithmetic")
def _time_arithmetic(bp: Blueprint) -> list[Problem]:
    timing = bp.timing
    if timing is None:
        return []
    start, trigger, out = bp.constraints[0].at, bp.trigger.at, []
    if not start < trigger < timing.deadline:
        out.append(_p("time-arithmetic", "timing.deadline", "needs constraint time < trigger time < deadline"))
    if timing.kind == "relative":
        if timing.duration_minutes is None:
            return out + [_p("time-arithmetic", "timing.duration_minutes", "relative timing needs duration_minutes")]
        if start + timedelta(minutes=timing.duration_minutes) != timing.deadline:
            out.append(_p("time-arithmetic", "timing.deadline", "constraint time + duration_minutes != deadline"))
        if not _mentions_duration(bp.constraints[0].text, timing.duration_minutes):
            out.append(_p("time-arithmetic", "constraints.0.text", f"does not state the {timing.duration_minutes}-minute duration"))
    elif not _mentions_clock(bp.constraints[0].text, timing.deadline.hour, timing.deadline.minute):
        out.append(_p("time-arithmetic", "constraints.0.text", f"does not state the deadline {timing.deadline:%H:%M}"))
    return out


def _mentions_duration(text: str, minutes: int) -> bool:
    lowered = text.lower()
    spelled = {15: "quarter of an hour", 30: "half an hour", 60: "an hour", 90: "hour and a half", 120: "two hours"}
    hours = minutes / 60
    return (re.search(rf"\b{minutes}\b", lowered) is not None or spelled.get(minutes, "\0") in lowered
            or (hours.is_integer() and re.search(rf"\b{int(hours)} hours?\b", lowered) is not None))


def _mentions_clock(text: str, hour: int, minute: int) -> bool:
    lowered = text.lower()
    twelve = hour % 12 or 12
    forms = [f"{hour:02d}:{minute:02d}", f"{hour}:{minute:02d}", f"{twelve}:{minute:02d}"]
    if minute == 0:
        forms += [f"{twelve} am" if hour < 12 else f"{twelve} pm", f"{twelve}am", f"{twelve}pm", f"{twelve} o'clock", f"{twelve} o’clock"]
        forms += ["noon"] if hour == 12 else ["midnight"] if hour == 0 else []
    return any(re.search(rf"(?<![\d:]){re.escape(form)}(?![\d])", lowered) for form in forms)


@rule("rm-recoverable")
def _rm_recoverable(bp: Blueprint) -> list[Problem]:
    if bp.rm is None:
        return []
    sources = " ".join([t.text for t in bp.constraints] + ([bp.interruption.text] if bp.interruption else []))
    if not any(mentions(sources, answer) for answer in [bp.rm.answer, *bp.rm.aliases]):
        return [_p("rm-recoverable", "rm.aliases", "neither the answer nor any alias appears in the constraint turn(s)")]
    return []


@rule("placeholders")
def _placeholders(bp: Blueprint) -> list[Problem]:
    provided, used, out = provided_names(bp), set(), []
    for field, text in bp.text_fields().items():
        names = placeholder_names(text)
        used |= names
        out += [_p("placeholders", field, f"placeholder {{{n}}} has no slot") for n in sorted(names - provided)]
    out += [_p("placeholders", f"slots.{name}", "slot is never used") for name in sorted(provided - used)]
    for slot, alternatives in bp.slots.items():
        keys = {tuple(sorted(a)) if isinstance(a, dict) else (slot,) for a in alternatives}
        if len(keys) > 1:
            out.append(_p("placeholders", f"slots.{slot}", "alternatives fill different placeholders"))
        if len(alternatives) < 1:
            out.append(_p("placeholders", f"slots.{slot}", "a slot needs at least one alternative"))
    return out


def check_rendered(bp: Blueprint) -> list[Problem]:
    """All rules except placeholder bookkeeping, on an already rendered blueprint."""
    out = []
    for name, fn in RULES.items():
        if name != "placeholders":
            out += fn(bp)
    out += [_p("placeholders", field, f"unfilled placeholder in {text[:40]!r}")
            for field, text in bp.text_fields().items() if PLACEHOLDER.search(text)]
    return out


def check(bp: Blueprint) -> list[Problem]:
    """Every rule, on the seed rendering and on each single slot alternative."""
    problems = _placeholders(bp)
    if problems:
        return problems
    seen: set[Problem] = set()
    ordered: list[Problem] = []
    for choice in single_changes(bp):
        label = ", ".join(f"{k}={_alternative_label(bp, k, v)}" for k, v in choice.items())
        for problem in check_rendered(render(bp, choice)):
            if label:
                problem = Problem(problem.field, f"{problem.message} (with slot {label})", problem.rule)
            if problem not in seen:
                seen.add(problem)
                ordered.append(problem)
    return ordered


def _alternative_label(bp: Blueprint, slot: str, index: int) -> str:
    value = bp.slots[slot][index]
    return repr(value if isinstance(value, str) else next(iter(value.values())))
