"""Where a long row's injected snippets go, and when their user turns happen.

In: a base dialogue's turns (``role``, ``kind``, ``at``, ``content``), the snippet picks chosen for a
length (each a list of ``(role, content)`` messages, user first), its dimension, a
:class:`~stages.timing.TypingModel` and seeded generators. Out: a :class:`Layout`: the chunks
(the base message index each goes before, and how many picks it holds), a timestamp per injected
user turn and the signed minutes each base user turn moves back.

**Placement.** Attention recovery keeps one block right after the assistant's reply to the
interruption: the injected problem-solving *is* the interruption the design describes. Every other
dimension spreads its picks over the exchange boundaries of the whole dialogue, from before its first
user turn to before the trigger (whole picks, in their drawn order): the boundary before the trigger
takes half of the tokens in expectation, as the paper injects before the trigger, and the other
boundaries share the rest alike (Dirichlet weights). So the constraint is not the last turn before one
big block, and which boundaries carry distractors says nothing about where the constraint is, since
the weights never depend on it; with the constraint in the first two-thirds of the dialogue, most
injected tokens fall between constraint and trigger (the plan records the share).

**Time.** Time runs on the base dialogue's waking clock (07:00-23:30; nights do not count, so no turn
lands at 3 a.m. and a long pause crosses a night). Every base gap between user turns is kept (it
already holds the base dialogue's reading, typing and pauses); each injected user turn adds a gap
from the typing model (its short breaks included; its nights come from the clock, so pass a model
without them). The trigger keeps its time and earlier turns move back. Temporal grounding also keeps the
constraint's time, so the deadline means what it meant: the chunks between constraint and trigger
take their time from the slack of the base gaps there (what a gap holds beyond reading and typing),
first with the model's breaks, then without; when even that does not fit, all gaps are compressed
and the layout is implausible if a gap falls below the model's floor.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pipeline.blueprints.schema import TIME_FORMAT
from pipeline.text import word_count
from stages.timing import TypingModel, WakingClock

Messages = list[tuple[str, str]]
# Between a base turn and an injected one at least a minute passes, so they never share a minute stamp:
# base turns may share one (stamps are minutes), and a third turn in that minute would break the pace.
EDGE_SECONDS = 60.0


@dataclass(frozen=True)
class Layout:
    """Chunks, injected stamps and base shifts of one (dialogue, length) plan."""

    chunks: tuple[tuple[int, int], ...]  # (base message index the chunk goes before, number of picks)
    stamps: tuple[str, ...]  # one per injected user turn, in row order
    base_shifts: tuple[int, ...]  # minutes each base user turn moves back (negative: later), in row order
    scale: float  # 1.0, or the compression a deadline forced on the gaps between constraint and trigger
    injected_minutes: float  # the time the injected exchanges take, breaks included
    plausible: bool  # every gap still leaves a person the model's floor to read and type


def insert_index(turns: list[dict]) -> int:
    """Right after the assistant's reply to the last constraint-side user turn (constraint or interruption).

    Constraint-side replies carry the same ``kind`` as their user turn, so only user turns are looked
    at; a constraint-side turn without a reply is a malformed dialogue.
    """
    last = max(i for i, t in enumerate(turns) if t["role"] == "user" and t["kind"] in {"constraint", "interruption"})
    if last + 1 >= len(turns) or turns[last + 1]["role"] != "assistant":
        raise ValueError(f"turn {last} ({turns[last]['kind']}) has no assistant reply to inject after")
    return last + 2


def boundaries(turns: list[dict], dimension: str) -> list[int]:
    """Base message indices a chunk may go before: every user turn (the trigger included), or for
    attention recovery only the turn after the interruption's reply."""
    if dimension == "attention_recovery":
        return [insert_index(turns)]
    return [i for i, turn in enumerate(turns) if turn["role"] == "user"]


