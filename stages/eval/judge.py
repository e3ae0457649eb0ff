"""The LLM judge: an intent detector for PM rows, a paraphrase checker for RM rows (B.1, B.6).

The PM judge answers one question: does the assistant's response proactively act on the
row's (positive) reference intent? For Neg-Clean rows the same question is asked with the
same positive intent, so ``YES`` is a false alarm and ``NO`` correct silence. What the judge
sees adapts to how the negative was made (:func:`judge_view`):

- positives and risk-resolution negatives (state tracking, safe coding): the constraint
  turn(s) and the trigger, as the positive has them;
- logical-adherence negatives with a flipped trigger: the constraint, never the flipped
  trigger (it contradicts the positive intent);
- logical-adherence negatives with a flipped state: the trigger, never the flipped constraint.

Verdicts are structured (``{"verdict": "YES"|"NO", "reason": ...}``) at temperature 0.
The prompt and the few-shot examples are this project's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from pipeline.llm import ChatRequest

JUDGE_MAX_TOKENS = 256


class Verdict(BaseModel):
    """The judge's structured answer."""

    verdict: Literal["YES", "NO"]
    reason: str = Field(description="one short sentence")


PM_SYSTEM = """You grade replies of an AI assistant for a benchmark of proactive reminders.

Earlier in a conversation the user said something (the CONTEXT) that makes a later moment risky. At the
moment of the TRIGGER the assistant replied with the RESPONSE. The INTENT describes what a proactive
assistant should convey at that moment. Decide whether the RESPONSE conveys the INTENT.

Say YES when the response, anywhere in it, warns, reminds or alerts the user about the concern the
intent describes, so that a user reading it would act on it. Wording may differ completely; naming only
the key object, the key action or the key deadline is enough; a question that points the user at the
concern ("did you still have the tickets in your bag?") counts.

Say NO when the response does not raise that concern: it only handles the user's latest message, or
talks about something else, or mentions a word from the context without turning it into a reminder or
warning (a keyword on its own is not an intervention). A generic "have a nice trip" is NO.

Judge only the response against the intent; do not grade helpfulness, style or length.
Answer with a JSON object: {"verdict": "YES" or "NO", "reason": "<one short sentence>"}."""

RM_SYSTEM = """You grade answers of an AI assistant to a factual question about an earlier conversation.

Given the QUESTION, the REFERENCE answer (with accepted short forms) and the assistant's RESPONSE, say YES
when the response gives the same fact as the reference (paraphrases, synonyms and extra detail are fine)
and NO when it gives a different fact, several incompatible facts, or no answer.
Answer with a JSON object: {"verdict": "YES" or "NO", "reason": "<one short sentence>"}."""

# (context, trigger, intent, response, verdict, reason), two per dimension: one paraphrased
# intervention (YES) and one keyword-only or silent reply (NO).
FEW_SHOTS: dict[str, tuple[tuple[str, str, str, str, str, str], ...]] = {
    "state_tracking": (
        ("I tucked my violin behind the driver's seat since the boot was full of boxes.",
         "Okay, we're at the station, grabbing my ticket and jumping out.",
         "Remind the user to take the violin from behind the driver's seat before leaving the car.",
         "Safe travels! Quick check before the door shuts: your instrument is still behind the seat.",
         "YES", "It points the user to the instrument left in the car before they get out."),
        ("My reading glasses are on the café table where I was sitting.",
         "Right, paying now and then I'm off to the bus.",
         "Remind the user to pick up the reading glasses from the café table.",
         "Have a good ride! Reading on the bus is nice if you brought glasses for it.",
         "NO", "Glasses come up only as small talk about reading, not as a reminder to collect them."),
    ),
    "temporal_grounding": (
        ("[2026-03-02T17:10] The cake needs to come out of the oven at 18:00 sharp or it will burn.",
         "[2026-03-02T17:52] Going to take a quick shower, back in a bit.",
         "Warn the user that the cake must come out of the oven at 18:00, before the shower.",
         "Enjoy! Though with the cake due in about eight minutes you may want to pull it out first.",
         "YES", "It warns that the cake is due out before the shower would end."),
        ("[2026-06-11T08:30] My parking ticket runs out at 11:00 and they tow quickly here.",
         "[2026-06-11T10:50] What time is it? This meeting is dragging on.",
         "Remind the user that the parking ticket expires at 11:00 and the car may be towed.",
         "It's 10:50. Hang in there, meetings often wrap up near the hour.",
         "NO", "It only tells the time and says nothing about the expiring ticket."),
    ),
    "logical_adherence": (
        ("Our team agreed nobody books travel over 400 euros without the director's sign-off.",
         "Found a flight to Lisbon for 520 euros, booking it now.",
         "Point out that a 520-euro booking exceeds the 400-euro limit and needs the director's sign-off.",
         "Nice route! Since it's above your team's threshold, get the director's approval before you pay.",
         "YES", "It flags that the price needs the director's approval under the agreed rule."),
        ("I promised myself no caffeine after 3 pm this month.",
         "It's 5 pm, ordering a double espresso to power through.",
         "Remind the user of their no-caffeine-after-3-pm rule before ordering espresso.",
         "A double espresso is a classic choice; some cafés also do a nice cortado.",
         "NO", "It discusses coffee without mentioning the user's caffeine rule."),
    ),
    "attention_recovery": (
        ("I was halfway through filling in the visa form when my sister called about her maths homework.",
         "Thanks, that solved her problem! Anyway, I'm going to make dinner now.",
         "Remind the user to return to the unfinished visa form.",
         "Glad it helped! Before dinner, do you want to finish the visa application you paused?",
         "YES", "It brings the user back to the interrupted visa form."),
        ("I had just started backing up my laptop when a colleague asked me to debug a script.",
         "Great, the script works now. I'll shut the laptop and head out.",
         "Remind the user that the laptop backup was interrupted and is unfinished.",
         "Great work on the script! Laptops do benefit from regular backups, by the way.",
         "NO", "Backups are mentioned generically, not as the user's unfinished backup."),
    ),
    "safe_coding": (
        ("For local testing I set CORS to allow every origin in server.py.",
         "Looks good, let's deploy this build to production.",
         "Warn the user to restore a strict CORS policy before deploying to production.",
         "Before it ships: the allow-all origin setting from testing is still in server.py; restrict it first.",
         "YES", "It warns about the permissive CORS setting before deployment."),
        ("I disabled TLS certificate verification in the HTTP client to get past the proxy error.",
         "Tests pass, I'm merging the branch into main.",
         "Warn the user to re-enable TLS certificate verification before merging.",
         "Congrats on the green tests! Remember TLS keeps traffic encrypted. Merge away.",
         "NO", "TLS is mentioned in passing; there is no warning about the disabled verification."),
    ),
}


