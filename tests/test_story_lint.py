"""Story-pool lint (pipeline/blueprints/stories.py): a v2 seed with its story pool validates, and each
rule trips on one change made to it."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from pipeline.blueprints.loader import load_corpus
from pipeline.blueprints.schema import Blueprint
from pipeline.blueprints.slots import render
from pipeline.text import word_count
from tests.conftest import REPO

VALID = yaml.safe_load((REPO / "tests" / "fixtures" / "valid_blueprint.yaml").read_text(encoding="utf-8"))
LONG = ("That sounds like a good plan for the ride, and the hotel district is easy to walk once you are "
        "settled. Most places nearby keep their kitchens open late, the streets are well lit, and the "
        "concierge desk can usually print a small map or call ahead for a table if you want one. ")


def v2_seed() -> dict:
    seed = copy.deepcopy(VALID)
    seed["topic"] = "fixture_taxi_story"
    seed["constraints"][0]["reply"] = LONG
    seed["negative"]["reply"] = LONG
    seed["update"] = {"text": "The driver just pointed out the old theatre we are passing, it looks lovely lit up.",
                      "reply": LONG}
    seed["rm"]["question"] = "Where did I put my {item} for the ride?"
    return seed


WORDS = ("walk", "river", "bakery", "museum", "bridge", "corner", "garden", "market", "view", "street", "mural", "square")


def _sentence(words: int, ask: bool, offset: int) -> str:
    body = " ".join(WORDS[(offset + k) % len(WORDS)] for k in range(max(words, 2)))
    return body[0].upper() + body[1:] + ("?" if ask else ".")


def story(seed: dict | None = None) -> dict:
    """A story pool that passes every story rule for ``seed``: per placed turn six user turns of its
    length (half asking, half telling) and three shorter and three longer ones, replies likewise."""
    bp = render(Blueprint.model_validate(seed or v2_seed()))
    placed = [c.text for c in bp.constraints] + [bp.negative.text, bp.update.text]
    reply = len(LONG.split())
    exchanges = []
    for n, text in enumerate(placed):
        words = len(text.split())
        for k, (length, answer) in enumerate([(words, reply)] * 6 + [(max(2, words // 3), reply // 2)] * 3
                                             + [(2 * words + 4, 2 * reply)] * 3):
            exchanges.append({"user": _sentence(length, k % 2 == 0, 7 * n + k),
                              "assistant": _sentence(answer, False, 3 * n + k)})
    return {"topic": "fixture_taxi_story", "kind": "story", "description": "A visitor chatting on a taxi ride into the city.",
            "exchanges": exchanges}


def _constraint(seed: dict) -> str:
    return render(Blueprint.model_validate(seed)).constraints[0].text


def _near(user: str, seed: dict) -> bool:
    """Whether a story user turn is of about the constraint's length (0.8-1.25x its words)."""
    words = len(_constraint(seed).split())
    return 0.8 * words <= len(user.split()) <= 1.25 * words


def _other_form(seed: dict) -> str:
    return "." if "?" in _constraint(seed) else "?"


def problems(tmp_path: Path, seed: dict, pool: dict) -> list[str]:
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump(seed, sort_keys=False), encoding="utf-8")
    (tmp_path / "story.yaml").write_text(yaml.safe_dump(pool, sort_keys=False), encoding="utf-8")
    return [str(p) for p in load_corpus([tmp_path]).problems]


def test_v2_seed_with_its_story_validates(tmp_path: Path) -> None:
    assert problems(tmp_path, v2_seed(), story()) == []


