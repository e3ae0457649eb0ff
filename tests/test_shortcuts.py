"""The shortcut audit on hand-made rows: a planted surface cue fails the gate, the same rows without
it pass, and family-grouped cross-validation never puts a family on both sides."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import numpy as np
import pytest

from stages.audit.shortcuts import ShortcutCollector, ShortcutSettings, score
from stages.audit.shortcuts.finders import chance_topk, topk_hit, top1_hit
from stages.audit.shortcuts.learned import LearnedRows, _folds, learned_finder, learned_finders, turn_features
from stages.audit.shortcuts.turns import extract, time_expressions

WORDS = "the van door garden kettle ferry ticket coat lamp river window market bread train phone wallet".split()
DIMENSIONS = ("state_tracking", "safe_coding")


def _text(rng: random.Random, n: int, question: bool) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(n))
    return body + ("?" if question else ".")


def make_row(rng: random.Random, family: str, index: int, dimension: str, variant: str = "pos_clean",
             plant: str | None = None) -> dict:
    """A base row of 9-11 user/assistant exchanges and a trigger; the constraint is a uniform random
    candidate and every turn is drawn from the same distributions unless ``plant`` says otherwise."""
    exchanges = rng.randint(9, 11)
    constraint = rng.randrange(exchanges)
    at = datetime(2025, 3, 4, 9, 0) + timedelta(minutes=rng.randint(1, 50))
    messages = []
    for k in range(exchanges + 1):
        at += timedelta(minutes=rng.choice([1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13]))
        if plant == "round_minute":
            at = at.replace(minute=(at.minute // 5) * 5 + (0 if k == constraint else rng.choice([1, 2, 3, 4])))
        stamp = f"[{at.strftime('%Y-%m-%dT%H:%M')}] "
        user = _text(rng, rng.randint(6, 30), rng.random() < 0.5)
        messages.append({"role": "user", "content": stamp + user})
        if k == exchanges:
            break
        reply_words = 4 if plant == "short_reply" and k == constraint else rng.randint(30, 200)
        messages.append({"role": "assistant", "content": _text(rng, reply_words, False)})
        if plant == "role_break" and k == 2:
            messages.append({"role": "assistant", "content": "One more thing."})
    constraint_turn = next(i for i, m in enumerate(messages) if m["role"] == "user" and
                           sum(1 for x in messages[:i] if x["role"] == "user") == constraint)
    return {"id": f"{family}-{index}.{variant}", "blueprint_id": f"{family}-{index}", "seed_id": family,
            "dimension": dimension, "variant": variant, "constraint_form": "implicit", "context": "base",
            "messages": messages, "constraint_turns": [constraint_turn], "trigger_turn": len(messages) - 1,
            "injected_turns": []}


def audit(plant: str | None = None, families: int = 24, seed: int = 7):
    rng = random.Random(seed)
    collector = ShortcutCollector(ShortcutSettings())
    for dimension in DIMENSIONS:
        for f in range(families):
            for r in range(3):
                row = make_row(rng, f"{dimension[:2]}-fam{f}", r, dimension, plant=plant)
                collector.add("pm_base", "test", row)
    return score(collector, None)


def _failing(result, finder: str) -> list[dict]:
    return [c for c in result.failing if c["finder"] == finder]


@pytest.fixture(scope="module")
def clean():
    return audit()


def test_rows_without_a_cue_pass_the_gate(clean) -> None:
    assert clean.verdict == "pass", clean.failing
    by = {(r["finder"], r["dimension"]): r for r in clean.records if r["section"] == "constraint_finder"}
    shortest = by[("shortest_reply", "state_tracking")]
    assert shortest["n"] == 72 and shortest["families"] == 24
    assert abs(shortest["value"] - shortest["baseline"]) < 0.1
    assert 0.08 < shortest["baseline"] < 0.12  # one constraint among 9-11 candidates


def test_short_constraint_reply_fails_the_gate() -> None:
    result = audit("short_reply")
    assert result.verdict == "fail"
    cells = _failing(result, "shortest_reply")
    assert {c["dimension"] for c in cells} == set(DIMENSIONS)
    assert all(c["value"] == pytest.approx(1.0) for c in cells)
    assert _failing(result, "learned_form"), "the learned finder must find the planted cue too"


def test_round_minutes_fail_the_gate() -> None:
    result = audit("round_minute")
    cells = _failing(result, "first_round_minute")
    assert {c["dimension"] for c in cells} == set(DIMENSIONS)
    assert result.verdict == "fail"


def _stretched(rng: random.Random, row: dict, after_constraint: bool) -> dict:
    """``row`` with 40 distractor exchanges injected: all right after the constraint's reply, or at
    random exchange boundaries. Injected turns are not candidates; only their placement can give the
    constraint away."""
    messages, constraint = row["messages"], row["constraint_turns"][0]
    user_turns = [i for i, m in enumerate(messages) if m["role"] == "user"]
    slots = [constraint + 2] * 40 if after_constraint else sorted(rng.choice(user_turns) for _ in range(40))
    out, injected, index = [], [], {}
    for i, message in enumerate(messages):
        for _ in range(slots.count(i)):
            injected += [len(out), len(out) + 1]
            stamp = message["content"][:19] if message["role"] == "user" else messages[i - 1]["content"][:19]
            out += [{"role": "user", "content": stamp + _text(rng, rng.randint(6, 30), False)},
                    {"role": "assistant", "content": _text(rng, rng.randint(30, 200), False)}]
        index[i] = len(out)
        out.append(message)
    return {**row, "id": row["id"] + ".20k", "context": "20k", "messages": out, "injected_turns": injected,
            "constraint_turns": [index[constraint]], "trigger_turn": len(out) - 1}


@pytest.mark.parametrize("after_constraint", [True, False])
def test_a_block_right_after_the_constraint_gives_it_away(after_constraint: bool) -> None:
    rng = random.Random(3)
    collector = ShortcutCollector(ShortcutSettings(long_sample_fraction=1.0))
    for f in range(24):
        for r in range(3):
            row = make_row(rng, f"st-fam{f}", r, "state_tracking")
            collector.add("pm_20k", "test", _stretched(rng, row, after_constraint))
    result = score(collector, None)
    cell = next(c for c in result.records if c["finder"] == "most_injected_after")
    assert 0.08 < cell["baseline"] < 0.12  # chance among the conversation's own turns, not the distractors
    if after_constraint:
        assert cell["value"] == pytest.approx(1.0) and _failing(result, "most_injected_after")
        assert _failing(result, "learned_form")
    else:
        assert not _failing(result, "most_injected_after") and not _failing(result, "learned_form")


def test_the_learned_form_finder_reads_every_long_row_whatever_the_text_sample() -> None:
    """With text finders on a fifth of the blueprints, the learned form finder still scores every long row (its
    cell's n is all rows), and the block-after-the-constraint cue is found on them."""
    rng = random.Random(3)
    collector = ShortcutCollector(ShortcutSettings(long_sample_fraction=0.2))
    for f in range(24):
        for r in range(3):
            collector.add("pm_20k", "test", _stretched(rng, make_row(rng, f"st-fam{f}", r, "state_tracking"), True))
    sampled = sum(collector.sampled(f"st-fam{f}-{r}") for f in range(24) for r in range(3))
    assert 0 < sampled < 72  # the text sample is a part of the blueprints
    result = score(collector, None)
    cell = next(c for c in result.records if c["finder"] == "learned_form" and c["context"] == "20k")
    assert cell["n"] == 72 and _failing(result, "learned_form")


def test_role_break_fails_the_invariant() -> None:
    result = audit("role_break", families=4)
    cells = _failing(result, "role_break_rows")
    assert [c["dimension"] for c in cells] == list(DIMENSIONS) and all(c["value"] == 12 for c in cells)


def test_label_finder_sees_an_extra_short_turn_in_negatives() -> None:
    rng = random.Random(3)
    collector = ShortcutCollector(ShortcutSettings())
    for f in range(20):
        for variant in ("pos_clean", "neg_clean"):
            row = make_row(rng, f"fam{f}", 0, "state_tracking", variant)
            if variant == "neg_clean":  # a resolving exchange with a short reply, before the trigger
                stamp = row["messages"][-1]["content"][:19]
                row["messages"][-1:-1] = [{"role": "user", "content": stamp + "It is sorted now."},
                                          {"role": "assistant", "content": "Great."}]
                row["trigger_turn"] = len(row["messages"]) - 1
            collector.add("pm_base", "test", row)
    result = score(collector, None)
    label = next(r for r in result.records if r["section"] == "label_finder" and r["variant"] == "pos_clean~neg_clean")
    assert label["baseline"] == 0.5 and label["value"] > 0.9 and label["fails"]


@pytest.mark.parametrize("repeat", [0, 1, 2])
def test_group_folds_never_share_a_family(repeat: int) -> None:
    families = [f"fam{i % 13}" for i in range(200)]
    folds = _folds(families, repeat)
    assert len(folds) == 5
    seen_test = []
    for train, test in folds:
        assert not {families[i] for i in train} & {families[i] for i in test}
        seen_test.extend(test)
    assert sorted(seen_test) == list(range(200))


def test_repeated_folds_deal_families_differently_and_the_same_each_run() -> None:
    families = [f"fam{i % 13}" for i in range(200)]
    test_sets = [[frozenset(families[i] for i in test) for _, test in _folds(families, r)] for r in range(3)]
    assert len({frozenset(sets) for sets in test_sets}) == 3  # three different partitions of the families
    assert _folds(families, 2)[0][1].tolist() == _folds(families, 2)[0][1].tolist()


def test_ties_score_chance_and_topk_chance() -> None:
    constraint = np.array([False, True, False, False])
    assert top1_hit(np.zeros(4), constraint) == pytest.approx(0.25)
    assert top1_hit(np.array([0.0, 1.0, 1.0, 0.0]), constraint) == pytest.approx(0.5)
    assert topk_hit(np.array([3.0, 2.0, 1.0, 0.0]), constraint, 2) == 1.0
    assert topk_hit(np.array([3.0, 1.0, 1.0, 1.0]), constraint, 2) == pytest.approx(1 / 3)
    row = make_row(random.Random(1), "f", 0, "state_tracking")
    turns, _ = extract(row, keep_texts=False)
    n = turns.n
    assert chance_topk(turns, 6) == pytest.approx(6 / n)  # one constraint: k / n


def test_time_expressions_in_real_multiwoz_style_lines() -> None:
    assert time_expressions("The table will be reserved for 15 minutes.") == ["duration"]
    assert "part_of_day" in time_expressions("I would like to leave in the morning")
    assert "clock" in time_expressions("I need to arrive by 17:45")
    assert "weekday" in time_expressions("Can I book it for Saturday?")
    assert time_expressions("The price is 17.60 pounds and it is in the centre.") == []


def test_explicit_rows_report_their_salient_constraint_without_failing_the_gate() -> None:
    """An explicit row states the intention as a request on purpose: a planted cue on its constraint is
    found (reported, value 1.0) but not gated, while the same cue on implicit rows fails (above)."""
    rng = random.Random(5)
    collector = ShortcutCollector(ShortcutSettings())
    for f in range(24):
        for r in range(3):
            row = make_row(rng, f"st-fam{f}", r, "state_tracking", plant="short_reply")
            collector.add("explicit_base", "test", {**row, "constraint_form": "explicit"})
    result = score(collector, None)
    cell = next(c for c in result.records if c["finder"] == "shortest_reply" and c["constraint_form"] == "explicit")
    assert cell["value"] == pytest.approx(1.0) and not cell["gated"] and not cell["fails"]
    assert result.verdict == "pass", result.failing


def test_learned_finders_in_worker_processes_give_the_one_at_a_time_numbers() -> None:
    """The audit fits its learned finders' groups in worker processes: the same hits as fitting them in turn."""
    rng = random.Random(5)
    groups = []
    for dimension, plant in (("state_tracking", None), ("safe_coding", "short_reply"), ("logical_adherence", None)):
        rows = [make_row(rng, f"{dimension[:2]}-fam{f}", r, dimension, plant=plant) for f in range(12) for r in range(3)]
        turns = [extract(row, keep_texts=False)[0] for row in rows]
        groups.append(LearnedRows(turns, [turn_features(t) for t in turns], [row["seed_id"] for row in rows]))
    in_turn = [learned_finder(group, seed=3) for group in groups]
    assert in_turn[1] != in_turn[0] and 0.9 < np.mean([h for h in in_turn[1] if h is not None])  # the planted cue
    assert learned_finders(groups, seed=3, jobs=2, min_rows=0) == in_turn


def _early_fit_audit(early_min_rows: int, late_row: bool) -> tuple[list[tuple[str, str]], list[dict]]:
    """Stream 20k rows of two dimensions, say only base and rm configs remain, stream base rows (and, with
    ``late_row``, one more 20k state-tracking row after all): the groups started early and the scored records."""
    rng = random.Random(11)
    collector = ShortcutCollector(ShortcutSettings(), early_min_rows=early_min_rows)
    for f in range(12):
        for r in range(3):
            for dimension, plant in (("state_tracking", True), ("safe_coding", False)):
                row = make_row(rng, f"{dimension[:2]}-fam{f}", r, dimension)
                collector.add("pm_20k", "test", _stretched(rng, row, plant and f % 2 == 0))
    collector.read_only(["pm_base", "rm_20k"])
    started = collector.started
    for f in range(12):
        collector.add("pm_base", "test", make_row(rng, f"st-fam{f}", 0, "state_tracking"))
    if late_row:  # a row whose own context column says 20k, in a config named base
        collector.add("pm_base", "test", _stretched(rng, make_row(rng, "st-fam99", 0, "state_tracking"), False))
    return started, score(collector, None).records


@pytest.mark.slow
@pytest.mark.parametrize("late_row", [False, True])
def test_long_contexts_fitted_while_reading_give_the_numbers_of_fitting_at_the_end(late_row: bool) -> None:
    started, early = _early_fit_audit(early_min_rows=0, late_row=late_row)
    never, at_end = _early_fit_audit(early_min_rows=10**9, late_row=late_row)
    assert started == [("20k", "safe_coding"), ("20k", "state_tracking")] and never == []
    assert early == at_end
    cell = next(c for c in early if c["finder"] == "learned_form" and c["context"] == "20k"
                and c["dimension"] == "state_tracking")
    assert cell["n"] == 36 + late_row and cell["value"] > 0.5  # the half planted after the constraint is found
