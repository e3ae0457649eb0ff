"""``variants``: a base dialogue -> its benchmark rows (``pm_base``, ``explicit_base``, ``rm_base``).

In: ``dialogues`` items. Out: row items in the release's row schema (``pipeline/schemas.py``) plus ``config`` and ``split``.
The rules of the paper (section 3.3, appendix A.3, A.6, A.7):

- Pos-Clean is the base dialogue; Pos-Over appends the distracting request to the trigger
  turn, so the clean trigger is a verbatim prefix.
- Neg-Clean exists for state tracking and safe coding (the resolving exchange takes the parity
  slot that Pos-Clean fills with a benign update or a thematic exchange) and logical adherence
  (the trigger, or the state turn, flipped to compliant).
- The explicit ablation changes only the constraint turn (append or in-place rewrite),
  for every dimension but safe coding, in each of its variants.
- One RM probe per blueprint (not safe coding): the Pos-Clean context with the question
  appended to the final user turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from pipeline import tokenizer
from pipeline.assemble import blueprint_rows, group_rows, write_groups
from pipeline.schemas import schema_for
from pipeline.stage import Item, MapStage, StageContext
from pipeline.vocabulary import RM_DIMENSIONS
from stages.generate.rm import RMParams, generate_probe

if TYPE_CHECKING:
    from pipeline.release import ReleaseWriter
    from pipeline.runner import RunResult
    from pipeline.stats import RowStats

Turns = list[dict]


def render_messages(turns: Turns) -> list[dict]:
    """Messages with ``[YYYY-MM-DDTHH:MM] `` on every user turn."""
    return [
        {"role": t["role"], "content": f"[{t['at']}] {t['content']}" if t["role"] == "user" else t["content"]}
        for t in turns
    ]


def _with(turns: Turns, index: int, **changes: str) -> Turns:
    copy = [dict(t) for t in turns]
    copy[index].update(changes)
    return copy


def constraint_indices(turns: Turns) -> list[int]:
    return [i for i, t in enumerate(turns) if t["kind"] == "constraint" and t["role"] == "user"]


def variant_turns(dialogue: Item) -> dict[str, tuple[Turns, int | None]]:
    """Turns of each PM variant of a dialogue, with the resolution turn index."""
    bp, turns = dialogue["blueprint"], dialogue["turns"]
    trigger = len(turns) - 1
    out: dict[str, tuple[Turns, int | None]] = {
        "pos_clean": (turns, None),
        "pos_over": (_with(turns, trigger, content=f"{turns[trigger]['content']} {bp['overload']}"), None),
    }
    negative = bp.get("negative")
    if negative is None:
        return out
    if negative["kind"] == "resolution":  # replaces the parity slot: same turn count, positions and times
        at = dialogue["parity_index"]
        resolved = [
            {"role": "user", "content": negative["text"], "at": turns[at]["at"], "kind": "resolution"},
            {"role": "assistant", "content": negative["reply"], "at": None, "kind": "resolution"},
        ]
        out["neg_clean"] = (turns[:at] + resolved + turns[at + 2:], at)
    elif negative["kind"] == "flip_trigger":
        out["neg_clean"] = (_with(turns, trigger, content=negative["text"]), None)
    else:
        index = constraint_indices(turns)[negative["constraint"]]
        flipped = _with(turns, index, content=negative["text"])
        if negative.get("reply") and index + 1 < len(turns) and turns[index + 1]["role"] == "assistant":
            flipped = _with(flipped, index + 1, content=negative["reply"])
        out["neg_clean"] = (flipped, index)
    return out


def explicit_turns(dialogue: Item, turns: Turns) -> Turns | None:
    """The same turns with the explicit constraint; None if the variant flipped that turn."""
    explicit = dialogue["blueprint"].get("explicit")
    if explicit is None:
        return None
    index = constraint_indices(dialogue["turns"])[explicit["constraint"]]
    original = dialogue["turns"][index]["content"]
    if turns[index]["content"] != original:
        return None
    text = f"{original} {explicit['text']}" if explicit["method"] == "append" else explicit["text"]
    return _with(turns, index, content=text)


class VariantParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    llm: RMParams = RMParams()


class Variants(MapStage):
    name = "variants"
    inputs = ("dialogues",)
    Params = VariantParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("llm",)

    def write_release(self, writer: ReleaseWriter, run: RunResult, stats: RowStats) -> None:
        """``blueprints`` (every kept blueprint, after the oracles) and the base configs
        (``pm_base``, ``explicit_base``, ``rm_base``)."""
        for split, rows in sorted(blueprint_rows(run.outputs["oracle_necessity"].items).items()):
            writer.write_config("blueprints", split, schema_for("blueprints"), rows)
        write_groups(writer, group_rows(run.outputs[self.name].items), stats)

    def process(self, item: Item, ctx: StageContext) -> list[Item]:
        counts: dict[str, int] = {}

        def count(text: str) -> int:
            if text not in counts:
                counts[text] = tokenizer.count(text)
            return counts[text]

        provenance = json.dumps({**item["provenance"], "variants": self.code_version()[:12], "seed": ctx.seed,
                                 "filler": item["filler_ids"], "prompt_hash": None}, sort_keys=True)
        rows = []
        for variant, (turns, resolution) in variant_turns(item).items():
            rows.append(_pm_row(item, variant, "implicit", turns, resolution, provenance, count))
            explicit = explicit_turns(item, turns)
            if explicit is not None:
                rows.append(_pm_row(item, variant, "explicit", explicit, resolution, provenance, count))
        if item["blueprint"]["dimension"] in RM_DIMENSIONS and item["blueprint"].get("rm"):
            probe, rm_provenance = None, provenance
            if ctx.services.get("llm") is not None:  # generated + oracle-verified probe (stages/generate/rm.py)
                probe, record = _llm_probe(item, ctx, self.params.llm)
                rm_provenance = json.dumps({**json.loads(provenance), "rm_probe": record,
                                            "prompt_hash": record["attempts"][-1]["prompt_hash"]}, sort_keys=True)
            rows.append(_rm_row(item, rm_provenance, count, probe))
        return rows


def _pm_row(item: Item, variant: str, form: str, turns: Turns, resolution: int | None, provenance: str,
            count: Callable[[str], int]) -> Item:
    bp = item["blueprint"]
    messages = render_messages(turns)
    return {
        "id": f"{item['id']}.{variant}.{form}.base",
        "config": "pm_base" if form == "implicit" else "explicit_base",
        "split": item["split"],
        "blueprint_id": item["id"],
        "seed_id": item["seed_id"],
        "dimension": bp["dimension"],
        "subtype": bp["subtype"],
        "domain": bp["domain"],
        "variant": variant,
        "constraint_form": form,
        "context": "base",
        "messages": messages,
        "constraint_turns": constraint_indices(turns),
        "trigger_turn": len(messages) - 1,
        "resolution_turn": resolution,
        "reference_intent": bp["reference_intent"],
        "gold_slots": bp["gold_slots"],
        "expected": "silent" if variant == "neg_clean" else "intervene",
        "n_tokens": sum(count(m["content"]) for m in messages),
        "n_turns": len(messages),
        "distractor_source": None,
        "filler_turns": [i for i, t in enumerate(turns) if t["kind"] == "filler"],
        "injected_turns": [],
        "cwe": bp.get("cwe"),
        "provenance": provenance,
    }


def _llm_probe(item: Item, ctx: StageContext, params: RMParams) -> tuple[dict | None, dict]:
    turns = item["turns"]
    texts = [t["content"] for t in turns if t["role"] == "user" and t["kind"] in ("constraint", "interruption")]

    def ask(question: str) -> list[dict]:
        return render_messages(_with(turns, len(turns) - 1, content=f"{turns[-1]['content']} {question}"))

    return generate_probe(item, texts, ask, ctx, ctx.services["llm"], params)


def _rm_row(item: Item, provenance: str, count: Callable[[str], int], probe: dict | None = None) -> Item:
    bp, turns = item["blueprint"], item["turns"]
    rm = probe or bp["rm"]
    question = rm["question"]
    asked = _with(turns, len(turns) - 1, content=f"{turns[-1]['content']} {question}")
    messages = render_messages(asked)
    return {
        "id": f"{item['id']}.rm.implicit.base",
        "config": "rm_base",
        "split": item["split"],
        "blueprint_id": item["id"],
        "seed_id": item["seed_id"],
        "dimension": bp["dimension"],
        "context": "base",
        "messages": messages,
        "question": question,
        "reference_answer": rm["answer"],
        "answer_aliases": rm["aliases"],
        "constraint_turns": constraint_indices(asked),
        "n_tokens": sum(count(m["content"]) for m in messages),
        "n_turns": len(messages),
        "distractor_source": None,
        "provenance": provenance,
    }
