"""Lexical audit figures against values worked out by hand (content words listed in each test)."""

from __future__ import annotations

import statistics

import pytest

from stages.audit.lexical import audit_row, distractor_check, overlap_scores, summarize

ALLERGY_C = "[2025-03-01T09:15] My daughter Emma has a severe peanut allergy."
# content words (scikit-learn stopwords "my", "has"; "a" too short):
ALLERGY_C_WORDS = {"daughter", "emma", "severe", "peanut", "allergy"}
ALLERGY_T = "[2025-03-04T18:40] I'm baking peanut butter cookies for Emma's birthday party tonight."
# "i'm" -> "i" (too short), "for" stopword, "emma's" -> "emma":
ALLERGY_T_WORDS = {"baking", "peanut", "butter", "cookies", "emma", "birthday", "party", "tonight"}

FLOOD_C1 = "If the basement floods again, call Marco first."  # if/the/again/call/first are stopwords
FLOOD_C2 = "Marco keeps the spare pump keys in his garage."  # the/in/his stopwords
FLOOD_T = "Heavy rain tonight; water is coming into the basement and the garage."
FLOOD_C_WORDS = {"basement", "floods", "marco", "keeps", "spare", "pump", "keys", "garage"}
FLOOD_T_WORDS = {"heavy", "rain", "tonight", "water", "coming", "basement", "garage"}

PLANTS_C = "I promised to water the neighbour's tomatoes while they travel."  # promised water neighbour tomatoes travel
PLANTS_T = "Just got back from a long weekend at the lake."  # just long weekend lake ("got" too short)


def test_single_constraint_jaccard_and_overlap_by_hand() -> None:
    scores = overlap_scores([ALLERGY_C], ALLERGY_T)
    shared = ALLERGY_C_WORDS & ALLERGY_T_WORDS
    assert shared == {"emma", "peanut"}
    assert scores.shared == ("emma", "peanut")
    assert scores.constraint_words == 5 and scores.trigger_words == 8
    assert scores.jaccard == pytest.approx(2 / 11)  # |C∪T| = 5 + 8 - 2
    assert scores.overlap == pytest.approx(2 / 5)  # min(|C|, |T|) = 5
    assert scores.shared_count == 2


def test_if_then_uses_union_of_both_constraints() -> None:
    scores = overlap_scores([FLOOD_C1, FLOOD_C2], FLOOD_T)
    assert set(scores.shared) == {"basement", "garage"}
    assert scores.constraint_words == len(FLOOD_C_WORDS) == 8
    assert scores.trigger_words == len(FLOOD_T_WORDS) == 7
    assert scores.jaccard == pytest.approx(2 / 13)
    assert scores.overlap == pytest.approx(2 / 7)


def test_zero_overlap_and_empty_trigger() -> None:
    zero = overlap_scores([PLANTS_C], PLANTS_T)
    assert (zero.jaccard, zero.overlap, zero.shared, zero.constraint_words, zero.trigger_words) == (0.0, 0.0, (), 5, 4)
    empty = overlap_scores([PLANTS_C], "Ok, we are off now.")  # nothing survives the filter
    assert (empty.jaccard, empty.overlap, empty.trigger_words) == (0.0, 0.0, 0)


def test_group_summary_by_hand() -> None:
    rows = [
        audit_row({"messages": [{"role": "user", "content": ALLERGY_C}, {"role": "user", "content": ALLERGY_T}],
                   "constraint_turns": [0], "trigger_turn": 1}),
        audit_row({"messages": [{"role": "user", "content": FLOOD_C1}, {"role": "assistant", "content": "Noted."},
                                {"role": "user", "content": FLOOD_C2}, {"role": "user", "content": FLOOD_T}],
                   "constraint_turns": [0, 2], "trigger_turn": 3}),
        audit_row({"messages": [{"role": "user", "content": PLANTS_C}, {"role": "user", "content": PLANTS_T}],
                   "constraint_turns": [0], "trigger_turn": 1}),
    ]
    summary = summarize(rows)
    jaccards = [2 / 11, 2 / 13, 0.0]
    overlaps = [2 / 5, 2 / 7, 0.0]
    assert summary["n"] == 3
    assert summary["jaccard_mean"] == pytest.approx(statistics.fmean(jaccards))
    assert summary["jaccard_std"] == pytest.approx(statistics.pstdev(jaccards))
    assert summary["overlap_mean"] == pytest.approx(statistics.fmean(overlaps))
    assert summary["overlap_std"] == pytest.approx(statistics.pstdev(overlaps))
    assert summary["shared_mean"] == pytest.approx(4 / 3)
    assert summary["zero_overlap_pct"] == pytest.approx(100 / 3)
    assert summary["rows_with_injected"] == 0 and summary["injected_slot_mention_rows_pct"] is None


