"""Run stages in order with content-addressed caching and per-item resume.

For each stage the runner computes its fingerprint (code version, parameters, seed,
environment, input fingerprints). A stored artifact with that fingerprint is loaded
instead of recomputed. A :class:`~pipeline.stage.MapStage` that does run looks up each
item in the item cache first and stores every new result as soon as it is computed, so
an interrupted build resumes without redoing finished items.

Only definitive results are cached. An item whose processing saw a transient LLM failure
(:data:`pipeline.llm.errors.TRANSIENT_ERRORS`: the endpoint down, slow, overloaded or
rate-limiting past the retries) is kept out of the item cache, and a stage output with
such items is not stored: it gets an "incomplete" fingerprint, so nothing downstream is
cached under the complete one either. More than ``max_transient_share`` of a stage's
items affected stops the build (:class:`~pipeline.llm.errors.TransientFailures`); the
next build retries exactly those items.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.cache import ArtifactStore, ItemCache
from pipeline.forked import compute_items, worker_count
from pipeline.hashing import combine, sha256_json
from pipeline.llm.errors import TransientFailures
from pipeline.llm.stats import LLMStats
from pipeline.stage import Drop, Dropped, MapStage, Stage, StageContext, StageOutput
from pipeline.vocabulary import DropReason, llm_drop_reason

log = logging.getLogger("triggerbench")
_LLM_COUNTERS = ("requests", "cache_hits", "retries", "rate_limited", "transient_errors", "repairs", "failures",
                 "prompt_tokens", "completion_tokens", "timeouts", "concurrency_cuts", "effective_concurrency")


@dataclass
class StageRecord:
    """What the manifest says about one stage run."""

    name: str
    fingerprint: str
    items_in: int
    items_out: int
    dropped: dict[str, int]
    cached: bool
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)

    def manifest_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": self.name,
            "fingerprint": self.fingerprint,
            "items_in": self.items_in,
            "items_out": self.items_out,
            "dropped": dict(sorted(self.dropped.items())),
        }
        entry.update(self.extra)
        return entry


@dataclass
class RunResult:
    """Every stage's output, fingerprint and manifest record, in build order."""

    outputs: dict[str, StageOutput]
    fingerprints: dict[str, str]
    records: list[StageRecord]

    def forget_items(self) -> None:
        """Drop the stages' items and drop records, keeping their stats (what a card reads): once the release
        is written it holds the rows, and a default build's items are about a gigabyte."""
        self.outputs = {name: StageOutput(items=[], stats=output.stats) for name, output in self.outputs.items()}


class UnknownStage(ValueError):
    """``--only`` named a stage that is not part of this build."""


def select(stages: list[Stage], only: list[str] | None) -> list[Stage]:
    """The named stages plus everything they depend on, in build order."""
    if not only:
        return stages
    by_name = {stage.name: stage for stage in stages}
    unknown = [name for name in only if name not in by_name]
    if unknown:
        raise UnknownStage(f"unknown stage(s) {', '.join(unknown)}; stages are: {', '.join(by_name)}")
    needed: set[str] = set()
    pending = list(only)
    while pending:
        name = pending.pop()
        if name not in needed:
            needed.add(name)
            pending.extend(by_name[name].inputs)
    return [stage for stage in stages if stage.name in needed]


def run_stages(stages: list[Stage], make_context: Any, store: ArtifactStore, items: ItemCache,
               max_transient_share: float = 0.0, check: Any = None) -> RunResult:
    """Run ``stages`` in order; ``make_context(stage)`` gives each its StageContext.

    ``check(stage, output, inputs)``, when given, runs after each stage and may raise to stop
    the build (the oracle guard, :mod:`pipeline.oracle_guard`).

    Raises :class:`TransientFailures` when more than ``max_transient_share`` of a stage's
    items failed for transient LLM reasons (after the definitive results were cached).
    """
    result = RunResult(outputs={}, fingerprints={}, records=[])
    for stage in stages:
        ctx: StageContext = make_context(stage)
        missing = [name for name in stage.inputs if name not in result.outputs]
        if missing:
            raise RuntimeError(f"stage {stage.name} needs {missing}, which run later or not at all")
        fingerprint = stage.fingerprint([result.fingerprints[name] for name in stage.inputs], ctx)
        started = time.monotonic()
        cached = store.has(stage.name, fingerprint)
        if cached:
            output = store.load(stage.name, fingerprint)
            log.info("stage %-16s cached      (fingerprint %s)", stage.name, fingerprint[:12])
        else:
            log.info("stage %-16s running     (fingerprint %s)", stage.name, fingerprint[:12])
            inputs = {name: result.outputs[name].items for name in stage.inputs}
            if isinstance(stage, MapStage):
                output = _run_map(stage, inputs, ctx, items)
            else:
                before = _transient_counts(ctx)
                output = stage.run(inputs, ctx)
                reasons = _transient_counts(ctx) - before
                output.incomplete = _transient_ids(output, reasons)
                if reasons:
                    output.stats["transient_failures"] = dict(reasons)
            _check_ids(stage.name, output)
            if output.incomplete:
                fingerprint = _guard_incomplete(stage, fingerprint, ctx, output, inputs, max_transient_share)
            else:
                store.save(stage.name, fingerprint, output)
        seconds = time.monotonic() - started
        items_in = len(result.outputs[stage.inputs[0]].items) if stage.inputs else output.stats.get("items_in", len(output.items))
        record = StageRecord(
            name=stage.name,
            fingerprint=fingerprint,
            items_in=items_in,
            items_out=len(output.items),
            dropped=dict(Counter(d.reason for d in output.dropped)),
            cached=cached,
            seconds=seconds,
            extra={k: v for k, v in output.stats.items() if k in {"llm", "filters"}},
        )
        if output.incomplete:
            record.extra["incomplete"] = len(output.incomplete)
        if cached and "llm" in record.extra:  # nothing was sent this time: the artifact was reused
            record.extra["llm"] = {**record.extra["llm"], **{key: 0 for key in _LLM_COUNTERS if key in record.extra["llm"]},
                                   "reused_artifact": True}
        if not cached:
            log.info("stage %-16s done in %.1fs: %d in, %d out, %d dropped", stage.name, seconds, record.items_in,
                     record.items_out, len(output.dropped))
        if check is not None:
            check(stage, output, {name: result.outputs[name].items for name in stage.inputs})
        result.outputs[stage.name] = output
        result.fingerprints[stage.name] = fingerprint
        result.records.append(record)
    return result


