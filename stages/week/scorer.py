"""Replay scorer: Set-F1 and the diagnostic breakdown of PM-Bench appendix A.4.

In: a week and trajectory events (one or more runs, told apart by ``run_id``). Out: a
:class:`RunScore` per run and pooled numbers (micro Set-F1 over all runs' TP/FP/FN, macro =
mean of per-run Set-F1). Per step ``t``: ``TP += |D_t & A_t|``, ``FP += |A_t - D_t|``,
``FN += |D_t - A_t|``, where ``D_t`` is the week's due set and ``A_t`` the task and lure
ids behind the handles of the step's ``choose``. Set-F1 = 2TP / (2TP + FP + FN).

Every run must end with its ``run_end`` event: a run cut before it (a killed or still running
``week play``) is refused, or with ``allow_partial`` scored over the steps it reached and
marked ``partial``. Each hierarchical union-query run also yields its majority and unanimous
vote replays (:mod:`stages.week.replay`), scored as two more runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from stages.week.index import WeekIndex
from stages.week.model import CLOCK, NARRATIVE, Week
from stages.week.replay import VOTES, replay_run_id, vote_replay
from stages.week.setups import setup_of


class ScoringError(ValueError):
    """A trajectory that does not fit the week; the message names the run and step."""


def set_f1(tp: int, fp: int, fn: int) -> float:
    """2TP / (2TP + FP + FN); 0.0 when nothing was due and nothing chosen."""
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


@dataclass
class RunScore:
    """Everything measured for one run."""

    run_id: str
    agent: str
    setup: str = "single"
    partial: bool = False
    replay_of: str | None = None
    llm_requests: int | None = None
    tp: int = 0
    fp: int = 0
    fn: int = 0
    hits: int = 0
    late: int = 0
    misses: int = 0
    false_alarms: int = 0
    wrong_content: int = 0
    update_violations: int = 0
    dependency_violations: int = 0
    exact_set_match: int = 0
    due_steps: int = 0
    check_time: int = 0
    query_state: int = 0
    protocol_errors: int = 0
    forced_steps: int = 0
    missing_steps: int = 0
    subsets: dict[str, list[int]] = field(default_factory=dict)  # name -> [hits, tasks]
    channel_hits: dict[str, list[int]] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def set_f1(self) -> float:
        return set_f1(self.tp, self.fp, self.fn)

    def rate(self, subset: str) -> float:
        """On-time hit rate over a task subset (cross_day, update, proactive_required, ...)."""
        hits, total = self.subsets.get(subset, [0, 0])
        return _ratio(hits, total)

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(precision=self.precision, recall=self.recall, set_f1=self.set_f1,
                   exact_set_match_rate=_ratio(self.exact_set_match, self.due_steps),
                   hit_rates={name: self.rate(name) for name in sorted(self.subsets)})
        return out


def task_subsets(ix: WeekIndex, task_id: str) -> list[str]:
    """Diagnostic subsets a scored task belongs to (by its effective trigger)."""
    eff = ix.effective(task_id)
    task = eff.task
    names = []
    source = CLOCK if task.trigger == "time" else ix.cues[eff.cue_id].source if eff.cue_id in ix.cues else NARRATIVE
    if source == NARRATIVE:
        names.append("narrative_cued")
    else:
        names.append("proactive_required")
        names.append("clock_required" if source == CLOCK else "non_clock_proactive")
    if task.cross_day:
        names.append("cross_day")
    if eff.updated:
        names.append("update")
    return names


def _selections(ix: WeekIndex, run_id: str, events: list[dict[str, Any]], score: RunScore) -> dict[str, list[str]]:
    chosen: dict[str, list[str]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "query":
            if event.get("channel") == CLOCK:
                score.check_time += 1
            else:
                score.query_state += 1
        elif kind == "protocol_error":
            score.protocol_errors += 1
        elif kind == "choose":
            step_id = event.get("step_id")
            if step_id not in ix.steps:
                raise ScoringError(f"run {run_id}: choose at unknown step {step_id!r}")
            if step_id in chosen:
                raise ScoringError(f"run {run_id} step {step_id}: more than one choose")
            menu = ix.menus[ix.steps[step_id].day]
            handles = event.get("task_ids") or []
            if not isinstance(handles, list) or not all(isinstance(h, str) for h in handles):
                raise ScoringError(f"run {run_id} step {step_id}: task_ids must be a list of handle strings")
            unknown = [h for h in handles if h not in menu]
            if unknown:
                raise ScoringError(f"run {run_id} step {step_id}: handles {', '.join(map(str, unknown))} are not on "
                                   f"the menu of day {ix.steps[step_id].day}")
            chosen[step_id] = [menu[h] for h in handles]
            score.forced_steps += bool(event.get("forced"))
    return chosen


def _scope(run_id: str, events: list[dict[str, Any]]) -> set[int] | None:
    """The days a run played (``config.days`` of its ``run_start``), None for the whole week."""
    start = next((e for e in events if e.get("type") == "run_start"), {})
    days = (start.get("config") or {}).get("days")
    if days is None:
        return None
    if not isinstance(days, list) or not all(isinstance(d, int) for d in days):
        raise ScoringError(f"run {run_id}: config.days must be a list of day numbers")
    return set(days)


def score_run(ix: WeekIndex, run_id: str, agent: str, events: list[dict[str, Any]], partial: bool = False) -> RunScore:
    """Replay one run's events against the week's due sets (only the days it played, if scoped).

    A ``partial`` run (cut before ``run_end``) is scored only up to its last ``choose``.
    """
    start = next((e for e in events if e.get("type") == "run_start"), {})
    end = next((e for e in events if e.get("type") == "run_end"), {})
    requests = (end.get("llm") or {}).get("requests") if isinstance(end.get("llm"), dict) else None
    score = RunScore(run_id, agent, setup=setup_of(start), partial=partial,
                     replay_of=start.get("replay_of"), llm_requests=requests if isinstance(requests, int) else None)
    days = _scope(run_id, events)
    chosen = _selections(ix, run_id, events, score)
    reached = max((ix.order[s] for s in chosen), default=-1) if partial else len(ix.order)
    completed: dict[str, str] = {}
    for step_id in sorted(ix.order, key=ix.order.__getitem__):
        if ix.order[step_id] > reached:
            break
        if days is not None and ix.steps[step_id].day not in days:
            if step_id in chosen:
                raise ScoringError(f"run {run_id} step {step_id}: choose outside the run's days {sorted(days)}")
            continue
        if step_id not in chosen:
            score.missing_steps += 1
        due, picked = set(ix.due_sets[step_id]), set(chosen.get(step_id, []))
        score.tp += len(due & picked)
        score.fp += len(picked - due)
        score.fn += len(due - picked)
        if due:
            score.due_steps += 1
            score.exact_set_match += picked == due
            score.wrong_content += bool(picked - due) and bool(due - picked)
        done_before = set(completed)
        for ref in sorted(picked):
            task = ix.tasks.get(ref)
            if task is not None and any(dep not in done_before for dep in task.depends_on):
                score.dependency_violations += 1
            if ref in due:
                score.hits += 1
                completed[ref] = step_id
            elif task is not None and ref not in completed and step_id in ix.late_steps(ref):
                score.late += 1
                completed[ref] = step_id
            else:
                score.false_alarms += 1
                if task is not None and _is_stale(ix, ref, step_id):
                    score.update_violations += 1
    for task_id in ix.scored_task_ids():
        if days is not None and ix.tasks[task_id].day not in days:
            continue
        due_step = ix.due_step_of.get(task_id)
        if partial and (due_step is None or ix.order[due_step] > reached):
            continue  # not reached before the cut
        on_time = completed.get(task_id) == ix.due_step_of.get(task_id)
        if task_id not in completed:
            score.misses += 1
        for name in task_subsets(ix, task_id):
            score.subsets.setdefault(name, [0, 0])[1] += 1
            score.subsets[name][0] += on_time
        eff = ix.effective(task_id)
        source = CLOCK if eff.task.trigger == "time" else ix.cues[eff.cue_id].source
        if source != NARRATIVE:
            score.channel_hits.setdefault(source, [0, 0])[1] += 1
            score.channel_hits[source][0] += on_time
    return score


def _is_stale(ix: WeekIndex, task_id: str, step_id: str) -> bool:
    """Selecting a canceled task after its cancel, or an updated task where its old version would fire."""
    eff = ix.effective(task_id)
    if eff.canceled and eff.cancel_step_id in ix.order and ix.order[step_id] > ix.order[eff.cancel_step_id]:
        return True
    return step_id in ix.stale_steps(task_id) and not eff.canceled


def _group_runs(week: Week, events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Events by ``run_id``; refuses runs of another week and events after a run's ``run_end``."""
    digest = week.digest()
    runs: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        run_id = str(event.get("run_id", "run-0"))
        if event.get("type") == "run_start" and event.get("week_sha256") not in (None, digest):
            raise ScoringError(f"run {run_id} was recorded on another week (week_sha256 differs from {week.id})")
        previous = runs.setdefault(run_id, [])
        if previous and previous[-1].get("type") == "run_end":
            raise ScoringError(f"run {run_id} has events after its run_end (two runs with one run id? "
                               "use --run-id to tell them apart)")
        previous.append(event)
    if not runs:
        raise ScoringError("the trajectory has no events")
    return runs


