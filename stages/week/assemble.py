"""Step 2 of generation: turn a sampled :class:`WeekPlan` into a :class:`Week` with prose.

In: a seeded rng, the week seed and id, a plan. Out: a Week with narratives (vignette,
messages, updates, cues), channel states per step, day openings, cues, updates and the
per-day anonymous handle menus (reshuffled every day).
"""

from __future__ import annotations

import random

from stages.week import content_tasks as ct
from stages.week.content_scenes import DAY_NAMES, DAYPARTS, VIGNETTES
from stages.week.model import (
    Channel,
    ChannelState,
    Cue,
    Day,
    Encoding,
    Lure,
    MenuEntry,
    Step,
    Task,
    Update,
    Week,
    to_hhmm,
)
from stages.week.plan import DayPlan, TaskDraft, UpdateDraft, WeekPlan

GENERATOR_VERSION = "1"
PROCESS = "snapshot (process)"


def lower_first(text: str) -> str:
    """Lower-case the first letter unless the first word is an acronym (``RSVP``)."""
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].lower() + text[1:]


def capitalize(text: str) -> str:
    """Upper-case the first letter (``your sister`` -> ``Your sister``)."""
    return text[:1].upper() + text[1:]


def step_id(day: int, idx: int) -> str:
    """Canonical step id: ``d3_s07`` is the seventh step of day 3."""
    return f"d{day}_s{idx + 1:02d}"


def _label(task: TaskDraft, days: list[DayPlan], by_id: dict[str, TaskDraft]) -> str:
    if task.trigger == "time":
        label = f"{task.action} at {to_hhmm(days[task.day - 1].times[task.due_idx])}"
    elif task.cross_day:
        label = f"On {DAY_NAMES[task.day - 1]}, {lower_first(task.action)} {task.when}"
    else:
        label = f"{task.action} {task.when}"
    for dep in task.depends_on:
        label += f", but only after you {lower_first(by_id[dep].action)}"
    return label


def assemble_week(rng: random.Random, seed: int, week_id: str, plan: WeekPlan) -> Week:
    """Write every text of the week and return the typed model."""
    days = plan.days
    by_id = {t.id: t for t in plan.tasks}
    labels = {t.id: _label(t, days, by_id) for t in plan.tasks}
    fragments: dict[tuple[int, int], list[str]] = {}
    cue_ids: dict[tuple[int, int], list[str]] = {}
    update_ids: dict[tuple[int, int], list[str]] = {}
    encoded: dict[tuple[int, int], list[str]] = {}
    tasks: list[Task] = []
    cues: list[Cue] = []
    for draft in plan.tasks:
        cue_id = None
        if draft.trigger == "event":
            cue_id = f"cue_{draft.id}"
            cues.append(Cue(id=cue_id, day=draft.day, step_id=step_id(draft.day, draft.due_idx),
                            source=draft.cue_source, text=draft.cue_text))
            cue_ids.setdefault((draft.day, draft.due_idx), []).append(cue_id)
            if draft.cue_source == "narrative":
                fragments.setdefault((draft.day, draft.due_idx), []).append(draft.cue_text)
        enc_step = None
        if draft.enc_idx is not None:
            enc_step = step_id(draft.enc_day, draft.enc_idx)
            who = rng.choice(ct.PEOPLE)
            fragments.setdefault((draft.enc_day, draft.enc_idx), []).append(
                f"A message from {who}: {lower_first(labels[draft.id])}.")
            encoded.setdefault((draft.enc_day, draft.enc_idx), []).append(draft.id)
        tasks.append(Task(
            id=draft.id, kind=draft.kind, trigger=draft.trigger, regular=draft.kind == "routine", day=draft.day,
            label=labels[draft.id], action_text=draft.action, cue_id=cue_id,
            cue_channel=draft.cue_source if draft.cue_source != "narrative" else None,
            target_time=to_hhmm(days[draft.day - 1].times[draft.due_idx]) if draft.trigger == "time" else None,
            encoding=Encoding(day=draft.enc_day, step_id=enc_step), cross_day=draft.cross_day,
            offset_days=draft.day - draft.enc_day, depends_on=list(draft.depends_on)))
    updates = [_update(rng, u, days, cues, cue_ids, fragments, update_ids) for u in plan.updates]
    channel_states = {d.index: _channel_states(rng, d, plan.tasks) for d in days}
    week_days = []
    for day in days:
        vignettes = _vignettes(rng, day)
        steps = []
        for idx, minutes in enumerate(day.times):
            extra = fragments.get((day.index, idx), [])
            rng.shuffle(extra)
            vignette = vignettes[idx]
            steps.append(Step(
                id=step_id(day.index, idx), day=day.index, index=idx, time=to_hhmm(minutes),
                narrative=" ".join([vignette.text, *extra]),
                options=dict(zip("ABC", vignette.options)), channel_states=channel_states[day.index][idx],
                cue_ids=sorted(cue_ids.get((day.index, idx), [])),
                update_ids=sorted(update_ids.get((day.index, idx), [])),
                encoded_task_ids=sorted(encoded.get((day.index, idx), []))))
        week_days.append(Day(index=day.index, name=DAY_NAMES[day.index - 1], archetype=day.archetype.name,
                             opening=_opening(day, plan.tasks, labels), steps=steps,
                             menu=_menu(rng, day, plan.tasks)))
    lures = [Lure(id=f"lure_{slug}_d{d.index}", day=d.index, action_text=text) for d in days for slug, text in d.lures]
    return Week(id=week_id, seed=seed, generator_version=GENERATOR_VERSION, intro=_intro(),
                channels=[Channel(name=n, type=t, description=desc) for n, t, desc in ct.CHANNELS],
                days=week_days, tasks=tasks, lures=lures, cues=cues, updates=updates)


