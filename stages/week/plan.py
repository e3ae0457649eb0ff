"""Step 1 of generation: sample the week's skeleton and its task drafts.

In: a seeded ``random.Random`` and a :class:`Composition`. Out: a :class:`WeekPlan` (days
with step times, task drafts with due steps, update drafts, lures) that
:mod:`stages.week.assemble` turns into text. Raises :class:`Retry` when a random draw
cannot be completed; the generator then tries the next attempt seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from stages.week import content_tasks as ct
from stages.week.content_scenes import ARCHETYPES, DAYPARTS, Archetype

FIRST_STEP_LATEST = 7 * 60 + 55
LAST_SLOT = 22 * 60 - 5
MIN_GAP = 25


class Retry(Exception):
    """A random draw failed; try the next attempt."""


@dataclass(frozen=True)
class Composition:
    """Target composition of a week; defaults are Table 1 of the PM-Bench paper."""

    days: int = 7
    steps: int = 80
    steps_per_day: tuple[int, int] = (10, 13)
    routine_time_per_day: int = 2
    routine_event_per_day: int = 2
    narrative: tuple[int, int, int] = (21, 2, 4)  # total, per-day min, per-day max
    one_off: tuple[int, int, int] = (12, 1, 2)
    channel: tuple[int, int, int] = (15, 1, 3)
    lures: tuple[int, int, int] = (74, 10, 12)
    cross_day: int = 7
    cancels: int = 2
    overrides: int = 3
    reschedules: int = 6
    dependencies: int = 4


@dataclass
class TaskDraft:
    """A task before text assembly; step positions are indices into its day's steps."""

    id: str
    kind: str
    trigger: str
    day: int
    action: str
    when: str  # trigger phrase ("when ...") or "" for time tasks
    due_idx: int
    cue_text: str = ""
    cue_source: str = "narrative"
    enc_day: int = 0
    enc_idx: int | None = None
    cross_day: bool = False
    spec: ct.ChannelSpec | None = None
    depends_on: list[str] = field(default_factory=list)
    updated: bool = False


@dataclass
class UpdateDraft:
    """A cancel / override / reschedule announced at step ``at_idx`` of the task's day."""

    kind: str
    task: TaskDraft
    at_idx: int
    new_idx: int | None = None
    new_when: str = ""
    new_cue: str = ""


@dataclass
class DayPlan:
    """One day's skeleton."""

    index: int
    archetype: Archetype
    times: list[int]
    lures: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class WeekPlan:
    """Everything sampled, before any prose is written."""

    days: list[DayPlan]
    tasks: list[TaskDraft]
    updates: list[UpdateDraft]


def bounded_split(rng: random.Random, total: int, bounds: list[tuple[int, int]]) -> list[int]:
    """Random integers within ``bounds`` that sum to ``total`` (Retry when impossible)."""
    counts = [lo for lo, _ in bounds]
    if sum(counts) > total or sum(hi for _, hi in bounds) < total:
        raise Retry(f"cannot split {total} within {bounds}")
    while sum(counts) < total:
        open_bins = [i for i, (_, hi) in enumerate(bounds) if counts[i] < hi]
        counts[rng.choice(open_bins)] += 1
    return counts


def step_times(rng: random.Random, n: int, weights: tuple[float, float, float]) -> list[int]:
    """``n`` irregular step times (minutes), first one before 08:00, at least MIN_GAP apart."""
    times = [rng.randrange(7 * 60, FIRST_STEP_LATEST + 1, 5)]
    for _ in range(2000):
        if len(times) == n:
            return sorted(times)
        _, start, end = rng.choices(DAYPARTS, weights=weights)[0]
        slot = rng.randrange(max(start, FIRST_STEP_LATEST + 5), min(end, LAST_SLOT) + 1, 5)
        if all(abs(slot - t) >= MIN_GAP for t in times):
            times.append(slot)
    raise Retry("could not place step times")


