"""One ``triggerbench eval`` invocation: rows in, a run directory out.

``runs/NAME/`` receives ``responses.parquet``, ``results.json``, ``report.md``,
``accuracy_vs_context.png``, ``run.json`` (what the run is and this invocation's request
statistics) and ``requests.sqlite`` (the request cache that makes it resumable). A run
directory belongs to one model, judge, setting and release: reusing it for another is refused.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline.llm import safe_endpoint
from stages.eval import memory
from stages.eval.report import summarize, write_report
from stages.eval.responses import record_line, write_responses
from stages.eval.run import EvalOptions, Record, evaluate, records_for
from stages.eval.source import config_kind, locate, read_rows


class RunDirError(ValueError):
    """The run directory belongs to a different run."""


@dataclass(frozen=True)
class Selection:
    """Which rows to evaluate."""

    source: str
    configs: tuple[str, ...]
    split: str = "test"
    revision: str | None = None
    limit: int | None = None
    per_dimension: int | None = None


@dataclass
class Outcome:
    run_dir: Path
    results: dict[str, Any]
    stats: dict[str, Any]
    records: list[Record]


def _identity(selection: Selection, options: EvalOptions, release_name: str) -> dict[str, Any]:
    return {"release": release_name, "revision": selection.revision, "split": selection.split,
            "setting": options.setting, "model": options.model, "judge_model": options.judge_name,
            "temperature": options.temperature, "max_tokens": options.max_tokens, "seed": options.seed,
            **({"memory": options.memory} if options.memory != "none" else {})}


def _claim(run_dir: Path, identity: dict[str, Any]) -> None:
    path = run_dir / "run.json"
    if path.exists():
        try:
            previous = json.loads(path.read_text(encoding="utf-8")).get("identity", {})
        except json.JSONDecodeError:
            raise RunDirError(f"{path}: not JSON; remove it or choose another --out") from None
        changed = [k for k, v in identity.items() if previous.get(k) != v]
        if changed:
            detail = ", ".join(f"{k}: {previous.get(k)!r} -> {identity[k]!r}" for k in changed)
            raise RunDirError(f"{run_dir} holds another run ({detail}); choose another --out")
    run_dir.mkdir(parents=True, exist_ok=True)


def run_eval(selection: Selection, options: EvalOptions, run_dir: Path, resamples: int = 1000,
             chunk: int | None = None) -> Outcome:
    """Evaluate the selected rows (resuming from the run directory's cache) and write every output."""
    source = locate(selection.source, selection.revision)
    records: list[Record] = []
    for config in dict.fromkeys(selection.configs):
        rows = read_rows(source, config, selection.split, selection.limit, selection.per_dimension)
        records += records_for(config, config_kind(config), selection.split, rows)
    identity = _identity(selection, options, source.name)
    _claim(run_dir, identity)
    retriever = memory.open_retriever(run_dir) if memory.needs_retriever(options.memory) else None
    try:
        stats = evaluate(records, options, run_dir, chunk=chunk, retriever=retriever)
    finally:
        if retriever is not None:
            retriever.close()
    write_responses(run_dir / "responses.parquet", records, options)
    meta = {**identity, "source": selection.source, "configs": list(dict.fromkeys(selection.configs)),
            "limit": selection.limit, "per_dimension": selection.per_dimension, "memory": memory.describe(options.memory, retriever)}
    results = summarize([record_line(r, options) for r in records], meta, seed=options.seed, resamples=resamples)
    write_report(run_dir, results)
    shown = {k: v for k, v in asdict(options).items() if k != "api_key"}
    shown.update(base_url=safe_endpoint(options.base_url), judge_base_url=safe_endpoint(options.judge_base_url))
    run_info = {"identity": identity, "options": shown,
                "last_invocation": stats}
    (run_dir / "run.json").write_text(json.dumps(run_info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return Outcome(run_dir, results, stats, records)