@pytest.mark.parametrize("rule, change", [
    ("story-size", lambda s, p: p.update(exchanges=p["exchanges"][:11])),
    ("story-slots", lambda s, p: p["exchanges"][3].update(user="Is a cello hard to carry around town?")),
    ("story-time", lambda s, p: p["exchanges"][5].update(user="We land at the hotel in twenty minutes, what's nearby?")),
    ("story-time", lambda s, p: p["exchanges"][6].update(assistant=LONG + " It is busiest in the evening.")),
    ("story-time", lambda s, p: s["update"].update(reply=s["update"]["reply"] + " It is quieter in the evening.")),
    ("story-reply", lambda s, p: s["constraints"][0].update(reply="Good call.")),
    ("story-reply", lambda s, p: s["negative"].update(reply="Nice.")),
    ("parity-update", lambda s, p: s.pop("update")),
    ("story-length-parity", lambda s, p: [e.update(user="Short one?") for e in p["exchanges"]]),
    ("story-length-match", lambda s, p: p.update(exchanges=[e for e in p["exchanges"] if not _near(e["user"], s)])),
    ("story-form-parity", lambda s, p: [e.update(user=e["user"].rstrip("?.") + _other_form(s)) for e in p["exchanges"]]),
    ("rm-voice", lambda s, p: s["rm"].update(question="Where did the user put the {item} during the ride?")),
    ("rm-echo", lambda s, p: s["rm"].update(question="Did I put my {item} in the trunk?")),
])
def test_each_story_rule_trips(tmp_path: Path, rule: str, change) -> None:
    seed, pool = v2_seed(), story()
    change(seed, pool)
    found = problems(tmp_path, seed, pool)
    assert any(f"[{rule}]" in p for p in found), found
    assert all("bp.yaml:" in p for p in found)


def test_a_story_shared_by_too_many_families(tmp_path: Path) -> None:
    seeds = []
    for k in range(4):
        seed = v2_seed()
        seed["id"] = f"fixture-taxi-{k}"
        seeds.append(seed)
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump(seeds, sort_keys=False), encoding="utf-8")
    (tmp_path / "story.yaml").write_text(yaml.safe_dump(story(), sort_keys=False), encoding="utf-8")
    found = [str(p) for p in load_corpus([tmp_path]).problems]
    assert sum("[story-shared]" in p for p in found) == 4


def test_two_families_with_nearly_the_same_constraint_are_one_scenario(tmp_path: Path) -> None:
    first, second = v2_seed(), v2_seed()
    second["id"] = "fixture-taxi-copy"
    second["constraints"][0]["text"] = first["constraints"][0]["text"].replace("helped me", "kindly helped me")
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump([first, second], sort_keys=False), encoding="utf-8")
    (tmp_path / "story.yaml").write_text(yaml.safe_dump(story(), sort_keys=False), encoding="utf-8")
    found = [str(p) for p in load_corpus([tmp_path]).problems]
    assert [p for p in found if "[near-duplicate]" in p and "'fixture-taxi-instrument'" in p], found
    second["constraints"][0]["text"] = "I left my {item} on the back seat under a blanket so nobody would see it."
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump([first, second], sort_keys=False), encoding="utf-8")
    assert not [p for p in map(str, load_corpus([tmp_path]).problems) if "[near-duplicate]" in p]


def test_shape_twins_count_story_turns_of_the_whole_shape() -> None:
    """A twin matches words, characters per word, punctuation and digits, and question form at once: a
    turn of the right length but plain, or asking where the placed turn tells, is not one."""
    from pipeline.blueprints.loader import FillerPool
    from pipeline.blueprints.stories import shape_twins

    placed = "We parked at bay 14, paid 3.50 for the ticket, and the kids ran ahead to the 2 swings by the lake."
    turns = [
        "We stopped at stall 9, paid 4.20 for the coffee, and the twins raced off to the 3 ducks near the pond.",
        "We walked along the river path and the children ran off towards the bridge near the old mill again.",
        "Did we stop at stall 9, pay 4.20 for coffee, and let the twins race off to the 3 ducks near the pond?",
        "We parked at bay 14.",
    ]
    pool = FillerPool.model_validate({"topic": "t", "kind": "story",
                                      "exchanges": [{"user": t, "assistant": LONG} for t in turns]})
    assert shape_twins(placed, pool) == 1


def _liked(seed: dict, pool: dict) -> int:
    """Set ``like`` on the seed's constraint to its drawn exchange, and make that exchange the constraint's shape."""
    from pipeline.blueprints.stories import like_template

    drawn = like_template(seed["id"], 0, len(pool["exchanges"]))
    constraint = render(Blueprint.model_validate(seed)).constraints[0]
    same_shape = re.sub(r"[A-Za-z]", "a", constraint.text)  # the constraint's shape, none of its words
    pool["exchanges"][drawn] = {"user": same_shape, "assistant": LONG}
    seed["constraints"][0]["like"] = drawn
    return drawn


