"""The card's shape tables: counts and Table 6 statistics from the rows as they are written, and the
comparison with the paper's Table 6 (values computed by hand here)."""

from __future__ import annotations

from pipeline.stats import PAPER_BASE_SHAPE, RowStats


def _stats() -> RowStats:
    stats = RowStats()
    observe = stats.observer("pm_base")
    for tokens, turns in ((1000, 10), (2000, 20)):
        observe({"dimension": "state_tracking", "variant": "pos_clean", "n_tokens": tokens, "n_turns": turns})
    observe({"dimension": "state_tracking", "variant": "neg_clean", "n_tokens": 9999, "n_turns": 99})
    return stats


def test_paper_comparison_reads_pos_clean_means_only() -> None:
    lines = _stats().paper_comparison().splitlines()
    paper_tokens, paper_turns = PAPER_BASE_SHAPE["state_tracking"]
    # (1000 + 2000) / 2 = 1500 tokens, (10 + 20) / 2 = 15.0 turns, 1500 / 15 = 100 tokens a turn; Neg-Clean ignored
    assert lines[2] == (f"| state_tracking | 1500 | {paper_tokens} | 15.0 | {paper_turns} | 100 | "
                        f"{paper_tokens / paper_turns:.0f} |")
    assert len(lines) == 3  # dimensions without rows are left out


def test_shape_table_describes_each_variant() -> None:
    table = _stats().shape_table("pm_base")
    assert "| state_tracking | pos_clean | 2 | 1500 | 500 | 1000 | 1500 | 2000 | 15.0 | 5.0 | 10 | 15.0 | 20 |" in table
    assert "| state_tracking | neg_clean | 1 | 9999 |" in table


def test_the_card_opens_with_every_gap_its_sections_state() -> None:
    """Rows a config lacks (a corpus too small, a deadline too close) are said before the row tables, not only in
    the distractor section that found them."""
    from pipeline.card import render_card

    manifest = {"version": "9.9.9", "config": {}, "seed": 0, "pipeline_version": "x", "fallbacks": {}, "stages": []}
    coverage = "> **Coverage gap**: the offline distractor corpora cannot fill safe_coding at 80k: 52 blueprints"
    deadline = "> **Deadline gap**: temporal_grounding at 20k: 61 blueprints have no row"
    sections = {"Distractor corpora": f"Some text.\n\n{coverage}\n\n{deadline}\n\nMore text.\n"}
    card = render_card(manifest, {"pm_base": {"test": {"rows": 1}}}, _stats(), sections)
    head = card.split("## Configs and rows")[0]
    assert coverage in head and deadline in head
    assert card.count(deadline) == 2  # and still in its own section
