"""Perfect-play audit: the oracle policy must finish every non-canceled task on time.

In: a :class:`Week`. Out: an :class:`AuditResult`; ``passed`` only if the oracle, playing
through the real runtime and scored by the real scorer, hits every scored task at its due
step with no false alarm, no late execution and no protocol error. Any failure names the
missed or wrongly selected tasks, so it points at a solvability defect in the week.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stages.week.index import WeekIndex
from stages.week.model import Week
from stages.week.policies import Oracle
from stages.week.runtime import RuntimeConfig, run_week
from stages.week.scorer import score_trajectory


@dataclass
class AuditResult:
    """Outcome of the perfect-play audit."""

    passed: bool
    scored_tasks: int
    hits: int
    problems: list[str] = field(default_factory=list)
    score: dict[str, Any] = field(default_factory=dict)


def audit_week(week: Week) -> AuditResult:
    """Run the oracle through the runtime and check it completes every scored task on time."""
    events = run_week(week, Oracle(week), RuntimeConfig(max_handles=None), run_id="perfect-play-audit")
    report = score_trajectory(week, events)
    run = report["runs"][0]
    ix = WeekIndex(week)
    problems = []
    chosen = {e["step_id"]: set(e["selected"]) for e in events if e["type"] == "choose"}
    for task_id in ix.scored_task_ids():
        due = ix.due_step_of.get(task_id)
        if due is None:
            problems.append(f"task {task_id}: no realizable due step")
        elif task_id not in chosen.get(due, set()):
            problems.append(f"day {ix.tasks[task_id].day} step {due} task {task_id}: not completed on time by the oracle")
    for step_id, picked in sorted(chosen.items()):
        for ref in sorted(picked - set(ix.due_sets.get(step_id, []))):
            problems.append(f"day {ix.steps[step_id].day} step {step_id} task {ref}: oracle selected it while not due")
    if run["protocol_errors"]:
        problems.append(f"oracle made {run['protocol_errors']} protocol errors")
    passed = not problems and run["hits"] == len(ix.scored_task_ids()) and run["fp"] == 0
    return AuditResult(passed, len(ix.scored_task_ids()), run["hits"], problems, report)