def _daypart_indices(times: list[int], daypart: str) -> list[int]:
    bounds = {name: (start, end) for name, start, end in DAYPARTS}
    if daypart not in bounds:
        return list(range(len(times)))
    start, end = bounds[daypart]
    inside = [i for i, t in enumerate(times) if start <= t < end]
    if inside:
        return inside
    return [len(times) - 1] if daypart == "evening" else [0] if daypart == "morning" else list(range(len(times)))


def plan_week(rng: random.Random, comp: Composition) -> WeekPlan:
    """Sample archetypes, step times, per-day task drafts, cross-day tasks and updates."""
    archetypes = rng.sample(ARCHETYPES, comp.days)
    lo, hi = comp.steps_per_day
    counts = bounded_split(rng, comp.steps, [(max(a.steps[0], lo), min(a.steps[1], hi)) for a in archetypes])
    days = [DayPlan(i + 1, a, step_times(rng, n, a.dayparts)) for i, (a, n) in enumerate(zip(archetypes, counts))]
    per_day = {key: bounded_split(rng, total, [(dlo, dhi)] * comp.days)
               for key, (total, dlo, dhi) in (("narrative", comp.narrative), ("one_off", comp.one_off),
                                               ("channel", comp.channel), ("lures", comp.lures))}
    narrative_pool = rng.sample(ct.NARRATIVE_EVENTS, comp.narrative[0])
    one_off_pool = rng.sample(ct.ONE_OFF_ACTIONS, comp.one_off[0])
    channel_pool = rng.sample(ct.CHANNEL_EVENTS, len(ct.CHANNEL_EVENTS))
    tasks: list[TaskDraft] = []
    for day in days:
        n = len(day.times)
        d = day.index
        for spec in rng.sample(ct.TIME_ROUTINES, comp.routine_time_per_day):
            tasks.append(TaskDraft(f"routine_{spec.slug}_d{d}", "routine", "time", d, spec.action, "",
                                   rng.randrange(n), enc_day=d))
        for spec in rng.sample(ct.EVENT_ROUTINES, comp.routine_event_per_day):
            idx = rng.choice(_daypart_indices(day.times, spec.daypart))
            tasks.append(TaskDraft(f"routine_{spec.slug}_d{d}", "routine", "event", d, spec.action, spec.trigger,
                                   idx, rng.choice(spec.cues), enc_day=d))
        for _ in range(per_day["narrative"][d - 1]):
            spec = narrative_pool.pop()
            tasks.append(TaskDraft(f"{spec.slug}_d{d}", "narrative", "event", d, spec.action, spec.trigger,
                                   rng.randrange(1, n), rng.choice(spec.cues), enc_day=d))
        for _ in range(per_day["one_off"][d - 1]):
            slug, action = one_off_pool.pop()
            tasks.append(TaskDraft(f"{slug}_d{d}", "one_off", "time", d, action, "", rng.randrange(2, n), enc_day=d))
        used_channels: set[str] = set()
        for _ in range(per_day["channel"][d - 1]):
            spec = next((s for s in channel_pool if s.channel not in used_channels), None)
            if spec is None:
                raise Retry(f"day {d}: no channel task left on an unused channel")
            channel_pool.remove(spec)
            used_channels.add(spec.channel)
            tasks.append(TaskDraft(f"{spec.slug}_d{d}", "channel", "event", d, spec.action, spec.trigger,
                                   rng.randrange(2, n), spec.cue, spec.channel, enc_day=d, spec=spec))
        day.lures = rng.sample(ct.LURES, per_day["lures"][d - 1])
    tasks.extend(_cross_day_tasks(rng, comp, days))
    updates = _updates(rng, comp, days, tasks)
    _encodings(rng, days, tasks)
    _dependencies(rng, comp, tasks, updates)
    return WeekPlan(days, tasks, updates)