def test_distractor_side_check_by_hand() -> None:
    injected = [
        "The hotel has free parking and wifi.",
        "Emma said the peanut stall was closed.",  # shares {emma, peanut}; mentions "Emma"
        "Emmanuel arrived with the allergy-friendly menu.",  # shares {allergy}; "Emma" is not a whole word here
        "Book a table for two at seven.",
    ]
    check = distractor_check(injected, ["peanut allergy", "Emma"])
    assert check.injected == 4
    assert check.sharing_slot_words == 2
    assert check.mentioning_slot == 1
    assert check.shared_words == ("allergy", "emma", "peanut")


def test_audit_row_long_context_columns() -> None:
    messages = [
        {"role": "user", "content": ALLERGY_C},
        {"role": "assistant", "content": "Thanks for telling me."},
        {"role": "user", "content": "Is there a good bus to the station?"},
        {"role": "assistant", "content": "Emma can take the number 4 bus."},
        {"role": "user", "content": ALLERGY_T},
    ]
    audited = audit_row({"messages": messages, "constraint_turns": [0], "trigger_turn": 4, "injected_turns": [2, 3],
                         "gold_slots": ["peanut allergy", "Emma"]})
    assert audited["jaccard"] == pytest.approx(2 / 11)
    assert audited["injected_turns"] == 2
    assert audited["injected_sharing_slot_words"] == 1
    assert audited["injected_mentioning_slot"] == 1
    assert audited["injected_slot_words"] == ["emma"]
    base = audit_row({"messages": messages, "constraint_turns": [0], "trigger_turn": 4})
    assert base["injected_turns"] is None


def test_distractor_check_ignores_the_timestamp_prefix() -> None:
    # slot words: {"2026", "budget"}; the stamp's "2026" and "09:00" must not count
    injected = ["[2026-02-04T09:00] The budget meeting moved upstairs.", "[2026-02-04T09:05] Lunch is ready."]
    check = distractor_check(injected, ["2026 budget", "09:00"])
    assert (check.injected, check.sharing_slot_words, check.mentioning_slot) == (2, 1, 0)
    assert check.shared_words == ("budget",)


def test_distractor_check_when_lowercasing_changes_lengths() -> None:
    # "İ".lower() is two code points, so turn offsets in the lowercased blob shift; counts must not
    injected = ["İİİ İstanbul layover", "We passed the peanut stand.", "Nothing here."]
    check = distractor_check(injected, ["peanut"])
    assert (check.sharing_slot_words, check.mentioning_slot, check.shared_words) == (1, 1, ("peanut",))


def test_stop_words_are_scikit_learns_list_read_without_importing_sklearn() -> None:
    """The list is read from sklearn's wheel without importing the package (a fresh interpreter proves it)."""
    import subprocess
    import sys

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from pipeline.text import _stop_words

    assert _stop_words() == ENGLISH_STOP_WORDS and len(_stop_words()) == 318
    probe = "import sys; from pipeline.text import content_words; content_words('x'); print('sklearn' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(("text", "phrase", "found"), [
    ("Leave the fob in the cup holder.", "cup holder", True),
    ("Leave the fob in the CUP HOLDER.", "cup holder", True),
    ("The cupholders are full.", "cup holder", False),
    ("A cupholder is there.", "cup", False),          # inside a word: not a mention
    ("It is in the cup-holder.", "cup", True),        # a hyphen ends a word
    ("Straße is closed.", "STRASSE", False),          # non-ASCII: left to the regex's own case folding
    ("Der Käse ist hier.", "käse", True),
    ("Der KÄSE ist hier.", "käse", True),
    ("anything", "  ", False),
])
def test_mentions_whole_words_case_insensitively(text: str, phrase: str, found: bool) -> None:
    from pipeline.text import mentions

    assert mentions(text, phrase) is found
