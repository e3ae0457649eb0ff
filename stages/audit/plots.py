"""The audit's PNG plots (matplotlib Agg backend, no timestamps in the files).

- ``overlap_distributions.png``: Jaccard and overlap coefficient per dimension, one box per variant
  (implicit form, base context);
- ``similarity_heatmap.png``: mean cosine per dimension x pair (implicit, base, Pos-Clean);
- ``ct_vs_background.png``: per row, C-T against the row's C-Θ background (y = x line).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from stages.audit.report import DIMENSION_NAMES, PAIR_LABELS, paper_view  # noqa: E402
from stages.audit.run import DIMENSION_ORDER, VARIANT_ORDER, _order  # noqa: E402

if TYPE_CHECKING:
    from stages.audit.run import AuditResult

PNG_METADATA = {"Software": None}
COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def _dimensions(frame: pl.DataFrame) -> list[str]:
    present = {d for d in frame["dimension"].to_list() if d is not None}
    return sorted(present, key=lambda d: _order(d, DIMENSION_ORDER))


def _short(dimension: str) -> str:
    return DIMENSION_NAMES.get(dimension, dimension).replace(" ", "\n")


def _save(fig: plt.Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=PNG_METADATA)
    plt.close(fig)


def overlap_distributions(rows: pl.DataFrame, path: Path) -> bool:
    """Box plots of Jaccard and overlap coefficient per dimension and variant."""
    base = rows.filter((pl.col("constraint_form") == "implicit") & (pl.col("context") == "base"))
    if base.is_empty():
        return False
    dimensions = _dimensions(base)
    variants = sorted(set(base["variant"].drop_nulls().to_list()), key=lambda v: _order(v, VARIANT_ORDER))
    fig, axes = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    width = 0.8 / max(len(variants), 1)
    for ax, metric, label in zip(axes, ("jaccard", "overlap"), ("Jaccard", "Overlap coefficient")):
        for k, variant in enumerate(variants):
            data = [base.filter((pl.col("dimension") == d) & (pl.col("variant") == variant))[metric].to_numpy()
                    for d in dimensions]
            positions = np.arange(len(dimensions)) + (k - (len(variants) - 1) / 2) * width
            kept = [(p, x) for p, x in zip(positions, data) if len(x)]
            if not kept:
                continue
            box = ax.boxplot([x for _, x in kept], positions=[p for p, _ in kept], widths=width * 0.9,
                             patch_artist=True, showfliers=True, flierprops={"markersize": 3},
                             medianprops={"color": "black"})
            for patch in box["boxes"]:
                patch.set_facecolor(COLORS[k % len(COLORS)])
                patch.set_alpha(0.7)
            ax.plot([], [], color=COLORS[k % len(COLORS)], linewidth=8, alpha=0.7, label=variant)
        ax.set_ylabel(label)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8)
    axes[0].set_title("Constraint-trigger content-word overlap (implicit, base)")
    axes[1].set_xticks(np.arange(len(dimensions)), [_short(d) for d in dimensions], fontsize=8)
    _save(fig, path)
    return True


def similarity_heatmap(semantic: pl.DataFrame, model: str, path: Path) -> bool:
    """Heatmap of mean cosine per dimension x (C-T, C-Θ, T-Θ, Θ-Θ)."""
    view = paper_view(semantic)
    if view.is_empty():
        return False
    dimensions = _dimensions(view)
    matrix = np.array([[np.nan if (v := view.filter(pl.col("dimension") == d)[f"{p}_mean"][0]) is None else v
                        for p in PAIR_LABELS] for d in dimensions], dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 1.2 + 0.6 * len(dimensions)))
    image = ax.imshow(matrix, cmap="viridis", vmin=np.nanmin(matrix) - 0.05, vmax=np.nanmax(matrix) + 0.05, aspect="auto")
    middle = (np.nanmin(matrix) + np.nanmax(matrix)) / 2
    for (i, j), value in np.ndenumerate(matrix):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=9,
                    color="black" if value > middle else "white")
    ax.set_xticks(range(len(PAIR_LABELS)), list(PAIR_LABELS.values()))
    ax.set_yticks(range(len(dimensions)), [DIMENSION_NAMES.get(d, d) for d in dimensions])
    ax.set_title(f"Mean cosine similarity (implicit, base, Pos-Clean)\n{model}", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.04)
    _save(fig, path)
    return True


def ct_vs_background(rows: pl.DataFrame, model: str, path: Path) -> bool:
    """Scatter of per-row C-T against C-Θ, coloured by dimension, with the y = x diagonal."""
    view = paper_view(rows).drop_nulls(["cos_ct", "cos_c_theta"])
    if view.is_empty():
        return False
    fig, ax = plt.subplots(figsize=(6.5, 6))
    for k, dimension in enumerate(_dimensions(view)):
        part = view.filter(pl.col("dimension") == dimension)
        ax.scatter(part["cos_c_theta"].to_numpy(), part["cos_ct"].to_numpy(), s=12, alpha=0.7,
                   color=COLORS[k % len(COLORS)], label=DIMENSION_NAMES.get(dimension, dimension))
    low = float(min(view["cos_ct"].min(), view["cos_c_theta"].min())) - 0.02
    high = float(max(view["cos_ct"].max(), view["cos_c_theta"].max())) + 0.02
    ax.plot([low, high], [low, high], color="black", linewidth=1, linestyle="--", label="C-T = C-Θ")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("C-Θ background (mean cosine of constraint to filler turns)")
    ax.set_ylabel("C-T (cosine of constraint to trigger)")
    ax.set_title(f"C-T versus background, per row (implicit, base, Pos-Clean)\n{model}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _save(fig, path)
    return True


def write_plots(result: AuditResult, out_dir: Path) -> list[str]:
    """Write the plots that have data; return their file names."""
    model = result.embedding.name
    made = {
        "overlap_distributions.png": overlap_distributions(result.rows, out_dir / "overlap_distributions.png"),
        "similarity_heatmap.png": similarity_heatmap(result.semantic, model, out_dir / "similarity_heatmap.png"),
        "ct_vs_background.png": ct_vs_background(result.rows, model, out_dir / "ct_vs_background.png"),
    }
    return [name for name, written in made.items() if written]
