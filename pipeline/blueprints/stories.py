"""Story-pool lint: the checks a v2 seed (one whose ``topic`` names a ``kind: story`` pool) must pass.

In: a blueprint, its story pool and how many seed families use that pool. Out: ``(field, message,
rule)`` problems, located by the loader. A story pool is one scenario's conversation, so it must
be long enough, name no slot value, carry no time expression (times come from the typing model),
and the turns the dialogue builder places among its exchanges (the constraint, the Neg-Clean
resolution, the Pos-Clean update) must read as ordinary exchanges of it: replies of ordinary length.
Also here: the RM probe in the user's own voice, with no answer alias to echo.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from pipeline.blueprints.schema import Blueprint
from pipeline.text import SHAPE_PUNCTUATION, mentions, time_expressions, word_count

MIN_STORY_EXCHANGES = 12
MAX_FAMILIES_PER_STORY = 3
REPLY_WORDS = (40, 400)  # story replies run 100-300 words; placed turns' replies must not stand out
PARITY_MARGIN = 3  # story turns needed on each side of a placed turn's length (and of its form)
LENGTH_BAND = (0.8, 1.25)  # a story turn "of the same length" as a placed turn: this ratio of its words
LENGTH_MATCHES = 6  # story user turns (and replies) needed in that band around each placed turn (and reply)
SHAPE_TWINS = 4  # story user turns a placed turn should have of its whole shape (``validate --stats`` counts them)
# A turn shaped like a story exchange: words within max(1, 5%) of the exchange's ... (max(3, 15%) let authors write
# every short constraint 2-3 words longer than its exchange; across a dimension that shift was the cue a learned form
# finder used: state tracking 0.21 -> 0.14 with the constraints trimmed to their exchanges' length, chance 0.11)
LIKE_WORDS = (1, 0.05)
LIKE_MARKS = (2, 0.4)  # ... punctuation-and-digit count within max(2, 40%) ...
LIKE_PER_WORD = 0.6  # ... characters per word within this, the same form (question or not) ...
# ... and a reply within max(6, 5%) of the exchange's reply words (max(12, 20%) let logical-adherence authors write
# replies 5 words short of their exchange on average; among stories whose replies were lengthened to one band,
# that made the constraint's reply the row's shortest in 23% of rows, chance 15%)
LIKE_REPLY = (6, 0.05)
FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "my", "me", "we", "our", "us"})


def placed_turns(bp: Blueprint) -> list[tuple[str, str, str | None]]:
    """(field, user text, reply) of every turn the builder places among the story's exchanges: the
    constraints, the resolution or flipped state of Neg-Clean, and the Pos-Clean update."""
    placed = [(f"constraints.{i}", c.text, c.reply) for i, c in enumerate(bp.constraints)]
    if bp.negative is not None and bp.negative.kind in ("resolution", "flip_state"):
        placed.append(("negative", bp.negative.text, bp.negative.reply))
    if bp.update is not None:
        placed.append(("update", bp.update.text, bp.update.reply))
    return placed


def _reply_problems(bp: Blueprint) -> Iterator[tuple[str, str, str]]:
    low, high = REPLY_WORDS
    for field, _, reply in placed_turns(bp):
        field = f"{field}.reply"
        if reply is None:
            yield field, "a reply is required here (it is placed among the story's exchanges)", "story-reply"
        elif not low <= word_count(reply) <= high:
            yield field, (f"{word_count(reply)} words; a reply placed among story exchanges needs {low}-{high} "
                          "(an odd length marks the turn)"), "story-reply"
        elif found := time_expressions(reply):
            # story replies carry none (``story-time``), so a placed reply that does is the odd one out
            yield field, (f"has a time expression ({', '.join(found)}); replies among story exchanges carry "
                          "none, times come from the timing model"), "story-time"


def story_problems(bp: Blueprint, pool, families: int, slot_phrases: set[str]) -> list[tuple[str, str, str]]:
    """Problems of a v2 seed and its story ``pool`` (a ``FillerPool`` with ``kind: story``)."""
    out: list[tuple[str, str, str]] = []
    if len(pool.exchanges) < MIN_STORY_EXCHANGES:
        out.append(("topic", f"story {pool.topic!r} has {len(pool.exchanges)} exchanges; need {MIN_STORY_EXCHANGES}",
                    "story-size"))
    if families > MAX_FAMILIES_PER_STORY:
        out.append(("topic", f"story {pool.topic!r} is used by {families} seed families; at most "
                             f"{MAX_FAMILIES_PER_STORY}", "story-shared"))
    for index, exchange in enumerate(pool.exchanges):
        for side in ("user", "assistant"):
            text = getattr(exchange, side)
            named = sorted(p for p in slot_phrases if mentions(text, p))
            if named:
                out.append(("topic", f"story {pool.topic!r} exchange {index} {side} names {named}", "story-slots"))
            found = time_expressions(text)
            if found:
                out.append(("topic", f"story {pool.topic!r} exchange {index} {side} has a time expression "
                                     f"({', '.join(found)}); times come from the timing model", "story-time"))
    out += list(_reply_problems(bp))
    if bp.negative is not None and bp.negative.kind == "resolution" and bp.update is None:
        out.append(("update", "a resolution negative needs the benign 'update' exchange Pos-Clean carries in its "
                              "place (variant parity)", "parity-update"))
    out += list(_parity_problems(bp, pool))
    out += list(_like_problems(bp, pool))
    out += _rm_problems(bp)
    return out


def _matches(words: int, spread: list[int]) -> int:
    low, high = LENGTH_BAND
    return sum(low * words <= w <= high * words for w in spread)


def _parity_problems(bp: Blueprint, pool) -> Iterator[tuple[str, str, str]]:
    """A placed turn must sit inside the story's own spread: at least ``PARITY_MARGIN`` story user turns
    longer and as many shorter (words), ``LENGTH_MATCHES`` of about its own length, the same for its
    reply, and ``PARITY_MARGIN`` story user turns of its own form (with or without a question mark), so
    that no length or punctuation finder, nor a model that learns typical lengths, can single it out."""
    users = [word_count(ex.user) for ex in pool.exchanges]
    replies = [word_count(ex.assistant) for ex in pool.exchanges]
    questions = sum("?" in ex.user for ex in pool.exchanges)
    for field, text, reply in placed_turns(bp):
        if _like_of(bp, field) is not None:  # shaped like a drawn story exchange: _like_problems checks it
            continue
        for side, words, spread in (("text", word_count(text), users), ("reply", word_count(reply), replies)):
            if reply is None and side == "reply":
                continue
            matched = _matches(words, spread)
            if matched < LENGTH_MATCHES:
                low, high = LENGTH_BAND
                yield (f"{field}.{side}", f"{words} words, but only {matched} story "
                       f"{'user turns' if side == 'text' else 'replies'} are of about that length "
                       f"({int(low * words)}-{int(high * words)} words); need {LENGTH_MATCHES}, or a model learns the "
                       "placed turn's length (write story turns of that length)", "story-length-match")
            longer, shorter = sum(w > words for w in spread), sum(w < words for w in spread)
            if longer < PARITY_MARGIN or shorter < PARITY_MARGIN:
                yield (f"{field}.{side}", f"{words} words, but the story has {longer} longer and {shorter} shorter "
                       f"{'user turns' if side == 'text' else 'replies'}; need {PARITY_MARGIN} of each, so length "
                       "does not mark this turn (lengthen or shorten it, or vary the story's)", "story-length-parity")
        asks = "?" in text
        same = questions if asks else len(pool.exchanges) - questions
        if same < PARITY_MARGIN:
            yield (f"{field}.text", f"{'asks a question' if asks else 'asks nothing'}, like only {same} story user "
                   f"turns; need {PARITY_MARGIN} story turns of the same form", "story-form-parity")


def _like_of(bp: Blueprint, field: str) -> int | None:
    if not field.startswith("constraints."):
        return None
    return bp.constraints[int(field.split(".")[1])].like


def like_template(seed_id: str, constraint: int, exchanges: int, redraw: bool = False) -> int:
    """The story exchange whose shape constraint turn ``constraint`` of seed ``seed_id`` takes: a uniform draw
    over the story's ``exchanges``, seeded by seed and turn. A constraint written to a drawn exchange's shape
    follows the story's own shape distribution, so no surface finder tells it from the exchanges around it
    (an author choosing the shape would choose typical ones: the constraint would sit in the middle).
    ``redraw``: the one second draw (another exchange), for a turn whose required facts cannot fit the first."""
    digest = hashlib.sha256(f"like:{seed_id}:{constraint}".encode()).digest()
    first = int.from_bytes(digest[:8], "big") % exchanges
    if not redraw or exchanges < 2:
        return first
    digest = hashlib.sha256(f"like:{seed_id}:{constraint}:redraw".encode()).digest()
    return (first + 1 + int.from_bytes(digest[:8], "big") % (exchanges - 1)) % exchanges


def like_gaps(text: str, reply: str | None, exchange) -> list[str]:
    """How a turn (``text``, ``reply``) misses the shape of story ``exchange``: one message per feature
    outside its tolerance (empty when it is shaped like it)."""
    words, per_word, marks, asks = turn_shape(text)
    t_words, t_per_word, t_marks, t_asks = turn_shape(exchange.user)
    gaps = []
    if abs(words - t_words) > max(LIKE_WORDS[0], LIKE_WORDS[1] * t_words):
        gaps.append(f"{words} words, the exchange's user turn {t_words}")
    if abs(marks - t_marks) > max(LIKE_MARKS[0], LIKE_MARKS[1] * t_marks):
        gaps.append(f"{marks} punctuation marks and digits, the exchange's {t_marks}")
    if abs(per_word - t_per_word) > LIKE_PER_WORD:
        gaps.append(f"{per_word:.2f} characters per word, the exchange's {t_per_word:.2f}")
    if asks != t_asks:
        gaps.append(f"{'asks a question' if asks else 'asks nothing'}, unlike the exchange's user turn")
    r_words, t_reply = word_count(reply), word_count(exchange.assistant)
    if reply is not None and abs(r_words - t_reply) > max(LIKE_REPLY[0], LIKE_REPLY[1] * t_reply):
        gaps.append(f"reply of {r_words} words, the exchange's {t_reply}")
    return gaps


def _like_problem(bp: Blueprint, index: int, pool) -> tuple[str, str, str] | None:
    """What is wrong with constraint ``index``'s ``like`` (and ``redraw``), or None: N must exist, be the drawn
    exchange (the second draw with a redraw reason), and the turn must have its shape."""
    turn = bp.constraints[index]
    if turn.like is None:
        return ((f"constraints.{index}.redraw", "a redraw needs the redrawn exchange in 'like'", "like-shape")
                if turn.redraw is not None else None)
    field = f"constraints.{index}.like"
    if turn.like >= len(pool.exchanges):
        return field, f"story {pool.topic!r} has {len(pool.exchanges)} exchanges; there is no exchange {turn.like}", "like-shape"
    drawn = like_template(bp.id, index, len(pool.exchanges), redraw=turn.redraw is not None)
    if turn.like != drawn:
        which = "the second draw (redraw)" if turn.redraw is not None else "the draw"
        return field, f"names exchange {turn.like}, but {which} for this turn is exchange {drawn} (`triggerbench like`)", "like-shape"
    gaps = like_gaps(turn.text, turn.reply, pool.exchanges[turn.like])
    return (field, f"not shaped like story exchange {turn.like}: {'; '.join(gaps)}", "like-shape") if gaps else None


def _like_problems(bp: Blueprint, pool) -> Iterator[tuple[str, str, str]]:
    """A constraint with ``like: N`` must be story exchange N's shape, and N must be the drawn exchange."""
    if bp.trigger.like is not None:
        yield "trigger.like", "only constraint turns take a story exchange's shape", "like-shape"
    for index in range(len(bp.constraints)):
        problem = _like_problem(bp, index, pool)
        if problem is not None:
            yield problem


