"""The eval scorers, the family bootstrap and the judge/setting views, each on its own.

Expected values are worked by hand in the comments. Rows for the view tests are built in the
release's real row shape (messages, constraint_turns, resolution_turn).
"""

from __future__ import annotations

import pytest

from stages.eval import judge, prompts, scorers
from stages.eval.bootstrap import family_interval, paired_difference


def test_slot_match_is_case_insensitive_recall() -> None:
    slots = ["Cello", "taxi trunk", "Union Square"]
    # "cello" and "taxi   TRUNK" (whitespace collapsed) found, "union square" missing: 2/3
    assert scorers.slot_match("Don't forget the CELLO in the taxi   TRUNK!", slots) == pytest.approx(2 / 3)
    assert scorers.slot_match("Welcome home.", slots) == 0.0
    assert scorers.slot_match("anything", []) is None


def test_answer_match_accepts_reference_or_alias() -> None:
    assert scorers.answer_match("It was in the Trunk, I think.", "In the taxi's trunk.", ["trunk", "the trunk"])
    assert not scorers.answer_match("On the back seat.", "In the taxi's trunk.", ["trunk", "the trunk"])
    assert not scorers.answer_match("", "x", [""])  # empty phrases never match


def test_pm_correct_scores_negatives_as_silence() -> None:
    assert scorers.pm_correct("intervene", "YES") and not scorers.pm_correct("intervene", "NO")
    assert scorers.pm_correct("silent", "NO") and not scorers.pm_correct("silent", "YES")
    assert not scorers.pm_correct("intervene", None) and not scorers.pm_correct("silent", None)
    with pytest.raises(ValueError):
        scorers.pm_correct("maybe", "YES")


def test_rm_correct_uses_judge_only_without_match() -> None:
    assert scorers.rm_correct(True, None) and scorers.rm_correct(False, "YES")
    assert not scorers.rm_correct(False, "NO") and not scorers.rm_correct(False, None)


def test_agreement_accuracy_and_kappa() -> None:
    labels = ["YES", "YES", "NO", "NO"]
    # all YES: accuracy 2/4; p_o = 0.5, p_e = 0.5*1 + 0.5*0 = 0.5 -> kappa 0
    assert scorers.agreement(labels, ["YES"] * 4) == {"n": 4.0, "accuracy": 0.5, "kappa": 0.0}
    # one NO -> YES flip: p_o = 3/4; p_e = (2/4)(3/4) + (2/4)(1/4) = 1/2 -> kappa (3/4-1/2)/(1/2) = 0.5
    assert scorers.agreement(labels, ["YES", "YES", "YES", "NO"])["kappa"] == pytest.approx(0.5)
    # one class only (all YES labels, all YES verdicts): kappa is undefined
    assert scorers.agreement(["YES", "YES"], ["YES", "YES"]) == {"n": 2.0, "accuracy": 1.0, "kappa": None}
    # a missing verdict is a disagreement
    assert scorers.agreement(labels, ["YES", None, "NO", "NO"])["accuracy"] == 0.75


def test_bootstrap_resamples_families_not_rows() -> None:
    # one family holding a 0 and a 1: every family resample is that family, mean 0.5 exactly;
    # a row bootstrap would spread from 0 to 1
    assert family_interval([0.0, 1.0], ["f", "f"], "cell") == (0.5, 0.5)
    # two families of one row each, values 0 and 1: resample means are 0, 0.5 or 1 -> [0, 1]
    assert family_interval([0.0, 1.0], ["a", "b"], "cell") == (0.0, 1.0)
    assert family_interval([], [], "cell") is None


def test_bootstrap_is_seeded_per_cell() -> None:
    values, families = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1], list("aabbccddee")
    first = family_interval(values, families, "pm_base/all", seed=3)
    assert first == family_interval(values, families, "pm_base/all", seed=3)
    assert first is not None and 0.0 <= first[0] <= 0.6 <= first[1] <= 1.0


