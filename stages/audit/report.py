"""``report.md``, PNG plots (matplotlib, Agg) and the dataset-card section of an audit.

The paper-comparable view is the implicit-form, base-context, Pos-Clean rows (one per
blueprint, as in TriggerBench Tables 8 and 9); every other group is reported in full tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.vocabulary import ZERO_OVERLAP_DIMENSIONS

if TYPE_CHECKING:
    from stages.audit.run import AuditResult

DIMENSION_NAMES = {
    "state_tracking": "State Tracking", "temporal_grounding": "Temporal Grounding",
    "logical_adherence": "Logical Adherence", "attention_recovery": "Attention Recovery", "safe_coding": "Safe Coding",
}
# TriggerBench appendix A.8, Table 8: n, Jaccard (mean, std), overlap coefficient (mean, std), #overlap, zero %.
PAPER_TABLE8 = {
    "state_tracking": (108, 0.005, 0.023, 0.010, 0.050, 0.1, 94),
    "temporal_grounding": (143, 0.001, 0.007, 0.003, 0.018, 0.0, 98),
    "logical_adherence": (133, 0.139, 0.096, 0.331, 0.186, 2.7, 5),
    "attention_recovery": (56, 0.002, 0.008, 0.005, 0.025, 0.0, 96),
    "safe_coding": (48, 0.021, 0.028, 0.052, 0.074, 0.7, 58),
}
# Table 9 (bge-base-en-v1.5): C-T, C-Θ, T-Θ, Θ-Θ as (mean, std).
PAPER_TABLE9 = {
    "state_tracking": ((0.480, 0.071), (0.475, 0.061), (0.467, 0.067), (0.653, 0.034)),
    "temporal_grounding": ((0.464, 0.060), (0.511, 0.078), (0.473, 0.105), (0.630, 0.045)),
    "logical_adherence": ((0.627, 0.085), (0.563, 0.075), (0.516, 0.079), (0.649, 0.037)),
    "attention_recovery": ((0.489, 0.043), (0.650, 0.032), (0.428, 0.039), (0.619, 0.034)),
    "safe_coding": ((0.553, 0.089), (0.532, 0.036), (0.456, 0.049), (0.626, 0.028)),
}
LEAK_FREE_DIMENSIONS = ZERO_OVERLAP_DIMENSIONS
ZERO_OVERLAP_GOAL = 98.0
PAIR_LABELS = {"ct": "C-T", "c_theta": "C-Θ", "t_theta": "T-Θ", "theta_theta": "Θ-Θ"}
PLOTS = ("overlap_distributions.png", "similarity_heatmap.png", "ct_vs_background.png")


def paper_view(frame: pl.DataFrame) -> pl.DataFrame:
    """Implicit-form, base-context, Pos-Clean slice of a table (empty frame stays empty)."""
    if frame.is_empty():
        return frame
    return frame.filter((pl.col("constraint_form") == "implicit") & (pl.col("context") == "base")
                        & (pl.col("variant") == "pos_clean"))


def _ms(mean: Any, std: Any, digits: int = 3) -> str:
    return "–" if mean is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _num(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _top1(row: dict[str, Any]) -> str:
    """``share% (chance%)`` of rows where C's nearest neighbour among {T} ∪ Θ is the trigger."""
    if row.get("t_top1_pct") is None:
        return "–"
    return f"{row['t_top1_pct']:.0f}% ({row['t_top1_chance_pct']:.0f}%)"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _name(dimension: str) -> str:
    return DIMENSION_NAMES.get(dimension, dimension)


def table8_markdown(lexical: pl.DataFrame, with_paper: bool = True) -> str:
    """Table 8 (paper-comparable slice) with the paper's figures beside ours."""
    rows = []
    for r in paper_view(lexical).iter_rows(named=True):
        ours = [str(r["n"]), _ms(r["jaccard_mean"], r["jaccard_std"]), _ms(r["overlap_mean"], r["overlap_std"]),
                _num(r["shared_mean"]), f"{_num(r['zero_overlap_pct'], 0)}%"]
        paper = PAPER_TABLE8.get(r["dimension"])
        theirs = ([str(paper[0]), _ms(paper[1], paper[2]), f"{paper[6]}%"] if paper else ["–"] * 3) if with_paper else []
        rows.append([_name(r["dimension"]), *ours, *theirs])
    header = ["Dimension", "n", "Jaccard", "Overlap coeff.", "#Overlap", "Zero%"]
    if with_paper:
        header += ["paper n", "paper Jaccard", "paper Zero%"]
    return _table(header, rows)