def test_a_constraint_shaped_like_its_drawn_exchange_validates(tmp_path: Path) -> None:
    seed, pool = v2_seed(), story()
    _liked(seed, pool)
    assert problems(tmp_path, seed, pool) == []


@pytest.mark.parametrize("change, message", [
    (lambda s, p, n: s["constraints"][0].update(like=(n + 1) % len(p["exchanges"])), "but the draw for this turn is exchange"),
    (lambda s, p, n: s["constraints"][0].update(like=len(p["exchanges"]) + 5), "there is no exchange"),
    (lambda s, p, n: p["exchanges"][n].update(user=p["exchanges"][n]["user"] + " " + LONG), "words, the exchange's user turn"),
    # two words past a short exchange: the habit that shifted whole dimensions off their stories
    (lambda s, p, n: p["exchanges"][n].update(user=" ".join(p["exchanges"][n]["user"].split()[2:])), "words, the exchange's user turn"),
    (lambda s, p, n: p["exchanges"][n].update(user=p["exchanges"][n]["user"].rstrip(".?") + "?"), "unlike the exchange's user turn"),
    (lambda s, p, n: p["exchanges"][n].update(assistant=LONG + LONG), "reply of"),
    # a reply habitually a few words short of its exchange's: the shortest of its row too often
    (lambda s, p, n: p["exchanges"][n].update(assistant=s["constraints"][0]["reply"] + " one two three four five six seven"),
     "reply of"),
    (lambda s, p, n: s["trigger"].update(like=n), "only constraint turns"),
])
def test_the_like_rule_trips(tmp_path: Path, change, message: str) -> None:
    """``like`` must name the drawn exchange, which must exist, and the constraint must have its shape: words,
    form and reply length each checked."""
    seed, pool = v2_seed(), story()
    drawn = _liked(seed, pool)
    change(seed, pool, drawn)
    found = [p for p in problems(tmp_path, seed, pool) if "[like-shape]" in p]
    assert any(message in p for p in found), found


def test_the_drawn_exchange_is_uniform_over_the_story() -> None:
    """The draw follows no author's taste: over many seeds, every exchange of a 16-exchange story is drawn
    about as often (chi-square far below its 0.1% critical value, 37.7 at 15 degrees of freedom)."""
    from pipeline.blueprints.stories import like_template

    counts = [0] * 16
    for k in range(3200):
        counts[like_template(f"seed-{k}", k % 2, 16)] += 1
    chi2 = sum((c - 200) ** 2 / 200 for c in counts)
    assert chi2 < 37.7, counts
    assert like_template("st-x", 0, 16) == like_template("st-x", 0, 16)


def test_every_constraint_of_the_corpus_is_shaped_like_its_drawn_exchange() -> None:
    """Constraint turns take the shape of a story exchange drawn for them (``triggerbench like``), so that
    across a dimension they follow the stories' own shape distribution; ``validate --stats`` counts them."""
    from pipeline.blueprints.loader import corpus_summary

    coverage = corpus_summary(load_corpus([REPO / "blueprints"]))["constraint_turns_shaped_like_a_story_exchange"]
    counts = {dimension: tuple(map(int, value.split("/"))) for dimension, value in coverage.items()}
    assert len(counts) == 5 and all(total >= 25 and covered >= 0.8 * total for covered, total in counts.values()), coverage
    # the few left are turns whose required digits or names cannot fit a short drawn exchange (a clock time, "$12,000")
    assert sum(c for c, _ in counts.values()) >= 0.9 * sum(t for _, t in counts.values()), coverage


def test_no_dimension_writes_its_constraints_longer_than_their_exchanges() -> None:
    """Across a dimension, constraint turns are as long as the story exchanges whose shape they take (mean
    difference within half a word, seeds rendered with their own slot values): a constraint habitually a few
    words longer than its exchange sits where story turns are rare, and a learned form finder finds it there."""
    from pipeline.blueprints.stories import turn_shape

    corpus = load_corpus([REPO / "blueprints"])
    differences: dict[str, list[int]] = {}
    reply_differences: dict[str, list[int]] = {}
    for sourced in corpus.blueprints:
        bp = render(sourced.blueprint)
        pool = corpus.fillers[bp.topic]
        for turn in bp.constraints:
            if turn.like is not None:
                gap = turn_shape(turn.text)[0] - turn_shape(pool.exchanges[turn.like].user)[0]
                differences.setdefault(str(bp.dimension), []).append(gap)
                reply_gap = word_count(turn.reply) - word_count(pool.exchanges[turn.like].assistant)
                reply_differences.setdefault(str(bp.dimension), []).append(reply_gap)
    means = {d: round(sum(g) / len(g), 2) for d, g in differences.items()}
    assert len(means) == 5 and all(abs(m) <= 0.5 for m in means.values()), means
    # replies likewise (within 2 words on average; logical adherence ran 4.9 words short before the like rule's
    # reply tolerance was max(6, 5%))
    reply_means = {d: round(sum(g) / len(g), 2) for d, g in reply_differences.items()}
    assert len(reply_means) == 5 and all(abs(m) <= 2 for m in reply_means.values()), reply_means


