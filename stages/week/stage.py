"""The ``pmbench_week`` stage: generate, validate and audit the PM-Bench week for a release.

In: no inputs; ``Params.week_seed`` (default 0, independent of the build seed). Out: one
item ``{"id": "pmbench-week-seed<N>", "week": <week JSON>}``. The release writer stores the
week as ``week/week.json`` and flattens it with :func:`stages.week.release.week_configs`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

import stages.week as week_package
from pipeline.hashing import combine, source_digest
from pipeline.stage import Item, Stage, StageContext, StageOutput
from stages.week.generator import generate_week
from stages.week.oracle import audit_week
from stages.week.release import week_configs
from stages.week.stats import week_stats
from stages.week.validator import validate_week

if TYPE_CHECKING:
    from pipeline.release import ReleaseWriter
    from pipeline.runner import RunResult
    from pipeline.stats import RowStats


class WeekParams(BaseModel):
    """Parameters of the week stage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    week_seed: int = 0


class PMBenchWeekStage(Stage):
    """Generates the PM-Bench week; fails loudly if it is not valid and perfectly solvable."""

    name = "pmbench_week"
    inputs = ()
    Params = WeekParams
    version = "1"

    def code_version(self) -> str:
        """Digest of the whole ``stages/week`` package (generator, content pools, validator...)."""
        return combine(self.version, source_digest(week_package))

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        """Generate (seeded by ``week_seed``), re-validate, audit, and return the single item."""
        seed = self.params.week_seed
        week = generate_week(seed)
        problems = validate_week(week)
        if problems:
            raise ValueError(f"pmbench_week seed {seed}: {problems[0]}")
        audit = audit_week(week)
        if not audit.passed:
            raise ValueError(f"pmbench_week seed {seed}: perfect-play audit failed: {audit.problems[:3]}")
        ctx.log.info("pmbench_week: %s, %d steps, perfect-play audit %d/%d", week.id,
                     sum(len(d.steps) for d in week.days), audit.hits, audit.scored_tasks)
        stats = week_stats(week)
        stats.update(week_sha256=week.digest(), perfect_play_hits=audit.hits)
        return StageOutput(items=[{"id": f"pmbench-week-seed{seed}", "week": week.to_json()}], stats=stats)

    def write_release(self, writer: ReleaseWriter, run: RunResult, stats: RowStats) -> None:
        """``week/week.json`` and the flattened ``pmbench_week*`` configs."""
        week = run.outputs[self.name].items[0]["week"]
        writer.write_text("week/week.json", json.dumps(week, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        for name, (schema, rows) in sorted(week_configs(week).items()):
            writer.write_config(name, "test", schema, rows)
