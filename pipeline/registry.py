"""Every stage of a build, in order: the one place to find a stage from ``pipeline/``.

Data flows one way: blueprints -> scenarios -> dialogues -> variants -> contexts ->
audits -> release.

| stage | module | in -> out |
|---|---|---|
| load_blueprints | stages/load_blueprints.py | YAML files -> seed blueprints |
| load_fillers | stages/load_blueprints.py | YAML files -> filler pools by topic |
| scale | stages/scale/offline.py | seed -> scaled blueprints (slot filling) |
| dedupe | stages/scale/dedupe.py | scaled -> kept (near-duplicates and over_target dropped) |
| split | stages/split.py | kept -> kept with test/dev by seed family |
| oracle_sufficiency | stages/oracles/sufficiency.py | constraint+trigger skeleton must be solvable (LLM judge, or rules offline) |
| oracle_necessity | stages/oracles/necessity.py | the trigger alone must not give the intervention away |
| dialogues | stages/dialogues.py | blueprint -> base dialogue skeleton |
| variants | stages/variants.py | dialogue -> pm_base / explicit_base / rm_base rows |
| distractor_pool | stages/distractors/pool.py | MultiWOZ / OpenThoughts / MATH / agent trajectories -> time-free snippets |
| stretch | stages/stretch.py | dialogue -> one injection plan per target length (materialized at release) |
| aime_probe | stages/aime_probe.py | Pos-Clean rows x AIME-2025 problems -> the reasoning-budget probe rows |
| pmbench_week | stages/week/stage.py | PM-Bench seed -> the validated, perfect-play-audited week |

This is the only module of ``pipeline/`` that names a stage. The core asks the stages what
they bring (:class:`pipeline.stage.Stage`: ``provide_environment``, ``write_release``,
``card_text``) and reaches the rest through the names below: the audit that runs on the
written release (``stages/audit``) and the verbs whose code lives in a stage package.
The release writer is ``pipeline/release.py``, driven by ``pipeline/build.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the command line reads VERBS and must start fast
    from pipeline.config import BuildConfig
    from pipeline.stage import Stage
    from stages.audit.shortcuts import ShortcutSettings

# Verbs of the command line whose code lives in a stage package: (module, help). Each module has
# ``configure(parser)`` and ``run(args)`` and is imported only when its verb is used.
VERBS: dict[str, tuple[str, str]] = {
    "audit": ("stages.audit.cli", "rerun the leakage audits on a release directory or Hub id"),
    "week": ("stages.week.cli", "PM-Bench week: generate, validate, stats, score, play"),
    "show": ("stages.audit.show", "print one row as a conversation for review (times, gaps, marked turns, twins)"),
    "eval": ("stages.eval.cli", "score a model on a release (eval compare, eval judge-check)"),
}


def stage_classes() -> tuple[type[Stage], ...]:
    """Every stage class of a build, in build order (imported on first use: the CLI starts fast)."""
    from stages.aime_probe import AimeProbe
    from stages.dialogues import Dialogues
    from stages.distractors.pool import DistractorPool
    from stages.load_blueprints import LoadBlueprints, LoadFillers
    from stages.oracles import OracleNecessity, OracleSufficiency
    from stages.scale import Dedupe, Scale
    from stages.split import Split
    from stages.stretch import Stretch
    from stages.variants import Variants
    from stages.week.stage import PMBenchWeekStage

    return (LoadBlueprints, LoadFillers, Scale, Dedupe, Split, OracleSufficiency, OracleNecessity, Dialogues,
            Variants, DistractorPool, Stretch, AimeProbe, PMBenchWeekStage)


def audit_release(release: Path, out: Path, cache_dir: Path, settings: ShortcutSettings,
                  result_cache: Path | None = None, known_digests: dict[str, str] | None = None) -> Any:
    """The leakage and shortcut audit of a written release (``stages.audit.run_audit``); with
    ``result_cache``, reused when the audited shards (``known_digests``: their sha256) are unchanged."""
    from stages.audit import run_audit

    return run_audit(release, out, cache_dir=cache_dir, shortcut_settings=settings, result_cache=result_cache,
                     known_digests=known_digests)


def shortcut_settings_from(audit_config: Any) -> ShortcutSettings:
    """The shortcut gate's settings from the config's ``audit`` section (pydantic errors pass through)."""
    from stages.audit.shortcuts import settings_from

    return settings_from(audit_config)


def build_stages(config: BuildConfig, limit: int | None = None) -> list[Stage]:
    """Instantiate every stage with its parameters from the config."""
    from pydantic import ValidationError

    from pipeline.config import ConfigError

    classes = stage_classes()
    unknown = sorted(set(config.stages) - {cls.name for cls in classes})
    if unknown:
        raise ConfigError(f"stages: unknown stage(s) {', '.join(unknown)}; known: {', '.join(stage_names())}")
    stages: list[Stage] = []
    for cls in classes:
        params = config.stage_params(cls.name)
        if cls.name == "load_blueprints":
            params["limit"] = limit
        if cls.name == "stretch":
            params.setdefault("lengths", config.distractors.lengths)
        try:
            stages.append(cls(params))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(p) for p in error["loc"])
            raise ConfigError(f"stages.{cls.name}.{field}: {error['msg']}") from None
    return stages


def stage_names() -> list[str]:
    return [cls.name for cls in stage_classes()]
