"""Where the distractor block goes and when its turns happen, on unit inputs (on the default release:
``tests/test_long_contexts.py``)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from stages.long_configs import shifted
from stages.injection import boundaries, insert_index, lay_out, split_into_chunks
from stages.timing import TypingModel



def test_insert_index_needs_user_turns_and_replies() -> None:
    turns = [
        {"role": "user", "kind": "filler"}, {"role": "assistant", "kind": "filler"},
        {"role": "user", "kind": "constraint"}, {"role": "assistant", "kind": "constraint"},
        {"role": "user", "kind": "filler"}, {"role": "assistant", "kind": "filler"},
        {"role": "user", "kind": "constraint"}, {"role": "assistant", "kind": "constraint"},
        {"role": "user", "kind": "filler"}, {"role": "assistant", "kind": "filler"},
        {"role": "user", "kind": "trigger"},
    ]
    assert insert_index(turns) == 8  # after the reply to the second constraint, not before it
    with pytest.raises(ValueError, match="no assistant reply"):
        insert_index(turns[:7] + turns[8:])


def test_typing_model_gaps_grow_with_words_and_are_seeded() -> None:
    model = TypingModel()
    tiny = [model.gap(10, 5, random.Random(k)) for k in range(200)]
    short = [model.gap(60, 20, random.Random(k)) for k in range(200)]
    long = [model.gap(300, 60, random.Random(k)) for k in range(200)]
    assert min(tiny) == model.params.min_gap_seconds  # nobody reads and answers faster than the floor
    assert sorted(long)[100] > 2 * sorted(short)[100]
    assert len({round(g) for g in short}) > 20  # jittered, not a few round values
    exchanges = [(40, 12)] * 3000
    first = model.gaps(exchanges, random.Random(7))
    assert first == model.gaps(exchanges, random.Random(7))
    assert sum(first) > 24 * 3600  # 3,000 exchanges take more than a day, breaks included
    assert sum(1 for g in first if g % 300 == 0) == 0


def _dialogue(minutes: list[int], kinds: list[str]) -> list[dict]:
    """User/assistant turns with user stamps at ``minutes`` after 09:00 of one day."""
    turns = []
    for minute, kind in zip(minutes, kinds):
        at = f"2026-03-02T{9 + minute // 60:02d}:{minute % 60:02d}"
        turns.append({"role": "user", "kind": kind, "at": at, "content": "a question about the trip " * 4})
        if kind != "trigger":
            turns.append({"role": "assistant", "kind": kind, "at": None, "content": "an answer about the trip " * 12})
    return turns


def _pick(n: int) -> list[tuple[str, str]]:
    return [("user", "I need a cheap hotel in the north."), ("assistant", "There are two guesthouses there.")] * n


def test_chunks_take_whole_picks_over_the_boundaries() -> None:
    costs = [100] * 40
    slots = [0, 2, 4, 6, 8, 10]
    chunks = split_into_chunks(costs, slots, random.Random(3))
    assert sum(n for _, n in chunks) == 40 and [at for at, _ in chunks] == sorted(at for at, _ in chunks)
    assert {at for at, _ in chunks} <= set(slots) and len(chunks) >= 3  # spread, not one block
    assert chunks == split_into_chunks(costs, slots, random.Random(3))
    draws = [split_into_chunks(costs, slots, random.Random(k)) for k in range(300)]
    assert sum(chunks[0][0] == 0 for chunks in draws) > 100  # the row often opens with distractors, not the story
    last = [sum(n for at, n in chunks if at == slots[-1]) / 40 for chunks in draws]
    assert 0.4 < sum(last) / len(last) < 0.6  # half the tokens before the trigger, in expectation
    turns = _dialogue([0, 3, 7, 12, 20], ["filler", "constraint", "filler", "filler", "trigger"])
    assert boundaries(turns, "state_tracking") == [0, 2, 4, 6, 8]
    assert boundaries(turns, "attention_recovery") == [4]


def test_chunks_open_where_a_conversation_opens() -> None:
    costs = [100] * 40
    slots = [0, 2, 4, 6, 8, 10]
    opens = [k % 5 == 0 for k in range(40)]  # every fifth pick starts its conversation
    opening = {"plain": [], "moved": []}
    for seed in range(100):
        plain = split_into_chunks(costs, slots, random.Random(seed))
        moved = split_into_chunks(costs, slots, random.Random(seed), opens)
        assert [at for at, _ in moved] == [at for at, _ in plain] and sum(n for _, n in moved) == 40
        assert all(n > 0 for _, n in moved)
        for name, chunks in (("plain", plain), ("moved", moved)):
            opening[name] += [opens[sum(n for _, n in chunks[:k])] for k in range(1, len(chunks))]
    assert sum(opening["plain"]) / len(opening["plain"]) < 0.35
    assert sum(opening["moved"]) / len(opening["moved"]) > 0.75  # unless an opening pick is out of reach


def test_layout_keeps_base_gaps_and_the_trigger_time() -> None:
    turns = _dialogue([0, 3, 7, 12, 20], ["filler", "constraint", "filler", "filler", "trigger"])
    picks = [_pick(30), _pick(30), _pick(30)]
    layout = lay_out(turns, [(0, 1), (4, 1), (8, 1)], picks, set(), TypingModel(), random.Random(5))
    assert layout.plausible and layout.scale == 1.0 and len(layout.stamps) == 90
    assert layout.base_shifts[-1] == 0  # the trigger keeps its time
    # 60 injected user turns after the first two base turns: they move back by the time those take
    assert list(layout.base_shifts) == sorted(layout.base_shifts, reverse=True) and layout.base_shifts[0] > 30
    assert layout.base_shifts[0] == layout.base_shifts[1]  # no chunk between them: their base gap is kept
    assert layout.stamps[29] <= shifted(turns[0]["at"], layout.base_shifts[0])  # the opening chunk comes first
    assert layout.stamps == tuple(sorted(layout.stamps)) and max(Counter(layout.stamps).values()) <= 2


def test_layout_keeps_waking_hours_over_days() -> None:
    """Two thousand injected exchanges take days; every turn still lands between 07:00 and 23:30."""
    turns = _dialogue([0, 3, 7, 12, 20], ["filler", "constraint", "filler", "filler", "trigger"])
    layout = lay_out(turns, [(0, 1), (4, 1), (8, 1)], [_pick(700)] * 3, set(), TypingModel(), random.Random(4))
    days = {stamp[:10] for stamp in layout.stamps}
    assert len(days) >= 3 and layout.base_shifts[-1] == 0
    assert all("07:00" <= stamp[11:] <= "23:30" for stamp in layout.stamps)
    moved = [shifted(t["at"], k)[11:] for t, k in zip([t for t in turns if t["role"] == "user"], layout.base_shifts)]
    assert all("07:00" <= at <= "23:30" for at in moved)


def test_layout_keeps_a_deadline_or_refuses() -> None:
    """Temporal grounding: the constraint keeps its time; chunks after it take the base gaps' slack."""
    turns = _dialogue([0, 3, 200, 300, 420], ["filler", "constraint", "filler", "filler", "trigger"])
    fits = lay_out(turns, [(2, 1), (4, 1)], [_pick(20), _pick(20)], {2}, TypingModel(), random.Random(2))
    assert fits.plausible and fits.base_shifts[1] == 0 and fits.base_shifts[-1] == 0
    assert fits.base_shifts[0] > 0  # the turn before the constraint moves back to make room for its chunk
    assert all(s <= "2026-03-02T09:03" for s in fits.stamps[:20])  # before the constraint
    assert all("2026-03-02T09:03" <= s <= "2026-03-02T16:00" for s in fits.stamps[20:])  # inside the deadline span
    short = _dialogue([0, 3, 10, 20, 30], ["filler", "constraint", "filler", "filler", "trigger"])
    refused = lay_out(short, [(4, 1)], [_pick(200)], {2}, TypingModel(), random.Random(2))
    assert not refused.plausible and refused.scale < 1.0
