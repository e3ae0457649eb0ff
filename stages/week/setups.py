"""The eight PM-Bench agent setups (paper Table 6) and how a trajectory says which one it is.

In: a run's ``run_start`` event. Out: its setup name. Five setups are live single-agent runs
told apart by the runtime config (heartbeat mode, ledger); the hierarchical union-query run
has ``config.hierarchical``; the two vote ablations are replays of a union-query run
(``run_start.replay`` is ``majority`` or ``unanimous``, see :mod:`stages.week.replay`).
"""

from __future__ import annotations

from typing import Any

SETUPS: tuple[str, ...] = (
    "single", "ledger", "heartbeat-optional", "heartbeat-auto60", "heartbeat-auto30",
    "union-query", "majority-vote", "unanimous-vote",
)

# ``week play --setup NAME`` -> the runtime options that make it.
PLAY_SETUPS: dict[str, dict[str, Any]] = {
    "single": {"heartbeat": "off", "ledger": False, "hierarchical": False},
    "ledger": {"heartbeat": "off", "ledger": True, "hierarchical": False},
    "heartbeat-optional": {"heartbeat": "optional", "ledger": False, "hierarchical": False},
    "heartbeat-auto60": {"heartbeat": "auto60", "ledger": False, "hierarchical": False},
    "heartbeat-auto30": {"heartbeat": "auto30", "ledger": False, "hierarchical": False},
    "union-query": {"heartbeat": "off", "ledger": False, "hierarchical": True},
}

VOTE_SETUPS = {"majority": "majority-vote", "unanimous": "unanimous-vote"}


def setup_of(run_start: dict[str, Any]) -> str:
    """The setup name of a run; combinations outside the eight (ledger + heartbeat) get a joined name."""
    replay = run_start.get("replay")
    if replay in VOTE_SETUPS:
        return VOTE_SETUPS[replay]
    config = run_start.get("config") or {}
    if config.get("hierarchical"):
        return "union-query"
    heartbeat = config.get("heartbeat") or "off"
    parts = (["ledger"] if config.get("ledger") else []) + ([f"heartbeat-{heartbeat}"] if heartbeat != "off" else [])
    return "+".join(parts) or "single"


def setup_order(name: str) -> tuple[int, str]:
    """Sort key: the paper's order first, any other combination after it."""
    return (SETUPS.index(name), name) if name in SETUPS else (len(SETUPS), name)
