"""The metrics of one response, as plain functions (TriggerBench §4.1, B.1).

Each takes the model's response (and the row's gold fields) and returns a number or a
boolean; none calls a model. The LLM judge's verdict enters only through
:func:`pm_correct` and :func:`rm_correct`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SPACE = re.compile(r"\s+")


def normalize(text: str | None) -> str:
    """Case-folded text with runs of whitespace collapsed to one space."""
    return _SPACE.sub(" ", (text or "").casefold()).strip()


def contains(response: str | None, phrase: str) -> bool:
    """Case-insensitive substring test (whitespace-insensitive); an empty phrase never matches."""
    needle = normalize(phrase)
    return bool(needle) and needle in normalize(response)


def slot_match(response: str | None, gold_slots: Sequence[str]) -> float | None:
    """Slot Match: the fraction of ``gold_slots`` found in ``response`` (None when there are none)."""
    slots = [s for s in gold_slots if normalize(s)]
    if not slots:
        return None
    return sum(contains(response, slot) for slot in slots) / len(slots)


def answer_match(response: str | None, reference_answer: str, aliases: Sequence[str]) -> bool:
    """RM string match: the reference answer or any alias occurs in ``response``."""
    return any(contains(response, phrase) for phrase in [reference_answer, *aliases])


_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_INTEGER = re.compile(r"-?\d[\d,]*")


def aime_extract(response: str | None) -> int | None:
    """The integer a response gives as its final answer: the last ``\\boxed{...}`` holding an integer,
    else the last integer of the response (None when there is none)."""
    text = response or ""
    for boxed in reversed(_BOXED.findall(text)):
        found = _INTEGER.findall(boxed)
        if found:
            return int(found[-1].replace(",", ""))
    found = _INTEGER.findall(text)
    return int(found[-1].replace(",", "")) if found else None


def aime_correct(response: str | None, answer: int) -> bool:
    """AIME accuracy of one response: its final integer equals the reference answer."""
    return aime_extract(response) == int(answer)


def pm_correct(expected: str, verdict: str | None) -> bool:
    """PM Acc of one row: an intervention where one is expected, silence where it is not.

    ``verdict`` is the intent judge's ``YES`` (the response acts on the reference intent) or
    ``NO``; None (no verdict: a failed request) is never correct.
    """
    if verdict is None:
        return False
    if expected == "intervene":
        return verdict == "YES"
    if expected == "silent":
        return verdict == "NO"
    raise ValueError(f"expected must be 'intervene' or 'silent', not {expected!r}")


def rm_correct(matched: bool, verdict: str | None) -> bool:
    """RM Acc of one row: a string match, else the judge's ``YES`` for a paraphrase."""
    return matched or verdict == "YES"


def agreement(labels: Sequence[str], predictions: Sequence[str | None]) -> dict[str, float | None]:
    """Accuracy and Cohen's kappa of ``predictions`` against ``labels`` (None counts as wrong).

    Kappa is None (undefined) when labels and predictions together hold a single class.
    """
    from sklearn.metrics import cohen_kappa_score

    if len(labels) != len(predictions) or not labels:
        raise ValueError("agreement needs as many predictions as labels, and at least one")
    filled = [p if p is not None else "NONE" for p in predictions]
    accuracy = sum(a == b for a, b in zip(labels, filled)) / len(labels)
    kappa = float(cohen_kappa_score(list(labels), filled)) if len(set(labels) | set(filled)) > 1 else None
    return {"n": float(len(labels)), "accuracy": accuracy, "kappa": kappa}
