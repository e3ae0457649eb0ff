"""Consistency and solvability invariants of a week (PM-Bench appendix A.3, plus structure).

In: a :class:`Week`. Out: a list of :class:`Problem` (empty = valid), each with an invariant
code and a one-line message that names the day, step, task, cue or update involved.
Every check reads the week only; the perfect-play audit is in :mod:`stages.week.oracle`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from stages.week.index import WeekIndex
from stages.week.model import CLOCK, DAY_END, DAY_START, NARRATIVE, Update, Week, to_minutes

HANDLE = re.compile(r"^task_[1-9][0-9]*$")
CLOCK_MENTION = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.|o'clock)|\b(\d{1,2}):(\d{2})\b", re.I)


@dataclass(frozen=True)
class Problem:
    """One violated invariant."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def _where(ix: WeekIndex, step_id: str) -> str:
    step = ix.steps.get(step_id)
    return f"day {step.day} step {step_id}" if step else f"step {step_id}"


def check_unique_ids(week: Week, ix: WeekIndex) -> list[Problem]:
    """Unique step, task, lure, cue and update ids; no lure id equal to a task id."""
    out = []
    groups = {"step": [s.id for d in week.days for s in d.steps], "task": [t.id for t in week.tasks],
              "lure": [lure.id for lure in week.lures], "cue": [c.id for c in week.cues],
              "update": [u.id for u in week.updates]}
    for kind, ids in groups.items():
        for ident, count in sorted(Counter(ids).items()):
            if count > 1:
                out.append(Problem("unique_ids", f"{kind} id {ident} is used {count} times"))
    for ident in sorted(set(groups["lure"]) & set(groups["task"])):
        out.append(Problem("unique_ids", f"lure {ident} collides with task {ident}"))
    return out


def check_step_times(week: Week, ix: WeekIndex) -> list[Problem]:
    """Days numbered 1..7 in order; steps indexed in order with strictly increasing times in 07:00-22:00."""
    out = []
    for pos, day in enumerate(week.days, start=1):
        if day.index != pos:
            out.append(Problem("step_times", f"day {day.index} is at position {pos}"))
        previous = None
        for pos_step, step in enumerate(day.steps):
            where = f"day {day.index} step {step.id}"
            if step.day != day.index or step.index != pos_step:
                out.append(Problem("step_times", f"{where}: says day {step.day} index {step.index}, "
                                                 f"expected day {day.index} index {pos_step}"))
            try:
                minutes = to_minutes(step.time)
            except ValueError:
                out.append(Problem("step_times", f"{where}: bad time {step.time!r}"))
                continue
            if not to_minutes(DAY_START) <= minutes <= to_minutes(DAY_END):
                out.append(Problem("step_times", f"{where}: time {step.time} outside {DAY_START}-{DAY_END}"))
            if previous is not None and minutes <= previous:
                out.append(Problem("step_times", f"{where}: time {step.time} does not come after the previous step"))
            previous = minutes
    return out


def check_time_alignment(week: Week, ix: WeekIndex) -> list[Problem]:
    """Time tasks (and reschedules) target a time that is exactly some step time of their day."""
    out = []
    for task in week.tasks:
        if task.trigger == "time":
            if ix.step_at(task.day, task.target_time) is None:
                out.append(Problem("time_alignment", f"day {task.day} task {task.id}: target time "
                                                     f"{task.target_time} is not a step time of day {task.day}"))
        elif task.target_time is not None or task.cue_id is None:
            out.append(Problem("time_alignment", f"day {task.day} task {task.id}: event task needs a cue_id "
                                                 "and no target_time"))
    for update in week.updates:
        task = ix.tasks.get(update.task_id)
        if update.kind == "reschedule" and task is not None:
            if task.trigger != "time" or ix.step_at(task.day, update.new_target_time) is None:
                out.append(Problem("time_alignment", f"{_where(ix, update.step_id)} update {update.id}: rescheduled "
                                                     f"time {update.new_target_time} of task {task.id} is not a "
                                                     f"step time of day {task.day}"))
    return out


def _texts_of_day(ix: WeekIndex, day: int) -> list[tuple[str, str, str]]:
    """(step id, source, text) for every narrative and channel state of a day."""
    rows = []
    for step in ix.day_steps.get(day, []):
        rows.append((step.id, NARRATIVE, step.narrative))
        rows += [(step.id, name, state.text) for name, state in step.channel_states.items()]
    return rows


