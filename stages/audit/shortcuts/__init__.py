"""The shortcut audit: can the constraint, or a row's label, be found from surface form alone?

In: every row of a release's ``pm_*`` / ``explicit_*`` / ``rm_*`` configs (streamed through
:class:`ShortcutCollector` by :func:`stages.audit.run.run_audit`). Out: :class:`ShortcutAudit`:
``shortcuts.csv`` (every cell: constraint finders' hit rate vs chance, variant classifiers'
accuracy vs majority, row invariants), ``families.csv`` (effective sample sizes), a plot, the
report and card sections, and the gate's verdict (``pass`` / ``fail`` with the failing cells),
which the build writes into ``manifest.json`` and ``publish`` enforces.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stages.audit.shortcuts.collect import ShortcutCollector
from stages.audit.shortcuts.gate import ShortcutSettings, judge, settings_from, verdict
from stages.audit.shortcuts.stats import family_table
from stages.audit.shortcuts.table import COLUMNS

FAMILY_COLUMNS = ("dimension", "rows", "families", "rows_per_family_mean", "rows_per_family_max",
                  "half_width_independent", "half_width_family")


@dataclass
class ShortcutAudit:
    """The judged shortcut table of one release."""

    records: list[dict[str, Any]]
    families: list[dict[str, Any]]
    settings: ShortcutSettings
    verdict: str = "pass"
    failing: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failing_count(self) -> int:
        return len(self.failing)

    @property
    def settings_line(self) -> str:
        s = self.settings
        return (f"hit rate > chance + {s.hit_margin:.0%} with the 95% interval above chance + {s.ci_margin:.0%}; "
                f"label accuracy > majority + {s.label_margin:.0%}; at most {s.max_user_turns_per_minute} user turns "
                f"per minute; cells with ≥ {s.min_families} seed families gated")

    def manifest_entry(self) -> dict[str, Any]:
        """``shortcut_check`` and ``shortcut_failures`` for ``manifest.json``."""
        return {"shortcut_check": self.verdict, "shortcut_failures": self.failing,
                "shortcut_settings": self.settings.model_dump(mode="json")}

    def write(self, out_dir: Path) -> list[str]:
        """Write ``shortcuts.csv``, ``families.csv`` and the plot; return the file names."""
        from stages.audit.shortcuts.report import PLOT, plot

        _write_csv(out_dir / "shortcuts.csv", COLUMNS, self.records)
        _write_csv(out_dir / "families.csv", FAMILY_COLUMNS, self.families)
        names = ["shortcuts.csv", "families.csv"]
        if plot(self.records, out_dir / PLOT):
            names.append(PLOT)
        else:
            (out_dir / PLOT).unlink(missing_ok=True)
        return names

    def markdown(self, *, card: bool = False) -> str:
        from stages.audit.shortcuts.report import markdown

        return markdown(self, heading="##", card=card)


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return "" if value != value else f"{value:.4f}"
    return "" if value is None else value


def _write_csv(path: Path, columns: tuple[str, ...], records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        for record in records:
            writer.writerow([_cell(record.get(c)) for c in columns])


def score(collector: ShortcutCollector, embed: Any) -> ShortcutAudit:
    """Score, judge and summarise what ``collector`` gathered (``embed``: texts -> unit vectors, or None)."""
    records = collector.finish(embed)
    judge(records, collector.settings)
    base = [{"dimension": r.cell[2], "family": r.family} for r in collector.rows
            if r.cell[0] == "base" and r.cell[1] == "implicit" and r.cell[3] == "pos_clean"]
    status, failing = verdict(records)
    return ShortcutAudit(records, family_table(base), collector.settings, status, failing)


__all__ = ["ShortcutAudit", "ShortcutCollector", "ShortcutSettings", "score", "settings_from"]