def _update(rng: random.Random, draft: UpdateDraft, days: list[DayPlan], cues: list[Cue],
            cue_ids: dict[tuple[int, int], list[str]], fragments: dict[tuple[int, int], list[str]],
            update_ids: dict[tuple[int, int], list[str]]) -> Update:
    task, who = draft.task, rng.choice(ct.PEOPLE)
    action = lower_first(task.action)
    uid = f"{draft.kind}_{task.id}"
    new_cue_id = new_time = None
    if draft.kind == "cancel":
        text = f"{capitalize(who)} says you no longer need to {action}; that plan is off."
    elif draft.kind == "reschedule":
        times = days[task.day - 1].times
        new_time = to_hhmm(times[draft.new_idx])
        text = f"Change of plan from {who}: {action} at {new_time} instead of {to_hhmm(times[task.due_idx])}."
    else:
        new_cue_id = f"cue2_{task.id}"
        cues.append(Cue(id=new_cue_id, day=task.day, step_id=step_id(task.day, draft.new_idx), source="narrative",
                        text=draft.new_cue))
        cue_ids.setdefault((task.day, draft.new_idx), []).append(new_cue_id)
        fragments.setdefault((task.day, draft.new_idx), []).append(draft.new_cue)
        text = f"{capitalize(who)} changes a plan: {action} {draft.new_when}, not {task.when}."
    fragments.setdefault((task.day, draft.at_idx), []).append(text)
    update_ids.setdefault((task.day, draft.at_idx), []).append(uid)
    return Update(id=uid, kind=draft.kind, task_id=task.id, step_id=step_id(task.day, draft.at_idx), text=text,
                  new_cue_id=new_cue_id, new_target_time=new_time)


def _channel_states(rng: random.Random, day: DayPlan, tasks: list[TaskDraft]) -> list[dict[str, ChannelState]]:
    """Per step, what every non-clock channel shows (idle text, noise, staged changes, cues)."""
    n = len(day.times)
    types = {name: kind for name, kind, _ in ct.CHANNELS}
    states = [{name: ChannelState(text=ct.CHANNEL_IDLE[name], stage="idle" if types[name] == PROCESS else "none")
               for name in ct.CHANNEL_IDLE} for _ in range(n)]
    busy: set[tuple[str, int]] = set()
    for task in (t for t in tasks if t.day == day.index and t.spec is not None):
        spec, cue_idx, kind = task.spec, task.due_idx, types[task.spec.channel]
        ramp = rng.randint(1, min(2, cue_idx)) if kind == PROCESS else 0
        for idx in range(n):
            if kind == "delta":
                if idx == cue_idx:
                    states[idx][spec.channel] = ChannelState(text=spec.cue)
                continue
            if idx < cue_idx - ramp:
                state = ChannelState(text=spec.before, stage="idle" if kind == PROCESS else "none")
            elif idx < cue_idx:
                state = ChannelState(text=spec.progress, stage="in_progress")
            elif idx == cue_idx:
                state = ChannelState(text=spec.cue, stage="complete" if kind == PROCESS else "none")
            else:
                state = ChannelState(text=spec.after, stage="after" if kind == PROCESS else "none")
            states[idx][spec.channel] = state
        busy.update((spec.channel, idx) for idx in range(n))
    for channel in rng.sample(sorted(ct.CHANNEL_NOISE), 2):
        free = [idx for idx in range(n) if (channel, idx) not in busy]
        if free:
            states[rng.choice(free)][channel] = ChannelState(text=rng.choice(ct.CHANNEL_NOISE[channel]))
    return states


def _vignettes(rng: random.Random, day: DayPlan) -> list:
    pools = {name: rng.sample(VIGNETTES[name], len(VIGNETTES[name])) for name in VIGNETTES}
    chosen = []
    for minutes in day.times:
        part = next(name for name, start, end in DAYPARTS if start <= minutes < end)
        pool = pools[part] or next(p for p in pools.values() if p)
        chosen.append(pool.pop())
    return chosen


def _opening(day: DayPlan, tasks: list[TaskDraft], labels: dict[str, str]) -> str:
    today = [labels[t.id] for t in tasks if t.day == day.index and t.enc_idx is None and not t.cross_day]
    ahead = [labels[t.id] for t in tasks if t.cross_day and t.enc_day == day.index and t.enc_idx is None]
    lines = [f"Good morning. It is {DAY_NAMES[day.index - 1]}, {day.archetype.title}.", "Plans for today:"]
    lines += [f"- {label}." for label in today]
    if ahead:
        lines += ["Looking ahead:"] + [f"- {label}." for label in ahead]
    return "\n".join(lines)


def _menu(rng: random.Random, day: DayPlan, tasks: list[TaskDraft]) -> list[MenuEntry]:
    refs = [t.id for t in tasks if t.day == day.index] + [f"lure_{slug}_d{day.index}" for slug, _ in day.lures]
    refs.sort()
    rng.shuffle(refs)
    return [MenuEntry(handle=f"task_{i + 1}", ref_id=ref) for i, ref in enumerate(refs)]


def _intro() -> str:
    names = ", ".join(name for name, _, _ in ct.CHANNELS)
    return ("A simulated week from Monday to Sunday; each day runs from 07:00 to 22:00 in irregular steps. "
            "Each morning you receive the day's plans; more instructions, changes and cancellations can arrive "
            "during the day, and some plans are announced days in advance. At every step pick one ongoing "
            "activity (A, B or C) and, if something is due right now, the matching actions from the menu. "
            f"Hidden state channels can be queried at any step: {names}.")
