"""The shortcut audit in words and pictures: report and card sections, and the finder plot.

``shortcut_finders.png``: for base contexts, implicit form, Pos-Clean, one panel per dimension
with each finder's hit rate (bar, 95% interval) against its chance level (black tick).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.vocabulary import DIMENSIONS
from stages.audit.shortcuts.table import FORM, TEXT

PLOT = "shortcut_finders.png"
SHORT = {"state_tracking": "ST", "temporal_grounding": "TG", "logical_adherence": "LA", "attention_recovery": "AR",
         "safe_coding": "SC"}
LIST_LIMIT = 40


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.0f}"


def _view(records: Sequence[dict], context: str = "base", form: str = "implicit", variant: str = "pos_clean") -> dict:
    return {(r["finder"], r["dimension"]): r for r in records if r["section"] == "constraint_finder"
            and r["context"] == context and r["constraint_form"] == form and r["variant"] == variant}


def finder_table(records: Sequence[dict], context: str = "base", form: str = "implicit") -> str:
    """Finder x dimension: ``hit% (chance%)``, a ✗ on failing cells (Pos-Clean rows of ``form``)."""
    view = _view(records, context, form)
    dims = [d for d in DIMENSIONS if any(k[1] == d for k in view)]
    lines = ["| finder | kind | " + " | ".join(SHORT[d] for d in dims) + " |", "|---|---|" + "---|" * len(dims)]
    for finder in (*FORM, *TEXT):
        cells = [view.get((finder, d)) for d in dims]
        if not any(cells):
            continue
        text = [("–" if c is None else f"{_pct(c['value'])} ({_pct(c['baseline'])}){' ✗' if c['fails'] else ''}")
                for c in cells]
        kind = "form" if finder in FORM else "text"
        lines.append(f"| {finder} | {kind} | " + " | ".join(text) + " |")
    return "\n".join(lines)


def label_table(records: Sequence[dict]) -> str:
    """Label finders on base contexts: accuracy vs majority per dimension and pair."""
    rows = [r for r in records if r["section"] == "label_finder" and r["context"] == "base"]
    lines = ["| form | dimension | pair | accuracy % | majority % | 95% CI | fails |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['constraint_form']} | {r['dimension']} | {r['variant']} | {_pct(r['value'])} | "
                     f"{_pct(r['baseline'])} | {_pct(r['ci_low'])}–{_pct(r['ci_high'])} | {'✗' if r['fails'] else ''} |")
    return "\n".join(lines)


def invariant_table(records: Sequence[dict]) -> str:
    """Invariants per config (summed over dimensions; max/min where that is the figure)."""
    by_config: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["section"] != "invariant":
            continue
        entry = by_config.setdefault(r["config"], {"fails": False})
        name, value = r["finder"], r["value"]
        if name.startswith("max_"):
            entry[name] = max(entry.get(name, 0), value)
        elif name.startswith("min_"):
            entry[name] = value if entry.get(name) is None else min(entry[name], value) if value is not None else entry[name]
        elif not name.startswith("median_"):
            entry[name] = entry.get(name, 0) + (value or 0)
        entry["fails"] |= bool(r["fails"])
    columns = ("role_break_rows", "backwards_rows", "max_user_turns_per_minute", "min_gap_minutes",
               "injected_time_turns")
    lines = ["| config | " + " | ".join(columns) + " | fails |", "|---|" + "---|" * (len(columns) + 1)]
    for config, entry in sorted(by_config.items()):
        values = ["–" if entry.get(c) is None else f"{entry[c]:g}" for c in columns]
        lines.append(f"| {config} | " + " | ".join(values) + f" | {'✗' if entry['fails'] else ''} |")
    return "\n".join(lines)


def failing_lines(failing: Sequence[dict], limit: int = LIST_LIMIT) -> list[str]:
    lines = []
    for cell in failing[:limit]:
        where = cell.get("config") or f"{cell['context']}/{cell['constraint_form']}"
        lines.append(f"- {cell['section']}: {where}, {cell['dimension']}, {cell['variant'] or '–'}, "
                     f"{cell['finder']}: {cell['value']:.3g} vs {cell['baseline']:.3g}")
    if len(failing) > limit:
        lines.append(f"- ... and {len(failing) - limit} more (audits/shortcuts.csv, column `fails`)")
    return lines


def markdown(audit: Any, *, heading: str = "##", card: bool = False) -> str:
    """The shortcut section (report or card) of a :class:`~stages.audit.shortcuts.ShortcutAudit`."""
    parts = [
        f"{heading} Shortcut audit: **{audit.verdict}**",
        "",
        "Can the constraint or the label be read off the surface form, without remembering anything? Each "
        "constraint finder picks one earlier user turn from form alone (reply length, punctuation, timestamps, "
        "position, gaps; or similarity and retrieval with the trigger as query); a learned finder and a variant "
        "classifier are cross-validated by seed family. Cells: `hit% (chance%)`, ✗ = fails the gate "
        f"(thresholds: {audit.settings_line}). Constraint finders are gated on implicit rows: an explicit row "
        "states the intention as a request on purpose, so its cells are reported, not gated.",
        "",
        f"{audit.failing_count} failing cells." if audit.failing else "No failing cells.",
        "",
        *failing_lines(audit.failing, 12 if card else LIST_LIMIT),
        "",
        "Constraint finders, base contexts, implicit form, Pos-Clean:",
        "",
        finder_table(audit.records),
        "",
    ]
    if not card:
        parts += ["Constraint finders, base contexts, explicit form, Pos-Clean (reported, not gated):", "",
                  finder_table(audit.records, form="explicit"), "",
                  "Variant classifiers (structure only), base contexts:", "", label_table(audit.records), "",
                  "Row invariants (every row of every config):", "", invariant_table(audit.records), "",
                  f"![{PLOT}]({PLOT})", "", "Every cell, every context: `shortcuts.csv`; family statistics: "
                  "`families.csv`.", ""]
    else:
        parts += ["Every cell, every context and the row invariants: `audits/shortcuts.csv` and `audits/report.md`.", ""]
    return "\n".join(parts)


def plot(records: Sequence[dict], path: Path) -> bool:
    """Write :data:`PLOT`; False when there are no base Pos-Clean cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    view = _view(records)
    dims = [d for d in DIMENSIONS if any(k[1] == d for k in view)]
    if not dims:
        return False
    finders = [f for f in (*FORM, *TEXT) if any((f, d) in view for d in dims)]
    fig, axes = plt.subplots(1, len(dims), figsize=(3.2 * len(dims), 0.32 * len(finders) + 1.6), sharey=True,
                             squeeze=False)
    y = np.arange(len(finders))
    for ax, dimension in zip(axes[0], dims):
        cells = [view.get((f, dimension)) for f in finders]
        values = [c["value"] if c else np.nan for c in cells]
        low = [c["value"] - c["ci_low"] if c else 0 for c in cells]
        high = [c["ci_high"] - c["value"] if c else 0 for c in cells]
        colors = ["#c44e52" if c and c["fails"] else "#4c72b0" if c and c["gated"] else "#b0b0b0" for c in cells]
        ax.barh(y, values, xerr=[low, high], color=colors, alpha=0.8, error_kw={"elinewidth": 0.8})
        ax.scatter([c["baseline"] if c else np.nan for c in cells], y, marker="|", s=120, color="black", zorder=3)
        ax.set_xlim(0, 1)
        ax.set_title(dimension.replace("_", " "), fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y, finders, fontsize=7)
    axes[0][0].invert_yaxis()
    fig.suptitle("Constraint finders (base, implicit, Pos-Clean): hit rate (red = fails the gate, grey = reported, not gated), chance = |", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return True
