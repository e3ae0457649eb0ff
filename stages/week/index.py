"""Derived views of a week: lookups, effective (post-update) tasks, due sets, late windows.

In: a :class:`~stages.week.model.Week` (possibly invalid: lookups return ``None`` instead
of raising). Out: the ground truth that the validator, oracle, runtime and scorer share.

Definitions (also in ``docs/pmbench.md``):

- the *effective* task applies every update in step order: a cancel removes it from
  scoring, an override replaces its cue (and possibly action text), a reschedule replaces
  its target time;
- the *due step* of a non-canceled task is the step of its effective cue (event tasks) or
  the step of its day whose time equals its effective target time (time tasks);
- the due set ``D_t`` of step ``t`` is every non-canceled task whose due step is ``t``;
- the *late window* is the next step of the same day (event tasks) or the later steps of
  the same day at most 60 minutes after the target time (time tasks).
"""

from __future__ import annotations

from dataclasses import dataclass

from stages.week.model import Cue, Lure, Step, Task, Update, Week, to_minutes

LATE_MINUTES = 60


@dataclass(frozen=True)
class EffectiveTask:
    """A task after its updates: what is valid now, and whether it is still scored."""

    task: Task
    cue_id: str | None
    target_time: str | None
    action_text: str
    canceled: bool
    cancel_step_id: str | None
    updated: bool


class WeekIndex:
    """Lookups over one week; built once, read many times."""

    def __init__(self, week: Week) -> None:
        self.week = week
        self.steps: dict[str, Step] = {}
        self.order: dict[str, int] = {}
        self.day_steps: dict[int, list[Step]] = {}
        for day in week.days:
            self.day_steps[day.index] = list(day.steps)
            for step in day.steps:
                self.steps.setdefault(step.id, step)
                self.order.setdefault(step.id, len(self.order))
        self.tasks: dict[str, Task] = {t.id: t for t in week.tasks}
        self.lures: dict[str, Lure] = {lure.id: lure for lure in week.lures}
        self.cues: dict[str, Cue] = {c.id: c for c in week.cues}
        self.updates: dict[str, Update] = {u.id: u for u in week.updates}
        self.updates_by_task: dict[str, list[Update]] = {}
        for update in sorted(week.updates, key=lambda u: self.order.get(u.step_id, -1)):
            self.updates_by_task.setdefault(update.task_id, []).append(update)
        self.menus: dict[int, dict[str, str]] = {d.index: {m.handle: m.ref_id for m in d.menu} for d in week.days}
        self._effective = {task_id: self._apply_updates(task) for task_id, task in self.tasks.items()}
        self.due_step_of: dict[str, str | None] = {tid: self._due_step(eff) for tid, eff in self._effective.items()}
        self.due_sets: dict[str, list[str]] = {step_id: [] for step_id in self.order}
        for task_id, step_id in sorted(self.due_step_of.items()):
            if step_id is not None:
                self.due_sets[step_id].append(task_id)

    # -- tasks ------------------------------------------------------------------------

    def _apply_updates(self, task: Task) -> EffectiveTask:
        cue_id, target, action = task.cue_id, task.target_time, task.action_text
        canceled, cancel_step = False, None
        updates = self.updates_by_task.get(task.id, [])
        for update in updates:
            if update.kind == "cancel":
                canceled, cancel_step = True, update.step_id
            elif update.kind == "override":
                cue_id = update.new_cue_id or cue_id
                action = update.new_action_text or action
            elif update.kind == "reschedule":
                target = update.new_target_time or target
        return EffectiveTask(task, cue_id, target, action, canceled, cancel_step, bool(updates))

    def effective(self, task_id: str) -> EffectiveTask:
        """The post-update view of a task (KeyError for unknown ids)."""
        return self._effective[task_id]

    def scored_task_ids(self) -> list[str]:
        """Every task that is not canceled, in id order."""
        return sorted(tid for tid, eff in self._effective.items() if not eff.canceled)

    def step_at(self, day: int, hhmm: str | None) -> Step | None:
        """The step of ``day`` whose time is exactly ``hhmm``, if any."""
        if hhmm is None:
            return None
        return next((s for s in self.day_steps.get(day, []) if s.time == hhmm), None)

    def trigger_step(self, task: Task, cue_id: str | None, target_time: str | None) -> Step | None:
        """The step where a task version (cue or time) fires, if it exists on the task's day."""
        if task.trigger == "time":
            return self.step_at(task.day, target_time)
        cue = self.cues.get(cue_id or "")
        step = self.steps.get(cue.step_id) if cue else None
        return step if step is not None and step.day == task.day else None

    def _due_step(self, eff: EffectiveTask) -> str | None:
        if eff.canceled:
            return None
        step = self.trigger_step(eff.task, eff.cue_id, eff.target_time)
        return step.id if step else None

    def late_steps(self, task_id: str) -> list[str]:
        """Steps after the due step where selecting the task counts as a late execution."""
        due = self.due_step_of.get(task_id)
        if due is None:
            return []
        task, due_step = self.tasks[task_id], self.steps[due]
        later = [s for s in self.day_steps[due_step.day] if s.index > due_step.index]
        if task.trigger == "event":
            return [later[0].id] if later else []
        limit = to_minutes(due_step.time) + LATE_MINUTES
        return [s.id for s in later if to_minutes(s.time) <= limit]

    def stale_steps(self, task_id: str) -> list[str]:
        """Steps where a superseded (pre-update) version of a task would have fired."""
        task = self.tasks[task_id]
        stale: set[str] = set()
        cue_id, target = task.cue_id, task.target_time
        for update in self.updates_by_task.get(task_id, []):
            step = self.trigger_step(task, cue_id, target)
            if step is not None and step.id != self.due_step_of.get(task_id):
                stale.add(step.id)
            cue_id = update.new_cue_id or cue_id
            target = update.new_target_time or target
        return sorted(stale, key=self.order.__getitem__)

    def is_known_at(self, task_id: str, step_id: str) -> bool:
        """Whether the task has been encoded (announced) by the time ``step_id`` is shown."""
        task, step = self.tasks[task_id], self.steps[step_id]
        enc = task.encoding
        if enc.day != step.day:
            return enc.day < step.day
        if enc.step_id is None:
            return True
        enc_step = self.steps.get(enc.step_id)
        return enc_step is not None and enc_step.index <= step.index

    def menu_text(self, ref_id: str, step_id: str) -> str:
        """The action text a menu shows for a task or lure id at ``step_id``."""
        if ref_id in self.lures:
            return self.lures[ref_id].action_text
        text = self.tasks[ref_id].action_text
        for update in self.updates_by_task.get(ref_id, []):
            if update.new_action_text and self.order.get(update.step_id, 1 << 30) <= self.order[step_id]:
                text = update.new_action_text
        return text
