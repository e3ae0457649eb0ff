"""Tables of a run: ``results.json``, ``report.md`` and the accuracy-vs-context-length figure.

Inputs are the lines of ``responses.parquet`` (:func:`stages.eval.responses.record_line`).
PM configs get a cell per dimension (and ``all``) x variant group (each variant,
``all_positive``, ``all``) with PM Acc and, on positives, Slot Match; RM configs a cell per
dimension with RM Acc and the share settled by string match. Each value has its 95%
family-bootstrap interval. Failed rows count as wrong (0) and are counted per cell.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline.vocabulary import VARIANTS
from stages.eval.bootstrap import RESAMPLES, family_interval
from stages.eval.source import config_kind

CONTEXTS = ("base", "20k", "40k", "60k", "80k", "100k")
Line = dict[str, Any]


def _metric(lines: Sequence[Line], value: Callable[[Line], float | None], name: str, seed: int, resamples: int) -> dict | None:
    pairs = [(v, str(line["seed_id"])) for line in lines if (v := value(line)) is not None]
    if not pairs:
        return None
    values, families = [p[0] for p in pairs], [p[1] for p in pairs]
    interval = family_interval(values, families, name, seed, resamples)
    assert interval is not None
    return {"value": round(sum(values) / len(values), 6), "low": round(interval[0], 6), "high": round(interval[1], 6),
            "n": len(values)}


def _cell(lines: Sequence[Line], keys: dict[str, str], seed: int, resamples: int) -> dict[str, Any]:
    name = "/".join(f"{k}={v}" for k, v in keys.items())
    kind = config_kind(keys["config"])
    cell: dict[str, Any] = {**keys, "n": len(lines), "failed": sum(1 for x in lines if x["status"] == "failed"),
                            "families": len({x["seed_id"] for x in lines})}
    if kind == "aime":
        cell |= _aime_metrics(lines, name, seed, resamples)
    elif kind == "pm":
        cell["pm_acc"] = _metric(lines, lambda x: float(x["correct"]), f"{name}/pm_acc", seed, resamples)
        positives = [x for x in lines if x["expected"] == "intervene"]
        cell["slot_match"] = _metric(positives, lambda x: x["slot_recall"], f"{name}/slot_match", seed, resamples)
        if any(x.get("constraint_in_context") is not None for x in lines):
            cell["constraint_retrieval"] = _metric(lines, _retrieved, f"{name}/constraint_retrieval", seed, resamples)
    else:
        cell["rm_acc"] = _metric(lines, lambda x: float(x["correct"]), f"{name}/rm_acc", seed, resamples)
        cell["string_match"] = _metric(lines, lambda x: float(bool(x["answer_matched"])), f"{name}/string_match", seed, resamples)
    return cell


def _aime_metrics(lines: Sequence[Line], name: str, seed: int, resamples: int) -> dict[str, Any]:
    """AIME accuracy, PM hit, PM hit given a right / wrong math answer and their difference (Tables 16-17).

    A row whose math request failed has no math answer: it counts as wrong in AIME accuracy and PM hit
    and belongs to neither conditional group."""
    right = [x for x in lines if x.get("math_correct") is True]
    wrong = [x for x in lines if x.get("math_correct") is False]
    pm = lambda x: float(x["correct"])  # noqa: E731
    out = {"aime_acc": _metric(lines, lambda x: float(bool(x.get("math_correct"))), f"{name}/aime_acc", seed, resamples),
           "pm_acc": _metric(lines, pm, f"{name}/pm_acc", seed, resamples),
           "pm_given_correct": _metric(right, pm, f"{name}/pm_given_correct", seed, resamples),
           "pm_given_wrong": _metric(wrong, pm, f"{name}/pm_given_wrong", seed, resamples),
           "slot_match": _metric(lines, lambda x: x["slot_recall"], f"{name}/slot_match", seed, resamples)}
    if out["pm_given_correct"] and out["pm_given_wrong"]:
        out["pm_delta"] = round(out["pm_given_correct"]["value"] - out["pm_given_wrong"]["value"], 6)
    else:
        out["pm_delta"] = None
    return out


def _retrieved(line: Line) -> float | None:
    """1 when the memory put the constraint (a turn, or a core fact from it) in the model's context."""
    hit = line.get("constraint_in_context")
    return None if hit is None else float(hit)


