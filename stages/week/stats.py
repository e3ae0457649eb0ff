"""Composition statistics of a week (the keys of ``triggerbench week stats --json``).

In: a :class:`Week`. Out: a JSON-compatible dict with the keys of the public contract, and a
comparison of those statistics against a target :class:`~stages.week.plan.Composition` (Table 1).
"""

from __future__ import annotations

from typing import Any

from stages.week.index import WeekIndex
from stages.week.model import NARRATIVE, Week
from stages.week.plan import Composition
from stages.week.validator import Problem


def week_stats(week: Week) -> dict[str, Any]:
    """Counts over task definitions (before updates), updates, channels and lures."""
    ix = WeekIndex(week)
    channel_tasks = 0
    for task in week.tasks:
        cue = ix.cues.get(task.cue_id or "")
        if task.trigger == "event" and cue is not None and cue.source != NARRATIVE:
            channel_tasks += 1
    kinds = [u.kind for u in week.updates]
    return {
        "days": len(week.days),
        "steps": sum(len(d.steps) for d in week.days),
        "steps_per_day": [len(d.steps) for d in week.days],
        "task_definitions": len(week.tasks),
        "scored_tasks": len(ix.scored_task_ids()),
        "event_tasks": sum(t.trigger == "event" for t in week.tasks),
        "time_tasks": sum(t.trigger == "time" for t in week.tasks),
        "regular_tasks": sum(t.regular for t in week.tasks),
        "non_regular_tasks": sum(not t.regular for t in week.tasks),
        "channel_tasks": channel_tasks,
        "cross_day_tasks": sum(t.cross_day for t in week.tasks),
        "updates": {kind: kinds.count(kind) for kind in ("cancel", "override", "reschedule")},
        "channels": {c.name: c.type for c in week.channels},
        "lures": len(week.lures),
    }


def expected_stats(comp: Composition) -> dict[str, Any]:
    """The statistics a week generated for ``comp`` must have (steps_per_day checked by range)."""
    routine = comp.days * (comp.routine_time_per_day + comp.routine_event_per_day)
    non_regular = comp.narrative[0] + comp.one_off[0] + comp.channel[0] + comp.cross_day
    return {
        "days": comp.days,
        "steps": comp.steps,
        "task_definitions": routine + non_regular,
        "scored_tasks": routine + non_regular - comp.cancels,
        "event_tasks": comp.days * comp.routine_event_per_day + comp.narrative[0] + comp.channel[0] + comp.cross_day,
        "time_tasks": comp.days * comp.routine_time_per_day + comp.one_off[0],
        "regular_tasks": routine,
        "non_regular_tasks": non_regular,
        "channel_tasks": comp.channel[0],
        "cross_day_tasks": comp.cross_day,
        "updates": {"cancel": comp.cancels, "override": comp.overrides, "reschedule": comp.reschedules},
        "lures": comp.lures[0],
    }


def composition_problems(week: Week, comp: Composition) -> list[Problem]:
    """Differences between the week's statistics and the target composition."""
    stats, target = week_stats(week), expected_stats(comp)
    out = [Problem("composition", f"{key} is {stats[key]}, expected {value}")
           for key, value in target.items() if stats[key] != value]
    lo, hi = comp.steps_per_day
    for day, count in zip(week.days, stats["steps_per_day"]):
        if not lo <= count <= hi:
            out.append(Problem("composition", f"day {day.index} has {count} steps, expected {lo}-{hi}"))
    return out