def check_cues(week: Week, ix: WeekIndex) -> list[Problem]:
    """Every cue of an event task (original or override) appears at its step, in its source, and only there."""
    out = []
    channels = {c.name for c in week.channels}
    wanted = {t.cue_id: t for t in week.tasks if t.cue_id}
    wanted.update({u.new_cue_id: ix.tasks[u.task_id] for u in week.updates
                   if u.new_cue_id and u.task_id in ix.tasks})
    for cue_id, task in sorted(wanted.items()):
        cue = ix.cues.get(cue_id)
        label = f"day {task.day} task {task.id}"
        if cue is None:
            out.append(Problem("cue_realizable", f"{label}: cue {cue_id} does not exist"))
            continue
        step = ix.steps.get(cue.step_id)
        if step is None or step.day != task.day:
            out.append(Problem("cue_realizable", f"{label}: cue {cue_id} is at {cue.step_id}, not a step of day {task.day}"))
            continue
        if cue.source == NARRATIVE:
            shown = cue.text in step.narrative
        elif cue.source in channels and cue.source != CLOCK:
            state = step.channel_states.get(cue.source)
            shown = state is not None and cue.text in state.text
        else:
            out.append(Problem("cue_realizable", f"{label}: cue {cue_id} has unknown source {cue.source!r}"))
            continue
        if not shown:
            out.append(Problem("cue_realizable", f"day {task.day} step {step.id} task {task.id}: cue {cue_id} text "
                                                 f"does not appear in the {cue.source}"))
        others = sorted({sid for sid, src, text in _texts_of_day(ix, task.day)
                         if cue.text in text and not (sid == step.id and src == cue.source)})
        if others:
            out.append(Problem("cue_realizable", f"{label}: cue {cue_id} text also appears at {', '.join(others)}"))
        if cue_id == task.cue_id and (task.cue_channel or NARRATIVE) != cue.source:
            out.append(Problem("cue_realizable", f"{label}: cue_channel {task.cue_channel} disagrees with cue source "
                                                 f"{cue.source}"))
    return out


def check_update_targets(week: Week, ix: WeekIndex) -> list[Problem]:
    """Updates point to an existing task that is announced, not canceled and not yet due at the update step."""
    out = []
    canceled_at: dict[str, str] = {}
    for update in sorted(week.updates, key=lambda u: ix.order.get(u.step_id, -1)):
        where = f"{_where(ix, update.step_id)} update {update.id}"
        task = ix.tasks.get(update.task_id)
        if task is None or update.step_id not in ix.steps:
            out.append(Problem("update_targets", f"{where}: target task {update.task_id} or step does not exist"))
            continue
        if _wrong_fields(update):
            out.append(Problem("update_targets", f"{where}: {update.kind} of task {task.id} has the wrong new fields"))
        if not ix.is_known_at(task.id, update.step_id) or (task.encoding.step_id == update.step_id):
            out.append(Problem("update_targets", f"{where}: task {task.id} is not active yet at this step"))
        if task.id in canceled_at:
            out.append(Problem("update_targets", f"{where}: task {task.id} was already canceled at {canceled_at[task.id]}"))
        if update.kind == "cancel":
            canceled_at[task.id] = update.step_id
        before = _version_step(ix, task.id, update.id)
        if before is None or ix.order[before] <= ix.order[update.step_id]:
            out.append(Problem("update_targets", f"{where}: task {task.id} is no longer pending (its trigger step "
                                                 f"{before} is not after the update)"))
    return out


def _wrong_fields(update: Update) -> bool:
    """A cancel carries no new cue or time; an override a new cue only; a reschedule a new time only."""
    has_cue, has_time = update.new_cue_id is not None, update.new_target_time is not None
    return (has_cue, has_time) != {"cancel": (False, False), "override": (True, False),
                                   "reschedule": (False, True)}[update.kind]


def _version_step(ix: WeekIndex, task_id: str, until_update: str) -> str | None:
    """Trigger step of a task as it stood just before ``until_update``."""
    task = ix.tasks[task_id]
    cue_id, target = task.cue_id, task.target_time
    for update in ix.updates_by_task.get(task_id, []):
        if update.id == until_update:
            break
        cue_id = update.new_cue_id or cue_id
        target = update.new_target_time or target
    step = ix.trigger_step(task, cue_id, target)
    return step.id if step else None


def check_not_backward(week: Week, ix: WeekIndex) -> list[Problem]:
    """Reschedules and overrides move the trigger to a step after the update step."""
    out = []
    for update in week.updates:
        task = ix.tasks.get(update.task_id)
        if task is None or update.step_id not in ix.steps or update.kind == "cancel":
            continue
        new = ix.trigger_step(task, update.new_cue_id or task.cue_id, update.new_target_time or task.target_time)
        if new is not None and ix.order[new.id] <= ix.order[update.step_id]:
            out.append(Problem("update_not_backward", f"{_where(ix, update.step_id)} update {update.id}: "
                                                      f"{update.kind} moves task {task.id} back to {new.id} "
                                                      f"({new.time}), not after the update"))
    return out