def test_paired_difference_of_identical_runs_is_zero() -> None:
    assert paired_difference([1, 0, 1], [1, 0, 1], ["a", "b", "c"], "x") == (0.0, 0.0, 0.0)
    # B fixes one of four rows in family b: mean difference 1/4
    diff, low, high = paired_difference([0, 0, 1, 1], [0, 1, 1, 1], ["a", "b", "c", "d"], "x")  # type: ignore[misc]
    assert diff == 0.25 and low == 0.0 and high > 0


def _row(variant: str, resolution: int | None, trigger: str = "We are at the hotel, hopping out.") -> dict:
    messages = [
        {"role": "user", "content": "[2026-05-09T18:00] Any good museums near the river?"},
        {"role": "assistant", "content": "The maritime museum is lovely."},
        {"role": "user", "content": "[2026-05-09T18:05] The driver put my cello in the trunk."},
        {"role": "assistant", "content": "Good call."},
        {"role": "user", "content": "[2026-05-09T18:20] Which market opens late?"},
        {"role": "assistant", "content": "The night market on Fifth."},
        {"role": "user", "content": "[2026-05-09T18:40] The driver already put the cello on the curb."},
        {"role": "assistant", "content": "Great."},
        {"role": "user", "content": f"[2026-05-09T18:52] {trigger}"},
    ]
    return {"id": f"st-x.{variant}", "dimension": "state_tracking", "variant": variant, "messages": messages,
            "constraint_turns": [2], "resolution_turn": resolution, "reference_intent": "Remind about the cello.",
            "gold_slots": ["cello", "trunk"], "expected": "silent" if variant == "neg_clean" else "intervene"}


def test_minimal_setting_keeps_constraint_resolution_and_trigger() -> None:
    row = _row("neg_clean", 6)
    assert prompts.minimal_turns(row) == [2, 3, 6, 7, 8]
    assert prompts.minimal_turns(_row("pos_clean", None)) == [2, 3, 8]
    sent = prompts.model_messages(row, "minimal")
    assert sent[0]["role"] == "system" and [m["content"] for m in sent[1:]] == [row["messages"][i]["content"] for i in (2, 3, 6, 7, 8)]


def test_online_setting_replaces_the_constraint_reply_only() -> None:
    row = _row("pos_clean", None)
    assert prompts.online_turns(row) == [3]
    prefix = prompts.online_prefix(row, 3, {})
    assert prefix[-1]["content"].endswith("put my cello in the trunk.") and len(prefix) == 4  # system + 3 turns
    sent = prompts.model_messages(row, "online", {3: "Noted, the cello rides in the trunk."})
    assert sent[4]["content"] == "Noted, the cello rides in the trunk."
    assert [m["content"] for m in sent[1:]][:3] + [m["content"] for m in sent[5:]] == \
        [m["content"] for m in row["messages"][:3]] + [m["content"] for m in row["messages"][4:]]


def test_judge_visibility_adapts_to_the_negative_kind() -> None:
    constraint, trigger = "[2026-05-09T18:05] The driver put my cello in the trunk.", "[2026-05-09T18:52] We are at the hotel, hopping out."
    assert judge.judge_view(_row("pos_clean", None)) == judge.JudgeView("full", constraint, trigger)
    assert judge.judge_view(_row("neg_clean", 6)) == judge.JudgeView("full", constraint, trigger)  # resolution
    flipped = _row("neg_clean", None, trigger="We are staying in the car for another loop.")
    assert judge.judge_view(flipped) == judge.JudgeView("constraint_only", constraint, None)  # flip_trigger
    state = _row("neg_clean", 2)  # the constraint turn itself was flipped
    assert judge.judge_view(state) == judge.JudgeView("trigger_only", None, trigger)
    case = judge.pm_judge_request(flipped, "Welcome!").wire_messages()[-1]["content"]
    assert "another loop" not in case and "cello in the trunk" in case and "Remind about the cello." in case
