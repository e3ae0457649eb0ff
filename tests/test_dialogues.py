"""Base dialogues v2 through the stage contract (``Dialogues.run``), on real seed blueprints with a
story pool in the real format: constraint positions spread, story order kept, times from the typing
model (increasing, never rounded by construction, deadlines kept), Neg-Clean parity, attention
recovery order."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import pytest
import yaml

from pipeline.blueprints.schema import TIME_FORMAT, Blueprint, to_json
from pipeline.blueprints.slots import render
from pipeline.stage import StageContext
from stages.dialogues import Dialogues
from stages.variants import variant_turns
from tests.conftest import REPO, shared_vectors

RENDERINGS = 40
REPLY = ("That works, and it is a good moment to plan the next bit calmly. Most people find it easier to take "
         "one thing at a time, write the next step down and keep the rest for later, so nothing gets rushed. ") * 2


def seed(relative: str, **changes) -> dict:
    data = yaml.safe_load((REPO / "blueprints" / relative).read_text(encoding="utf-8"))
    data.update(topic="test_story", **changes)
    return to_json(render(Blueprint.model_validate(data)))


def story(count: int = 12) -> dict:
    exchanges = [{"user": f"Here is part {k} of my day, what would you suggest next?", "assistant": REPLY}
                 for k in range(count)]
    return {"id": "topic:test_story", "pool": {"topic": "test_story", "kind": "story", "description": "",
                                                 "exchanges": exchanges}}


def corpus(*blueprints: dict) -> list[dict]:
    """``load_blueprints`` items for the given blueprints (the shape matcher's population)."""
    return [{"id": bp["id"], "blueprint": bp, "source": f"{bp['id']}.yaml"} for bp in blueprints]


def offline_context() -> StageContext:
    """A ``dialogues`` context with offline rules and the run's shared embedding cache."""
    return StageContext(seed=0, stage="dialogues", environment={"llm": "offline-rules"}, embedding_cache=shared_vectors())


def dialogues(blueprint: dict, renderings: int = RENDERINGS) -> list[dict]:
    items = [{"id": f"{blueprint['id']}--s{k:02d}", "seed_id": blueprint["id"], "split": "test",
              "blueprint": blueprint, "provenance": {}} for k in range(renderings)]
    stage = Dialogues()
    out = stage.run({"oracle_necessity": items, "load_fillers": [story()], "load_blueprints": corpus(blueprint)},
                    offline_context())
    assert not out.dropped
    return out.items


def users(dialogue: dict) -> list[dict]:
    return [t for t in dialogue["turns"] if t["role"] == "user"]


def times(dialogue: dict) -> list[datetime]:
    return [datetime.strptime(t["at"], TIME_FORMAT) for t in users(dialogue)]


@pytest.fixture(scope="module")
def badge() -> list[dict]:
    update = {"text": "I just grabbed a second coffee at the till, it smells great.", "reply": REPLY}
    return dialogues(seed("state_tracking/st-badge-side-door.yaml", update=update))


def test_constraint_spread_never_in_the_last_two_places(badge) -> None:
    positions = Counter()
    for d in badge:
        kinds = [t["kind"] for t in users(d)]
        c = kinds.index("constraint")
        assert c < len(kinds) - 3, kinds  # two units or more between it and the trigger
        assert kinds.index("update") > c
        positions[c] += 1
    assert len(positions) >= 4 and max(positions.values()) < RENDERINGS / 2, positions


def test_story_order_kept_and_times_from_one_process(badge) -> None:
    for d in badge:
        numbers = [int(i.split("#")[1]) for i in d["filler_ids"]]
        assert numbers == sorted(numbers)
        stamps = times(d)
        assert all(b >= a for a, b in zip(stamps, stamps[1:]))
        assert max(Counter(stamps).values()) <= 2
    constraint_minutes = Counter(times(d)[[t["kind"] for t in users(d)].index("constraint")].minute % 5 for d in badge)
    assert len(constraint_minutes) >= 4  # the blueprint's round 13:15 is an anchor no longer


def test_neg_clean_takes_the_parity_slot(badge) -> None:
    for d in badge:
        rows = variant_turns(d)
        clean, (negative, at) = rows["pos_clean"][0], rows["neg_clean"]
        assert len(negative) == len(clean) and at == d["parity_index"]
        assert clean[at]["kind"] == "update" and negative[at]["kind"] == "resolution"
        assert negative[at]["at"] == clean[at]["at"]
        assert negative[:at] + negative[at + 2:] == clean[:at] + clean[at + 2:]


@pytest.mark.parametrize("relative", ["temporal_grounding/tg-rel-hair-dye.yaml",
                                      "temporal_grounding/tg-abs-train-departure.yaml"])
def test_temporal_constraint_to_trigger_span_and_deadline_kept(relative: str) -> None:
    blueprint = seed(relative)
    span = (datetime.strptime(blueprint["trigger"]["at"], TIME_FORMAT)
            - datetime.strptime(blueprint["constraints"][0]["at"], TIME_FORMAT))
    deadline = datetime.strptime(blueprint["timing"]["deadline"], TIME_FORMAT)
    before = datetime.strptime(blueprint["trigger"]["at"], TIME_FORMAT) < deadline
    for d in dialogues(blueprint, 20):
        stamps, kinds = times(d), [t["kind"] for t in users(d)]
        constraint, trigger = stamps[kinds.index("constraint")], stamps[-1]
        assert trigger - constraint == span
        if blueprint["timing"]["kind"] == "absolute":
            assert (trigger < deadline) == before
        else:
            assert (trigger < constraint + (deadline - datetime.strptime(blueprint["constraints"][0]["at"], TIME_FORMAT))) == before


def test_a_short_deadline_window_is_never_packed() -> None:
    """callback friend: an 11-minute window between constraint and trigger. With long replies to read,
    only a few exchanges fit in it at a person's pace, so the constraint sits late enough that no minute
    holds more than two user turns (compressing eight exchanges into the window put three in one)."""
    blueprint = seed("temporal_grounding/tg-rel-callback-friend.yaml")
    pool = story(14)
    for exchange in pool["pool"]["exchanges"]:
        exchange["assistant"] = REPLY * 6
    items = [{"id": f"{blueprint['id']}--s{k:02d}", "seed_id": blueprint["id"], "split": "test",
              "blueprint": blueprint, "provenance": {}} for k in range(40)]
    out = Dialogues().run({"oracle_necessity": items, "load_fillers": [pool], "load_blueprints": corpus(blueprint)},
                          offline_context())
    span = (datetime.strptime(blueprint["trigger"]["at"], TIME_FORMAT)
            - datetime.strptime(blueprint["constraints"][0]["at"], TIME_FORMAT))
    for d in out.items:
        stamps, kinds = times(d), [t["kind"] for t in users(d)]
        assert stamps[-1] - stamps[kinds.index("constraint")] == span
        assert max(Counter(stamps).values()) <= 2, stamps


def test_a_span_of_days_keeps_every_turn_in_waking_hours() -> None:
    """bib pickup: constraint Wednesday 19:20, trigger Saturday 14:40. Stretched over three days, the
    turns between land in the day (07:00-23:30) with nights crossed between them, never at 3 a.m., and
    the anchors stay exact."""
    blueprint = seed("temporal_grounding/tg-abs-bib-pickup.yaml")
    span = (datetime.strptime(blueprint["trigger"]["at"], TIME_FORMAT)
            - datetime.strptime(blueprint["constraints"][0]["at"], TIME_FORMAT))
    days = set()
    for d in dialogues(blueprint, 20):
        stamps, kinds = times(d), [t["kind"] for t in users(d)]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert stamps[-1] - stamps[kinds.index("constraint")] == span
        assert all(7 * 60 <= s.hour * 60 + s.minute <= 23 * 60 + 30 for s in stamps), stamps
        days.update(s.date() for s in stamps)
    assert len(days) >= 4  # the story spreads over the days before the race


def test_attention_recovery_order_with_a_story() -> None:
    for d in dialogues(seed("attention_recovery/ar-code-camp-registration.yaml"), 20):
        kinds = [t["kind"] for t in users(d)]
        assert kinds[-1] == "trigger" and kinds[-2] == "interruption"
        assert kinds.index("constraint") >= 1  # the user's own task comes first


def test_story_subset_puts_the_constraint_at_any_length_rank() -> None:
    """With a story of varied lengths, the chosen exchanges spread the constraint's length rank. Here only
    two story turns are longer than the constraint (57 words): a random ordered subset makes it the
    longest user turn in 24% of 200 dialogues; taking the exchanges closest in length keeps longer ones beside
    it, so it is the longest in under 1% (chance: about 1 in 10)."""
    lengths = [6, 9, 12, 15, 18, 22, 26, 30, 35, 40, 46, 52, 60, 68]
    pool = story(len(lengths))
    for exchange, words in zip(pool["pool"]["exchanges"], lengths):
        exchange["user"] = " ".join(["word"] * (words - 1)) + " now?"
        exchange["assistant"] = " ".join(["reply"] * (3 * words + 30))
    blueprint = seed("state_tracking/st-badge-side-door.yaml")
    items = [{"id": f"{blueprint['id']}--s{k:02d}", "seed_id": blueprint["id"], "split": "test",
              "blueprint": blueprint, "provenance": {}} for k in range(200)]
    out = Dialogues().run({"oracle_necessity": items, "load_fillers": [pool], "load_blueprints": corpus(blueprint)},
                          offline_context())
    longest_user = longest_reply = shortest_reply = 0
    for d in out.items:
        turns = d["turns"]
        user_words = [len(t["content"].split()) for t in turns if t["role"] == "user" and t["kind"] != "trigger"]
        reply_words = [len(t["content"].split()) for t in turns if t["role"] == "assistant"]
        c = next(i for i, t in enumerate(turns) if t["kind"] == "constraint")
        longest_user += len(turns[c]["content"].split()) == max(user_words)
        longest_reply += len(turns[c + 1]["content"].split()) == max(reply_words)
        shortest_reply += len(turns[c + 1]["content"].split()) == min(reply_words)
    assert longest_user <= 0.18 * len(out.items), longest_user
    assert longest_reply <= 0.15 * len(out.items) and shortest_reply <= 0.15 * len(out.items)


def test_random_story_choice_is_an_ordered_subset_spread_over_the_whole_story() -> None:
    """``story_choice: random`` takes a seeded random subset in story order: every exchange is used across
    renderings, none much more than its share, and the same item gets the same subset on every run."""
    blueprint = seed("state_tracking/st-badge-side-door.yaml")
    items = [{"id": f"{blueprint['id']}--s{k:02d}", "seed_id": blueprint["id"], "split": "test",
              "blueprint": blueprint, "provenance": {}} for k in range(120)]

    def run() -> list[dict]:
        stage = Dialogues({"story_choice": "random"})
        return stage.run({"oracle_necessity": items, "load_fillers": [story(14)], "load_blueprints": corpus(blueprint)},
                         offline_context()).items

    out = run()
    used: Counter = Counter()
    for d in out:
        picked = [int(f.split("#")[1]) for f in d["filler_ids"]]
        assert picked == sorted(picked) and len(set(picked)) == len(picked)
        used.update(picked)
    share = sum(used.values()) / 14
    assert set(used) == set(range(14)) and max(used.values()) < 1.5 * share and min(used.values()) > 0.5 * share
    assert [d["filler_ids"] for d in run()] == [d["filler_ids"] for d in out]


def test_story_turns_share_no_word_with_the_trigger_when_the_story_allows() -> None:
    """In a zero-overlap dimension the constraint shares no content word with the trigger, so story turns that
    do are left out of the draw (they would leave the constraint as the one turn the trigger's words never
    reach); with too few others, the draw takes the whole story."""
    from pipeline.text import content_words

    bp = seed("state_tracking/st-badge-side-door.yaml")
    trigger = sorted(content_words(bp["trigger"]["text"]))[0]
    pool = story(20)
    for k in range(0, 20, 2):  # half the story's user turns use a word of the trigger
        pool["pool"]["exchanges"][k]["user"] = f"Here is part {k} of my day, the {trigger} again, what next?"
    items = [{"id": f"{bp['id']}--s{k:02d}", "seed_id": bp["id"], "split": "test", "blueprint": bp, "provenance": {}}
             for k in range(10)]
    out = Dialogues().run({"oracle_necessity": items, "load_fillers": [pool], "load_blueprints": corpus(bp)},
                          offline_context())
    picked = [int(i.split("#")[1]) for d in out.items for i in d["filler_ids"]]
    assert picked and all(k % 2 == 1 for k in picked)
    for k in range(1, 20, 2):  # now only 3 exchanges keep clear of the trigger: fewer than a dialogue needs
        if k > 5:
            pool["pool"]["exchanges"][k]["user"] = f"Part {k}, the {trigger} once more?"
    out = Dialogues().run({"oracle_necessity": items, "load_fillers": [pool], "load_blueprints": corpus(bp)},
                          offline_context())
    assert any(int(i.split("#")[1]) % 2 == 0 for d in out.items for i in d["filler_ids"])


def test_an_if_then_pair_spreads_over_the_allowed_positions() -> None:
    """The two constraints of an if-then seed take a uniform pair of the allowed positions: neither the first
    nor the last allowed position holds a constraint much more often than the others."""
    import random

    from stages.dialogue_layout import slots

    bp = seed("logical_adherence/la-it-glucose-cake.yaml")
    assert len(bp["constraints"]) == 2
    counts = Counter()
    for k in range(2000):
        special = slots(bp, 10, True, random.Random(k))
        places = sorted(p for p, role in special.items() if role.startswith("constraint"))
        assert len(places) == 2 and places[1] <= 8  # never the last unit before the trigger
        counts.update(places)
    assert set(counts) == set(range(9))
    assert max(counts.values()) < 1.3 * min(counts.values()), counts  # each about 2/9 of the rows



def test_the_constraint_position_is_its_own_seeded_draw() -> None:
    """``position_fraction`` depends on the item id only (not on how many numbers the story draw used), lies in
    [0, 1), and spreads over the range across items."""
    from stages.dialogue_layout import position_fraction

    ctx = StageContext(seed=0, stage="dialogues")
    fractions = [position_fraction({"id": f"st-badge-side-door--s{k:02d}", "seed_id": "st-badge-side-door"}, ctx)
                 for k in range(400)]
    assert all(0 <= f < 1 for f in fractions)
    assert fractions[3] == position_fraction({"id": "st-badge-side-door--s03", "seed_id": "st-badge-side-door"}, ctx)
    assert all(30 <= sum(int(f * 8) == k for f in fractions) <= 70 for k in range(8))  # about 50 in each eighth
