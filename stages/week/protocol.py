"""The agent-facing protocol: JSON actions, their validation, state replies and the prompt.

In: raw agent text. Out: a parsed :class:`Action` or a one-line protocol error (never an
exception). Actions (one JSON object per turn):

- ``{"action":"query_state","choice":"NONE","task_ids":[],"channel":"email"}``
- ``{"action":"check_time","choice":"NONE","task_ids":[],"channel":"clock"}`` (same as
  ``query_state`` on ``clock``)
- ``{"action":"choose","choice":"B","task_ids":["task_3"],"channel":"NONE"}`` (ends the
  step; in ledger mode it also carries ``"ledger": [...]``)
- ``{"action":"set_heartbeat","heartbeat_enabled":true,"heartbeat_minutes":30}`` (only in
  the optional-heartbeat mode)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from stages.week.model import CLOCK, DAY_START, Step, to_minutes

ACTIONS = ("query_state", "check_time", "choose", "set_heartbeat")
LEDGER_LIMIT = 5
LEDGER_STATUSES = ("pending", "done", "canceled")
HEARTBEAT_MINUTES = (30, 60)


@dataclass(frozen=True)
class Action:
    """A well-formed agent action."""

    kind: str
    channel: str | None = None
    choice: str | None = None
    handles: tuple[str, ...] = ()
    heartbeat_enabled: bool | None = None
    heartbeat_minutes: int | None = None
    ledger: list[dict[str, Any]] | None = None
    ledger_error: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


def strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text[3:-3].strip()
        if text.lower().startswith("json"):
            text = text[4:].strip()
    return text


def _is_none(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.upper() == "NONE")


def parse_action(raw: str, channels: list[str], menu: set[str], max_handles: int | None,
                 ledger_mode: bool) -> tuple[Action | None, str | None]:
    """Validate one agent reply; returns (action, None) or (None, error message)."""
    try:
        obj = json.loads(strip_fences(raw))
    except (json.JSONDecodeError, TypeError, ValueError) as exc:
        return None, f"not one JSON object ({exc.__class__.__name__})"
    if not isinstance(obj, dict):
        return None, "not one JSON object"
    kind = obj.get("action")
    if kind not in ACTIONS:
        return None, f"unknown action {kind!r}; use one of {', '.join(ACTIONS)}"
    task_ids = obj.get("task_ids", [])
    if kind in ("query_state", "check_time"):
        channel = obj.get("channel", CLOCK if kind == "check_time" else None)
        if kind == "check_time" and _is_none(channel):
            channel = CLOCK
        if kind == "check_time" and channel != CLOCK:
            return None, "check_time must use channel clock"
        if channel not in channels:
            return None, f"unknown channel {channel!r}"
        if not _is_none(obj.get("choice")) or task_ids:
            return None, f"{kind} needs choice NONE and task_ids []"
        return Action(kind, channel=channel), None
    if kind == "set_heartbeat":
        enabled, minutes = obj.get("heartbeat_enabled"), obj.get("heartbeat_minutes")
        if not isinstance(enabled, bool):
            return None, "set_heartbeat needs heartbeat_enabled true or false"
        if enabled and minutes not in HEARTBEAT_MINUTES:
            return None, "heartbeat_minutes must be 30 or 60"
        return Action(kind, heartbeat_enabled=enabled, heartbeat_minutes=minutes if enabled else None), None
    choice = obj.get("choice")
    if choice not in ("A", "B", "C"):
        return None, f"choose needs choice A, B or C, got {choice!r}"
    if not isinstance(task_ids, list) or not all(isinstance(h, str) for h in task_ids):
        return None, "task_ids must be a list of handles"
    if len(set(task_ids)) != len(task_ids):
        return None, "task_ids repeats a handle"
    unknown = [h for h in task_ids if h not in menu]
    if unknown:
        return None, f"handles not on the current menu: {', '.join(unknown)}"
    if max_handles is not None and len(task_ids) > max_handles:
        return None, f"at most {max_handles} handles per choose"
    if not _is_none(obj.get("channel")):
        return None, "choose needs channel NONE"
    ledger, ledger_error = None, None
    if ledger_mode:
        ledger, ledger_error = _parse_ledger(obj.get("ledger"))
    return Action(kind, choice=choice, handles=tuple(task_ids), ledger=ledger, ledger_error=ledger_error), None


def _parse_ledger(value: Any) -> tuple[list[dict[str, Any]] | None, str | None]:
    if not isinstance(value, list):
        return None, "ledger must be a list"
    if len(value) > LEDGER_LIMIT:
        return None, f"ledger has {len(value)} items, at most {LEDGER_LIMIT}"
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("task_id"), str) \
                or not isinstance(item.get("when"), str) or item.get("status") not in LEDGER_STATUSES:
            return None, "ledger items need task_id, when and status (pending/done/canceled)"
        if set(item) - {"task_id", "when", "status", "notes"}:
            return None, "ledger items take only task_id, when, status, notes"
    return value, None


def state_line(step: Step, channel: str) -> str:
    """The one-line reply to a query: ``State [channel]: <message>``."""
    if channel == CLOCK:
        elapsed = to_minutes(step.time) - to_minutes(DAY_START)
        return f"State [clock]: Time {step.time} | Stopwatch: {elapsed} min"
    return f"State [{channel}]: {step.channel_states[channel].text}"


def system_prompt(channels: list[str], heartbeat: str, ledger: bool, max_handles: int | None) -> str:
    """The instructions given to an agent before the week starts."""
    lines = [
        "You are being evaluated on prospective memory: remembering to do things later, at the right moment.",
        "The simulation covers one week; each day runs from 07:00 to 22:00 in irregular steps.",
        "Each step shows a short scene, three ongoing activities (A/B/C) and a menu of actions written as",
        "task_N: <action>. Handles are anonymous and are renumbered every day.",
        "Each day opens with its plans; new plans, changes and cancellations can arrive later. Always follow",
        "the latest instruction for a task. Nobody will remind you about a task you forget.",
        "Some cues are not in the scene: they only show up when you query a state channel. The current time",
        "is hidden too: query the clock to see it. Channels: " + ", ".join(channels) + ".",
        "Reply with exactly one JSON object per turn, no other text:",
        '{"action":"query_state","choice":"NONE","task_ids":[],"channel":"<channel>"}',
        '{"action":"check_time","choice":"NONE","task_ids":[],"channel":"clock"}',
        '{"action":"choose","choice":"A","task_ids":["task_4"],"channel":"NONE"}',
        "A query is answered with one line 'State [channel]: ...'; you may query several times, then you must",
        "choose to move on. Put in task_ids only the actions that are due now (or [] if none)"
        + (f", at most {max_handles}." if max_handles else "."),
    ]
    if heartbeat == "optional":
        lines.append('You may turn on a periodic heartbeat nudge with {"action":"set_heartbeat",'
                     '"heartbeat_enabled":true,"heartbeat_minutes":30} (30 or 60; false turns it off). It is not '
                     "aligned with any cue.")
    elif heartbeat in ("auto30", "auto60"):
        lines.append(f"A heartbeat nudge is switched on at the start of every day, every {heartbeat[4:]} "
                     "virtual minutes; it is not aligned with any cue.")
    if ledger:
        lines.append('Keep a TODO ledger: every choose also carries "ledger": a list of at most 5 objects with '
                     'task_id (a current handle), when (a time, "cue: ..." or "unknown"), status '
                     '(pending/done/canceled) and optional short notes. It is shown back to you next step.')
    return "\n".join(lines)
