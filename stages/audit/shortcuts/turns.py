"""One row's user turns as surface-form features, and its row invariants.

In: a release row (``messages``, ``constraint_turns``, ``trigger_turn``, ``injected_turns``...).
Out: :class:`RowTurns`: for every *candidate* (a user turn before the trigger) its index, word and
character counts, question mark, timestamp, the next assistant reply's length, whether it is a
constraint turn or an injected turn; plus :class:`RowInvariants` (role alternation, timestamps
going backwards, user turns per minute, time expressions in injected turns).

Only surface form is read here: nothing a finder sees depends on the row's labels except the
``is_constraint`` flag used to score it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from pipeline.text import strip_timestamp

_MARKS = ("!", ",", ";", ":", '"', "'")
_DIGITS = re.compile(r"\d")
_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})\]")
# Written for this audit, independent of the distractor filter (stages/distractors): clock times,
# durations, parts of the day, weekdays, dates and relative days.
_NUMBER = r"(?:\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|forty-five|half an?|a couple of|a few|several)"
TIME_PATTERNS: dict[str, re.Pattern[str]] = {
    "clock": re.compile(r"\b(?:[01]?\d|2[0-3])[:.][0-5]\d\b(?!\s*(?:pounds|gbp|£|%))|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.)\b|\bo'clock\b|\bnoon\b|\bmidnight\b", re.I),
    "duration": re.compile(rf"\b{_NUMBER}[ -](?:minutes?|mins?|hours?|hrs?|seconds?|days?|weeks?|months?|years?)\b", re.I),
    "part_of_day": re.compile(r"\b(?:this|tomorrow|yesterday|in the|every|on \w+day)\s+(?:morning|afternoon|evening|night)\b|\btonight\b|\bovernight\b", re.I),
    "weekday": re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)s?\b", re.I),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:january|february|march|april|june|july|august|september|october|november|december)\s+\d{1,2}\b", re.I),
    "relative_day": re.compile(r"\b(?:today|tomorrow|yesterday|next week|last week)\b", re.I),
}


def time_expressions(text: str) -> list[str]:
    """Names of the time-expression patterns found in ``text`` (empty when none)."""
    return [name for name, pattern in TIME_PATTERNS.items() if pattern.search(text)]


@dataclass
class RowInvariants:
    """Structural facts of one row that every row must satisfy."""

    role_breaks: int = 0            # two consecutive non-system messages of the same role
    first_not_user: bool = False
    last_not_user: bool = False
    backwards: int = 0              # user timestamps earlier than the previous one
    missing_stamps: int = 0         # user turns without a parseable ``[YYYY-MM-DDTHH:MM]``
    max_user_per_minute: int = 0    # most user turns sharing one minute stamp
    min_gap_minutes: float | None = None
    injected_time_turns: int = 0    # injected turns with a time expression
    injected_time_patterns: Counter = field(default_factory=Counter)


@dataclass
class RowTurns:
    """Candidate user turns of one row (all arrays aligned, length = number of candidates)."""

    index: np.ndarray          # message index
    user_words: np.ndarray
    user_chars: np.ndarray
    question: np.ndarray       # has a '?'
    punctuation: np.ndarray    # count of '!', ',', ';', ':', quotes and digits (a cue nobody listed shows here)
    minute: np.ndarray         # minute of the hour (-1 without a stamp)
    gap_before: np.ndarray     # minutes since the previous user turn (0 for the first)
    reply_words: np.ndarray    # words of the next assistant message (0 without one)
    is_constraint: np.ndarray
    injected: np.ndarray
    texts: list[str] | None    # stamp-stripped candidate texts (kept only where needed)
    trigger_text: str
    trigger_words: int
    span_minutes: float        # first user stamp to the trigger's stamp

    @property
    def n(self) -> int:
        return len(self.index)


def _stamp(content: str) -> datetime | None:
    match = _STAMP.match(content)
    if match is None:
        return None
    try:
        return datetime.fromisoformat(match.group(1))
    except ValueError:
        return None


def _minutes(a: datetime, b: datetime) -> float:
    return (b - a).total_seconds() / 60.0


def extract(row: dict[str, Any], *, keep_texts: bool, injected_time_cache: dict[str, tuple[str, ...]] | None = None
            ) -> tuple[RowTurns, RowInvariants]:
    """Surface features of ``row``'s candidate turns and its invariants."""
    messages = row["messages"]
    trigger = row.get("trigger_turn")
    trigger = len(messages) - 1 if trigger is None else int(trigger)
    constraints = set(row.get("constraint_turns") or [])
    injected = set(row.get("injected_turns") or [])
    invariants = RowInvariants()
    columns: dict[str, list[Any]] = {k: [] for k in ("index", "user_words", "user_chars", "question", "punctuation",
                                                      "minute", "gap_before", "reply_words", "is_constraint",
                                                      "injected")}
    texts: list[str] = []
    previous_role, previous_at, first_at, trigger_at = None, None, None, None
    per_minute: Counter = Counter()
    min_gap: float | None = None
    cache = injected_time_cache if injected_time_cache is not None else {}
    for i, message in enumerate(messages):
        role, content = message["role"], message["content"] or ""
        if role == "system":
            continue
        if role == previous_role:
            invariants.role_breaks += 1
        if previous_role is None and role != "user":
            invariants.first_not_user = True
        previous_role = role
        if i in injected:
            body = strip_timestamp(content)
            found = cache.get(body)
            if found is None:
                found = cache[body] = tuple(time_expressions(body))
            if found:
                invariants.injected_time_turns += 1
                invariants.injected_time_patterns.update(found)
        if role != "user":
            if columns["index"] and columns["index"][-1] == i - 1:
                columns["reply_words"][-1] = len(content.split())
            continue
        at = _stamp(content)
        if at is None:
            invariants.missing_stamps += 1
        else:
            per_minute[at] += 1
            first_at = first_at or at
            if previous_at is not None:
                gap = _minutes(previous_at, at)
                if gap < 0:
                    invariants.backwards += 1
                min_gap = gap if min_gap is None else min(min_gap, gap)
            gap_before = _minutes(previous_at, at) if previous_at is not None else 0.0
            previous_at = at
        if i == trigger:
            trigger_at = at
            continue
        if i > trigger:
            continue
        body = strip_timestamp(content)
        columns["index"].append(i)
        columns["user_words"].append(len(body.split()))
        columns["user_chars"].append(len(body))
        columns["question"].append("?" in body)
        columns["punctuation"].append(sum(body.count(c) for c in _MARKS) + len(_DIGITS.findall(body)))
        columns["minute"].append(at.minute if at is not None else -1)
        columns["gap_before"].append(gap_before if at is not None else 0.0)
        columns["reply_words"].append(0)
        columns["is_constraint"].append(i in constraints)
        columns["injected"].append(i in injected)
        if keep_texts:
            texts.append(body)
    invariants.last_not_user = previous_role != "user"
    invariants.max_user_per_minute = max(per_minute.values(), default=0)
    invariants.min_gap_minutes = min_gap
    trigger_text = strip_timestamp(messages[trigger]["content"] or "") if messages else ""
    span = _minutes(first_at, trigger_at) if first_at is not None and trigger_at is not None else 0.0
    dtypes = {"question": bool, "punctuation": np.int32, "is_constraint": bool, "injected": bool, "index": np.int32, "minute": np.int16,
              "gap_before": np.float32, "user_words": np.int32, "user_chars": np.int32, "reply_words": np.int32}
    arrays = {k: np.asarray(v, dtype=dtypes[k]) for k, v in columns.items()}
    return RowTurns(**arrays, texts=texts if keep_texts else None, trigger_text=trigger_text,
                    trigger_words=len(trigger_text.split()), span_minutes=span), invariants