def check_no_stale_cancel(week: Week, ix: WeekIndex) -> list[Problem]:
    """After a cancel, no later narrative, opening or message repeats the canceled instruction."""
    out = []
    for update in (u for u in week.updates if u.kind == "cancel" and u.task_id in ix.tasks and u.step_id in ix.steps):
        task, at = ix.tasks[update.task_id], ix.order[update.step_id]
        needle = task.label.lower()
        for step_id, position in ix.order.items():
            if position > at and needle in ix.steps[step_id].narrative.lower():
                out.append(Problem("no_stale_cancel", f"{_where(ix, step_id)} task {task.id}: canceled instruction "
                                                      f"repeated after its cancel at {update.step_id}"))
        cancel_day = ix.steps[update.step_id].day
        for day in week.days:
            if day.index > cancel_day and needle in day.opening.lower():
                out.append(Problem("no_stale_cancel", f"day {day.index} opening task {task.id}: canceled "
                                                      f"instruction repeated after its cancel at {update.step_id}"))
    return out


def check_no_time_leak(week: Week, ix: WeekIndex) -> list[Problem]:
    """Step prose never states the step's own current time (the clock is hidden by default)."""
    out = []
    for step in ix.steps.values():
        try:
            now = to_minutes(step.time)
        except ValueError:
            continue
        for match in CLOCK_MENTION.finditer(step.narrative):
            hour = int(match.group(1) or match.group(4))
            minute = int(match.group(2) or match.group(5) or 0)
            suffix = (match.group(3) or "").lower()
            hour24 = hour % 12 + 12 if suffix.startswith("p") else hour % 12 if suffix.startswith("a") else hour
            if suffix == "o'clock":
                hit = hour * 60 + minute in (now, now - 12 * 60) and minute == now % 60
            else:
                hit = hour24 * 60 + minute == now
            if hit:
                out.append(Problem("no_time_leak", f"day {step.day} step {step.id}: narrative states the current "
                                                   f"time ({match.group(0)})"))
    return out


def check_cross_day(week: Week, ix: WeekIndex) -> list[Problem]:
    """Cross-day tasks are announced on an earlier day and never re-announced on their due day."""
    out = []
    for task in week.tasks:
        label = f"day {task.day} task {task.id}"
        if not task.cross_day:
            if task.encoding.day != task.day:
                out.append(Problem("cross_day_exposure", f"{label}: announced on day {task.encoding.day} but not "
                                                         "marked cross_day"))
            continue
        if task.encoding.day >= task.day or task.offset_days != task.day - task.encoding.day:
            out.append(Problem("cross_day_exposure", f"{label}: cross-day task must be announced on an earlier day "
                                                     f"(announced day {task.encoding.day}, offset {task.offset_days})"))
        due_day = next((d for d in week.days if d.index == task.day), None)
        needles = (task.label.lower(), task.action_text.lower())
        if due_day is not None and any(n in due_day.opening.lower() for n in needles):
            out.append(Problem("cross_day_exposure", f"{label}: re-announced in the opening of its due day"))
        for step in ix.day_steps.get(task.day, []):
            if task.label.lower() in step.narrative.lower():
                out.append(Problem("cross_day_exposure", f"day {task.day} step {step.id} task {task.id}: "
                                                         "re-announced as a same-day task"))
    return out


def check_encoding(week: Week, ix: WeekIndex) -> list[Problem]:
    """Announcing steps exist on the announcing day and come before the task's trigger."""
    out = []
    for task in week.tasks:
        enc = task.encoding
        label = f"day {task.day} task {task.id}"
        if enc.step_id is not None:
            step = ix.steps.get(enc.step_id)
            if step is None or step.day != enc.day:
                out.append(Problem("encoding", f"{label}: announcing step {enc.step_id} is not a step of day {enc.day}"))
                continue
            if task.id not in step.encoded_task_ids or task.label.lower() not in step.narrative.lower():
                out.append(Problem("encoding", f"{label}: step {step.id} does not announce it"))
        else:
            day = next((d for d in week.days if d.index == enc.day), None)
            if day is None or task.label.lower() not in day.opening.lower():
                out.append(Problem("encoding", f"{label}: not listed in the opening of day {enc.day}"))
        first = ix.trigger_step(task, task.cue_id, task.target_time)
        if first is not None and enc.step_id in ix.order and ix.order[enc.step_id] >= ix.order[first.id]:
            out.append(Problem("encoding", f"{label}: announced at {enc.step_id}, not before its trigger {first.id}"))
    return out


