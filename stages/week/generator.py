"""Seeded week generator with rejection sampling.

In: a week seed (independent of the build seed) and a target :class:`Composition`
(default: Table 1 of the PM-Bench paper). Out: the first candidate week, over attempts
``0, 1, 2, ...`` (each drawn from ``rng_for(seed, week_id, "pmbench_week", "attempt-N")``),
that has the target composition, passes every validator invariant and passes the
perfect-play audit. Same seed -> byte-identical week JSON.
"""

from __future__ import annotations

from stages.week.assemble import assemble_week
from stages.week.model import Week
from stages.week.oracle import audit_week
from stages.week.plan import Composition, Retry, plan_week
from stages.week.stats import composition_problems
from stages.week.validator import validate_week
from pipeline.seeding import rng_for

STAGE_NAME = "pmbench_week"
TABLE1 = Composition()


class GenerationError(RuntimeError):
    """No attempt produced an acceptable week."""


def week_id_for(seed: int) -> str:
    """Stable id of the week generated from ``seed``."""
    return f"pmbench-week-seed{seed}"


def candidate_week(seed: int, attempt: int, comp: Composition = TABLE1) -> Week:
    """One unchecked candidate (raises :class:`Retry` when a random draw cannot be completed)."""
    week_id = week_id_for(seed)
    rng = rng_for(seed, week_id, STAGE_NAME, f"attempt-{attempt}")
    return assemble_week(rng, seed, week_id, plan_week(rng, comp))


def generate_week(seed: int = 0, comp: Composition = TABLE1, max_attempts: int = 200) -> Week:
    """The first candidate that passes composition, validation and the perfect-play audit."""
    reasons: list[str] = []
    for attempt in range(max_attempts):
        try:
            week = candidate_week(seed, attempt, comp)
        except Retry as exc:
            reasons.append(f"attempt {attempt}: {exc}")
            continue
        problems = composition_problems(week, comp) + validate_week(week)
        if problems:
            reasons.append(f"attempt {attempt}: {problems[0]}")
            continue
        audit = audit_week(week)
        if audit.passed:
            return week
        reasons.append(f"attempt {attempt}: perfect-play audit: {audit.problems[:1]}")
    raise GenerationError(f"no valid week for seed {seed} in {max_attempts} attempts; last: {reasons[-3:]}")
