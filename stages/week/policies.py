"""Reference policies that play through the runtime: oracle, never-act, act-on-everything, clock-only.

In: observations from :func:`stages.week.runtime.run_week`. Out: one JSON action string per
turn. The oracle and clock-only policies know the week's instructions (what a perfect
memory would hold) but not the due sets: they act only on evidence the runtime shows them
(the narrative, channel replies, the clock), so a week that the oracle cannot finish
perfectly has a real solvability defect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from stages.week.index import WeekIndex
from stages.week.model import CLOCK, NARRATIVE, Task, Week
from stages.week.runtime import Observation

CLOCK_REPLY = re.compile(r"Time (\d{2}:\d{2})")


def _choose(handles: list[str]) -> str:
    return json.dumps({"action": "choose", "choice": "A", "task_ids": handles, "channel": "NONE", "ledger": []})


def _query(channel: str) -> str:
    action = "check_time" if channel == CLOCK else "query_state"
    return json.dumps({"action": action, "choice": "NONE", "task_ids": [], "channel": channel})


def _handle_number(handle: str) -> int:
    return int(handle.split("_")[1])


class NeverAct:
    """Always picks activity A and no actions."""

    name = "never-act"

    def act(self, observation: Observation) -> str:
        return _choose([])


class ActOnEverything:
    """Selects every handle on the menu (the first ``max_handles`` by number when capped)."""

    name = "act-on-everything"

    def __init__(self, max_handles: int | None = 8) -> None:
        self.max_handles = max_handles

    def act(self, observation: Observation) -> str:
        handles = sorted(observation.menu, key=_handle_number)
        return _choose(handles[: self.max_handles] if self.max_handles else handles)


class Oracle:
    """Perfect memory and monitoring: queries every channel a pending task could fire on, acts on evidence."""

    name = "oracle"

    def __init__(self, week: Week, use_events: bool = True) -> None:
        self.ix = WeekIndex(week)
        self.use_events = use_events
        self.completed: set[str] = set()
        self.queue: list[str] = []
        self.replies: dict[str, str] = {}
        self.observation: Observation | None = None

    def _version(self, task: Task, step_id: str) -> tuple[bool, str | None, str | None]:
        """(canceled, cue id, target time) as known from the updates seen up to ``step_id``."""
        canceled, cue_id, target = False, task.cue_id, task.target_time
        for update in self.ix.updates_by_task.get(task.id, []):
            if self.ix.order[update.step_id] > self.ix.order[step_id]:
                break
            canceled = canceled or update.kind == "cancel"
            cue_id = update.new_cue_id or cue_id
            target = update.new_target_time or target
        return canceled, cue_id, target

    def pending(self, obs: Observation) -> list[tuple[Task, str | None, str | None]]:
        out = []
        for task in self.ix.week.tasks:
            if task.day != obs.day or task.id in self.completed or not self.ix.is_known_at(task.id, obs.step_id):
                continue
            if task.trigger == "event" and not self.use_events:
                continue
            canceled, cue_id, target = self._version(task, obs.step_id)
            if not canceled:
                out.append((task, cue_id, target))
        return out

    def source_of(self, task: Task, cue_id: str | None) -> str:
        return CLOCK if task.trigger == "time" else self.ix.cues[cue_id].source if cue_id in self.ix.cues else NARRATIVE

    def act(self, observation: Observation) -> str:
        if observation.kind == "step":
            self.observation, self.replies = observation, dict(observation.replies)
            sources = {self.source_of(t, c) for t, c, _ in self.pending(observation)}
            self.queue = sorted(sources - {NARRATIVE} - set(self.replies))
        elif observation.kind == "state" and observation.channel:
            self.replies[observation.channel] = observation.text
        if self.queue:
            return _query(self.queue.pop(0))
        return _choose(self._decide())

    def _decide(self) -> list[str]:
        obs = self.observation
        if obs is None:
            return []
        by_text = {text: handle for handle, text in obs.menu.items()}
        clock = CLOCK_REPLY.search(self.replies.get(CLOCK, ""))
        chosen: list[str] = []
        for task, cue_id, target in self.pending(obs):
            source = self.source_of(task, cue_id)
            if source == CLOCK:
                fired = clock is not None and clock.group(1) == target
            else:
                text = self.ix.cues[cue_id].text if cue_id in self.ix.cues else None
                seen = obs.narrative if source == NARRATIVE else self.replies.get(source, "")
                fired = text is not None and text in seen
            ready = all(dep in self.completed for dep in task.depends_on)
            handle = by_text.get(self.ix.menu_text(task.id, obs.step_id))
            if fired and ready and handle is not None:
                chosen.append(handle)
                self.completed.add(task.id)
        return sorted(chosen, key=_handle_number)


def clock_only(week: Week) -> Oracle:
    """Checks the clock and executes time-based tasks perfectly; ignores every event task."""
    policy = Oracle(week, use_events=False)
    policy.name = "clock-only"
    return policy


POLICIES: dict[str, Callable[[Week, int | None], object]] = {
    "oracle": lambda week, cap: Oracle(week),
    "never-act": lambda week, cap: NeverAct(),
    "act-on-everything": lambda week, cap: ActOnEverything(cap),
    "clock-only": lambda week, cap: clock_only(week),
}


def make_policy(name: str, week: Week, max_handles: int | None = 8) -> object:
    """Build a reference policy by name (KeyError for unknown names)."""
    return POLICIES[name](week, max_handles)