def split_into_chunks(costs: list[int], slots: list[int], rng: random.Random,
                      opens: list[bool] | None = None) -> list[tuple[int, int]]:
    """``(slot, picks)`` chunks: the slots draw Dirichlet shares of the total cost, the last slot (before
    the trigger) half of it in expectation and the others alike, and each pick (in order) goes to the
    slot whose share holds its midpoint; empty slots are left out. With ``opens`` (per pick: does it
    open its conversation?), chunk starts move to the nearest opening pick."""
    if len(slots) == 1:
        return [(slots[0], len(costs))] if costs else []
    others = len(slots) - 1
    weights = [rng.gammavariate(1.0, 1.0) for _ in range(others)] + [rng.gammavariate(float(others), 1.0)]
    total_weight, total_cost = sum(weights), sum(costs)
    edges, running = [], 0.0
    for weight in weights:
        running += weight / total_weight * total_cost
        edges.append(running)
    counts = [0] * len(slots)
    used, slot = 0.0, 0
    for cost in costs:
        middle = used + cost / 2
        while slot < len(slots) - 1 and middle > edges[slot]:
            slot += 1
        counts[slot] += 1
        used += cost
    chunks = [(at, n) for at, n in zip(slots, counts) if n]
    return _open_at_conversation_starts(chunks, opens) if opens else chunks


def _open_at_conversation_starts(chunks: list[tuple[int, int]], opens: list[bool]) -> list[tuple[int, int]]:
    """Each chunk after the first moves its first pick to the nearest pick that opens a conversation
    (``opens``), staying between its neighbours' starts, so a chunk does not begin with "That's all,
    thanks" from the middle of someone else's booking."""
    starts, total = [], 0
    for _, n in chunks:
        starts.append(total)
        total += n
    for k in range(1, len(starts)):
        low = starts[k - 1] + 1
        high = (starts[k + 1] if k + 1 < len(starts) else total) - 1
        found = [j for j in range(low, high + 1) if opens[j]]
        if found:
            starts[k] = min(found, key=lambda j: (abs(j - starts[k]), j))
    ends = [*starts[1:], total]
    return [(at, end - start) for (at, _), start, end in zip(chunks, starts, ends)]


class _Clock:
    """Stamps <-> waking seconds (:meth:`WakingClock.covering <stages.timing.WakingClock.covering>`):
    the night does not count, so a long row's turns stay in the day and a long pause crosses a night;
    a dialogue with a user turn in the night counts the whole day, as its base dialogue did."""

    def __init__(self, stamps: list[datetime]) -> None:
        self.clock = WakingClock.covering(stamps[-1].date(), stamps)

    def at(self, seconds: float) -> datetime:
        """The minute ``seconds`` falls in (a hair of float error does not tip it back)."""
        return self.clock.from_waking(seconds + 1e-3).replace(second=0, microsecond=0)

    def stamp(self, seconds: float) -> str:
        """:meth:`at` as a ``TIME_FORMAT`` stamp (``isoformat`` writes the same, several times faster)."""
        return self.at(seconds).isoformat(timespec="minutes")


@dataclass
class _Gap:
    """The time before one user turn of the long row."""

    seconds: float
    base: int | None  # index of the base user turn it leads to (None: an injected turn)
    floor: float = 0.0  # the least a person needs for it (base gaps: reading and typing, no jitter)
    breaks: float = 0.0  # the model's break in it (injected gaps)


