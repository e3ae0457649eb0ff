"""Every stage of a build, in order: the one place to find a stage from ``pipeline/``.

Data flows one way: blueprints -> scenarios -> dialogues -> variants -> contexts ->
audits -> release.

| stage | module | in -> out |
|---|---|---|
| load_blueprints | stages/load_blueprints.py | YAML files -> seed blueprints |
| load_fillers | stages/load_blueprints.py | YAML files -> filler pools by topic |
| scale | stages/scale/offline.py | seed -> scaled blueprints (slot filling) |
| dedupe | stages/scale/dedupe.py | scaled -> kept (near-duplicates and over-target dropped) |
| split | stages/split.py | kept -> kept with test/dev by seed family |
| oracle_sufficiency | stages/oracles/sufficiency.py | constraint+trigger skeleton must be solvable (LLM judge, or rules offline) |
| oracle_necessity | stages/oracles/necessity.py | the trigger alone must not give the intervention away |
| dialogues | stages/dialogues.py | blueprint -> base dialogue skeleton |
| variants | stages/variants.py | dialogue -> pm_base / explicit_base / rm_base rows |
| distractor_pool | stages/distractors/pool.py | MultiWOZ / OpenThoughts / MATH / agent trajectories -> time-free snippets |
| stretch | stages/stretch.py | dialogue -> one injection plan per target length (materialized at release) |
| aime_probe | stages/aime_probe.py | Pos-Clean rows x AIME-2025 problems -> the reasoning-budget probe rows |
| pmbench_week | stages/week/stage.py | PM-Bench seed -> the validated, perfect-play-audited week |

The audit (``stages/audit``) runs on the written release; the release writer is
``pipeline/release.py``, fed by ``pipeline/assemble.py`` and driven by ``pipeline/build.py``.
"""

from __future__ import annotations

from pydantic import ValidationError

from pipeline.config import BuildConfig, ConfigError
from pipeline.stage import Stage
from stages.aime_probe import AimeProbe
from stages.dialogues import Dialogues
from stages.distractors.pool import DistractorPool
from stages.load_blueprints import LoadBlueprints, LoadFillers
from stages.oracles import OracleNecessity, OracleSufficiency
from stages.scale import Dedupe, Scale
from stages.split import Split
from stages.stretch import Stretch
from stages.week.stage import PMBenchWeekStage
from stages.variants import Variants

STAGE_CLASSES: tuple[type[Stage], ...] = (
    LoadBlueprints, LoadFillers, Scale, Dedupe, Split, OracleSufficiency, OracleNecessity, Dialogues, Variants,
    DistractorPool, Stretch, AimeProbe, PMBenchWeekStage,
)


def build_stages(config: BuildConfig, limit: int | None = None) -> list[Stage]:
    """Instantiate every stage with its parameters from the config."""
    unknown = sorted(set(config.stages) - {cls.name for cls in STAGE_CLASSES})
    if unknown:
        raise ConfigError(f"stages: unknown stage(s) {', '.join(unknown)}; known: {', '.join(stage_names())}")
    stages: list[Stage] = []
    for cls in STAGE_CLASSES:
        params = config.stage_params(cls.name)
        if cls is LoadBlueprints:
            params["limit"] = limit
        if cls is Stretch:
            params.setdefault("lengths", config.distractors.lengths)
        try:
            stages.append(cls(params))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(p) for p in error["loc"])
            raise ConfigError(f"stages.{cls.name}.{field}: {error['msg']}") from None
    return stages


def stage_names() -> list[str]:
    return [cls.name for cls in STAGE_CLASSES]
