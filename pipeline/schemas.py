"""Fixed pyarrow schemas of the release configs (the public contract's row schemas plus extra columns)."""

from __future__ import annotations

import pyarrow as pa

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])

PM_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("blueprint_id", pa.string()),
    ("seed_id", pa.string()),
    ("dimension", pa.string()),
    ("subtype", pa.string()),
    ("domain", pa.string()),
    ("variant", pa.string()),
    ("constraint_form", pa.string()),
    ("context", pa.string()),
    ("messages", pa.list_(MESSAGE)),
    ("constraint_turns", pa.list_(pa.int32())),
    ("trigger_turn", pa.int32()),
    ("resolution_turn", pa.int32()),
    ("reference_intent", pa.string()),
    ("gold_slots", pa.list_(pa.string())),
    ("expected", pa.string()),
    ("n_tokens", pa.int32()),
    ("n_turns", pa.int32()),
    ("distractor_source", pa.string()),
    ("filler_turns", pa.list_(pa.int32())),
    ("injected_turns", pa.list_(pa.int32())),
    ("cwe", pa.string()),
    ("provenance", pa.string()),
])

AIME_SCHEMA = PM_SCHEMA.append(pa.field("math_turn", pa.int32())).append(
    pa.field("math_reply_turn", pa.int32())).append(pa.field("aime_id", pa.string())).append(
    pa.field("aime_answer", pa.int32()))

RM_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("blueprint_id", pa.string()),
    ("seed_id", pa.string()),
    ("dimension", pa.string()),
    ("context", pa.string()),
    ("messages", pa.list_(MESSAGE)),
    ("question", pa.string()),
    ("reference_answer", pa.string()),
    ("answer_aliases", pa.list_(pa.string())),
    ("constraint_turns", pa.list_(pa.int32())),
    ("n_tokens", pa.int32()),
    ("n_turns", pa.int32()),
    ("distractor_source", pa.string()),
    ("provenance", pa.string()),
])

BLUEPRINT_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("seed_id", pa.string()),
    ("dimension", pa.string()),
    ("subtype", pa.string()),
    ("domain", pa.string()),
    ("topic", pa.string()),
    ("cwe", pa.string()),
    ("constraints", pa.list_(pa.string())),
    ("trigger", pa.string()),
    ("overload", pa.string()),
    ("negative_kind", pa.string()),
    ("negative_text", pa.string()),
    ("explicit_method", pa.string()),
    ("explicit_text", pa.string()),
    ("reference_intent", pa.string()),
    ("gold_slots", pa.list_(pa.string())),
    ("rm_question", pa.string()),
    ("rm_answer", pa.string()),
    ("rm_aliases", pa.list_(pa.string())),
    ("slot_choice", pa.string()),
    ("blueprint", pa.string()),
    ("provenance", pa.string()),
    ("oracles", pa.string()),
])


def schema_for(config: str) -> pa.Schema:
    """The schema of a TriggerBench config name (``pm_*``, ``explicit_*``, ``rm_*``, ``aime_probe``, ``blueprints``)."""
    if config == "blueprints":
        return BLUEPRINT_SCHEMA
    if config == "aime_probe":
        return AIME_SCHEMA
    if config.startswith(("pm_", "explicit_")):
        return PM_SCHEMA
    if config.startswith("rm_"):
        return RM_SCHEMA
    raise KeyError(f"no schema for config {config!r}")


class RowSchemaError(ValueError):
    """A release row does not match its config's schema (a bug in the stage that made the row)."""


def conform(row: dict, schema: pa.Schema, *, config: str = "?", ignore: frozenset[str] = frozenset()) -> dict:
    """``row``'s values in the schema's column order; raise :class:`RowSchemaError` unless the row is exact.

    Exact: every schema column is a key (a nullable column takes an explicit None; a non-nullable
    one a value) and no other key is, except those in ``ignore`` (routing keys a caller names, such
    as ``config``/``split``, which are dropped). The message names the row id, the config and the keys.
    """
    unknown = sorted(set(row) - set(schema.names) - ignore)
    missing = [name for name in schema.names if name not in row]
    null = [field.name for field in schema if not field.nullable and field.name in row and row[field.name] is None]
    if unknown or missing or null:
        problems = [f"{label}: {', '.join(keys)}" for label, keys in
                    (("unknown keys", unknown), ("missing columns", missing), ("null in non-nullable columns", null))
                    if keys]
        raise RowSchemaError(f"row {row.get('id')!r} of config {config!r} does not match its schema: {'; '.join(problems)}")
    return {name: row[name] for name in schema.names}
