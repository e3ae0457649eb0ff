"""The LLM oracles, batched: every blueprint's requests go out in one ``client.map`` per step.

Sufficiency: answer the Pos-Clean and Neg-Clean skeletons at temperature 0, then ask the
judge whether each answer delivers the reference intent; it passes when Pos-Clean is judged
YES and Neg-Clean NO. Necessity: answer the trigger alone ``rollouts`` times at a
temperature, judge each; it passes when at most ``max_guessed`` rollouts deliver the intent.
A blueprint whose calls fail for good gets an :class:`Outcome` with ``llm_error`` set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pipeline.llm import ChatRequest, LLMResult
from stages.oracles.outcome import Outcome, method_name
from stages.oracles.prompts import JUDGE_PROMPT, Verdict, judge_message
from stages.oracles.skeleton import skeletons, trigger_only

RESPONSE_CHARS = 600  # how much of each answer is kept on the item for the release


class Client(Protocol):
    model: str

    def map(self, requests: list[ChatRequest], desc: str = ...) -> list[LLMResult]: ...


def _judge_request(intent: str, response: str, constraints: list[str] | None, trigger: str | None,
                   max_tokens: int, tag: str) -> ChatRequest:  # fmt: skip
    messages = [
        {"role": "system", "content": JUDGE_PROMPT},
        {"role": "user", "content": judge_message(intent, response, constraints, trigger)},
    ]
    return ChatRequest(messages, temperature=0.0, max_tokens=max_tokens, schema=Verdict, tag=tag)


def _failed(method: str, result: LLMResult) -> Outcome:
    return Outcome(False, method, llm_error=result.error or "failed", llm_detail=f"{result.tag}: {result.detail}")


def sufficiency(items: list[tuple[str, dict[str, Any]]], llm: Client, judge: Client,
                answer_max_tokens: int, judge_max_tokens: int) -> list[Outcome]:  # fmt: skip
    """One :class:`Outcome` per ``(item id, blueprint)``, in order."""
    method = method_name(llm.model)
    plans = [(item_id, bp, skeletons(bp)) for item_id, bp in items]
    asks = [
        ChatRequest(sk.messages, temperature=0.0, max_tokens=answer_max_tokens, tag=f"{item_id}:{sk.variant}")
        for item_id, _, sks in plans for sk in sks
    ]  # fmt: skip
    answers = iter(llm.map(asks, desc="sufficiency: answers"))
    answered = [[next(answers) for _ in sks] for _, _, sks in plans]
    judgements = [
        _judge_request(bp["reference_intent"], answer.text or "", sk.judge_constraints, sk.judge_trigger,
                       judge_max_tokens, answer.tag)
        for (_, bp, sks), row in zip(plans, answered) for sk, answer in zip(sks, row) if answer.ok
    ]  # fmt: skip
    verdicts = {result.tag: result for result in judge.map(judgements, desc="sufficiency: judge")}
    outcomes = []
    for (_, _, sks), row in zip(plans, answered):
        failure = next((a for a in row if not a.ok), None) or next((verdicts[a.tag] for a in row if not verdicts[a.tag].ok), None)
        if failure is not None:
            outcomes.append(_failed(method, failure))
            continue
        checks, reasons = [], []
        for sk, answer in zip(sks, row):
            verdict = verdicts[answer.tag].parsed(Verdict)
            ok = (verdict.verdict == "YES") == (sk.expected == "intervene")
            checks.append({"variant": sk.variant, "expected": sk.expected, "verdict": verdict.verdict, "ok": ok,
                           "reason": verdict.reason, "response": (answer.text or "")[:RESPONSE_CHARS]})
            if not ok:
                reasons.append(f"{sk.variant}: expected {sk.expected}, judge said {verdict.verdict}: {verdict.reason}")
        outcomes.append(Outcome(not reasons, method, checks, reasons))
    return outcomes


def necessity(items: list[tuple[str, dict[str, Any]]], llm: Client, judge: Client, *, rollouts: int,
              temperature: float, max_guessed: int, answer_max_tokens: int, judge_max_tokens: int,
              seed_for: Callable[[str, int], int]) -> list[Outcome]:  # fmt: skip
    """One :class:`Outcome` per ``(item id, blueprint)``; ``seed_for(item id, rollout)`` seeds each rollout."""
    method = method_name(llm.model)
    asks = [
        ChatRequest(trigger_only(bp), temperature=temperature, max_tokens=answer_max_tokens, sample=k,
                    seed=seed_for(item_id, k), tag=f"{item_id}:rollout{k}")
        for item_id, bp in items for k in range(rollouts)
    ]  # fmt: skip
    answers = llm.map(asks, desc="necessity: trigger-only rollouts")
    rows = [answers[i * rollouts : (i + 1) * rollouts] for i in range(len(items))]
    judgements = [
        _judge_request(bp["reference_intent"], a.text or "", [c["text"] for c in bp["constraints"]],
                       bp["trigger"]["text"], judge_max_tokens, a.tag)
        for (_, bp), row in zip(items, rows) for a in row if a.ok
    ]  # fmt: skip
    verdicts = {result.tag: result for result in judge.map(judgements, desc="necessity: judge")}
    outcomes = []
    for row in rows:
        failure = next((a for a in row if not a.ok), None) or next((verdicts[a.tag] for a in row if not verdicts[a.tag].ok), None)
        if failure is not None:
            outcomes.append(_failed(method, failure))
            continue
        checks = []
        for k, answer in enumerate(row):
            verdict = verdicts[answer.tag].parsed(Verdict)
            checks.append({"rollout": k, "verdict": verdict.verdict, "reason": verdict.reason,
                           "response": (answer.text or "")[:RESPONSE_CHARS]})
        guessed = sum(1 for check in checks if check["verdict"] == "YES")
        passed = guessed <= max_guessed
        reasons = [] if passed else [f"{guessed} of {rollouts} trigger-only rollouts delivered the intent"]
        outcomes.append(Outcome(passed, method, checks, reasons))
    return outcomes
