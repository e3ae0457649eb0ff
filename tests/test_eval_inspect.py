"""The optional inspect_ai task (extra ``[inspect]``) with inspect's mock model.

Skipped where inspect-ai is not installed (it is not in the shared venv: see the README).
The release is two rows in the real parquet layout, written here.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.schemas import PM_SCHEMA

inspect_ai = pytest.importorskip("inspect_ai")


def _release(root: Path) -> Path:
    messages = [{"role": "user", "content": "[2026-05-09T18:05] The driver put my cello in the trunk."},
                {"role": "assistant", "content": "Good call."},
                {"role": "user", "content": "[2026-05-09T18:52] We're at the hotel, hopping out."}]
    rows = [{"id": f"st-x.{v}.implicit.base", "blueprint_id": "st-x", "seed_id": "st", "dimension": "state_tracking",
             "variant": v, "constraint_form": "implicit", "context": "base", "messages": messages,
             "constraint_turns": [0], "trigger_turn": 2, "resolution_turn": None,
             "reference_intent": "Remind the user to take the cello from the trunk.", "gold_slots": ["cello", "trunk"],
             "expected": "silent" if v == "neg_clean" else "intervene"} for v in ("pos_clean", "neg_clean")]
    folder = root / "data" / "pm_base"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=PM_SCHEMA), folder / "test-00000-of-00001.parquet")
    return root


def test_inspect_task_scores_mock_model(tmp_path: Path) -> None:
    from stages.eval import prompts
    from stages.eval.inspect_task import triggerbench

    release = _release(tmp_path / "release")
    task = triggerbench(release=str(release), config="pm_base", judge_model="mockllm/model")
    [log] = inspect_ai.eval(task, model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success" and len(log.samples) == 2
    by_id = {s.id: s for s in log.samples}
    first = by_id["st-x.pos_clean.implicit.base"]
    assert [m.content for m in first.input] == [m["content"] for m in prompts.model_messages(
        {"dimension": "state_tracking", "messages": first.metadata["row"]["messages"]}, "offline")]
    # the mock answers "Default output from mockllm/model": no slot named; its judge answer is no verdict,
    # which is wrong for the positive and, as in `triggerbench eval`, wrong for the negative too
    [score] = first.scores.values()
    assert score.value["slot_match"] == 0.0 and score.value["correct"] == 0.0
    [negative] = by_id["st-x.neg_clean.implicit.base"].scores.values()
    assert negative.value["correct"] == 0.0 and "verdict=None" in negative.explanation
    metrics = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    assert metrics == {"mean": 0.0, "defined_mean": 0.0}  # Slot Match over the one positive only
