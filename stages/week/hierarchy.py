"""The hierarchical union-query setup: three specialist subagents and a coordinator per step.

In: step observations from :func:`stages.week.runtime.run_week` (config ``hierarchical``).
Out: one JSON action per turn, plus a ``subagents`` trace event per step. Per step:

1. a *council* (three subagents: ``event_watcher``, ``status_watcher``, ``update_watcher``)
   sees the step (preceded by the state replies of the previous step's queries) and answers,
   each, with query suggestions, candidate due handles and handles not to select
   (:class:`Signal`);
2. the agent issues the de-duplicated union of the suggested queries through the runtime
   (ordinary ``query`` events, so they count as query cost);
3. the coordinator (any :class:`~stages.week.runtime.Agent`) gets the step, the signals and
   the state replies in one observation and makes the final ``choose`` (it may still query).

The vote ablations replay the logged signals (:mod:`stages.week.replay`). The scripted
council here knows the instructions, like the oracle, and splits the work by role.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from stages.week.model import CLOCK, NARRATIVE, Week
from stages.week.policies import Oracle
from stages.week.protocol import strip_fences
from stages.week.runtime import Agent, Observation

ROLES: dict[str, str] = {
    "event_watcher": "Watch for events: cues in the scene that make a remembered task due right now.",
    "status_watcher": "Watch hidden state: decide which channels (the clock included) must be queried now "
                      "because a pending task could be waiting on them.",
    "update_watcher": "Watch changes: cancellations, new cues, new times and tasks that must wait for another "
                      "one; say which handles must not be selected now.",
}


def subagent_prompt(role: str, channels: list[str]) -> str:
    """The system prompt of one subagent (``role`` is a key of :data:`ROLES`)."""
    return "\n".join([
        f"You are one of three helpers of an agent taking a prospective-memory test. Your role: {role}.",
        ROLES[role],
        "The week runs from 07:00 to 22:00 each day in irregular steps. Each step shows a scene, three ongoing",
        "activities and a menu of actions written as task_N: <action> (anonymous handles, renumbered daily).",
        "Plans arrive in the day's opening and later messages; the latest instruction for a task wins.",
        "Some cues appear only in hidden state channels; the time is hidden too.",
        "Channels: " + ", ".join(channels) + ".",
        "You do not act. Before the agent decides, say which channels to query now, which handles may be due",
        "now, and which handles must not be selected now. Use only handles on the current menu and the channels",
        "above; use [] for an empty list. Answer with exactly one JSON object and nothing else:",
        '{"query_suggestions":["clock"],"candidate_due":["task_3"],"do_not_select":["task_7"],'
        '"evidence":"short reason from this step"}',
    ])


def coordinator_prompt(base_prompt: str) -> str:
    """The coordinator's system prompt: the single-agent protocol plus how to use the signals."""
    return base_prompt + "\n" + "\n".join([
        "You coordinate three helpers (event_watcher, status_watcher, update_watcher). Every step you get the",
        "scene, their signals (query suggestions, candidate due handles, handles not to select) and the state",
        "replies of the queries they suggested, which have already been run. Their signals are evidence, not",
        "decisions: select a handle only when the evidence shows it is due now, leave out tasks that are only",
        "due later or speculative, and take do_not_select seriously unless a state reply contradicts it.",
        "You may still query a channel before you choose.",
    ])


@dataclass
class Signal:
    """One subagent's structured answer for one step (``error`` set when it could not be read)."""

    role: str
    query_suggestions: list[str] = field(default_factory=list)
    candidate_due: list[str] = field(default_factory=list)
    do_not_select: list[str] = field(default_factory=list)
    evidence: str = ""
    dropped: list[str] = field(default_factory=list)  # unknown channels or handles that were left out
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def parse_signal(role: str, raw: str, channels: list[str], menu: set[str]) -> Signal:
    """Read a subagent reply; unknown channels / handles are dropped (and listed), bad JSON is an error."""
    try:
        obj = json.loads(strip_fences(raw))
    except (json.JSONDecodeError, TypeError, ValueError) as exc:
        return Signal(role, error=f"not one JSON object ({exc.__class__.__name__})")
    if not isinstance(obj, dict):
        return Signal(role, error="not one JSON object")
    signal = Signal(role, evidence=str(obj.get("evidence", ""))[:500])
    for key, allowed in (("query_suggestions", channels), ("candidate_due", menu), ("do_not_select", menu)):
        values = obj.get(key, [])
        if not isinstance(values, list):
            signal.dropped.append(f"{key} is not a list")
            continue
        kept: list[str] = getattr(signal, key)
        for value in values:
            if isinstance(value, str) and value in allowed and value not in kept:
                kept.append(value)
            else:
                signal.dropped.append(f"{key}: {value!r}")
    return signal


class Council(Protocol):
    """The subagents of the hierarchical setup: one :class:`Signal` per role for a step."""

    def propose(self, observation: Observation, channels: list[str]) -> list[Signal]: ...


def _by_number(handles: list[str]) -> list[str]:
    """Distinct handles in ``task_N`` number order."""
    return sorted(set(handles), key=lambda h: int(h.split("_")[1]))


def _query_action(channel: str) -> str:
    action = "check_time" if channel == CLOCK else "query_state"
    return json.dumps({"action": action, "choice": "NONE", "task_ids": [], "channel": channel})


