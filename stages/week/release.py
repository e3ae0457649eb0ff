"""Flatten the week into release tables (split ``test``).

In: the week as a JSON dict (the stage item's ``"week"``). Out:
``{"pmbench_week": (schema, rows), "pmbench_week_tasks": (schema, rows)}``; one row per step
(week order) and one row per task definition (day, then id), with fixed pyarrow schemas.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from stages.week.index import WeekIndex
from stages.week.model import Week

_STR = pa.string()
_MENU = pa.list_(pa.struct([("handle", _STR), ("ref_id", _STR), ("action_text", _STR)]))
_CHANNELS = pa.list_(pa.struct([("channel", _STR), ("text", _STR), ("stage", _STR)]))

STEP_SCHEMA = pa.schema([
    ("week_id", _STR), ("day", pa.int32()), ("day_name", _STR), ("archetype", _STR), ("step_id", _STR),
    ("step_index", pa.int32()), ("time", _STR), ("day_opening", _STR), ("narrative", _STR),
    ("option_a", _STR), ("option_b", _STR), ("option_c", _STR), ("menu", _MENU),
    ("due_task_ids", pa.list_(_STR)), ("due_handles", pa.list_(_STR)), ("cue_ids", pa.list_(_STR)),
    ("update_ids", pa.list_(_STR)), ("encoded_task_ids", pa.list_(_STR)), ("channel_states", _CHANNELS),
])

TASK_SCHEMA = pa.schema([
    ("week_id", _STR), ("task_id", _STR), ("day", pa.int32()), ("handle", _STR), ("kind", _STR), ("trigger", _STR),
    ("regular", pa.bool_()), ("label", _STR), ("action_text", _STR), ("cue_id", _STR), ("cue_source", _STR),
    ("cue_step_id", _STR), ("cue_text", _STR), ("target_time", _STR), ("encoding_day", pa.int32()),
    ("encoding_step_id", _STR), ("cross_day", pa.bool_()), ("offset_days", pa.int32()),
    ("depends_on", pa.list_(_STR)), ("update_kinds", pa.list_(_STR)), ("update_step_ids", pa.list_(_STR)),
    ("effective_cue_id", _STR), ("effective_target_time", _STR), ("canceled", pa.bool_()), ("scored", pa.bool_()),
    ("due_step_id", _STR), ("late_step_ids", pa.list_(_STR)),
])


def _step_rows(week: Week, ix: WeekIndex) -> list[dict[str, Any]]:
    rows = []
    for day in week.days:
        handle_of = {m.ref_id: m.handle for m in day.menu}
        for step in day.steps:
            due = ix.due_sets.get(step.id, [])
            rows.append({
                "week_id": week.id, "day": day.index, "day_name": day.name, "archetype": day.archetype,
                "step_id": step.id, "step_index": step.index, "time": step.time,
                "day_opening": day.opening if step.index == 0 else None, "narrative": step.narrative,
                "option_a": step.options.get("A"), "option_b": step.options.get("B"),
                "option_c": step.options.get("C"),
                "menu": [{"handle": m.handle, "ref_id": m.ref_id, "action_text": ix.menu_text(m.ref_id, step.id)}
                         for m in day.menu],
                "due_task_ids": list(due), "due_handles": [handle_of[t] for t in due],
                "cue_ids": list(step.cue_ids), "update_ids": list(step.update_ids),
                "encoded_task_ids": list(step.encoded_task_ids),
                "channel_states": [{"channel": name, "text": state.text, "stage": state.stage}
                                   for name, state in sorted(step.channel_states.items())],
            })
    return rows


def _task_rows(week: Week, ix: WeekIndex) -> list[dict[str, Any]]:
    handles = {m.ref_id: m.handle for day in week.days for m in day.menu}
    rows = []
    for task in sorted(week.tasks, key=lambda t: (t.day, t.id)):
        eff = ix.effective(task.id)
        cue = ix.cues.get(task.cue_id or "")
        updates = ix.updates_by_task.get(task.id, [])
        rows.append({
            "week_id": week.id, "task_id": task.id, "day": task.day, "handle": handles.get(task.id),
            "kind": task.kind, "trigger": task.trigger, "regular": task.regular, "label": task.label,
            "action_text": task.action_text, "cue_id": task.cue_id, "cue_source": cue.source if cue else None,
            "cue_step_id": cue.step_id if cue else None, "cue_text": cue.text if cue else None,
            "target_time": task.target_time, "encoding_day": task.encoding.day,
            "encoding_step_id": task.encoding.step_id, "cross_day": task.cross_day, "offset_days": task.offset_days,
            "depends_on": list(task.depends_on), "update_kinds": [u.kind for u in updates],
            "update_step_ids": [u.step_id for u in updates], "effective_cue_id": eff.cue_id,
            "effective_target_time": eff.target_time, "canceled": eff.canceled, "scored": not eff.canceled,
            "due_step_id": ix.due_step_of.get(task.id), "late_step_ids": ix.late_steps(task.id),
        })
    return rows


def week_configs(week: dict[str, Any]) -> dict[str, tuple[pa.Schema, list[dict[str, Any]]]]:
    """Release configs for one week: per-step rows and per-task rows, with explicit schemas."""
    model = Week.model_validate(week)
    ix = WeekIndex(model)
    return {"pmbench_week": (STEP_SCHEMA, _step_rows(model, ix)),
            "pmbench_week_tasks": (TASK_SCHEMA, _task_rows(model, ix))}
