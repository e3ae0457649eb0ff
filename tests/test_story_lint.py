"""Story-pool lint (pipeline/blueprints/stories.py): a v2 seed with its story pool validates, and each
rule trips on one change made to it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from pipeline.blueprints.loader import load_corpus
from pipeline.blueprints.schema import Blueprint
from pipeline.blueprints.slots import render
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


def test_tight_twins_need_the_density_and_count_those_at_or_above_it() -> None:
    """A tight twin has the placed turn's characters per word within 0.3 (here 9.27): a shape twin 0.45 sparser
    counts as a shape twin only; the plain turn is neither; tight twins split at the turn's own density."""
    from pipeline.blueprints.loader import FillerPool
    from pipeline.blueprints.stories import shape_twins, tight_twins

    placed = "`CommentBody.tsx` now renders `marked()` output through `dangerouslySetInnerHTML` for the recipe page."
    turns = [
        "`RecipeCardView.tsx` now formats `quantity()` output through `Intl.NumberFormat` for the ingredient list.",  # 9.55
        "`UnitsToggle.tsx` now persists `unitPreference` through `localStorage` across the whole recipe site.",  # 9.09
        "`ShareButtonBar.tsx` still copies `window.location.href` into the clipboard on every recipe page.",  # 8.82
        "The page now shows the parser output for all our old recipes.",  # 5.08
    ]
    pool = FillerPool.model_validate({"topic": "t", "kind": "story",
                                      "exchanges": [{"user": t, "assistant": LONG} for t in turns]})
    assert shape_twins(placed, pool) == 3
    assert tight_twins(placed, pool) == (2, 1)


def test_every_safe_coding_and_state_tracking_constraint_has_tight_twins_on_both_sides() -> None:
    """The stories of these two dimensions were given twins of their constraints' density (the audit's learned
    finder located SC constraints in 42% of rows by characters per word before); a new seed or story edit
    that drops below shows here and in ``validate --stats``."""
    from pipeline.blueprints.loader import corpus_summary

    coverage = corpus_summary(load_corpus([REPO / "blueprints"]))["constraint_turns_with_tight_twins"]
    for dimension in ("safe_coding", "state_tracking"):
        covered, total = map(int, coverage[dimension].split("/"))
        assert total > 20 and covered == total, coverage


def test_validate_stats_count_placed_turns_with_shape_twins() -> None:
    from pipeline.blueprints.loader import corpus_summary

    corpus = load_corpus([REPO / "blueprints"])
    coverage = corpus_summary(corpus)["placed_turns_with_shape_twins"]
    assert set(coverage) == {"state_tracking", "temporal_grounding", "logical_adherence", "attention_recovery",
                             "safe_coding"}
    covered = sum(int(v.split("/")[0]) for v in coverage.values())
    placed = sum(int(v.split("/")[1]) for v in coverage.values())
    assert placed > 350 and covered >= 0.9 * placed, coverage
