"""The project's words, defined once: dimensions, variants, constraint forms, contexts.

Every module that orders, lists or checks one of these takes it from here (the blueprint
schema's ``Dimension`` type, the card's tables, the audit's groups, the eval report).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

DIMENSIONS: tuple[str, ...] = ("state_tracking", "temporal_grounding", "logical_adherence", "attention_recovery",
                               "safe_coding")
Dimension = Literal["state_tracking", "temporal_grounding", "logical_adherence", "attention_recovery", "safe_coding"]

# Dimensions whose constraint and trigger must share no content word (TriggerBench Table 8): the
# lint and the necessity oracle check it, the shortcut gate holds their text finders to chance.
ZERO_OVERLAP_DIMENSIONS: tuple[str, ...] = ("state_tracking", "temporal_grounding", "attention_recovery")
# Dimensions with a retrospective-memory probe (safe coding has none).
RM_DIMENSIONS: tuple[str, ...] = ("state_tracking", "temporal_grounding", "logical_adherence", "attention_recovery")

VARIANTS: tuple[str, ...] = ("pos_clean", "pos_over", "neg_clean")
CONSTRAINT_FORMS: tuple[str, ...] = ("implicit", "explicit")
CONTEXTS: tuple[str, ...] = ("base", "20k", "40k", "60k", "80k", "100k")


class DropReason(str, Enum):
    """Why an item was dropped (``exclusions/<stage>.jsonl``, the manifest's per-stage counts).

    The value is the plain snake_case string written out (a member is a ``str``). Reasons from an
    LLM request that failed after the client's retries are ``llm_<kind>`` (:data:`LLM_DROP_KINDS`,
    built by :func:`llm_drop_reason`). Before this enum some reasons were kebab-case.
    """

    BEYOND_LIMIT = "beyond_limit"
    LINT = "lint"
    LLM_LINT = "llm_lint"
    LLM_SCHEMA = "llm_schema"
    NEAR_DUPLICATE_EMBEDDING = "near_duplicate_embedding"
    DUPLICATE_SLOTS = "duplicate_slots"
    NEAR_DUPLICATE = "near_duplicate"
    OVER_TARGET = "over_target"
    SUFFICIENCY_FLAGGED = "sufficiency_flagged"
    SUFFICIENCY_REJECTED_IN_REVIEW = "sufficiency_rejected_in_review"
    SUFFICIENCY_FIX_INVALID = "sufficiency_fix_invalid"
    SUFFICIENCY_FAILED_AFTER_FIX = "sufficiency_failed_after_fix"
    NECESSITY_LEAK = "necessity_leak"
    NECESSITY_GUESSED = "necessity_guessed"
    NO_FILLER_TOPIC = "no_filler_topic"
    TOO_LITTLE_FILLER = "too_little_filler"
    TIME_EXPRESSION = "time_expression"
    TOO_LONG = "too_long"
    NO_DISTRACTOR_SOURCE = "no_distractor_source"
    SEMANTIC_CONSTRAINT = "semantic_constraint"
    SEMANTIC_TRIGGER = "semantic_trigger"
    POOL_TOO_SMALL = "pool_too_small"
    TIME_WINDOW_TOO_SHORT = "time_window_too_short"
    NO_AIME_SOURCE = "no_aime_source"
    NO_OUTPUT = "no_output"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


# What each reason means, by the stage that writes it (the README's table is made from this).
DROP_REASON_HELP: dict[DropReason, str] = {
    DropReason.BEYOND_LIMIT: "load_blueprints: past --limit N",
    DropReason.LINT: "scale: a filled blueprint fails the lint",
    DropReason.LLM_LINT: "scale (LLM): a drafted blueprint still fails the lint after the repair rounds",
    DropReason.LLM_SCHEMA: "scale (LLM): a draft is not a valid blueprint after the repair rounds",
    DropReason.NEAR_DUPLICATE_EMBEDDING: "scale (LLM): a draft too close in meaning to a kept one",
    DropReason.DUPLICATE_SLOTS: "dedupe: same seed and slot choice as a kept blueprint",
    DropReason.NEAR_DUPLICATE: "dedupe: trigram Jaccard above stages.dedupe.max_similarity with a kept blueprint",
    DropReason.OVER_TARGET: "dedupe: the dimension's target count is reached",
    DropReason.SUFFICIENCY_FLAGGED: "oracle_sufficiency: the constraint and trigger do not determine the intervention",
    DropReason.SUFFICIENCY_REJECTED_IN_REVIEW: "oracle_sufficiency: rejected in the review file",
    DropReason.SUFFICIENCY_FIX_INVALID: "oracle_sufficiency: the reviewer's fix is not a valid blueprint",
    DropReason.SUFFICIENCY_FAILED_AFTER_FIX: "oracle_sufficiency: still insufficient after the fix",
    DropReason.NECESSITY_LEAK: "oracle_necessity (rules): the trigger shares a gold slot or content word with the constraint",
    DropReason.NECESSITY_GUESSED: "oracle_necessity (LLM): the intervention was guessed from the trigger alone",
    DropReason.NO_FILLER_TOPIC: "dialogues: the blueprint's topic has no story or filler pool",
    DropReason.TOO_LITTLE_FILLER: "dialogues: too few slot-free exchanges in the topic's pool",
    DropReason.TIME_EXPRESSION: "distractor_pool: an exchange holds a time expression",
    DropReason.TOO_LONG: "distractor_pool: an exchange is longer than the source's token limit",
    DropReason.NO_DISTRACTOR_SOURCE: "stretch: no distractor source for the dimension",
    DropReason.SEMANTIC_CONSTRAINT: "stretch: snippets closer to a constraint than the blueprint's background",
    DropReason.SEMANTIC_TRIGGER: "stretch: snippets closer to the trigger than the blueprint's background",
    DropReason.POOL_TOO_SMALL: "stretch: the corpus cannot fill the length",
    DropReason.TIME_WINDOW_TOO_SHORT: "stretch: a deadline leaves too little time to read and type the injected exchanges",
    DropReason.NO_AIME_SOURCE: "aime_probe: no AIME-2025 problems on disk or on the Hub",
    DropReason.NO_OUTPUT: "any map stage: the stage produced nothing for the item",
}
LLM_DROP_KINDS: tuple[str, ...] = ("invalid_output", "timeout", "connection_error", "rate_limited", "server_error",
                                   "bad_response", "http_<status>", "failed")


def llm_drop_reason(kind: str | None) -> str:
    """The reason for an item whose LLM request failed for good: ``llm_<kind>`` (``llm_failed`` when unknown)."""
    return f"llm_{kind or 'failed'}"


def drop_reason_table() -> str:
    """The README's drop-reason table (between the ``drop-reasons`` markers), one row per member."""
    rows = [f"| `{reason.value}` | {DROP_REASON_HELP[reason]} |" for reason in DropReason]
    kinds = ", ".join(f"`llm_{kind}`" for kind in LLM_DROP_KINDS)
    return "\n".join(["| reason | stage: meaning |", "|---|---|", *rows,
                      f"| {kinds} | any LLM stage: the request failed after the client's retries |"])