def _rm_problems(bp: Blueprint) -> list[tuple[str, str, str]]:
    if bp.rm is None:
        return []
    out = []
    tokens = {t.strip("?,.!").lower() for t in bp.rm.question.split()}
    if not tokens & FIRST_PERSON:
        out.append(("rm.question", "ask in the user's own voice ('Where did I leave my ...?')", "rm-voice"))
    for alias in [bp.rm.answer, *bp.rm.aliases]:
        for field, text in (("rm.question", bp.rm.question), ("trigger.text", bp.trigger.text)):
            if mentions(text, alias):
                out.append((field, f"contains the answer alias {alias!r}: echoing it would score", "rm-echo"))
    return out


def turn_shape(text: str) -> tuple[int, float, int, bool]:
    """Surface shape of a user turn: words, characters per word, punctuation-and-digit count, question."""
    words = max(len(text.split()), 1)
    return words, len(text) / words, len(SHAPE_PUNCTUATION.findall(text)), "?" in text


def _twin_densities(text: str, pool, per_word_tolerance: float) -> list[float]:
    """Characters per word of ``pool``'s user turns shaped like ``text``: 0.8-1.25x its words, characters per
    word within ``per_word_tolerance``, punctuation-and-digit count within max(2, 40%), the same form."""
    words, per_word, marks, asks = turn_shape(text)
    low, high = LENGTH_BAND
    return [c for w, c, p, q in (turn_shape(ex.user) for ex in pool.exchanges)
            if low * words <= w <= high * words and abs(c - per_word) <= per_word_tolerance
            and abs(p - marks) <= max(2, 0.4 * marks) and q == asks]