class HierarchicalAgent:
    """Council proposals, the union of their queries, then the coordinator's decision."""

    def __init__(self, council: Council, coordinator: Agent, channels: list[str],
                 prompts: dict[str, str] | None = None) -> None:
        self.council = council
        self.coordinator = coordinator
        self.channels = channels
        self.name = f"union-query:{coordinator.name}"
        self.prompts = prompts or {}
        self._step: Observation | None = None
        self._signals: list[Signal] = []
        self._queue: list[str] = []
        self._replies: dict[str, str] = {}
        self._coordinating = False
        self._view_seen = False  # the coordinator has answered its combined view of this step
        self._trace: list[dict[str, Any]] = []

    def pop_trace(self) -> list[dict[str, Any]]:
        """Events for the runtime to log (the step's ``subagents`` event, once)."""
        out, self._trace = self._trace, []
        return out

    def cost(self) -> dict[str, Any]:
        """The coordinator's LLM counters (the council shares its client), or {} for scripted runs."""
        cost = getattr(self.coordinator, "cost", None)
        return cost() if callable(cost) else {}

    def act(self, observation: Observation) -> str:
        if observation.kind == "step" and (self._step is None or observation.step_id != self._step.step_id):
            self._start_step(observation)
        elif observation.kind == "state" and not self._coordinating and observation.channel:
            self._replies[observation.channel] = observation.text
        if not self._coordinating and self._queue:
            return _query_action(self._queue.pop(0))
        self._coordinating = True
        if not self._view_seen:  # first turn, or offered again after the coordinator failed on its view
            reply = self.coordinator.act(self._coordinator_view())
            self._view_seen = True
            return reply
        return self.coordinator.act(observation)

    def _start_step(self, observation: Observation) -> None:
        earlier = list(self._replies.values()) if self._step is not None else []
        seen = observation
        if earlier:  # the subagents learn what their suggested queries returned one step ago
            text = "\n".join(["State replies at the previous step:", *earlier, observation.text])
            seen = Observation("step", text, observation.day, observation.step_id, observation.menu,
                               observation.narrative, observation.options, observation.opening,
                               heartbeat=observation.heartbeat, ledger=observation.ledger)
        self._signals = self.council.propose(seen, self.channels)  # may raise: the step is then offered again
        self._step, self._replies, self._coordinating, self._view_seen = observation, {}, False, False
        union: list[str] = []
        for signal in self._signals:
            union += [c for c in signal.query_suggestions if c not in union]
        self._queue = list(union)
        self._trace.append({"type": "subagents", "signals": [s.as_json() for s in self._signals], "union": union})

    def _coordinator_view(self) -> Observation:
        step = self._step
        assert step is not None
        lines = [step.text, "Subagent signals:"]
        for signal in self._signals:
            body = {k: v for k, v in signal.as_json().items() if k not in ("role", "dropped") and v not in (None, "")}
            lines.append(f"{signal.role}: {json.dumps(body, ensure_ascii=False)}")
        lines.append("State replies from the union of the suggested queries:")
        lines += list(self._replies.values()) or ["(no queries were suggested)"]
        return Observation("step", "\n".join(lines), step.day, step.step_id, step.menu, step.narrative,
                           step.options, step.opening, heartbeat=step.heartbeat, ledger=step.ledger,
                           replies=dict(self._replies))


class ScriptedCouncil:
    """Subagents that know the week's instructions (as the oracle does) and see only the step.

    ``event_watcher`` proposes pending tasks whose cue is in the scene; ``status_watcher``
    suggests querying every channel a pending task could fire on (the oracle's queries) and,
    not having seen the clock, proposes every pending time task; ``update_watcher`` proposes
    the scene-cued tasks plus pending rescheduled time tasks and marks canceled ones as not
    to select. Deterministic: the votes of the replays differ from the coordinator's choice.
    """

    def __init__(self, week: Week) -> None:
        self.memory = Oracle(week)
        self.ix = self.memory.ix

    def propose(self, observation: Observation, channels: list[str]) -> list[Signal]:
        handle_of = {text: handle for handle, text in observation.menu.items()}
        pending = []
        for task, cue_id, target in self.memory.pending(observation):
            handle = handle_of.get(self.ix.menu_text(task.id, observation.step_id))
            if handle is not None:  # a completed task has left the menu
                pending.append((task, cue_id, handle))
        on_menu = {task.id for task, _, _ in pending}
        scene, timed, rescheduled, sources = [], [], [], set()
        for task, cue_id, handle in pending:
            source = self.memory.source_of(task, cue_id)
            sources.add(source)
            if source == NARRATIVE and cue_id in self.ix.cues and self.ix.cues[cue_id].text in observation.narrative \
                    and not any(dep in on_menu for dep in task.depends_on):
                scene.append(handle)
            if source == CLOCK:
                timed.append(handle)
                if any(u.kind == "reschedule" for u in self._seen_updates(task.id, observation.step_id)):
                    rescheduled.append(handle)
        canceled = [handle_of[text] for text in self._canceled_texts(observation) if text in handle_of]
        queries = sorted(sources - {NARRATIVE})
        return [Signal("event_watcher", candidate_due=_by_number(scene)),
                Signal("status_watcher", query_suggestions=queries, candidate_due=_by_number(scene + timed)),
                Signal("update_watcher", candidate_due=_by_number(scene + rescheduled),
                       do_not_select=_by_number(canceled))]

    def _seen_updates(self, task_id: str, step_id: str) -> list[Any]:
        now = self.ix.order[step_id]
        return [u for u in self.ix.updates_by_task.get(task_id, []) if self.ix.order[u.step_id] <= now]

    def _canceled_texts(self, observation: Observation) -> list[str]:
        out = []
        for task in self.ix.week.tasks:
            if task.day == observation.day and any(u.kind == "cancel" for u in self._seen_updates(task.id,
                                                                                              observation.step_id)):
                out.append(self.ix.menu_text(task.id, observation.step_id))
        return out
