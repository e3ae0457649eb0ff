"""``triggerbench eval compare runs/A runs/B``: two runs side by side, paired on row ids.

For every cell both runs share (config x dimension x variant group, as in ``report.md``),
the rows present in both runs are paired; the table gives A, B, B - A and the 95% interval
of B - A from a bootstrap over seed families, and whether that interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from stages.eval.bootstrap import RESAMPLES, paired_difference
from stages.eval.report import variant_groups
from stages.eval.responses import read_responses
from stages.eval.source import config_kind

Line = dict[str, Any]


def _metrics(config: str) -> list[tuple[str, Callable[[Line], float | None]]]:
    if config_kind(config) == "rm":
        return [("rm_acc", lambda x: float(x["correct"]))]
    return [("pm_acc", lambda x: float(x["correct"])), ("slot_match", lambda x: x["slot_recall"])]


def _pairs(a: Sequence[Line], b: Sequence[Line]) -> list[tuple[Line, Line]]:
    b_rows = {(x["config"], x["row_id"]): x for x in b}
    return [(x, b_rows[key]) for x in a if (key := (x["config"], x["row_id"])) in b_rows]


def compare_lines(a: Sequence[Line], b: Sequence[Line], seed: int = 0, resamples: int = RESAMPLES) -> list[dict[str, Any]]:
    """One entry per shared cell and metric: a, b, difference, interval, excludes_zero."""
    pairs = _pairs(a, b)
    out: list[dict[str, Any]] = []
    for config in dict.fromkeys(x["config"] for x, _ in pairs):
        own = [p for p in pairs if p[0]["config"] == config]
        for dimension in [*sorted({x["dimension"] for x, _ in own}), "all"]:
            part = [p for p in own if dimension in ("all", p[0]["dimension"])]
            groups = [("rm", part)] if config_kind(config) == "rm" else _paired_groups(part)
            for variant, group in groups:
                for metric, value in _metrics(config):
                    scored = [(va, vb, x["seed_id"]) for x, y in group
                              if (va := value(x)) is not None and (vb := value(y)) is not None]
                    if not scored:
                        continue
                    name = f"compare/{config}/{dimension}/{variant}/{metric}"
                    result = paired_difference([s[0] for s in scored], [s[1] for s in scored],
                                               [str(s[2]) for s in scored], name, seed, resamples)
                    assert result is not None
                    diff, low, high = result
                    out.append({"config": config, "dimension": dimension, "variant": variant, "metric": metric,
                                "n": len(scored), "a": round(sum(s[0] for s in scored) / len(scored), 6),
                                "b": round(sum(s[1] for s in scored) / len(scored), 6), "difference": round(diff, 6),
                                "low": round(low, 6), "high": round(high, 6), "excludes_zero": low > 0 or high < 0})
    return out


def _paired_groups(pairs: list[tuple[Line, Line]]) -> list[tuple[str, list[tuple[Line, Line]]]]:
    by_id = {id(x): (x, y) for x, y in pairs}
    return [(name, [by_id[id(x)] for x in lines]) for name, lines in variant_groups([x for x, _ in pairs])]


def compare_runs(a_dir: Path, b_dir: Path, seed: int = 0, resamples: int = RESAMPLES) -> list[dict[str, Any]]:
    """Compare two run directories (ValueError naming the file when one cannot be read)."""
    a, b = read_responses(a_dir), read_responses(b_dir)
    table = compare_lines(a, b, seed, resamples)
    if not table:
        raise ValueError(f"{a_dir} and {b_dir} share no evaluated rows (same release, configs and split?)")
    return table


def compare_table(table: Sequence[dict[str, Any]], a_name: str, b_name: str) -> str:
    """A markdown table of :func:`compare_lines` output (percentages)."""
    lines = [f"A = {a_name}, B = {b_name}; B - A with 95% family-bootstrap interval", "",
             "| config | dimension | variant | metric | rows | A | B | B - A | 95% interval | excludes 0 |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for e in table:
        lines.append(f"| {e['config']} | {e['dimension']} | {e['variant']} | {e['metric']} | {e['n']} | "
                     f"{100 * e['a']:.1f} | {100 * e['b']:.1f} | {100 * e['difference']:+.1f} | "
                     f"[{100 * e['low']:+.1f}, {100 * e['high']:+.1f}] | {'yes' if e['excludes_zero'] else 'no'} |")
    return "\n".join(lines)