def variant_groups(lines: Sequence[Line]) -> list[tuple[str, list[Line]]]:
    """(group name, lines) for each variant present, ``all_positive`` and ``all``."""
    groups = [(v, [x for x in lines if x["variant"] == v]) for v in VARIANTS]
    groups = [g for g in groups if g[1]]
    positives = [x for x in lines if x["expected"] == "intervene"]
    return [*groups, *([("all_positive", positives)] if positives else []), ("all", list(lines))]


def cells(lines: Sequence[Line], seed: int = 0, resamples: int = RESAMPLES) -> list[dict[str, Any]]:
    """Every cell of every config, in a fixed order."""
    out: list[dict[str, Any]] = []
    configs = list(dict.fromkeys(x["config"] for x in lines))
    for config in configs:
        rows = [x for x in lines if x["config"] == config]
        context = str(rows[0]["context"])
        dimensions = sorted({x["dimension"] for x in rows})
        for dimension in [*dimensions, "all"]:
            part = [x for x in rows if dimension in ("all", x["dimension"])]
            single = {"aime": "pos_clean", "rm": "rm"}.get(config_kind(config))  # one cell per dimension
            if single is not None:
                out.append(_cell(part, {"config": config, "context": context, "dimension": dimension,
                                        "variant": single}, seed, resamples))
                continue
            for variant, group in variant_groups(part):
                keys = {"config": config, "context": context, "dimension": dimension, "variant": variant}
                out.append(_cell(group, keys, seed, resamples))
    return out


def _curves(table: Iterable[dict[str, Any]]) -> dict[str, dict[str, list[list[Any]]]]:
    """Accuracy against context length: PM per variant (implicit pm_* configs), RM overall."""
    pm: dict[str, list[list[Any]]] = {}
    rm: list[list[Any]] = []
    for cell in table:
        if cell["dimension"] != "all":
            continue
        if cell["config"].startswith("pm_") and cell["variant"] in VARIANTS and cell["pm_acc"]:
            pm.setdefault(cell["variant"], []).append([cell["context"], cell["pm_acc"]["value"]])
        elif cell["config"].startswith("rm_") and cell["rm_acc"]:
            rm.append([cell["context"], cell["rm_acc"]["value"]])
    order = {c: i for i, c in enumerate(CONTEXTS)}
    sort = lambda points: sorted(points, key=lambda p: order.get(p[0], len(order)))  # noqa: E731
    return {"pm": {v: sort(p) for v, p in pm.items()}, "rm": {"rm": sort(rm)} if rm else {}}


