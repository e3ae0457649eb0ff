"""The shortcut gate: its thresholds (from the build config's ``audit.shortcuts``) and verdict.

A finder cell fails when its hit rate is above chance + ``hit_margin`` *and* the lower end of
its 95% family-bootstrap interval is above chance + ``ci_margin``; a label cell fails when the
variant classifier's accuracy is above the majority class + ``label_margin``; an invariant
fails when any row breaks it (or more than ``max_user_turns_per_minute`` user turns share a
minute). Form finders are gated in every dimension; text finders (similarity, retrieval, and
the learned finder that reads them) only in ``text_gated_dimensions``, since logical adherence
and safe coding link constraint and trigger by design (their cells are still reported).
Constraint finders are gated on the ``constraint_gated_forms`` (implicit): an explicit row states the
intention as a request on purpose (that salience is the ablation), so finding its constraint is what
the row shows openly; explicit rows' label cells and invariants stay gated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.vocabulary import ZERO_OVERLAP_DIMENSIONS

TEXT_GATED = ZERO_OVERLAP_DIMENSIONS
# invariant -> the largest value that passes (per config and dimension)
INVARIANT_LIMITS = {"no_messages_rows": 0, "role_break_rows": 0, "backwards_rows": 0, "missing_stamp_rows": 0, "not_user_first_rows": 0,
                    "not_user_last_rows": 0, "injected_time_turns": 0}


class ShortcutSettings(BaseModel):
    """Thresholds and sampling of the shortcut audit (``audit.shortcuts`` in the build config)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    hit_margin: float = Field(0.10, ge=0, le=1)
    ci_margin: float = Field(0.05, ge=0, le=1)
    label_margin: float = Field(0.10, ge=0, le=1)
    max_user_turns_per_minute: int = Field(2, ge=1)
    min_families: int = Field(3, ge=2, description="cells with fewer seed families are reported, not gated")
    long_sample_fraction: float = Field(0.2, gt=0, le=1, description="share of blueprints whose long rows get "
                                        "the similarity finders (the form finders, learned one included, read every row)")
    text_gated_dimensions: tuple[str, ...] = TEXT_GATED
    constraint_gated_forms: tuple[str, ...] = Field(("implicit",), description="constraint forms whose constraint "
                                                    "finders are gated (explicit rows make the constraint salient on purpose)")
    seed: int = 0


def settings_from(config: dict[str, Any] | None) -> ShortcutSettings:
    """Settings from a build config's ``audit`` mapping (``{"shortcuts": {...}}``); defaults if absent."""
    return ShortcutSettings.model_validate(((config or {}).get("shortcuts")) or {})


def judge(records: Sequence[dict[str, Any]], settings: ShortcutSettings) -> None:
    """Set ``gated`` and ``fails`` on every record of the shortcut table, in place."""
    for record in records:
        section = record["section"]
        if section == "invariant":
            limit = (settings.max_user_turns_per_minute if record["finder"] == "max_user_turns_per_minute"
                     else INVARIANT_LIMITS.get(record["finder"]))
            record["gated"] = limit is not None
            record["baseline"] = limit
            record["fails"] = limit is not None and record["value"] is not None and record["value"] > limit
            continue
        enough = (record["families"] or 0) >= settings.min_families and record["value"] is not None
        if section == "constraint_finder":
            gated = ((record["kind"] == "form" or record["dimension"] in settings.text_gated_dimensions)
                     and record["constraint_form"] in settings.constraint_gated_forms)
            over = record["value"] > record["baseline"] + settings.hit_margin if enough else False
            sure = record["ci_low"] > record["baseline"] + settings.ci_margin if enough else False
            record["gated"], record["fails"] = gated and enough, bool(gated and over and sure)
        else:  # label_finder
            record["gated"] = enough
            record["fails"] = bool(enough and record["value"] > record["baseline"] + settings.label_margin)


def verdict(records: Sequence[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """``("pass" | "fail", failing cells)``; a failing cell names dimension, context, variant, finder,
    value and baseline."""
    keys = ("section", "config", "context", "constraint_form", "dimension", "variant", "finder", "value", "baseline")
    failing = [{k: r.get(k) for k in keys} for r in records if r.get("fails")]
    return ("fail" if failing else "pass"), failing
