"""``triggerbench build``: run the stages, then write the release.

``build(options)`` -> the release directory (or None with ``--only``). Stage outputs
come from the content-addressed cache when nothing changed; the release is written to
a staging directory, audited there, hashed into ``manifest.json`` and renamed.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
import platform
import time
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import pipeline
from pipeline import registry
from pipeline.cache import ArtifactStore, ItemCache
from pipeline import card_sections
from pipeline.assemble import previous_manifest
from pipeline.card import front_matter, render_card
from pipeline.config import DEFAULT_CONFIG, REPO_ROOT, BuildConfig, ConfigError, load_config
from pipeline.empty import EmptyRelease, explain_empty
from pipeline.leftovers import remove_leftovers
from pipeline.llm import LLMClient
from pipeline.oracle_guard import ORACLE_STAGES, guard_oracles
from pipeline.release import ReleaseWriter
from pipeline.runner import RunResult, run_stages, select
from pipeline.shardcache import ShardCache
from pipeline.stage import BuildSetting, Stage, StageContext
from pipeline.stats import RowStats

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
    llm_max_failed_share: float = 0.0
    oracle_base_url: str | None = None
    oracle_model: str | None = None
    oracle_max_drop_share: float = 0.5
    oracle_proceed: bool = False


class DiskFull(Exception):
    """A write failed for lack of space (message names the path and what is free there)."""


@dataclass
class BuildOutcome:
    release: Path | None
    run: RunResult
    log_file: Path
    seconds: float


def default_cache_dir() -> Path:
    return Path(os.environ.get("TRIGGERBENCH_CACHE", REPO_ROOT / ".cache"))


EMBEDDING_CACHE_ENV = "TRIGGERBENCH_EMBEDDING_CACHE"


def embedding_cache_dir(cache_dir: Path) -> Path:
    """Where a build keeps embedding vectors (dialogues, stretch and the audit share them):
    ``$TRIGGERBENCH_EMBEDDING_CACHE`` when set (one directory for several builds, e.g. a test run's), else
    ``<cache>/embeddings``. Vectors are keyed by model and text, so sharing them changes no output."""
    shared = os.environ.get(EMBEDDING_CACHE_ENV)
    return Path(shared) if shared else cache_dir / "embeddings"


def _setup_log(cache_dir: Path) -> tuple[Path, logging.Handler]:
    logs = cache_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / f"build-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return path, handler


def environment(stages: list[Stage], setting: BuildSetting, llm: LLMClient | None) -> dict[str, Any]:
    """Facts outside items and parameters that change outputs (part of fingerprints): the LLM
    endpoint, and what each stage of the build brings (its ``provide_environment``)."""
    env: dict[str, Any] = {"llm": llm.environment() if llm else "offline-rules"}
    for stage in stages:
        env.update(type(stage).provide_environment(setting))
    return env


def build_setting(config: BuildConfig, base: Path, options: BuildOptions) -> BuildSetting:
    """The setting stages state their environment from; ``--distractors-dir`` wins over the config's."""
    if options.distractors_dir is not None:
        directory: Path | None = options.distractors_dir.resolve()
    elif config.distractors.dir:
        directory = (base / config.distractors.dir).resolve()
    else:
        directory = None
    return BuildSetting(config, base, directory)


def shortcut_settings(config: BuildConfig) -> Any:
    """The shortcut gate's settings from the config's ``audit.shortcuts``; ConfigError naming the field."""
    try:
        return registry.shortcut_settings_from(config.audit)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise ConfigError(f"audit.shortcuts.{field}: {error['msg']}") from None


def build(options: BuildOptions) -> BuildOutcome:
    """Run a build; see the module docstring."""
    started = time.monotonic()
    _check_flags(options)
    config, base = load_config(options.config_path, version=options.version, seed=options.seed)
    shortcut_settings(config)  # a bad threshold fails before any stage runs
    cache_dir = options.cache_dir or default_cache_dir()
    log_file, handler = _setup_log(cache_dir)
    vectors = embedding_cache_dir(cache_dir)
    try:
        remove_leftovers(options.out, cache_dir)  # staging dirs and temp files of builds that no longer run
        llm = LLMClient.from_settings(base_url=options.llm_base_url, model=options.llm_model,
                                      cache_path=cache_dir / "llm" / "requests.sqlite")
        if llm is not None:
            llm.check_reachable()  # an unreachable endpoint stops the build before any stage runs
        oracle = _oracle_client(options, llm, cache_dir)
        stages = select(_stages_of(config, options), options.only)
        env = environment(stages, build_setting(config, base, options), llm)
        oracle_env = {**env, "llm": oracle.environment()} if oracle is not None else env
        log.info("build %s seed %d: %d stages, cache %s", config.version, config.seed, len(stages), cache_dir)

        def make_context(stage: Stage) -> StageContext:
            if oracle is not None and stage.name in ORACLE_STAGES:  # the oracles' own endpoint and model
                return StageContext(seed=config.seed, stage=stage.name, environment=oracle_env,
                                    services={"llm": oracle, "llm_judge": oracle}, embedding_cache=vectors, log=log)
            return StageContext(seed=config.seed, stage=stage.name, environment=env,
                                services={"llm": llm} if llm else {}, embedding_cache=vectors, log=log)

        items = ItemCache(cache_dir / "items.sqlite")
        try:
            run = run_stages(stages, make_context, ArtifactStore(cache_dir), items, options.llm_max_failed_share,
                             guard_oracles(options.oracle_max_drop_share, options.oracle_proceed))
        finally:
            items.close()
        release = None
        if not options.only and (empty := explain_empty(stages, run, _empty_hint(config, base, options))):
            raise EmptyRelease(empty)
        if not options.only:
            release = write_release(config, stages, run, options.out, env, cache_dir)
            log.info("release written to %s", release)
        seconds = time.monotonic() - started
        computed = [r.name for r in run.records if not r.cached]
        log.info("build finished in %.1fs; stages recomputed: %s", seconds, ", ".join(computed) or "none")
        return BuildOutcome(release=release, run=run, log_file=log_file, seconds=seconds)
    except Exception as error:
        _log_traceback(handler, error)
        if _is_disk_full(error):
            full = DiskFull(_disk_full_message(error, options.out, cache_dir))
            full.run_log = log_file  # type: ignore[attr-defined]
            raise full from error
        error.run_log = log_file  # type: ignore[attr-defined]
        raise
    finally:
        log.removeHandler(handler)
        handler.close()


def _oracle_client(options: BuildOptions, llm: LLMClient | None, cache_dir: Path) -> LLMClient | None:
    """A separate client for the oracle stages when ``--oracle-base-url`` or ``--oracle-model`` is given."""
    if options.oracle_base_url is None and options.oracle_model is None:
        return None
    if llm is None:
        raise ConfigError("--oracle-base-url/--oracle-model (flag): the oracles need the LLM path (--llm-base-url)")
    oracle = LLMClient.from_settings(base_url=options.oracle_base_url or llm.config.base_url,
                                     model=options.oracle_model or llm.config.model, api_key=llm.config.api_key,
                                     cache_path=cache_dir / "llm" / "requests.sqlite")
    assert oracle is not None
    if options.oracle_base_url is not None:
        oracle.check_reachable()
    return oracle


def _check_flags(options: BuildOptions) -> None:
    """Range checks of the numeric flags (the config file's numbers are checked by its models)."""
    if options.limit is not None and options.limit < 1:
        raise ConfigError(f"--limit (flag): must be at least 1, got {options.limit}")
    if not 0.0 <= options.oracle_max_drop_share <= 1.0:
        raise ConfigError(f"--oracle-max-drop-share (flag): must be in [0, 1], got {options.oracle_max_drop_share:g}")
    if not 0.0 <= options.llm_max_failed_share < 1.0:
        raise ConfigError(f"--llm-max-failed-share (flag): must be in [0, 1), got {options.llm_max_failed_share:g}")


def _stages_of(config: BuildConfig, options: BuildOptions) -> list[Stage]:
    """The build's stages; a bad stage parameter is reported with the config file it is in."""
    try:
        return registry.build_stages(config, options.limit)
    except ConfigError as error:
        source = options.config_path or DEFAULT_CONFIG
        raise ConfigError(f"{source}: {error}") from None


def _empty_hint(config: BuildConfig, base: Path, options: BuildOptions) -> str:
    """Why the first stage could have received nothing: the blueprint directory it read."""
    return f"no seed blueprints under {config.blueprints_path(base)}"


def _is_disk_full(error: BaseException) -> bool:
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if isinstance(error, sqlite3.OperationalError):
        return "disk is full" in str(error)  # SQLite's SQLITE_FULL
    return isinstance(error, OSError) and "no space left on device" in str(error).lower()  # pyarrow's wording


def _disk_full_message(error: BaseException, out: Path, cache_dir: Path) -> str:
    """Which path ran out of space (the file, else the release or the cache by where it failed) and what is free there."""
    where = getattr(error, "filename", None)
    if where:
        place = Path(where)
    else:
        frames = [Path(frame.f_code.co_filename).name for frame, _ in traceback.walk_tb(error.__traceback__)]
        place = cache_dir if any(name in ("cache.py", "runner.py") for name in frames[-3:]) else out
    probe = next((p for p in (place, *place.parents) if p.exists()), Path("/"))
    what = "the cache" if place == cache_dir else "the release" if place == out else str(place)
    return (f"no space left on device writing {what} under {place} "
            f"({shutil.disk_usage(probe).free // 1024} KiB free there now)")


def _log_traceback(handler: logging.Handler, error: BaseException) -> None:
    """Write ``error``'s traceback to the run log only (the terminal gets one line from the CLI)."""
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "build failed: %s", (error,),
                            (type(error), error, error.__traceback__))
    handler.handle(record)