def _cross_day_tasks(rng: random.Random, comp: Composition, days: list[DayPlan]) -> list[TaskDraft]:
    """Tasks announced on an earlier day (up to three days before) and cued on a later one."""
    later = [d.index for d in days[1:]]
    targets = (later + rng.choices(later, k=max(0, comp.cross_day - len(later))))[: comp.cross_day]
    drafts = []
    for spec, target in zip(rng.sample(ct.CROSS_DAY_EVENTS, comp.cross_day), sorted(targets)):
        announce = rng.randint(max(1, target - 3), target - 1)
        n = len(days[target - 1].times)
        drafts.append(TaskDraft(f"crossday_{spec.slug}_d{target}", "cross_day", "event", target, spec.action,
                                spec.trigger, rng.randrange(n), spec.cues[0], enc_day=announce, cross_day=True))
    return drafts


def _pick(rng: random.Random, options: list[int], task_id: str) -> int:
    if not options:
        raise Retry(f"task {task_id}: no later step to move it to")
    return rng.choice(options)


def _updates(rng: random.Random, comp: Composition, days: list[DayPlan], tasks: list[TaskDraft]) -> list[UpdateDraft]:
    """Pick distinct targets; each update comes before the old due step and never moves it backward."""
    updates: list[UpdateDraft] = []
    one_offs = [t for t in tasks if t.kind == "one_off"]
    for task in rng.sample(one_offs, comp.reschedules):
        n = len(days[task.day - 1].times)
        at = rng.randrange(0, task.due_idx)
        options = [j for j in range(at + 1, n) if j != task.due_idx]
        updates.append(UpdateDraft("reschedule", task, at, _pick(rng, options, task.id)))
    narratives = [t for t in tasks if t.kind == "narrative"]
    for task, (when, cue) in zip(rng.sample(narratives, comp.overrides), rng.sample(ct.OVERRIDE_TRIGGERS, comp.overrides)):
        n = len(days[task.day - 1].times)
        at = rng.randrange(0, task.due_idx)
        options = [j for j in range(at + 1, n) if j != task.due_idx]
        updates.append(UpdateDraft("override", task, at, _pick(rng, options, task.id), when, cue))
    taken = {u.task.id for u in updates}
    cancelable = [t for t in tasks if t.kind in ("narrative", "one_off", "channel") and t.id not in taken]
    for task in rng.sample(cancelable, comp.cancels):
        updates.append(UpdateDraft("cancel", task, rng.randrange(0, task.due_idx)))
    for update in updates:
        update.task.updated = True
    return updates


def _encodings(rng: random.Random, days: list[DayPlan], tasks: list[TaskDraft]) -> None:
    """Most non-routine tasks are announced in the opening; some arrive as a message at an earlier step."""
    for task in tasks:
        if task.cross_day:
            if rng.random() < 0.4:
                task.enc_idx = rng.randrange(len(days[task.enc_day - 1].times))
            continue
        if task.kind == "routine" or task.updated or task.due_idx == 0:
            continue
        if rng.random() < 0.3:
            task.enc_idx = rng.randrange(0, task.due_idx)


def effective_due_idx(task: TaskDraft, updates: list[UpdateDraft]) -> int | None:
    """Due index after updates (None when canceled)."""
    idx: int | None = task.due_idx
    for update in updates:
        if update.task is task:
            idx = None if update.kind == "cancel" else update.new_idx
    return idx


def _dependencies(rng: random.Random, comp: Composition, tasks: list[TaskDraft], updates: list[UpdateDraft]) -> None:
    """Link pairs of same-day one-off/narrative tasks: the later one requires the earlier one."""
    eligible = [t for t in tasks if t.kind in ("narrative", "one_off") and not t.updated and t.enc_idx is None]
    pairs = [(a, b) for a in eligible for b in eligible
             if a.day == b.day and a is not b and effective_due_idx(a, updates) < effective_due_idx(b, updates)]
    rng.shuffle(pairs)
    used: set[str] = set()
    for first, then in pairs:
        if len(used) >= 2 * comp.dependencies:
            break
        if first.id in used or then.id in used:
            continue
        then.depends_on.append(first.id)
        used.update((first.id, then.id))
    if len(used) < 2 * comp.dependencies:
        raise Retry("not enough dependency pairs")
