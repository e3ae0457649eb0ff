"""``aime_probe``: Pos-Clean base rows x AIME-2025 problems -> the ``aime_probe`` config.

In: ``variants`` rows and the AIME-2025 problems (``ctx.environment["aime"]``: a local JSONL file
such as ``../shared/data/aime2025/test.jsonl``, ``{"problem", "answer", "id"}`` per line, or the Hub
dataset ``math-ai/aime25``). Out: one row per (constraint-trigger pair, problem).

The reasoning-budget probe (TriggerBench §6, B.4): per dimension ``pairs_per_dimension``
implicit Pos-Clean base rows of the test split (distinct seed families first, in a seeded order;
attention recovery only from math interruptions), each crossed with every problem. The problem is
a user turn placed after the last exchange before the trigger, with the answer-format hint; the
assistant turn after it is left empty (``math_reply_turn``): the evaluated model writes it in
conversation (``triggerbench eval``), then the trigger arrives. Rows keep the ``pm_*`` columns
(so the PM judge and Slot Match apply unchanged) and add ``aime_id``, ``aime_answer`` and the
math turn indices. A build without a problem source writes no ``aime_probe`` config and drops
one item with reason ``no_aime_source``.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline import tokenizer
from pipeline.blueprints.schema import TIME_FORMAT
from pipeline.seeding import derive_seed
from pipeline.assemble import group_rows, write_groups
from pipeline.stage import BuildSetting, Dropped, Item, Stage, StageContext, StageOutput
from pipeline.vocabulary import DropReason
from stages.distractors.resolve import DistractorSourceError, resolve, setting_dir

if TYPE_CHECKING:
    from pipeline.release import ReleaseWriter
    from pipeline.runner import RunResult
    from pipeline.stats import RowStats

FORMAT_HINT = "Please reason step by step, and put your final answer within \\boxed{}."
MATH_ASK = "Different topic for a moment: my niece sent me this competition problem and I'm stuck. {problem}\n\n{hint}"
HUB_ID = "math-ai/aime25"


class AimeParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    pairs_per_dimension: int = Field(20, ge=1)
    attention_recovery_subtype: str = "math_interruption"


def load_problems(source: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{"id", "problem", "answer": int}]`` from a resolved source (local JSONL files or a Hub id)."""
    if source["kind"] == "local":
        rows = []
        for relative in source["files"]:
            path = Path(source["location"]) / relative
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as error:
                        raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from None
    else:
        import datasets

        rows = list(datasets.load_dataset(source["location"], split="test"))
    problems = []
    for index, row in enumerate(rows):
        try:
            problems.append({"id": str(row.get("id", index)), "problem": str(row["problem"]), "answer": int(row["answer"])})
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{source['location']}: problem {index}: needs 'problem' and an integer 'answer'") from None
    return sorted(problems, key=lambda p: (len(p["id"]), p["id"]))


def _order(ctx: StageContext, key: str) -> int:
    return derive_seed(ctx.seed, key, "aime_probe")


def pick_pairs(rows: list[Item], per_dimension: int, ar_subtype: str, ctx: StageContext) -> list[Item]:
    """Implicit Pos-Clean base rows of the test split: per dimension, one row per seed family in a
    seeded family order, round after round, until ``per_dimension`` rows."""
    candidates: dict[str, dict[str, list[Item]]] = {}
    for row in rows:
        if (row["config"], row["split"], row.get("variant")) != ("pm_base", "test", "pos_clean"):
            continue
        if row["dimension"] == "attention_recovery" and row["subtype"] != ar_subtype:
            continue
        candidates.setdefault(row["dimension"], {}).setdefault(row["seed_id"], []).append(row)
    picked: list[Item] = []
    for dimension in sorted(candidates):
        families = sorted(candidates[dimension].items(), key=lambda kv: _order(ctx, kv[0]))
        queues = [sorted(members, key=lambda r: _order(ctx, r["id"])) for _, members in families]
        chosen: list[Item] = []
        while len(chosen) < per_dimension and any(queues):
            for queue in queues:
                if queue and len(chosen) < per_dimension:
                    chosen.append(queue.pop(0))
        picked += chosen
    return picked


def _stamp(content: str) -> datetime:
    return datetime.strptime(content[1:17], TIME_FORMAT)