def lay_out(turns: list[dict], chunks: list[tuple[int, int]], picks: list[Messages], fixed: set[int],
            model: TypingModel, rng: random.Random, count_words: Callable[[str], int] = word_count) -> Layout:
    """Timestamps for a base dialogue with ``chunks`` of ``picks`` injected (see the module doc).

    ``fixed``: base message indices of user turns that keep their time besides the trigger (temporal
    grounding: the constraint). Turns before the first fixed turn move back freely. ``count_words``: the word
    counter (a caller that lays out the same snippets for every row and length passes a memoized one).
    """
    stamps_at = {i: datetime.strptime(t["at"], TIME_FORMAT) for i, t in enumerate(turns) if t["role"] == "user"}
    clock = _Clock(list(stamps_at.values()))
    seconds = {i: clock.clock.to_waking(at) for i, at in stamps_at.items()}  # base user turns, waking seconds
    before: dict[int, list[Messages]] = {}
    remaining = iter(picks)
    for at, n in chunks:
        before[at] = [next(remaining) for _ in range(n)]
    exchanges: list[tuple[int, int]] = []
    order: list[_Gap] = []  # one per user turn of the long row, in order
    read, previous = 0, None
    for i, turn in enumerate(turns):
        if turn["role"] != "user":
            read = count_words(turn["content"])
            continue
        for pick in before.get(i, []):
            for role, content in pick:
                if role == "user":
                    exchanges.append((read, count_words(content)))
                    order.append(_Gap(0.0, None))
                else:
                    read = count_words(content)
        written = count_words(turn["content"])
        if previous is None:  # the row's first base turn: only a chunk before it gives it a gap
            gap = model.gap(read, written, rng) if i in before else 0.0
            order.append(_Gap(gap, i, floor=gap))
        else:
            floor = model.floor(read, written)
            # after a chunk, the base gap is the time since the chunk's last turn (at least a person's pace)
            gap = max(floor, seconds[i] - previous) if i in before else seconds[i] - previous
            order.append(_Gap(gap, i, floor=min(floor, gap)))
        previous = seconds[i]
    typing, breaks = model.gaps_and_breaks(exchanges, rng)
    injected = iter(zip(typing, breaks))
    for k, gap in enumerate(order):
        if gap.base is None:
            gap.floor, gap.breaks = next(injected)
            gap.seconds = gap.floor + gap.breaks
        if k and (gap.base is None) != (order[k - 1].base is None):  # between a base turn and an injected one
            gap.floor = max(gap.floor, EDGE_SECONDS)
            gap.seconds = max(gap.seconds, gap.floor + gap.breaks)
    scale, plausible = _fit_between_anchors(order, seconds, fixed, model.params.min_gap_seconds)
    times = [seconds[order[-1].base]]  # back from the trigger, whose time is kept
    for gap in reversed(order[1:]):
        times.append(times[-1] - gap.seconds)
    times.reverse()
    stamps = tuple(clock.stamp(t) for t, gap in zip(times, order) if gap.base is None)
    shifts = tuple(0 if abs(t - seconds[gap.base]) < 1e-3
                   else round((stamps_at[gap.base] - clock.at(t)).total_seconds() / 60.0)
                   for t, gap in zip(times, order) if gap.base is not None)
    natural = sum(gap.seconds for gap in order if gap.base is None) / 60.0
    return Layout(tuple(chunks), stamps, shifts, scale, natural, plausible)


def _fit_between_anchors(order: list[_Gap], seconds: dict[int, float], fixed: set[int], floor_seconds: float
                         ) -> tuple[float, bool]:
    """Make the gaps after the first fixed turn sum to its base span to the trigger (in place): the excess
    comes out of the base gaps' slack, then the injected breaks are dropped, then everything is
    compressed. Returns (scale, plausible).

    What is done to the gaps after the fixed turn is done to those before it too (the same share of
    every base gap's slack, the breaks dropped everywhere), so the gap before the constraint does not
    stand out as the one gap left whole.
    """
    anchors = [k for k, gap in enumerate(order) if gap.base is not None and gap.base in fixed]
    last = len(order) - 1
    if not anchors or anchors[0] == last:
        return 1.0, True
    segment = order[anchors[0] + 1:]
    span = seconds[order[last].base] - seconds[order[anchors[0]].base]
    for use_breaks in (True, False):
        if not use_breaks:
            for gap in order:
                gap.seconds -= gap.breaks
                gap.breaks = 0.0
        excess = sum(gap.seconds for gap in segment) - span
        room = sum(gap.seconds - gap.floor for gap in segment if gap.base is not None)
        if excess <= room:
            share = excess / room if room > 0 else 0.0
            for gap in order[1:]:
                if gap.base is not None:
                    gap.seconds -= share * (gap.seconds - gap.floor)
            return 1.0, True
    for gap in order[1:]:
        if gap.base is not None:
            gap.seconds = gap.floor
    natural = sum(gap.seconds for gap in segment)
    scale = span / natural if natural else 1.0
    for gap in segment:
        gap.seconds *= scale
    return scale, min(gap.seconds for gap in segment) >= floor_seconds - 1e-6


def share_after_constraint(turns: list[dict], chunks: list[tuple[int, int]], costs: list[int]) -> float:
    """Share of the injected cost placed after the first constraint turn (between it and the trigger)."""
    constraint = next(i for i, t in enumerate(turns) if t["role"] == "user" and t["kind"] == "constraint")
    total = sum(costs)
    if not total:
        return 0.0
    after, k = 0, 0
    for at, n in chunks:
        if at > constraint:
            after += sum(costs[k:k + n])
        k += n
    return after / total
