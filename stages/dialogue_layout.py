"""Where each turn of a base dialogue goes and when it is said (the ``dialogues`` stage's layout and clock).

In: a rendered blueprint (dict), its drawn story exchanges and the typing model. Out: the ordered turns
(role, content, ``kind``, ``at`` on user turns) and the user-turn index of the parity slot. The rules
are those of :mod:`stages.dialogues`: the constraint anywhere but the last two units before the trigger
(an independent draw per item), an if-then pair on a uniform pair of positions, attention
recovery's task first and interruption last, the parity slot after the constraints; every gap from the
typing model on a waking clock, anchored at the trigger (and, for temporal grounding, the constraint).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from pipeline.blueprints.schema import TIME_FORMAT
from pipeline.stage import Item, StageContext
from pipeline.text import word_count
from stages.timing import TypingModel, WakingClock

ANCHOR_SHIFT_MINUTES = (-5, 4)  # the trigger (and a temporal constraint) move by a seeded amount in this range
WAKING_ORIGIN_DAYS = 60  # the waking clock counts from this many days before the trigger (rows span less)


def pair_turns(user: str, kind: str, reply: str | None) -> list[dict]:
    turns = [{"role": "user", "content": user, "at": None, "kind": kind}]
    if reply is not None:
        turns.append({"role": "assistant", "content": reply, "at": None, "kind": kind})
    return turns


def units_in_window(bp: dict, exchanges: list[dict], typing: TypingModel) -> int | None:
    """Temporal grounding: how many exchanges (and the trigger) fit between constraint and trigger at the
    least pace a person reads and types (the typing model's floor for the story's average exchange), so
    that the deadline's window is never packed with several turns a minute. None without a timed window."""
    if not bp.get("timing") or not exchanges:
        return None
    window = (datetime.strptime(bp["trigger"]["at"], TIME_FORMAT)
              - datetime.strptime(bp["constraints"][0]["at"], TIME_FORMAT)).total_seconds()
    read = sum(word_count(ex["assistant"]) for ex in exchanges) / len(exchanges)
    written = sum(word_count(ex["user"]) for ex in exchanges) / len(exchanges)
    return max(1, int(window // typing.floor(round(read), round(written))))


def position_fraction(item: Item, ctx: StageContext) -> float:
    """Where in its allowed range a single constraint goes, as a number in [0, 1), from the item's own stream
    (so the position does not move when the story draw consumes more or fewer random numbers).

    Stratifying the renderings of a seed over the range was tried (each rendering a distinct stratum of a
    seeded permutation): the learned shape finder of ``tests/test_story_shape.py`` then found constraints
    more often in every dimension (0.99 -> 1.32 summed, chance 0.60), so draws stay independent."""
    return ctx.rng(item["id"], "position").random()


def slots(bp: dict, n: int, story: bool, rng: random.Random, window_units: int | None = None,
           fraction: float | None = None) -> dict[int, str]:
    """Positions (0..n-1, before the trigger) of the special units: constraints, interruption, parity.
    ``fraction`` (from :func:`position_fraction`) places a single constraint in its allowed range; None: a
    uniform draw from ``rng``.

    Attention recovery with a story pool: the user's task first, the interruption last. With a shared
    filler pool (legacy seeds, whose pool is about the interrupting problem) the interruption follows
    the constraint at once and the pool's exchanges continue the problem.
    """
    special: dict[int, str] = {}
    attention = bp.get("interruption") is not None
    if attention and not story:
        return {0: "constraint:0", 1: "interruption"}
    last = n - 1
    if attention:
        special[last] = "interruption"
        last -= 1
    first_low = 1 if attention else 0  # attention recovery: the user's own task comes first
    constraints = len(bp["constraints"])
    resolves = bool(bp.get("negative") and bp["negative"]["kind"] == "resolution")
    after = (constraints - 1) + int(resolves) + (0 if attention else 1)  # units the first constraint needs after it
    if window_units is not None:  # a timed window holds the units after the constraint and the trigger
        first_low = max(first_low, min(n - window_units, last - after))
    if constraints > 1:  # an if-then pair: a uniform pair of the allowed positions (drawing the second after
        # the first would crowd it towards the trigger, where a position finder would look for it)
        high = last - int(resolves) - (0 if attention else 1)
        first, second = sorted(rng.sample(range(first_low, high + 1), 2)) if high > first_low else (first_low, first_low + 1)
        special[first], special[second] = "constraint:0", "constraint:1"
        previous = second
    else:
        high = max(first_low, last - after)
        previous = (rng.randint(first_low, high) if fraction is None
                    else first_low + min(int(fraction * (high - first_low + 1)), high - first_low))
        special[previous] = "constraint:0"
    if resolves:
        free = [p for p in range(previous + 1, last + 1) if p not in special]
        special[rng.choice(free) if free else last] = "parity"
    return special


def layout(bp: dict, fillers: list[dict], story: bool, rng: random.Random,
            window_units: int | None = None, fraction: float | None = None) -> tuple[list[dict], int | None]:
    """Order the turns; return them and the user-turn index of the parity slot (or None)."""
    update = bp.get("update")
    resolves = bool(bp.get("negative") and bp["negative"]["kind"] == "resolution")
    n = len(fillers) + len(bp["constraints"]) + int(bp.get("interruption") is not None) + int(resolves and update is not None)
    special = slots(bp, n, story, rng, window_units, fraction)
    queue = list(fillers)
    turns: list[dict] = []
    parity = None
    for position in range(n):
        role = special.get(position)
        if role is not None and role.startswith("constraint:"):
            turn = bp["constraints"][int(role.split(":")[1])]
            turns += pair_turns(turn["text"], "constraint", turn.get("reply"))
        elif role == "interruption":
            turns += pair_turns(bp["interruption"]["text"], "interruption", bp["interruption"].get("reply"))
        elif role == "parity" and update is not None:
            parity = len(turns)
            turns += pair_turns(update["text"], "update", update["reply"])
        else:
            if role == "parity":
                parity = len(turns)
            exchange = queue.pop(0)
            turns += pair_turns(exchange["user"], "filler", exchange["assistant"])
    turns.append({"role": "user", "content": bp["trigger"]["text"], "at": None, "kind": "trigger"})
    return turns, parity


def anchor_shift(bp: dict, rng: random.Random) -> int:
    """Minutes every anchor moves; for an absolute deadline, only shifts that keep the trigger (and the
    constraint) on the same side of it."""
    low, high = ANCHOR_SHIFT_MINUTES
    shifts = list(range(low, high + 1))
    timing = bp.get("timing")
    if timing and timing["kind"] == "absolute":
        deadline = datetime.strptime(timing["deadline"], TIME_FORMAT)
        anchors = [datetime.strptime(bp["trigger"]["at"], TIME_FORMAT),
                   *(datetime.strptime(c["at"], TIME_FORMAT) for c in bp["constraints"])]

        def keeps(shift: int) -> bool:
            return all((a + timedelta(minutes=shift) < deadline) == (a < deadline)
                       and a + timedelta(minutes=shift) != deadline for a in anchors)

        shifts = [s for s in shifts if keeps(s)] or [0]
    return rng.choice(shifts)


def assign_times(turns: list[dict], bp: dict, typing: TypingModel, rng: random.Random) -> None:
    """Set ``at`` on every user turn from the typing model, anchored at the trigger (and, for temporal
    grounding, at the constraint)."""
    users = [i for i, t in enumerate(turns) if t["role"] == "user"]
    gaps = [0.0]
    for previous, current in zip(users, users[1:]):
        read = word_count(turns[previous + 1]["content"]) if turns[previous + 1]["role"] == "assistant" else 0
        gaps.append(typing.gap(read, word_count(turns[current]["content"]), rng))
    # anchors move by whole minutes plus the same seconds, mid-minute, so rounding never moves a minute
    shift = timedelta(minutes=anchor_shift(bp, rng), seconds=rng.uniform(1, 58))
    trigger_at = datetime.strptime(bp["trigger"]["at"], TIME_FORMAT) + shift
    anchors = [trigger_at]
    if bp.get("timing"):
        anchors.append(datetime.strptime(bp["constraints"][0]["at"], TIME_FORMAT) + shift)
    clock = WakingClock.covering(trigger_at.date() - timedelta(days=WAKING_ORIGIN_DAYS), anchors)
    scale = 1.0
    if len(anchors) > 1:
        constraint_user = next(k for k, i in enumerate(users) if turns[i]["kind"] == "constraint")
        natural = sum(gaps[constraint_user + 1:])
        window = clock.to_waking(anchors[0]) - clock.to_waking(anchors[1])
        scale = window / natural if natural > 0 and window > 0 else 1.0
    at = clock.to_waking(trigger_at)
    for k in range(len(users) - 1, -1, -1):
        turns[users[k]]["at"] = clock.from_waking(at).strftime(TIME_FORMAT)
        at -= gaps[k] * scale