def table9_markdown(semantic: pl.DataFrame, with_paper: bool = True) -> str:
    """Table 9 (paper-comparable slice) with the paper's C-T and C-Θ beside ours."""
    rows = []
    for r in paper_view(semantic).iter_rows(named=True):
        ours = [str(r["n"])] + [_ms(r[f"{p}_mean"], r[f"{p}_std"]) for p in PAIR_LABELS] + [_top1(r)]
        paper = PAPER_TABLE9.get(r["dimension"])
        theirs = ([_ms(*paper[0]), _ms(*paper[1])] if paper else ["–"] * 2) if with_paper else []
        rows.append([_name(r["dimension"]), *ours, *theirs])
    header = ["Dimension", "n", *PAIR_LABELS.values(), "T top-1 % (chance)"]
    if with_paper:
        header += ["paper C-T", "paper C-Θ"]
    return _table(header, rows)


def goal_checks(result: AuditResult) -> list[str]:
    """One line per leak-free dimension: zero-overlap >= 98% and C-T <= C-Θ (paper-comparable slice)."""
    lines = []
    lexical = {r["dimension"]: r for r in paper_view(result.lexical).iter_rows(named=True)}
    semantic = {r["dimension"]: r for r in paper_view(result.semantic).iter_rows(named=True)}
    for dimension in LEAK_FREE_DIMENSIONS:
        lex, sem = lexical.get(dimension), semantic.get(dimension)
        if lex is None:
            continue
        zero_ok = lex["zero_overlap_pct"] is not None and lex["zero_overlap_pct"] >= ZERO_OVERLAP_GOAL
        text = f"- {_name(dimension)}: zero-overlap {_num(lex['zero_overlap_pct'])}% ({'meets' if zero_ok else 'misses'} ≥{ZERO_OVERLAP_GOAL:.0f}%)"
        if sem is not None and sem["ct_mean"] is not None and sem["c_theta_mean"] is not None:
            sim_ok = sem["ct_mean"] <= sem["c_theta_mean"]
            text += f"; C-T {sem['ct_mean']:.3f} vs C-Θ {sem['c_theta_mean']:.3f} ({'meets' if sim_ok else 'misses'} C-T ≤ C-Θ)"
        lines.append(text)
    return lines


def _full_lexical(lexical: pl.DataFrame) -> str:
    rows = [[r["constraint_form"], r["context"], _name(r["dimension"]), r["variant"], str(r["n"]),
             _ms(r["jaccard_mean"], r["jaccard_std"]), _ms(r["overlap_mean"], r["overlap_std"]), _num(r["shared_mean"]),
             f"{_num(r['zero_overlap_pct'], 0)}%", _num(r["injected_turns_mean"]),
             _num(r["injected_slot_word_rows_pct"]), _num(r["injected_slot_mention_rows_pct"])]
            for r in lexical.iter_rows(named=True)]
    header = ["form", "context", "dimension", "variant", "n", "Jaccard", "Overlap coeff.", "#Overlap", "Zero%",
              "injected turns/row", "rows w/ injected slot word %", "rows w/ injected slot mention %"]
    return _table(header, rows)


def _full_semantic(semantic: pl.DataFrame) -> str:
    rows = [[r["constraint_form"], _name(r["dimension"]), r["variant"], str(r["n"]),
             *[_ms(r[f"{p}_mean"], r[f"{p}_std"]) for p in PAIR_LABELS], _top1(r)]
            for r in semantic.iter_rows(named=True)]
    return _table(["form", "dimension", "variant", "n", *PAIR_LABELS.values(), "T top-1 % (chance)"], rows)