def test_validate_stats_count_placed_turns_with_shape_twins() -> None:
    from pipeline.blueprints.loader import corpus_summary

    corpus = load_corpus([REPO / "blueprints"])
    coverage = corpus_summary(corpus)["placed_turns_with_shape_twins"]
    assert set(coverage) == {"state_tracking", "temporal_grounding", "logical_adherence", "attention_recovery",
                             "safe_coding"}
    covered = sum(int(v.split("/")[0]) for v in coverage.values())
    placed = sum(int(v.split("/")[1]) for v in coverage.values())
    # placed turns other than constraints with ``like`` (those are counted by the like stat): resolutions, updates
    assert placed > 150 and covered >= 0.85 * placed, coverage


def test_like_command_prints_the_drawn_exchange_and_what_is_missing(tmp_path: Path, capsys) -> None:
    """``triggerbench like SEED`` names the drawn exchange, prints it, and says what the turn still misses until
    it has that shape."""
    from pipeline.blueprints.stories import like_template
    from pipeline.cli import main

    seed, pool = v2_seed(), story()
    (tmp_path / "story.yaml").write_text(yaml.safe_dump(pool, sort_keys=False), encoding="utf-8")
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump(seed, sort_keys=False), encoding="utf-8")
    drawn = like_template(seed["id"], 0, len(pool["exchanges"]))
    assert main(["like", str(tmp_path / "bp.yaml"), "--corpus", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"constraints.0: like: {drawn} " in out and f"-> should be {drawn}" in out
    assert pool["exchanges"][drawn]["user"] in out
    assert ("outside: " in out) == bool(like_gaps_of(seed, pool, drawn))

    _liked(seed, pool)
    (tmp_path / "story.yaml").write_text(yaml.safe_dump(pool, sort_keys=False), encoding="utf-8")
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump(seed, sort_keys=False), encoding="utf-8")
    assert main(["like", str(tmp_path / "bp.yaml"), "--corpus", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "shaped like it" in out and "should be" not in out


def like_gaps_of(seed: dict, pool: dict, index: int) -> list[str]:
    from pipeline.blueprints.loader import Exchange
    from pipeline.blueprints.stories import like_gaps

    turn = render(Blueprint.model_validate(seed)).constraints[0]
    return like_gaps(turn.text, turn.reply, Exchange.model_validate(pool["exchanges"][index]))


def test_a_redraw_takes_the_second_draw_and_says_why(tmp_path: Path) -> None:
    """A turn whose facts cannot fit its first draw may take the one second draw, with a reason; the first
    draw is then refused, and a reason without ``like`` is refused."""
    from pipeline.blueprints.stories import like_template

    seed, pool = v2_seed(), story()
    first = like_template(seed["id"], 0, len(pool["exchanges"]))
    second = like_template(seed["id"], 0, len(pool["exchanges"]), redraw=True)
    assert second != first and 0 <= second < len(pool["exchanges"])
    constraint = render(Blueprint.model_validate(seed)).constraints[0]
    pool["exchanges"][second] = {"user": re.sub(r"[A-Za-z]", "a", constraint.text), "assistant": LONG}
    seed["constraints"][0].update(like=second, redraw="the clock time needs more digits than the first draw has")
    assert problems(tmp_path, seed, pool) == []
    seed["constraints"][0]["like"] = first
    assert any("the second draw (redraw) for this turn is exchange" in p for p in problems(tmp_path, seed, pool))
    seed["constraints"][0].pop("like")
    assert any("a redraw needs the redrawn exchange" in p for p in problems(tmp_path, seed, pool))