def _is_cut(run_events: list[dict[str, Any]]) -> bool:
    return run_events[-1].get("type") != "run_end"


def score_trajectory(week: Week, events: list[dict[str, Any]], allow_partial: bool = False,
                     replays: bool = True) -> dict[str, Any]:
    """Score every run in ``events``; returns per-run scores plus micro and macro aggregates.

    Raises :class:`ScoringError` for a run without ``run_end`` unless ``allow_partial``.
    With ``replays``, every union-query run adds its two vote replays (unless already present).
    """
    ix = WeekIndex(week)
    runs = _group_runs(week, events)
    for run_id, run_events in runs.items():
        if _is_cut(run_events) and not allow_partial:
            steps = sum(e.get("type") == "choose" for e in run_events)
            raise ScoringError(f"run {run_id} has no run_end: the trajectory was cut after {steps} step(s); "
                               "rerun it, or pass --allow-partial to score the steps it reached")
    if replays:
        for run_id, run_events in list(runs.items()):
            start = next((e for e in run_events if e.get("type") == "run_start"), {})
            if setup_of(start) != "union-query":
                continue
            for vote in VOTES:
                derived = replay_run_id(run_id, vote)
                if derived not in runs:
                    runs[derived] = vote_replay(run_events, vote, ix.menus)
    agents = {run_id: str(next((e.get("agent", "unknown") for e in evs if e.get("type") == "run_start"), "unknown"))
              for run_id, evs in runs.items()}
    scores = [score_run(ix, run_id, agents[run_id], evs, partial=_is_cut(evs)) for run_id, evs in runs.items()]
    tp, fp, fn = (sum(getattr(s, k) for s in scores) for k in ("tp", "fp", "fn"))
    return {
        "week_id": week.id,
        "n_runs": len(scores),
        "micro": {"tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
                  "set_f1": set_f1(tp, fp, fn)},
        "macro_set_f1": sum(s.set_f1 for s in scores) / len(scores),
        "partial_runs": sorted(s.run_id for s in scores if s.partial),
        "runs": [s.as_json() for s in scores],
    }