def write_report(result: AuditResult, out_dir: Path) -> list[str]:
    """Write the PNG plots and ``report.md`` into ``out_dir``; return the file names."""
    from stages.audit.plots import write_plots

    plots = write_plots(result, out_dir)
    parts = [
        "# Leakage audit",
        "",
        f"- Embedding model: **{result.embedding.label}**"
        + ("" if result.embedding.is_paper_model else " — a fallback; the paper used BAAI/bge-base-en-v1.5, so absolute cosines are not directly comparable."),
        f"- Stopwords: {result.stopwords}; words shorter than {result.min_word_length} characters dropped "
        "(`pipeline.text.content_words`, the blueprint lint's function).",
        f"- Rows audited: {result.rows.height}; base rows embedded: "
        f"{result.rows.filter(pl.col('cos_ct').is_not_null()).height}.",
        "- Lexical: constraint side = union of the content words of all constraint turns; Jaccard = |C∩T|/|C∪T|, "
        "overlap coefficient = |C∩T|/min(|C|,|T|); ± is the population standard deviation over rows.",
        "- Both splits (test and dev) are pooled in the tables; `rows.parquet` gives each row's split.",
        "- Semantic (base context): each utterance embedded alone, unit-normalised; C-T averaged over constraint "
        "turns, C-Θ / T-Θ over filler turns (both roles), Θ-Θ over distinct filler pairs. "
        "T top-1 %: rows where, querying with the constraint, the trigger is retrieved before every filler turn "
        "(chance: mean 1/(|Θ|+1)); scale-free, so comparable across embedding models.",
        "",
        *([result.shortcuts.markdown(), ""] if result.shortcuts is not None else []),
        "## Table 8: constraint-trigger word overlap (implicit, base, Pos-Clean)",
        "",
        table8_markdown(result.lexical),
        "",
        "## Table 9: semantic similarity (implicit, base, Pos-Clean)",
        "",
        table9_markdown(result.semantic),
        "",
        "## Goals (state tracking, temporal grounding, attention recovery)",
        "",
        *(goal_checks(result) or ["- no rows of these dimensions"]),
        "",
        "## Plots",
        "",
        *[f"![{name}]({name})" for name in plots],
        "",
        "## Lexical audit, every group",
        "",
        "Long contexts keep constraint and trigger identical to base; their extra columns are the distractor-side "
        "check: injected turns sharing content words with the gold slots, or mentioning a gold slot.",
        "",
        _full_lexical(result.lexical),
        "",
        "## Semantic audit, every base group",
        "",
        _full_semantic(result.semantic),
        "",
        "Per-row figures: `rows.parquet` (also `lexical.csv`, `semantic.csv`).",
        "",
    ]
    (out_dir / "report.md").write_text("\n".join(parts), encoding="utf-8")
    return [*plots, "report.md"]


def card_markdown(result: AuditResult) -> str:
    """The audit summary for the dataset card (stopword list and embedding model named)."""
    lexical = result.lexical
    long = result.rows.filter(pl.col("injected_turns") > 0)
    if long.is_empty():
        distractor = "No long-context rows were audited."
    else:
        mentioning = long.filter(pl.col("injected_mentioning_slot") > 0).height
        sharing = long.filter(pl.col("injected_sharing_slot_words") > 0).height
        distractor = (f"Distractor side: of {long.height} long-context rows, {mentioning} have an injected turn "
                      f"mentioning a gold slot and {sharing} one sharing a content word with a gold slot.")
    return "\n".join([
        "## Leakage audit",
        "",
        f"Lexical overlap after removing the {result.stopwords} and words shorter than {result.min_word_length} "
        f"characters; semantic similarity with **{result.embedding.label}**"
        + ("." if result.embedding.is_paper_model else " (fallback: the paper used BAAI/bge-base-en-v1.5)."),
        "Figures are for implicit-form, base-context Pos-Clean rows; every group, every row and the plots are in "
        "`audits/` (`report.md`, `lexical.csv`, `semantic.csv`, `rows.parquet`).",
        "",
        "Constraint-trigger word overlap (TriggerBench Table 8):",
        "",
        table8_markdown(lexical, with_paper=False),
        "",
        "Cosine similarity of constraint (C), trigger (T) and filler turns (Θ) (Table 9); T top-1 % is how often "
        "the trigger is the constraint's nearest neighbour among {T} ∪ Θ, with its chance level:",
        "",
        table9_markdown(result.semantic, with_paper=False),
        "",
        *goal_checks(result),
        "",
        distractor,
        "",
        *([result.shortcuts.markdown(card=True).replace("## Shortcut audit", "### Shortcut audit", 1)]
          if result.shortcuts is not None else []),
    ])