def summarize(lines: Sequence[Line], meta: dict[str, Any], seed: int = 0, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The content of ``results.json`` (deterministic: no times, no request counts)."""
    table = cells(lines, seed, resamples)
    failures = Counter(x["failure"] for x in lines if x["failure"])
    return {
        "format": "triggerbench-eval-results/1",
        **meta,
        "bootstrap": {"unit": "seed_id", "resamples": resamples, "seed": seed, "interval": 0.95},
        "rows": {"total": len(lines), "failed": sum(failures.values()), "failure_reasons": dict(sorted(failures.items()))},
        "cells": table,
        "curves": _curves(table),
    }


def _pct(metric: dict | None) -> str:
    if not metric:
        return "-"
    return f"{100 * metric['value']:.1f} [{100 * metric['low']:.1f}, {100 * metric['high']:.1f}]"


PM_COLUMNS = (("pos_clean", "slot_match", "Pos-Clean SM"), ("pos_clean", "pm_acc", "Pos-Clean PM"),
              ("pos_over", "slot_match", "Pos-Over SM"), ("pos_over", "pm_acc", "Pos-Over PM"),
              ("neg_clean", "pm_acc", "Neg-Clean PM"), ("all_positive", "slot_match", "All-Pos SM"),
              ("all_positive", "pm_acc", "All-Pos PM"), ("all", "pm_acc", "Overall PM"))


def markdown(results: dict[str, Any]) -> str:
    """``report.md``: one table per config, Neg-Clean beside the positives; then failures."""
    lines = [f"# Evaluation: {results['model']} on {results['release']} ({results['split']})", "",
             f"Setting `{results['setting']}`, judge `{results['judge_model']}`, temperature {results['temperature']}. "
             "Values are % with 95% intervals from a bootstrap over seed families; failed rows count as wrong.", ""]
    table = results["cells"]
    for config in dict.fromkeys(c["config"] for c in table):
        own = [c for c in table if c["config"] == config]
        lines += [f"## {config}", ""]
        if config_kind(config) == "aime":
            lines += _aime_table(own)
        elif config_kind(config) == "pm":
            lines += ["| dimension | rows | failed | " + " | ".join(h for _, _, h in PM_COLUMNS) + " |",
                      "|---|---:|---:|" + "---:|" * len(PM_COLUMNS)]
            for dimension in dict.fromkeys(c["dimension"] for c in own):
                by_variant = {c["variant"]: c for c in own if c["dimension"] == dimension}
                total = by_variant["all"]
                values = [_pct((by_variant.get(v) or {}).get(m)) for v, m, _ in PM_COLUMNS]
                lines.append(f"| {dimension} | {total['n']} | {total['failed']} | " + " | ".join(values) + " |")
        else:
            lines += ["| dimension | rows | failed | RM Acc | string match |", "|---|---:|---:|---:|---:|"]
            for c in own:
                lines.append(f"| {c['dimension']} | {c['n']} | {c['failed']} | {_pct(c['rm_acc'])} | {_pct(c['string_match'])} |")
        lines.append("")
        lines += _memory_table(results, own)
    rows = results["rows"]
    lines += ["## Rows", "", f"{rows['total']} rows, {rows['failed']} failed (counted as wrong)."]
    lines += [f"- `{reason}`: {count}" for reason, count in rows["failure_reasons"].items()]
    lines += ["", "![accuracy against context length](accuracy_vs_context.png)", ""]
    return "\n".join(lines)


def _aime_table(own: Sequence[dict[str, Any]]) -> list[str]:
    """The reasoning-budget probe: AIME accuracy and PM hit, overall and conditional on the math answer."""
    out = ["AIME accuracy (final integer = reference), PM hit (intent judge), PM hit given a right / wrong math "
           "answer, and their difference (TriggerBench Tables 16-17).", "",
           "| dimension | rows | failed | AIME acc | PM hit | PM given right | PM given wrong | Δ |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in own:
        delta = "-" if c["pm_delta"] is None else f"{100 * c['pm_delta']:+.1f}"
        out.append(f"| {c['dimension']} | {c['n']} | {c['failed']} | {_pct(c['aime_acc'])} | {_pct(c['pm_acc'])} | "
                   f"{_pct(c['pm_given_correct'])} | {_pct(c['pm_given_wrong'])} | {delta} |")
    return out


def _memory_table(results: dict[str, Any], own: Sequence[dict[str, Any]]) -> list[str]:
    """Constraint retrieval rate beside accuracy per dimension (Table 14 view), memory runs only."""
    kind = (results.get("memory") or {}).get("kind", "none")
    if kind == "none" or not any(c.get("constraint_retrieval") for c in own):
        return []
    out = [f"Memory `{kind}`: constraint retrieval (constraint turn or a core fact from it in the context).", "",
           "| dimension | constraint retrieval | All-Pos PM | Neg-Clean PM |", "|---|---:|---:|---:|"]
    for dimension in dict.fromkeys(c["dimension"] for c in own):
        by_variant = {c["variant"]: c for c in own if c["dimension"] == dimension}
        values = [by_variant["all"].get("constraint_retrieval"), (by_variant.get("all_positive") or {}).get("pm_acc"),
                  (by_variant.get("neg_clean") or {}).get("pm_acc")]
        out.append(f"| {dimension} | " + " | ".join(_pct(v) for v in values) + " |")
    return [*out, ""]


def plot(results: dict[str, Any], path: Path) -> None:
    """PM accuracy per variant and RM accuracy against context length (the paper's Fig. 4)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = results["curves"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, points in [*((f"PM {v}", p) for v, p in curves["pm"].items()), *(("RM", p) for p in curves["rm"].values())]:
        ax.plot([p[0] for p in points], [100 * p[1] for p in points], marker="o", label=label,
                linestyle="--" if label == "RM" else "-")
    ax.set_xlabel("context length")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(-2, 102)
    ax.set_title(f"{results['model']} ({results['setting']})")
    if ax.lines:
        ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def write_report(run_dir: Path, results: dict[str, Any]) -> None:
    """Write ``results.json``, ``report.md`` and ``accuracy_vs_context.png`` into ``run_dir``."""
    (run_dir / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (run_dir / "report.md").write_text(markdown(results), encoding="utf-8")
    plot(results, run_dir / "accuracy_vs_context.png")
