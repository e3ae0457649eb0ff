"""Statistics of written rows for the dataset card: Table 2 counts and Table 6 shapes."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from pipeline.vocabulary import DIMENSIONS as DIMENSION_ORDER
from pipeline.vocabulary import VARIANTS as VARIANT_ORDER


# The paper's Table 6, base context, Pos-Clean: mean o200k tokens and mean turns per dimension
PAPER_BASE_SHAPE = {
    "state_tracking": (2602, 16.6),
    "temporal_grounding": (3116, 16.6),
    "logical_adherence": (2302, 19.5),
    "attention_recovery": (2510, 11.1),
    "safe_coding": (1442, 9.1),
}


@dataclass
class RowStats:
    """Collects (config, dimension, variant) -> token and turn counts as rows are written."""

    tokens: dict[tuple[str, str, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    turns: dict[tuple[str, str, str], list[int]] = field(default_factory=lambda: defaultdict(list))

    def observer(self, config: str):
        def observe(row: dict) -> None:
            key = (config, row.get("dimension", ""), row.get("variant", "rm"))
            self.tokens[key].append(int(row["n_tokens"]))
            self.turns[key].append(int(row["n_turns"]))

        return observe

    def counts_table(self, config: str = "pm_base") -> str:
        """Markdown: rows per dimension x variant (the paper's Table 2)."""
        header = "| dimension | " + " | ".join(VARIANT_ORDER) + " | PM total | RM |\n|---|" + "---|" * (len(VARIANT_ORDER) + 2)
        lines = [header]
        rm_config = config.replace("pm_", "rm_")
        totals = [0] * (len(VARIANT_ORDER) + 2)
        for dim in DIMENSION_ORDER:
            cells = [len(self.tokens.get((config, dim, v), [])) for v in VARIANT_ORDER]
            rm = len(self.tokens.get((rm_config, dim, "rm"), []))
            row = cells + [sum(cells), rm]
            totals = [a + b for a, b in zip(totals, row)]
            lines.append(f"| {dim} | " + " | ".join(str(c) for c in row) + " |")
        lines.append("| **total** | " + " | ".join(f"**{c}**" for c in totals) + " |")
        return "\n".join(lines)

    def shape_table(self, config: str) -> str:
        """Markdown: token and turn statistics per dimension x variant (the paper's Table 6)."""
        lines = ["| dimension | variant | n | tokens mean | std | min | median | max | turns mean | std | min | median | max |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        everything_tokens: list[int] = []
        everything_turns: list[int] = []
        for dim in DIMENSION_ORDER:
            for variant in (*VARIANT_ORDER, "rm"):
                tokens = self.tokens.get((config, dim, variant))
                if not tokens:
                    continue
                turns = self.turns[(config, dim, variant)]
                everything_tokens += tokens
                everything_turns += turns
                lines.append(f"| {dim} | {variant} | {len(tokens)} | {_describe(tokens)} | {_describe(turns, 1)} |")
        if everything_tokens:
            lines.append(f"| **all** | | {len(everything_tokens)} | {_describe(everything_tokens)} | {_describe(everything_turns, 1)} |")
        return "\n".join(lines)

    def paper_comparison(self, config: str = "pm_base") -> str:
        """Markdown: Pos-Clean mean tokens and turns beside the paper's Table 6 (base context)."""
        lines = ["| dimension | tokens mean | paper | turns mean | paper | tokens per turn | paper |",
                 "|---|---|---|---|---|---|---|"]
        for dim in DIMENSION_ORDER:
            tokens, turns = self.tokens.get((config, dim, "pos_clean")), self.turns.get((config, dim, "pos_clean"))
            if not tokens or dim not in PAPER_BASE_SHAPE:
                continue
            paper_tokens, paper_turns = PAPER_BASE_SHAPE[dim]
            mean, turns_mean = statistics.fmean(tokens), statistics.fmean(turns)
            lines.append(f"| {dim} | {mean:.0f} | {paper_tokens} | {turns_mean:.1f} | {paper_turns} | "
                         f"{mean / turns_mean:.0f} | {paper_tokens / paper_turns:.0f} |")
        return "\n".join(lines)


def _describe(values: list[int], digits: int = 0) -> str:
    mean = statistics.fmean(values)
    std = statistics.pstdev(values) if len(values) > 1 else 0.0
    fmt = f"{{:.{digits}f}}"
    return " | ".join([fmt.format(mean), fmt.format(std), str(min(values)), fmt.format(statistics.median(values)), str(max(values))])
