"""The project's words, defined once: dimensions, variants, constraint forms, contexts.

Every module that orders, lists or checks one of these takes it from here (the blueprint
schema's ``Dimension`` type, the card's tables, the audit's groups, the eval report).
"""

from __future__ import annotations

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

# Why an item was dropped (``exclusions/<stage>.jsonl``, the manifest's per-stage counts), by stage.
# Reasons from an LLM request that failed after the client's retries are ``llm_<kind>`` (LLM_DROP_KINDS).
DROP_REASONS: dict[str, str] = {
    "beyond-limit": "load_blueprints: past --limit N",
    "lint": "scale: a filled blueprint fails the lint",
    "llm_lint": "scale (LLM): a drafted blueprint still fails the lint after the repair rounds",
    "llm_schema": "scale (LLM): a draft is not a valid blueprint after the repair rounds",
    "near-duplicate-embedding": "scale (LLM): a draft too close in meaning to a kept one",
    "duplicate-slots": "dedupe: same seed and slot choice as a kept blueprint",
    "near-duplicate": "dedupe: trigram Jaccard above stages.dedupe.max_similarity with a kept blueprint",
    "over-target": "dedupe: the dimension's target count is reached",
    "sufficiency_flagged": "oracle_sufficiency: the constraint and trigger do not determine the intervention",
    "sufficiency_rejected_in_review": "oracle_sufficiency: rejected in the review file",
    "sufficiency_fix_invalid": "oracle_sufficiency: the reviewer's fix is not a valid blueprint",
    "sufficiency_failed_after_fix": "oracle_sufficiency: still insufficient after the fix",
    "necessity_leak": "oracle_necessity (rules): the trigger shares a gold slot or content word with the constraint",
    "necessity_guessed": "oracle_necessity (LLM): the intervention was guessed from the trigger alone",
    "no-filler-topic": "dialogues: the blueprint's topic has no story or filler pool",
    "too-little-filler": "dialogues: too few slot-free exchanges in the topic's pool",
    "time-expression": "distractor_pool: an exchange holds a time expression",
    "too-long": "distractor_pool: an exchange is longer than the source's token limit",
    "no-distractor-source": "stretch: no distractor source for the dimension",
    "semantic-constraint": "stretch: snippets closer to a constraint than the blueprint's background",
    "semantic-trigger": "stretch: snippets closer to the trigger than the blueprint's background",
    "pool-too-small": "stretch: the corpus cannot fill the length",
    "time-window-too-short": "stretch: a deadline leaves too little time to read and type the injected exchanges",
    "no-aime-source": "aime_probe: no AIME-2025 problems on disk or on the Hub",
    "no-output": "any map stage: the stage produced nothing for the item",
}
LLM_DROP_KINDS: tuple[str, ...] = ("invalid_output", "timeout", "connection_error", "rate_limited", "http_<status>",
                                   "failed")
