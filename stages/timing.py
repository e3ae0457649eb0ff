"""A seeded model of a person chatting: how long each exchange takes, for message timestamps.

A plain library module (not a stage), for base dialogues and the stretched long contexts.

In: the words of each exchange (what the person reads, what they write) and a ``random.Random``.
Out: gaps in seconds between consecutive user turns. The gap before a user turn is a pause to
think, the time to read the assistant's previous reply and the time to type the new message, times
a log-normal jitter, so it grows with the words read and written and is never a round number of
minutes. After a stretch of activity (a session, itself drawn) the person takes a break: mostly a
short one (a coffee, a meeting), sometimes a night. A 100K-token conversation therefore spans hours
or days, not minutes.

``stages.injection`` lays such gaps out in a long row; ``WakingClock`` keeps base dialogues in
waking hours.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from pydantic import BaseModel, ConfigDict


class TimingParams(BaseModel):
    """Reading and typing speeds, the pause before writing, jitter and breaks (seconds, words per minute)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reading_wpm: float = 230.0  # adult silent reading of prose
    typing_wpm: float = 38.0  # casual typing on a keyboard
    think_seconds: float = 7.0  # median pause before starting to type
    jitter_sigma: float = 0.45  # log-normal spread of each gap
    session_minutes: float = 150.0  # median active time before a break
    short_break_minutes: float = 25.0  # median short break
    night_probability: float = 0.3  # a break is a night's sleep this often
    night_hours: float = 10.0  # median night break (evening to next morning)
    min_gap_seconds: float = 35.0  # no one reads a reply and types an answer faster


DAY_SECONDS = 86400.0


@dataclass(frozen=True)
class WakingClock:
    """Time as a person's waking seconds since ``origin``: the night (outside ``start``-``end`` seconds
    of the day) does not count, so gaps stretched over days land every turn in the day, and a long
    pause crosses a night instead of ending at 3 a.m."""

    origin: date
    start: float = 7 * 3600.0  # 07:00
    end: float = 23.5 * 3600.0  # 23:30

    @classmethod
    def covering(cls, origin: date, times: list[datetime]) -> WakingClock:
        """The waking clock, or the whole-day clock when one of ``times`` lies in the night (a dialogue
        anchored at night keeps its times as written)."""
        clock = cls(origin)
        return clock if all(clock.awake(at) for at in times) else cls(origin, start=0.0, end=DAY_SECONDS)

    @property
    def day(self) -> float:
        return self.end - self.start

    def awake(self, at: datetime) -> bool:
        return self.start <= _seconds_of_day(at) <= self.end

    def to_waking(self, at: datetime) -> float:
        """Waking seconds from ``origin``'s start of day to ``at`` (a time in the night counts as its edge)."""
        clamped = min(max(_seconds_of_day(at), self.start), self.end)
        return (at.date() - self.origin).days * self.day + clamped - self.start

    def from_waking(self, seconds: float) -> datetime:
        days, rest = divmod(seconds, self.day)
        return datetime.combine(self.origin, time()) + timedelta(days=days, seconds=self.start + rest)


def _seconds_of_day(at: datetime) -> float:
    return at.hour * 3600.0 + at.minute * 60.0 + at.second + at.microsecond / 1e6


class TypingModel:
    """Gaps between user turns for a person who reads each reply and types each message."""

    def __init__(self, params: TimingParams | None = None) -> None:
        self.params = params or TimingParams()

    def _unjittered(self, read_words: int, written_words: int) -> float:
        p = self.params
        return p.think_seconds + 60.0 * read_words / p.reading_wpm + 60.0 * written_words / p.typing_wpm

    def floor(self, read_words: int, written_words: int) -> float:
        """The least a person needs: think, read, type, no jitter, never under ``min_gap_seconds``."""
        return max(self.params.min_gap_seconds, self._unjittered(read_words, written_words))

    def gap(self, read_words: int, written_words: int, rng: random.Random) -> float:
        """Seconds from one user turn to the next: think, read the reply, type the message, jittered,
        never under ``min_gap_seconds``."""
        p = self.params
        return max(p.min_gap_seconds, self._unjittered(read_words, written_words) * rng.lognormvariate(0.0, p.jitter_sigma))

    def gaps(self, exchanges: list[tuple[int, int]], rng: random.Random) -> list[float]:
        """One gap per ``(read_words, written_words)``, with breaks added after drawn sessions."""
        return [gap + pause for gap, pause in zip(*self.gaps_and_breaks(exchanges, rng))]

    def gaps_and_breaks(self, exchanges: list[tuple[int, int]], rng: random.Random) -> tuple[list[float], list[float]]:
        """Reading-and-typing gaps, and the break (0 or a pause) that follows each."""
        gaps: list[float] = []
        breaks: list[float] = []
        active, session = 0.0, self._session(rng)
        for read, written in exchanges:
            gap = self.gap(read, written, rng)
            active += gap
            pause = 0.0
            if active > session:
                pause = self._break(rng)
                active, session = 0.0, self._session(rng)
            gaps.append(gap)
            breaks.append(pause)
        return gaps, breaks

    def _session(self, rng: random.Random) -> float:
        return 60.0 * self.params.session_minutes * rng.lognormvariate(0.0, 0.5)

    def _break(self, rng: random.Random) -> float:
        p = self.params
        if rng.random() < p.night_probability:
            return 3600.0 * p.night_hours * rng.lognormvariate(0.0, 0.15)
        return 60.0 * p.short_break_minutes * rng.lognormvariate(0.0, 0.7)
