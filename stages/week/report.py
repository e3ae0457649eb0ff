"""The setup table of ``week score``: one row per agent setup, the paper's Table 2 view.

In: the report of :func:`stages.week.scorer.score_trajectory`. Out: per setup (in the
paper's order, then any other combination) the pooled and averaged numbers of its runs
(:func:`setup_rows`) and a fixed-width text table (:func:`format_table`). Macro Set-F1 is the
mean of the runs' Set-F1, micro Set-F1 / precision / recall pool their TP, FP and FN;
diagnostics and query counts are totals over the runs; subset hit rates pool hits and tasks.
"""

from __future__ import annotations

from typing import Any

from stages.week.scorer import set_f1
from stages.week.setups import setup_order

TOTALS = ("tp", "fp", "fn", "hits", "late", "misses", "false_alarms", "wrong_content", "update_violations",
          "dependency_violations", "exact_set_match", "due_steps", "check_time", "query_state", "protocol_errors",
          "forced_steps")
SUBSETS = ("narrative_cued", "clock_required", "non_clock_proactive", "cross_day", "update")


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def setup_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One aggregate dict per setup present in the report."""
    by_setup: dict[str, list[dict[str, Any]]] = {}
    for run in report["runs"]:
        by_setup.setdefault(run["setup"], []).append(run)
    rows = []
    for name in sorted(by_setup, key=setup_order):
        runs = by_setup[name]
        row: dict[str, Any] = {"setup": name, "runs": len(runs), "partial": sum(bool(r["partial"]) for r in runs)}
        row.update({key: sum(r[key] for r in runs) for key in TOTALS})
        row["queries"] = row["check_time"] + row["query_state"]
        requests = [r["llm_requests"] for r in runs if r.get("llm_requests") is not None]
        row["llm_requests"] = sum(requests) if requests else None
        row["macro_set_f1"] = sum(r["set_f1"] for r in runs) / len(runs)
        row["set_f1"] = set_f1(row["tp"], row["fp"], row["fn"])
        row["precision"] = _ratio(row["tp"], row["tp"] + row["fp"])
        row["recall"] = _ratio(row["tp"], row["tp"] + row["fn"])
        row["exact_set_match_rate"] = _ratio(row["exact_set_match"], row["due_steps"])
        for subset in SUBSETS:
            hits = sum(r["subsets"].get(subset, [0, 0])[0] for r in runs)
            tasks = sum(r["subsets"].get(subset, [0, 0])[1] for r in runs)
            row[f"{subset}_hit_rate"] = _ratio(hits, tasks)
        rows.append(row)
    return rows


COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (header, row key, format)
    ("setup", "setup", "s"), ("runs", "runs", "d"), ("macroF1", "macro_set_f1", ".3f"), ("microF1", "set_f1", ".3f"),
    ("P", "precision", ".3f"), ("R", "recall", ".3f"), ("TP", "tp", "d"), ("FP", "fp", "d"), ("FN", "fn", "d"),
    ("hit", "hits", "d"), ("late", "late", "d"), ("miss", "misses", "d"), ("false", "false_alarms", "d"),
    ("wrong", "wrong_content", "d"), ("upd-v", "update_violations", "d"), ("dep-v", "dependency_violations", "d"),
    ("exact", "exact_set_match_rate", ".3f"), ("narr", "narrative_cued_hit_rate", ".3f"),
    ("clock", "clock_required_hit_rate", ".3f"), ("chan", "non_clock_proactive_hit_rate", ".3f"),
    ("xday", "cross_day_hit_rate", ".3f"), ("upd", "update_hit_rate", ".3f"), ("time-q", "check_time", "d"),
    ("state-q", "query_state", "d"), ("queries", "queries", "d"), ("llm-req", "llm_requests", "d"),
)


def _cell(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned text table; a setup with cut runs is flagged ``(PARTIAL n)``."""
    cells = [[h for h, _, _ in COLUMNS]]
    for row in rows:
        line = [_cell(row[key], fmt) for _, key, fmt in COLUMNS]
        if row["partial"]:
            line[0] += f" (PARTIAL {row['partial']})"
        cells.append(line)
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    out = []
    for n, line in enumerate(cells):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
