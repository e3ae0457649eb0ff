"""The long-context release configs: base rows with a ``stretch`` plan's snippets injected.

In: the base rows (``variants``), the plans (``stretch``) and the snippets (``distractor_pool``) of
a build. Out: ``pm_<N>k``, ``rm_<N>k`` and ``explicit_40k`` rows, streamed into the release
(``write_long_configs``, asked for by :meth:`Stretch.write_release <stages.stretch.Stretch.write_release>`);
``materialize`` makes one row.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pipeline.assemble import group_rows
from pipeline.blueprints.schema import TIME_FORMAT
from pipeline.forked import worker_count
from pipeline.hashing import combine, sha256_json, source_digest
from pipeline.release import SplitJob
from pipeline.schemas import schema_for
from pipeline.stage import Item

if TYPE_CHECKING:
    from pipeline.release import ReleaseWriter
    from pipeline.runner import RunResult
    from pipeline.stats import RowStats


def write_long_configs(writer: ReleaseWriter, run: RunResult, stats: RowStats) -> None:
    """Materialize ``pm_*k``, ``rm_*k`` and ``explicit_40k`` from base rows and stretch plans, streaming."""
    base_groups = group_rows(run.outputs["variants"].items)
    plans = {(p["blueprint_id"], p["context"]): p for p in run.outputs["stretch"].items}
    snippets = {s["id"]: s for s in run.outputs["distractor_pool"].items}
    pool = run.fingerprints.get("distractor_pool") or sha256_json(run.outputs["distractor_pool"].items)  # snippets' content
    row_digests: dict[str, dict[str, str]] = {}  # base config -> row id -> digest
    contexts = sorted({context for _, context in plans}, key=lambda c: int(c[:-1]))
    families = [("pm", "pm_base", contexts), ("rm", "rm_base", contexts), ("explicit", "explicit_base", ["40k"])]
    splits: list[SplitJob] = []
    for family, base_config, wanted in families:
        for context in wanted:
            name = f"{family}_{context}"
            for split in ("test", "dev"):
                rows = [row for row in base_groups.get((base_config, split), []) if (row["blueprint_id"], context) in plans]
                row_plans = [plans[(row["blueprint_id"], context)] for row in rows]
                splits.append(SplitJob(name, split, schema_for(name), functools.partial(_long_rows, rows, row_plans, snippets),
                                       _rows_key(rows, row_plans, pool, row_digests.setdefault(base_config, {}))))
    writer.prewrite(splits, worker_count())  # every split in forked workers; the calls below link them
    for job in splits:
        writer.write_config(job.config, job.split, job.schema, job.rows(), observe=stats.observer(job.config), key=job.key)


def _long_rows(rows: list[dict], plans: list[Item], snippets: dict[str, Item]) -> Iterator[dict]:
    return (materialize(row, plan, snippets) for row, plan in zip(rows, plans))


def _rows_key(rows: list[dict], plans: list[Item], pool: str, row_digests: dict[str, str]) -> str:
    """What a long config's split is made from: its base rows, their plans, the snippet pool and this code
    (``row_digests``: the base config's row digests by id, each computed once: every length reads them)."""
    for row in rows:
        if row["id"] not in row_digests:
            row_digests[row["id"]] = sha256_json(row)
    return combine(source_digest(sys.modules[__name__]), *(row_digests[row["id"]] for row in rows),
                   sha256_json(plans), pool)


def shifted(at: str, minutes: int) -> str:
    """``at`` (a ``TIME_FORMAT`` stamp) moved back ``minutes``."""
    return (datetime.strptime(at, TIME_FORMAT) - timedelta(minutes=minutes)).strftime(TIME_FORMAT)


def _move_back(message: dict, minutes: int) -> dict:
    """A rendered message with its ``[timestamp]`` prefix (user turns) moved back ``minutes``."""
    if not minutes or message["role"] != "user":
        return message
    stamp, _, body = message["content"].partition("] ")
    return {**message, "content": f"[{shifted(stamp[1:], minutes)}] {body}"}


def materialize(row: dict, plan: Item, snippets: dict[str, Item]) -> dict:
    """The long-context row: the base row with the plan's chunks injected and its user turns retimed."""
    stamps = iter(plan["timestamps"])
    picks = iter(plan["snippets"])
    chunks: dict[int, list[dict]] = {}
    for at, count in plan["chunks"]:
        chunk = chunks.setdefault(at, [])
        for _ in range(count):
            snippet_id, start, end = next(picks)
            for role, content in snippets[snippet_id]["messages"][start:end]:
                chunk.append({"role": role, "content": f"[{next(stamps)}] {content}" if role == "user" else content})
    shifts = iter(plan["base_shifts"])
    messages: list[dict] = []
    injected: list[int] = []
    new_index: list[int] = []  # base message index -> long row index
    for i, message in enumerate(row["messages"]):
        for chunk_message in chunks.get(i, []):
            injected.append(len(messages))
            messages.append(chunk_message)
        new_index.append(len(messages))
        messages.append(_move_back(message, next(shifts)) if message["role"] == "user" else message)

    def shift(index: int | None) -> int | None:
        return None if index is None else new_index[index]

    long_row = {
        **row,
        "id": row["id"].rsplit(".", 1)[0] + f".{plan['context']}",
        "context": plan["context"],
        "messages": messages,
        "constraint_turns": [shift(i) for i in row["constraint_turns"]],
        "n_tokens": row["n_tokens"] + plan["injected_tokens"],
        "n_turns": len(messages),
        "distractor_source": plan["source"],
        "provenance": json.dumps({**json.loads(row["provenance"]), "stretch": plan["stretch"], "plan": plan["id"]},
                                 sort_keys=True),
    }
    if "trigger_turn" in row:
        long_row.update(trigger_turn=len(messages) - 1, resolution_turn=shift(row["resolution_turn"]),
                        filler_turns=[shift(i) for i in row["filler_turns"]], injected_turns=injected)
    return long_row