def _run_map(stage: MapStage, inputs: dict[str, list[dict]], ctx: StageContext, cache: ItemCache) -> StageOutput:
    main_name, *side_names = stage.inputs
    main = inputs[main_name]
    base = combine(stage.name, stage.code_version(), sha256_json(stage.params.model_dump(mode="json")), str(ctx.seed),
                   sha256_json({k: ctx.environment.get(k) for k in stage.environment_keys()}),
                   *(stage.side_input_digest(name, inputs[name]) for name in side_names))
    keys = [combine(base, sha256_json(item)) for item in main]
    found = cache.get_many(keys)
    log.info("stage %-16s %d of %d items cached, %d to compute", stage.name, len(found), len(main), len(main) - len(found))
    output = StageOutput(items=[])
    llm = ctx.services.get("llm")
    before = llm.stats.snapshot() if llm is not None else None
    todo = [item for item, key in zip(main, keys) if key not in found]
    if todo:
        stage.setup({name: inputs[name] for name in side_names}, ctx)
        stage.prepare(todo, ctx)
    computed = compute_items(stage, todo, ctx, worker_count())
    try:
        for item, key in ctx.progress(list(zip(main, keys)), total=len(main), desc=stage.name):
            stored = found.get(key)
            if stored is None:
                transient_before = _transient_counts(ctx)
                stored = next(computed)
                transient = _transient_counts(ctx) - transient_before
                if transient:
                    output.incomplete.append(item["id"])  # an outage is not a result: never cached
                    reasons = Counter(output.stats.get("transient_failures", {})) + transient
                    output.stats["transient_failures"] = dict(reasons)
                else:
                    cache.put(key, stored)
            if "drop" in stored:
                output.dropped.append(Dropped(item["id"], stored["drop"], stored.get("detail", "")))
                continue
            output.dropped.extend(Dropped(d["id"], d["reason"], d.get("detail", "")) for d in stored.get("dropped", []))
            if stored["items"]:
                output.items.extend(stored["items"])
            elif not stored.get("dropped"):
                output.dropped.append(Dropped(item["id"], DropReason.NO_OUTPUT, "the stage produced nothing for this item"))
    finally:
        computed.close()  # an error above stops the workers too
    cache.flush()
    if llm is not None and "llm" in stage.environment_keys():
        output.stats["llm"] = llm.stats.since(before).as_dict()
    return output


def _llm_stats(ctx: StageContext) -> list[LLMStats]:
    """The statistics of every distinct LLM client among the stage's services."""
    found: dict[int, LLMStats] = {}
    for service in ctx.services.values():
        stats = getattr(service, "stats", None)
        if isinstance(stats, LLMStats):
            found[id(stats)] = stats
    return list(found.values())


def _transient_counts(ctx: StageContext) -> Counter[str]:
    """Transient LLM failures so far over the stage's clients, by reason."""
    total: Counter[str] = Counter()
    for stats in _llm_stats(ctx):
        total.update(stats.transient_failures())
    return total


def _transient_ids(output: StageOutput, reasons: Counter[str]) -> list[str]:
    """Items of a whole-collection stage dropped for the transient ``reasons`` (one marker if none named)."""
    if not reasons:
        return []
    names = {llm_drop_reason(reason) for reason in reasons}
    ids = sorted({d.item_id for d in output.dropped if d.reason in names})
    return ids or ["(whole stage)"]


def _guard_incomplete(stage: Stage, fingerprint: str, ctx: StageContext, output: StageOutput, inputs: dict[str, list[dict]],
                      max_share: float) -> str:
    """Stop when too many items failed transiently; else the fingerprint of this one-off output."""
    total = len(inputs[stage.inputs[0]]) if stage.inputs else max(len(output.items), 1)
    failed = len(output.incomplete)
    reasons = output.stats.get("transient_failures", {})
    endpoints = sorted({str(s.endpoint) for s in _llm_stats(ctx)})
    log.warning("stage %s: %d of %d items failed with transient LLM errors (%s); not cached",
                stage.name, failed, total, reasons)
    if failed > max_share * total:
        raise TransientFailures(stage.name, failed, total, dict(reasons), ", ".join(endpoints), max_share)
    return combine(fingerprint, "incomplete", *sorted(output.incomplete))


def _check_ids(stage: str, output: StageOutput) -> None:
    seen: set[str] = set()
    for item in output.items:
        item_id = item.get("id")
        if not isinstance(item_id, str) or item_id in seen:
            raise RuntimeError(f"stage {stage} produced a missing or duplicate id: {item_id!r}")
        seen.add(item_id)


__all__ = ["Drop", "RunResult", "StageRecord", "run_stages", "select"]