def _tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "triggerbench": pipeline.__version__}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _fallbacks(env: dict[str, Any]) -> dict[str, Any]:
    distractors = env.get("distractors", {})
    return {
        "llm": env["llm"] if isinstance(env["llm"], str) else "configured",
        "distractor_sources": {key: f"{name} ({distractors['sources'][name]['kind']})"
                               for key, name in distractors.get("routes", {}).items()},
    }


def write_release(config: BuildConfig, stages: list[Stage], run: RunResult, out: Path, env: dict[str, Any],
                  cache_dir: Path) -> Path:
    """Write every stage's configs, the audits, exclusions, card and manifest; atomically. The stages' items
    are forgotten (``run.forget_items``) before the audit reads the written release."""
    writer = ReleaseWriter(out, config.version, ShardCache(cache_dir / "release-shards"))
    stats = RowStats()
    try:
        log.info("writing release %s to %s", config.version, writer.staging)
        for stage in stages:  # in build order: blueprints and base configs, long contexts, aime_probe, week
            stage.write_release(writer, run, stats)
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
        distractors = "".join(stage.card_text(run) for stage in stages)
        run.forget_items()  # the audit reads the release; the stages' items need not sit beside it
        sections = {}
        log.info("release data written (%d configs; %d splits linked from the shard cache, %d written); "
                 "running the leakage audit", len(writer.configs), writer.cache_hits, writer.cache_misses)
        writer.write_text("README.md", front_matter(writer.configs, config.license))
        audit = registry.audit_release(writer.staging, writer.staging / "audits", embedding_cache_dir(cache_dir),
                                       shortcut_settings(config), cache_dir / "audit", writer.digests)
        log.info("audit done with %s; shortcut check: %s", audit.embedding_model, audit.shortcuts.verdict)
        manifest["fallbacks"]["embedding_model"] = audit.embedding_model
        manifest |= audit.shortcuts.manifest_entry()
        sections["Leakage audit"] = audit.card_markdown()
        sections["Distractor corpora"] = (card_sections.distractor_provenance(manifest["fallbacks"]["distractor_sources"])
                                          + "\n" + distractors)
        sections["Loading"] = card_sections.loading_instructions(None, config.version)
        sections["Changelog"] = card_sections.changelog(previous_manifest(out, config.version),
                                                        {**manifest, "configs": writer.configs})
        sections["Citation"] = card_sections.citation_blocks()
        writer.write_text("README.md", render_card(manifest, writer.configs, stats, sections))
        return writer.finish(manifest)
    except BaseException:
        writer.abort()
        raise
