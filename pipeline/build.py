"""``triggerbench build``: run the stages, then write the release.

``build(options)`` -> the release directory (or None with ``--only``). Stage outputs
come from the content-addressed cache when nothing changed; the release is written to
a staging directory, audited there, hashed into ``manifest.json`` and renamed.
"""

from __future__ import annotations

import logging
import os
import platform
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pipeline
from pipeline import registry
from pipeline.cache import ArtifactStore, ItemCache
from pipeline.card import render_card
from pipeline.config import REPO_ROOT, BuildConfig, load_config
from pipeline.release import ReleaseWriter
from pipeline.runner import RunResult, run_stages, select
from pipeline.schemas import schema_for
from pipeline.stage import Stage, StageContext
from pipeline.stats import RowStats
from stages.distractors.resolve import default_dir, resolve
from stages.load_blueprints import corpus_digest
from stages.stretch import materialize

log = logging.getLogger("triggerbench")
TOOLS = ("datasets", "huggingface-hub", "pyarrow", "polars", "tiktoken", "sentence-transformers", "torch", "openai", "pydantic")


@dataclass
class BuildOptions:
    config_path: Path | None = None
    out: Path = Path("releases")
    version: str | None = None
    seed: int | None = None
    only: list[str] = field(default_factory=list)
    limit: int | None = None
    distractors_dir: Path | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    cache_dir: Path | None = None


@dataclass
class BuildOutcome:
    release: Path | None
    run: RunResult
    log_file: Path
    seconds: float


def default_cache_dir() -> Path:
    return Path(os.environ.get("TRIGGERBENCH_CACHE", REPO_ROOT / ".cache"))


def _setup_log(cache_dir: Path) -> tuple[Path, logging.Handler]:
    logs = cache_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / f"build-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return path, handler


def environment(config: BuildConfig, base: Path, options: BuildOptions) -> dict[str, Any]:
    """Facts outside items and parameters that change outputs (part of fingerprints)."""
    blueprints_dir = config.blueprints_path(base)
    llm = "offline-rules"
    if options.llm_base_url:
        from urllib.parse import urlsplit

        parts = urlsplit(options.llm_base_url)
        llm = {"endpoint": f"{parts.scheme}://{parts.hostname}{':' + str(parts.port) if parts.port else ''}{parts.path}",
               "model": options.llm_model}
    return {"blueprints_dir": str(blueprints_dir), "blueprints_digest": corpus_digest(blueprints_dir), "llm": llm}


def distractor_environment(config: BuildConfig, base: Path, options: BuildOptions) -> dict[str, Any]:
    """Resolve each dimension's distractor source (local directory, else Hub id, else an error)."""
    if options.distractors_dir is not None:
        directory: Path | None = options.distractors_dir.resolve()
    elif config.distractors.dir:
        directory = (base / config.distractors.dir).resolve()
    else:
        directory = default_dir(REPO_ROOT)
    routes, sources = {}, {}
    for key, names in sorted(config.distractors.sources.items()):
        resolved = resolve(key, names, directory)
        routes[key] = resolved.name
        sources[resolved.name] = {"name": resolved.name, "kind": resolved.kind, "location": resolved.location,
                                  "files": list(resolved.files), "digest": resolved.digest}
    return {"routes": routes, "sources": sources}


def build(options: BuildOptions) -> BuildOutcome:
    """Run a build; see the module docstring."""
    started = time.monotonic()
    config, base = load_config(options.config_path, version=options.version, seed=options.seed)
    cache_dir = options.cache_dir or default_cache_dir()
    log_file, handler = _setup_log(cache_dir)
    try:
        env = environment(config, base, options)
        stages = select(registry.build_stages(config, options.limit), options.only)
        if any(stage.name == "distractor_pool" for stage in stages):
            env["distractors"] = distractor_environment(config, base, options)
        log.info("build %s seed %d: %d stages, cache %s", config.version, config.seed, len(stages), cache_dir)

        def make_context(stage: Stage) -> StageContext:
            return StageContext(seed=config.seed, stage=stage.name, environment=env, log=log)

        items = ItemCache(cache_dir / "items.sqlite")
        try:
            run = run_stages(stages, make_context, ArtifactStore(cache_dir), items)
        finally:
            items.close()
        release = None
        if not options.only:
            release = write_release(config, run, options.out, env)
            log.info("release written to %s", release)
        seconds = time.monotonic() - started
        computed = [r.name for r in run.records if not r.cached]
        log.info("build finished in %.1fs; stages recomputed: %s", seconds, ", ".join(computed) or "none")
        return BuildOutcome(release=release, run=run, log_file=log_file, seconds=seconds)
    finally:
        log.removeHandler(handler)
        handler.close()


