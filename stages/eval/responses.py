"""``responses.parquet``: every request, response, verdict and reason, one line per evaluated row.

Any number in ``results.json`` can be traced back to these lines (row id, prompt hash,
model, judge model); :mod:`stages.eval.compare` reads the per-row scores back from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from stages.eval.run import EvalOptions, Record

SCHEMA = pa.schema([
    ("config", pa.string()), ("split", pa.string()), ("row_id", pa.string()), ("seed_id", pa.string()),
    ("dimension", pa.string()), ("variant", pa.string()), ("context", pa.string()), ("expected", pa.string()),
    ("setting", pa.string()), ("model", pa.string()), ("judge_model", pa.string()),
    ("prompt_hash", pa.string()), ("request", pa.string()), ("online_replies", pa.string()),
    ("response", pa.string()), ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),
    ("judge_prompt_hash", pa.string()), ("judge_request", pa.string()), ("verdict", pa.string()),
    ("reason", pa.string()), ("answer_matched", pa.bool_()), ("slot_recall", pa.float64()),
    ("correct", pa.bool_()), ("status", pa.string()), ("failure", pa.string()), ("failure_detail", pa.string()),
    ("memory", pa.string()), ("memory_retrieved", pa.string()), ("memory_context_turns", pa.string()),
    ("memory_core", pa.string()), ("constraint_in_context", pa.bool_()),
    ("math_response", pa.string()), ("math_answer", pa.int64()), ("math_correct", pa.bool_()),
])


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def variant_of(record: Record) -> str:
    """The row's variant; RM rows have none and are labelled ``rm``."""
    return str(record.row.get("variant") or "rm")


def record_line(record: Record, options: EvalOptions) -> dict[str, Any]:
    """One line of ``responses.parquet``."""
    row = record.row
    return {
        "config": record.config, "split": record.split, "row_id": row["id"], "seed_id": row.get("seed_id"),
        "dimension": row["dimension"], "variant": variant_of(record), "context": row.get("context"),
        "expected": row.get("expected") or "answer", "setting": options.setting, "model": options.model,
        "judge_model": options.judge_name, "prompt_hash": record.prompt_hash, "request": _json(record.request),
        "online_replies": _json({str(k): v for k, v in sorted(record.online.items())}) if record.online else None,
        "response": record.response, "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens, "judge_prompt_hash": record.judge_prompt_hash,
        "judge_request": _json(record.judge_request), "verdict": record.verdict, "reason": record.reason,
        "answer_matched": record.answer_matched, "slot_recall": record.slot_recall, "correct": record.correct,
        "status": "failed" if record.failure else "ok", "failure": record.failure,
        "failure_detail": record.failure_detail, **_memory_columns(record, options),
        "math_response": record.math_response, "math_answer": record.math_answer, "math_correct": record.math_correct,
    }


def _memory_columns(record: Record, options: EvalOptions) -> dict[str, Any]:
    """What the memory showed the model: top-k turn indices, every context turn, core facts, constraint hit."""
    view = record.memory_view
    return {"memory": options.memory, "memory_retrieved": _json(view.retrieved) if view else None,
            "memory_context_turns": _json(view.context_turns) if view else None,
            "memory_core": _json(view.core) if view else None,
            "constraint_in_context": view.constraint_in_context if view else None}


def write_responses(path: Path, records: list[Record], options: EvalOptions) -> None:
    """Write every record (zstd parquet, fixed schema, deterministic bytes)."""
    table = pa.Table.from_pylist([record_line(r, options) for r in records], schema=SCHEMA)
    pq.write_table(table, path, compression="zstd")


def read_responses(run_dir: Path) -> list[dict[str, Any]]:
    """The lines of ``run_dir/responses.parquet``; raises ValueError naming the file when unreadable."""
    path = Path(run_dir) / "responses.parquet"
    if not path.is_file():
        raise ValueError(f"{path}: missing (is {run_dir} an eval run directory?)")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as error:
        raise ValueError(f"{path}: not a readable parquet file ({error})") from None
    missing = [n for n in ("config", "row_id", "seed_id", "correct") if n not in table.column_names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    return table.to_pylist()
