"""Say which stage emptied a build, and why, before the release writer trips over it.

``explain_empty(stages, run)`` -> None when the build has base rows for a release, else one
line naming the first stage on the way to ``variants`` that kept nothing, how many items it
got, and the reasons (and first example) of its drops.
"""

from __future__ import annotations

from collections import Counter

from pipeline.runner import RunResult
from pipeline.stage import Stage

RELEASE_ROWS = "variants"  # the stage whose items become pm_*, explicit_* and rm_* rows


class EmptyRelease(Exception):
    """Every row was dropped on the way to the release (message names the stage and reason)."""


def _ancestors(stages: list[Stage], name: str) -> set[str]:
    by_name = {stage.name: stage for stage in stages}
    found: set[str] = set()
    pending = [name]
    while pending:
        current = pending.pop()
        if current in by_name and current not in found:
            found.add(current)
            pending.extend(by_name[current].inputs)
    return found


def explain_empty(stages: list[Stage], run: RunResult, hint: str = "") -> str | None:
    """None when ``variants`` produced rows; else which stage emptied the build and why."""
    output = run.outputs.get(RELEASE_ROWS)
    if output is None or output.items:
        return None
    chain = _ancestors(stages, RELEASE_ROWS)
    for record in run.records:
        if record.name not in chain or record.items_out:
            continue
        if not record.items_in:
            why = hint or "it received no items"
            return f"the build has no rows: stage {record.name} produced nothing ({why})"
        reasons = ", ".join(f"{reason}: {count}" for reason, count in Counter(record.dropped).most_common(4))
        dropped = run.outputs[record.name].dropped
        example = f"; first: {dropped[0].item_id}: {dropped[0].detail[:200]}" if dropped and dropped[0].detail else ""
        return (f"the build has no rows: stage {record.name} dropped all {record.items_in} items "
                f"({reasons or 'no reason recorded'}){example}")
    return f"the build has no rows: stage {RELEASE_ROWS} produced nothing"
