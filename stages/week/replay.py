"""Majority and unanimous vote replays over a union-query run (the paper's two ablations).

In: the events of one hierarchical union-query run (its ``subagents`` events carry every
subagent's candidate due handles). Out: the events of a derived run that keeps the same
evidence (the same ``query`` events, so the same query cost) and replaces only the final
selection at each step: a handle is selected when more than half of the subagents
(``majority``) or all of them (``unanimous``) proposed it. A subagent whose answer could not
be read counts as proposing nothing. Deterministic: no model is called.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

Vote = Literal["majority", "unanimous"]
VOTES: tuple[Vote, ...] = ("majority", "unanimous")


def voted_handles(signals: list[dict[str, Any]], vote: Vote) -> list[str]:
    """The handles the vote selects from one step's subagent signals, in ``task_N`` order."""
    counts = Counter(h for s in signals for h in dict.fromkeys(s.get("candidate_due") or []))
    n = len(signals)
    keep = [h for h, c in counts.items() if (c == n if vote == "unanimous" else c > n / 2)]
    return sorted(keep, key=lambda h: int(h.split("_")[1]) if h.split("_")[-1].isdigit() else 0)


def replay_run_id(run_id: str, vote: Vote) -> str:
    return f"{run_id}+{vote}"


def vote_replay(events: list[dict[str, Any]], vote: Vote, menus: dict[int, dict[str, str]]) -> list[dict[str, Any]]:
    """The derived run's events (``run_start.replay`` = ``vote``, ``replay_of`` = the source run)."""
    signals: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event.get("type") == "subagents":
            signals[str(event.get("step_id"))] = list(event.get("signals") or [])
    out: list[dict[str, Any]] = []
    for event in events:
        kind = event.get("type")
        if kind in ("run_start", "run_end"):
            source_id = str(event.get("run_id"))
            derived = {**event, "run_id": replay_run_id(source_id, vote)}
            if kind == "run_start":
                derived.update(replay=vote, replay_of=source_id, agent=f"{vote}-vote:{event.get('agent', 'unknown')}")
            out.append(derived)
        elif kind == "query":
            out.append({**event, "run_id": replay_run_id(str(event.get("run_id")), vote)})
        elif kind == "choose":
            step_id = str(event.get("step_id"))
            handles = voted_handles(signals.get(step_id, []), vote)
            menu = menus.get(int(event.get("day", 0)), {})
            out.append({**event, "run_id": replay_run_id(str(event.get("run_id")), vote), "task_ids": handles,
                        "selected": [menu.get(h, h) for h in handles], "forced": False})
    return out