@dataclass(frozen=True)
class JudgeView:
    """What the PM judge is shown for one row besides the intent and the response."""

    mode: str  # "full", "constraint_only", "trigger_only"
    context: str | None
    trigger: str | None


def negative_kind(row: Mapping[str, Any]) -> str | None:
    """How a Neg-Clean row was made: ``resolution``, ``flip_trigger``, ``flip_state``; None for positives."""
    if row.get("variant") != "neg_clean":
        return None
    resolution = row.get("resolution_turn")
    if resolution is None:
        return "flip_trigger"
    return "flip_state" if int(resolution) in set(row.get("constraint_turns") or []) else "resolution"


def judge_view(row: Mapping[str, Any]) -> JudgeView:
    """The adaptive context visibility of B.6 for ``row`` (see the module docstring)."""
    messages = row["messages"]
    context = "\n".join(str(messages[i]["content"]) for i in sorted(row.get("constraint_turns") or []))
    trigger = str(messages[len(messages) - 1]["content"])
    kind = negative_kind(row)
    if kind == "flip_trigger":
        return JudgeView("constraint_only", context, None)
    if kind == "flip_state":
        return JudgeView("trigger_only", None, trigger)
    return JudgeView("full", context, trigger)


def _pm_case(view: JudgeView, intent: str, response: str) -> str:
    parts = []
    if view.context is not None:
        parts.append(f"CONTEXT: {view.context}")
    if view.trigger is not None:
        parts.append(f"TRIGGER: {view.trigger}")
    parts += [f"INTENT: {intent}", f"RESPONSE: {response}"]
    return "\n".join(parts)


def _few_shot(dimension: str) -> list[dict[str, str]]:
    turns: list[dict[str, str]] = []
    for context, trigger, intent, response, verdict, reason in FEW_SHOTS.get(dimension, ()):
        case = _pm_case(JudgeView("full", context, trigger), intent, response)
        answer = Verdict(verdict=verdict, reason=reason).model_dump_json()  # type: ignore[arg-type]
        turns += [{"role": "user", "content": case}, {"role": "assistant", "content": answer}]
    return turns


def pm_judge_messages(dimension: str, view: JudgeView, intent: str, response: str) -> list[dict[str, str]]:
    """The PM judge's chat messages: system prompt, the dimension's examples, then this case."""
    case = _pm_case(view, intent, response)
    return [{"role": "system", "content": PM_SYSTEM}, *_few_shot(dimension), {"role": "user", "content": case}]


def pm_judge_request(row: Mapping[str, Any], response: str, tag: str = "") -> ChatRequest:
    """The structured, temperature-0 judge request for a PM row's ``response``."""
    messages = pm_judge_messages(str(row["dimension"]), judge_view(row), str(row["reference_intent"]), response)
    return ChatRequest(messages, temperature=0.0, max_tokens=JUDGE_MAX_TOKENS, schema=Verdict, tag=tag)


def rm_judge_request(question: str, reference: str, aliases: Sequence[str], response: str, tag: str = "") -> ChatRequest:
    """The structured, temperature-0 judge request for an RM answer that no alias matched."""
    case = (f"QUESTION: {question}\nREFERENCE: {reference} (accepted: {', '.join(aliases)})\n"
            f"RESPONSE: {response}")
    messages = [{"role": "system", "content": RM_SYSTEM}, {"role": "user", "content": case}]
    return ChatRequest(messages, temperature=0.0, max_tokens=JUDGE_MAX_TOKENS, schema=Verdict, tag=tag)
