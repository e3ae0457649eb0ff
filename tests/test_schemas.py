"""``pipeline.schemas.conform`` passes exact rows and names what is wrong with the others."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.release import ROUTING_KEYS, ReleaseWriter
from pipeline.schemas import RM_SCHEMA, RowSchemaError, conform


def _rm_row() -> dict:
    """An exact ``rm_*`` row, keys in a different order than the schema's."""
    return {
        "provenance": "{}", "id": "st-x.rm.implicit.base", "blueprint_id": "st-x", "seed_id": "st-x",
        "dimension": "state_tracking", "context": "base", "messages": [{"role": "user", "content": "hi"}],
        "question": "Which?", "reference_answer": "cello", "answer_aliases": None, "constraint_turns": [0],
        "n_tokens": 3, "n_turns": 1, "distractor_source": None,
    }


def test_an_exact_row_passes_unchanged() -> None:
    row = _rm_row()
    out = conform(row, RM_SCHEMA, config="rm_base")
    assert out == row and list(out) == RM_SCHEMA.names


def test_an_unknown_key_raises_naming_it() -> None:
    with pytest.raises(RowSchemaError, match=r"row 'st-x.rm.implicit.base' of config 'rm_base'.*unknown keys: variant"):
        conform({**_rm_row(), "variant": "pos_clean"}, RM_SCHEMA, config="rm_base")


def test_a_missing_column_raises_naming_it() -> None:
    row = _rm_row()
    del row["reference_answer"]
    with pytest.raises(RowSchemaError, match=r"config 'rm_base'.*missing columns: reference_answer"):
        conform(row, RM_SCHEMA, config="rm_base")


def test_null_in_a_non_nullable_column_raises() -> None:
    schema = pa.schema([pa.field("id", pa.string(), nullable=False), ("n", pa.int32())])
    assert conform({"id": "a", "n": None}, schema) == {"id": "a", "n": None}
    with pytest.raises(RowSchemaError, match="null in non-nullable columns: id"):
        conform({"id": None, "n": 1}, schema, config="toy")


def test_ignored_routing_keys_are_dropped() -> None:
    row = {**_rm_row(), "config": "rm_base", "split": "test"}
    assert conform(row, RM_SCHEMA, config="rm_base", ignore=ROUTING_KEYS) == _rm_row()


def test_the_release_writer_refuses_an_inexact_row(tmp_path: Path) -> None:
    writer = ReleaseWriter(tmp_path, "0.0.0")
    try:
        assert writer.write_config("rm_base", "test", RM_SCHEMA, [{**_rm_row(), "split": "test"}]) == 1
        with pytest.raises(RowSchemaError, match="unknown keys: stray"):
            writer.write_config("rm_10k", "test", RM_SCHEMA, [{**_rm_row(), "stray": 1}])
    finally:
        writer.abort()
