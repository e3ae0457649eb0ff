"""One row's user turns as surface-form features, and its row invariants.

In: a release row (``messages``, ``constraint_turns``, ``trigger_turn``, ``injected_turns``...).
Out: :class:`RowTurns`: for every *candidate* (a user turn of the conversation itself before the
trigger: injected distractor turns are not candidates) its index, word and character counts,
question mark, timestamp, the next assistant reply's length, whether it is a constraint turn, its
position among all user turns and how many injected user turns follow it before the next
candidate; plus :class:`RowInvariants` (role alternation, timestamps
going backwards, user turns per minute, time expressions in injected turns).

Only surface form is read here: nothing a finder sees depends on the row's labels except the
``is_constraint`` flag used to score it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from pipeline.text import SHAPE_PUNCTUATION, TIME_PATTERNS, strip_timestamp, time_expressions  # noqa: F401 (re-exported)


@dataclass
class RowInvariants:
    """Structural facts of one row that every row must satisfy."""

    no_messages: bool = False       # the row has no messages at all
    role_breaks: int = 0            # two consecutive non-system messages of the same role
    first_not_user: bool = False
    last_not_user: bool = False
    backwards: int = 0              # user timestamps earlier than the previous one
    missing_stamps: int = 0         # user turns without a parseable ``[YYYY-MM-DDTHH:MM]``
    max_user_per_minute: int = 0    # most user turns sharing one minute stamp
    min_gap_minutes: int | None = None
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
    row_position: np.ndarray   # position among all user turns before the trigger, 0..1 (injected ones counted)
    injected_after: np.ndarray  # injected user turns between this candidate and the next one (or the trigger)
    texts: list[str] | None    # stamp-stripped candidate texts (kept only where needed)
    trigger_text: str
    trigger_words: int
    span_minutes: float        # first user stamp to the trigger's stamp

    @property
    def n(self) -> int:
        return len(self.index)


@dataclass
class TextCache:
    """Per-text results shared across rows (long rows of one blueprint share their injected block)."""

    minutes: dict[str, int | None] = field(default_factory=dict)     # stamp -> minutes since 0001-01-01
    users: dict[str, tuple[int, int, bool, int]] = field(default_factory=dict)
    times: dict[str, tuple[str, ...]] = field(default_factory=dict)


_EPOCH = datetime(1, 1, 1)


def _stamp(content: str, cache: TextCache) -> tuple[int | None, str]:
    """``(minutes, body)`` of a user message: the ``[YYYY-MM-DDTHH:MM]`` prefix parsed and removed."""
    if len(content) >= 18 and content[0] == "[" and content[17] == "]":
        key = content[1:17]
        minutes = cache.minutes.get(key, -1)
        if minutes == -1:
            try:
                minutes = int((datetime.fromisoformat(key) - _EPOCH).total_seconds() // 60)
            except ValueError:
                minutes = None
            cache.minutes[key] = minutes
        if minutes is not None:
            return minutes, content[18:].lstrip()
    return None, strip_timestamp(content)


def _user_features(body: str, cache: TextCache) -> tuple[int, int, bool, int]:
    found = cache.users.get(body)
    if found is None:
        found = cache.users[body] = (len(body.split()), len(body), "?" in body, len(SHAPE_PUNCTUATION.findall(body)))
    return found


def extract(row: dict[str, Any], *, keep_texts: bool, cache: TextCache | None = None) -> tuple[RowTurns, RowInvariants]:
    """Surface features of ``row``'s candidate turns and its invariants."""
    messages = row["messages"]
    trigger = row.get("trigger_turn")
    trigger = len(messages) - 1 if trigger is None else int(trigger)
    constraints = set(row.get("constraint_turns") or [])
    injected = set(row.get("injected_turns") or [])
    invariants = RowInvariants()
    cache = cache if cache is not None else TextCache()
    index, features, minute, gaps, replies, texts = [], [], [], [], [], []
    ordinal, after = [], []
    users_before_trigger = 0
    previous_role, previous_at, first_at, trigger_at = None, None, None, None
    per_minute: Counter = Counter()
    min_gap: int | None = None
    for i, message in enumerate(messages):
        role, content = message["role"], message["content"] or ""
        if role == "system":
            continue
        if role == previous_role:
            invariants.role_breaks += 1
        elif previous_role is None and role != "user":
            invariants.first_not_user = True
        previous_role = role
        if role != "user":
            if i in injected:
                _count_times(content, cache, invariants)
            if index and index[-1] == i - 1:
                replies[-1] = len(content.split())
            continue
        at, body = _stamp(content, cache)
        if i in injected:
            _count_times(body, cache, invariants)
            if i < trigger:
                users_before_trigger += 1
                if after:
                    after[-1] += 1
        gap = 0
        if at is None:
            invariants.missing_stamps += 1
        else:
            per_minute[at] += 1
            if first_at is None:
                first_at = at
            if previous_at is not None:
                gap = at - previous_at
                if gap < 0:
                    invariants.backwards += 1
                min_gap = gap if min_gap is None or gap < min_gap else min_gap
            previous_at = at
        if i >= trigger:
            if i == trigger:
                trigger_at = at
            continue
        if i in injected:
            continue
        index.append(i)
        ordinal.append(users_before_trigger)
        users_before_trigger += 1
        after.append(0)
        features.append(_user_features(body, cache))
        minute.append(at % 60 if at is not None else -1)
        gaps.append(gap)
        replies.append(0)
        if keep_texts:
            texts.append(body)
    invariants.last_not_user = previous_role != "user"
    invariants.max_user_per_minute = max(per_minute.values(), default=0)
    invariants.min_gap_minutes = min_gap
    trigger_text = strip_timestamp(messages[trigger]["content"] or "") if messages else ""
    span = float(trigger_at - first_at) if first_at is not None and trigger_at is not None else 0.0
    table = np.asarray(features, dtype=np.int64).reshape(-1, 4)
    turns = RowTurns(
        index=np.asarray(index, dtype=np.int32), user_words=table[:, 0].astype(np.int32),
        user_chars=table[:, 1].astype(np.int32), question=table[:, 2].astype(bool),
        punctuation=table[:, 3].astype(np.int32), minute=np.asarray(minute, dtype=np.int16),
        gap_before=np.asarray(gaps, dtype=np.float32), reply_words=np.asarray(replies, dtype=np.int32),
        is_constraint=np.fromiter((i in constraints for i in index), dtype=bool, count=len(index)),
        row_position=np.asarray(ordinal, dtype=np.float32) / max(users_before_trigger - 1, 1),
        injected_after=np.asarray(after, dtype=np.int32),
        texts=texts if keep_texts else None, trigger_text=trigger_text, trigger_words=len(trigger_text.split()),
        span_minutes=span)
    return turns, invariants


def _count_times(text: str, cache: TextCache, invariants: RowInvariants) -> None:
    found = cache.times.get(text)
    if found is None:
        found = cache.times[text] = tuple(time_expressions(text))
    if found:
        invariants.injected_time_turns += 1
        invariants.injected_time_patterns.update(found)