def shape_twins(text: str, pool) -> int:
    """Story user turns of ``pool`` shaped like ``text``: 0.8-1.25x its words, characters per word within
    0.6, punctuation-and-digit count within max(2, 40%), and the same form (question mark or not). A
    placed turn with few twins is what a classifier over surface shape picks out, however the
    builder draws the story (``stages/story_shape.py`` draws towards twins; it cannot invent them)."""
    return len(_twin_densities(text, pool, 0.6))


def like_coverage(bp: Blueprint, pool) -> tuple[int, int]:
    """``(constraint turns that name their drawn exchange and have its shape, constraint turns)``, slots filled
    with their first alternatives."""
    from pipeline.blueprints.slots import render

    rendered = render(bp)
    shaped = sum(turn.like is not None and _like_problem(rendered, i, pool) is None
                 for i, turn in enumerate(rendered.constraints))
    return shaped, len(rendered.constraints)


def twin_coverage(bp: Blueprint, pool) -> tuple[int, int]:
    """``(placed turns with at least SHAPE_TWINS shape twins in the story, placed turns)``; constraint turns
    shaped like a drawn exchange (``like``) are counted by :func:`like_coverage` instead."""
    placed = [turn for turn in placed_turns(bp) if _like_of(bp, turn[0]) is None]
    return sum(shape_twins(text, pool) >= SHAPE_TWINS for _, text, _ in placed), len(placed)