def _tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "triggerbench": pipeline.__version__}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _blueprint_rows(items: Iterable[dict]) -> dict[str, list[dict]]:
    import json

    rows: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        bp = item["blueprint"]
        negative, explicit, rm = bp.get("negative") or {}, bp.get("explicit") or {}, bp.get("rm") or {}
        rows[item["split"]].append({
            "id": item["id"], "seed_id": item["seed_id"], "dimension": bp["dimension"], "subtype": bp["subtype"],
            "domain": bp["domain"], "topic": bp["topic"], "cwe": bp.get("cwe"),
            "constraints": [c["text"] for c in bp["constraints"]], "trigger": bp["trigger"]["text"],
            "overload": bp["overload"], "negative_kind": negative.get("kind"), "negative_text": negative.get("text"),
            "explicit_method": explicit.get("method"), "explicit_text": explicit.get("text"),
            "reference_intent": bp["reference_intent"], "gold_slots": bp["gold_slots"],
            "rm_question": rm.get("question"), "rm_answer": rm.get("answer"), "rm_aliases": rm.get("aliases"),
            "slot_choice": json.dumps(item["slot_choice"], sort_keys=True),
            "blueprint": json.dumps(bp, sort_keys=True, ensure_ascii=False),
            "provenance": json.dumps(item["provenance"], sort_keys=True),
        })
    return rows


def _group_rows(items: Iterable[dict]) -> dict[tuple[str, str], list[dict]]:
    grouped: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in items:
        grouped[(row["config"], row["split"])].append(row)
    for rows in grouped.values():
        rows.sort(key=lambda r: r["id"])
    return grouped


def _fallbacks(env: dict[str, Any]) -> dict[str, Any]:
    distractors = env.get("distractors", {})
    return {
        "llm": env["llm"] if isinstance(env["llm"], str) else "configured",
        "distractor_sources": {key: f"{name} ({distractors['sources'][name]['kind']})"
                               for key, name in distractors.get("routes", {}).items()},
    }


def _write_long_configs(writer: ReleaseWriter, stats: RowStats, base_groups: dict, run: RunResult) -> None:
    """Materialize ``pm_*k``, ``rm_*k`` and ``explicit_40k`` from base rows and stretch plans."""
    plans = {(p["blueprint_id"], p["context"]): p for p in run.outputs["stretch"].items}
    snippets = {s["id"]: s for s in run.outputs["distractor_pool"].items}
    contexts = sorted({context for _, context in plans}, key=lambda c: int(c[:-1]))
    families = [("pm", "pm_base", contexts), ("rm", "rm_base", contexts), ("explicit", "explicit_base", ["40k"])]
    for family, base_config, wanted in families:
        for context in wanted:
            name = f"{family}_{context}"
            for split in ("test", "dev"):
                rows = base_groups.get((base_config, split), [])
                long_rows = (materialize(row, plans[(row["blueprint_id"], context)], snippets)
                             for row in rows if (row["blueprint_id"], context) in plans)
                writer.write_config(name, split, schema_for(name), long_rows, observe=stats.observer(name))


def write_release(config: BuildConfig, run: RunResult, out: Path, env: dict[str, Any]) -> Path:
    """Write every config, exclusions, card and manifest; atomically."""
    writer = ReleaseWriter(out, config.version)
    stats = RowStats()
    try:
        for split, rows in sorted(_blueprint_rows(run.outputs["split"].items).items()):
            writer.write_config("blueprints", split, schema_for("blueprints"), rows)
        base_groups = _group_rows(run.outputs["variants"].items)
        for (name, split), rows in sorted(base_groups.items()):
            writer.write_config(name, split, schema_for(name), rows, observe=stats.observer(name))
        if "stretch" in run.outputs:
            _write_long_configs(writer, stats, base_groups, run)
        for name, output in run.outputs.items():
            if output.dropped:
                writer.write_jsonl(f"exclusions/{name}.jsonl", (d.as_json() for d in output.dropped))
        manifest = {
            "name": "triggerbench",
            "version": config.version,
            "seed": config.seed,
            "pipeline_version": pipeline.__version__,
            "config": config.model_dump(mode="json"),
            "fallbacks": _fallbacks(env),
            "tools": _tool_versions(),
            "stages": [record.manifest_entry() for record in run.records],
        }
        writer.write_text("README.md", render_card(manifest, writer.configs, stats, sections={}))
        return writer.finish(manifest)
    except BaseException:
        writer.abort()
        raise