def math_turns(problems: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Each problem's math user turn (without its timestamp) and its tokens, counted once for every row
    (a ``[stamp]`` prefix and the body after it tokenize independently, as in the long contexts)."""
    asks = [MATH_ASK.format(problem=problem["problem"], hint=FORMAT_HINT) for problem in problems]
    return [(ask, tokenizer.count(" " + ask)) for ask in asks]


def probe_rows(row: Item, problems: list[dict[str, Any]], asks: list[tuple[str, int]],
               provenance: dict[str, Any]) -> list[Item]:
    """One row's probes: its history, each problem's math turn and an empty reply slot, then the trigger."""
    messages = row["messages"]
    history, trigger = messages[:-1], messages[-1]
    last_user = next(m for m in reversed(history) if m["role"] == "user")
    before, after = _stamp(last_user["content"]), _stamp(trigger["content"])
    at = (before + (after - before) / 2).replace(second=0, microsecond=0).strftime(TIME_FORMAT)  # halfway
    stamp_tokens = tokenizer.count(f"[{at}]")
    base_id = row["id"].rsplit(".", 1)[0]
    shared = {
        **{k: row[k] for k in ("blueprint_id", "seed_id", "dimension", "subtype", "domain", "variant", "constraint_form",
                               "constraint_turns", "reference_intent", "gold_slots", "expected", "cwe")},
        "config": "aime_probe", "split": "test", "context": "base", "trigger_turn": len(history) + 2,
        "resolution_turn": None, "math_turn": len(history), "math_reply_turn": len(history) + 1,
        "n_turns": len(history) + 3, "distractor_source": None, "filler_turns": row.get("filler_turns") or [],
        "injected_turns": [], "provenance": json.dumps({**json.loads(row["provenance"]), **provenance}, sort_keys=True),
    }
    out = []
    for problem, (ask, ask_tokens) in zip(problems, asks):
        pid = problem["id"]
        out.append({
            **shared,
            "id": f"{base_id}.aime{int(pid):02d}" if pid.isdigit() else f"{base_id}.aime-{pid}",
            "messages": [*history, {"role": "user", "content": f"[{at}] {ask}"}, {"role": "assistant", "content": ""},
                         trigger],
            "aime_id": pid,
            "aime_answer": problem["answer"],
            "n_tokens": row["n_tokens"] + stamp_tokens + ask_tokens,
        })
    return out


class AimeProbe(Stage):
    name = "aime_probe"
    inputs = ("variants",)
    Params = AimeParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("aime",)

    @classmethod
    def provide_environment(cls, setting: BuildSetting) -> dict[str, Any]:
        """``aime``: the AIME-2025 problems (``aime2025/*.jsonl`` in the distractors directory, else the
        Hub dataset), or None when neither is there (the stage then drops with ``no_aime_source``)."""
        try:
            return {"aime": resolve("aime_probe", ["aime2025"], setting_dir(setting)).as_environment()}
        except DistractorSourceError:
            return {"aime": None}

    def write_release(self, writer: ReleaseWriter, run: RunResult, stats: RowStats) -> None:
        """The ``aime_probe`` config (test split only), when there were problems to pair."""
        write_groups(writer, group_rows(run.outputs[self.name].items))

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        source = ctx.environment.get("aime")
        if not source:
            why = f"no AIME-2025 problems: no aime2025/*.jsonl under the distractors directory and {HUB_ID} unreachable"
            return StageOutput(items=[], dropped=[Dropped("aime_probe", DropReason.NO_AIME_SOURCE, why)], stats={})
        problems = load_problems(source)
        pairs = pick_pairs(inputs["variants"], self.params.pairs_per_dimension,
                           self.params.attention_recovery_subtype, ctx)
        provenance = {"aime_probe": self.code_version()[:12], "aime_source": source["location"]
                      if source["kind"] == "hub" else "/".join(source["files"])}
        asks = math_turns(problems)
        items = [probe for row in ctx.progress(pairs, desc="aime_probe")
                 for probe in probe_rows(row, problems, asks, provenance)]
        per_dimension = Counter(item["dimension"] for item in items)
        return StageOutput(items=items, dropped=[], stats={"problems": len(problems), "pairs": len(pairs),
                                                           "rows_per_dimension": dict(sorted(per_dimension.items()))})