def check_dependencies(week: Week, ix: WeekIndex) -> list[Problem]:
    """Prerequisites exist, are not canceled, fire earlier, and the dependency graph is acyclic."""
    out = []
    for task in week.tasks:
        for dep in task.depends_on:
            label = f"day {task.day} task {task.id}"
            if dep not in ix.tasks or dep == task.id:
                out.append(Problem("dependencies", f"{label}: prerequisite {dep} does not exist or is itself"))
                continue
            due, pre = ix.due_step_of.get(task.id), ix.due_step_of.get(dep)
            if ix.effective(dep).canceled:
                out.append(Problem("dependencies", f"{label}: prerequisite {dep} is canceled"))
            elif due is not None and (pre is None or ix.order[pre] >= ix.order[due]):
                out.append(Problem("dependencies", f"{label}: prerequisite {dep} is due at {pre}, not before {due}"))
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in ix.tasks[node].depends_on if node in ix.tasks else []:
            if state.get(dep) == 1:
                out.append(Problem("dependencies", f"task {node}: dependency cycle {' -> '.join(path + [dep])}"))
            elif dep in ix.tasks and dep not in state:
                visit(dep, path + [dep])
        state[node] = 2

    for task_id in sorted(ix.tasks):
        if task_id not in state:
            visit(task_id, [task_id])
    return out


def check_process_channels(week: Week, ix: WeekIndex) -> list[Problem]:
    """Every state names a known non-clock channel; process channels pass in_progress before complete."""
    out = []
    types = {c.name: c.type for c in week.channels}
    for day in week.days:
        seen_progress: dict[str, bool] = {}
        for step in day.steps:
            for name, state in sorted(step.channel_states.items()):
                where = f"day {day.index} step {step.id} channel {name}"
                if name not in types or name == CLOCK:
                    out.append(Problem("process_channels", f"{where}: not a queryable non-clock channel"))
                    continue
                if types[name] != "snapshot (process)":
                    if state.stage != "none":
                        out.append(Problem("process_channels", f"{where}: stage {state.stage} on a non-process channel"))
                    continue
                if state.stage == "in_progress":
                    seen_progress[name] = True
                elif state.stage == "complete" and not seen_progress.get(name):
                    out.append(Problem("process_channels", f"{where}: complete without an in_progress stage before it"))
                elif state.stage in ("idle", "none"):
                    seen_progress[name] = False
    return out


def check_menus(week: Week, ix: WeekIndex) -> list[Problem]:
    """Each day's handles are unique ``task_N`` and cover exactly that day's tasks and lures, with distinct texts."""
    out = []
    for day in week.days:
        handles = [m.handle for m in day.menu]
        for handle, count in Counter(handles).items():
            if count > 1 or not HANDLE.match(handle):
                out.append(Problem("menus", f"day {day.index} handle {handle}: malformed or repeated"))
        refs = sorted(m.ref_id for m in day.menu)
        expected = sorted([t.id for t in week.tasks if t.day == day.index] +
                          [lure.id for lure in week.lures if lure.day == day.index])
        for missing in sorted(set(expected) - set(refs)):
            out.append(Problem("menus", f"day {day.index} task {missing}: has no handle on the day's menu"))
        for extra in sorted(set(refs) - set(expected)):
            out.append(Problem("menus", f"day {day.index} handle for {extra}: not a task or lure of this day"))
        texts = Counter(ix.menu_text(r, day.steps[0].id) for r in refs if r in ix.tasks or r in ix.lures) \
            if day.steps else Counter()
        for text, count in texts.items():
            if count > 1:
                out.append(Problem("menus", f"day {day.index}: action text {text!r} appears {count} times on the menu"))
    return out


CHECKS: dict[str, Callable[[Week, WeekIndex], list[Problem]]] = {
    "unique_ids": check_unique_ids,
    "step_times": check_step_times,
    "time_alignment": check_time_alignment,
    "cue_realizable": check_cues,
    "update_targets": check_update_targets,
    "update_not_backward": check_not_backward,
    "no_stale_cancel": check_no_stale_cancel,
    "no_time_leak": check_no_time_leak,
    "cross_day_exposure": check_cross_day,
    "dependencies": check_dependencies,
    "process_channels": check_process_channels,
    "encoding": check_encoding,
    "menus": check_menus,
}


def validate_week(week: Week) -> list[Problem]:
    """Run every invariant; returns the problems found (empty list = valid)."""
    ix = WeekIndex(week)
    problems: list[Problem] = []
    for check in CHECKS.values():
        problems.extend(check(week, ix))
    return problems
