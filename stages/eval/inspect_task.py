"""An optional ``inspect_ai`` task over a release, reusing the eval scorers and judge prompt.

    pip install 'triggerbench[inspect]'
    inspect eval stages/eval/inspect_task.py --model openai/gpt-4o -T release=releases/0.1.0 \\
        -T config=pm_base -T judge_model=openai/gpt-4o

Each row becomes a sample whose input is exactly what ``triggerbench eval`` sends (offline or
minimal setting; the online setting needs a second model turn and is only in ``triggerbench
eval``). The scorer computes Slot Match and asks the judge model for the structured verdict
with the same prompt; a verdict that cannot be read counts as no verdict (wrong), as in a run.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Target, mean, metric, scorer
from inspect_ai.solver import TaskState, generate

from pipeline.tokenizer import ensure_offline_ranks
from pipeline.llm.structured import StructuredOutputError, parse_answer, with_schema_instruction
from stages.eval import judge, prompts, scorers
from stages.eval.source import config_kind, locate, read_rows

_ROLES = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}


def _sample(row: dict[str, Any], setting: str) -> Sample:
    messages = [_ROLES[m["role"]](content=m["content"]) for m in prompts.model_messages(row, setting)]
    target = str(row.get("reference_intent") or row.get("reference_answer") or "")
    return Sample(input=messages, target=target, id=row["id"], metadata={"row": row})


async def _verdict(judge_model: str | None, messages: list[dict[str, str]]) -> str | None:
    model = get_model(judge_model) if judge_model else get_model()
    wire = with_schema_instruction(messages, judge.Verdict)
    chat = [_ROLES[m["role"]](content=m["content"]) for m in wire]
    output = await model.generate(chat, config=GenerateConfig(temperature=0.0, max_tokens=judge.JUDGE_MAX_TOKENS))
    try:
        return str(parse_answer(output.completion, judge.Verdict).verdict)  # type: ignore[attr-defined]
    except StructuredOutputError:
        return None


@metric
def defined_mean() -> Metric:
    """The mean over samples that have the value (Slot Match is undefined on negatives and RM rows)."""

    def compute(scores: list[SampleScore]) -> float:
        values = [v for s in scores if not math.isnan(v := s.score.as_float())]
        return sum(values) / len(values) if values else float("nan")

    return compute


@scorer(metrics={"correct": [mean()], "slot_match": [defined_mean()]})
def triggerbench_scorer(judge_model: str | None = None) -> Any:
    """PM rows: judge verdict -> PM Acc, plus Slot Match on positives; RM rows: match, else judge."""

    async def score(state: TaskState, target: Target) -> Score:
        row, response = state.metadata["row"], state.output.completion
        if "reference_intent" in row:
            view = judge.judge_view(row)
            verdict = await _verdict(judge_model, judge.pm_judge_messages(row["dimension"], view, row["reference_intent"], response))
            correct = scorers.pm_correct(row["expected"], verdict)
            slots = scorers.slot_match(response, row["gold_slots"] or []) if row["expected"] == "intervene" else None
            value = {"correct": float(correct), "slot_match": float("nan") if slots is None else slots}
        else:
            aliases = list(row.get("answer_aliases") or [])
            matched = scorers.answer_match(response, row["reference_answer"], aliases)
            verdict = None
            if not matched:
                request = judge.rm_judge_request(row["question"], row["reference_answer"], aliases, response)
                verdict = await _verdict(judge_model, [dict(m) for m in request.messages])
            value = {"correct": float(scorers.rm_correct(matched, verdict)), "slot_match": float("nan")}
        return Score(value=value, answer=response, explanation=f"verdict={verdict}")

    return score


@task
def triggerbench(release: str, config: str = "pm_base", split: str = "test", setting: str = "offline",
                 limit: int | None = None, judge_model: str | None = None, temperature: float = 0.6) -> Task:
    """The rows of one config of a release as an inspect task (``-T release=... -T config=...``)."""
    if setting not in ("offline", "minimal"):
        raise ValueError("the inspect task supports the offline and minimal settings (online: triggerbench eval)")
    config_kind(config)
    ensure_offline_ranks()  # inspect counts tokens with tiktoken o200k: use the bundled ranks, offline
    rows = read_rows(locate(release), config, split, int(limit) if limit is not None else None)
    dataset = MemoryDataset([_sample(r, setting) for r in rows], name=f"triggerbench-{config}")
    return Task(dataset=dataset, solver=generate(), scorer=triggerbench_scorer(judge_model),
                config=GenerateConfig(temperature=temperature, max_tokens=1024))
