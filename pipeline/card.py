"""The dataset card (``README.md`` of a release): YAML front matter and documentation."""

from __future__ import annotations

from typing import Any

import yaml

from pipeline.stats import RowStats

CONFIG_ORDER = ("blueprints", "pm_base", "explicit_base", "rm_base")


def front_matter(configs: dict[str, dict[str, Any]], license_name: str) -> str:
    """YAML front matter with one ``configs`` entry per config and its data files per split."""
    ordered = sorted(configs, key=lambda name: (CONFIG_ORDER.index(name) if name in CONFIG_ORDER else 99, name))
    entries = []
    for name in ordered:
        splits = [s for s in ("test", "dev") if s in configs[name]] + sorted(s for s in configs[name] if s not in ("test", "dev"))
        entries.append({
            "config_name": name,
            "data_files": [{"split": split, "path": f"data/{name}/{split}-*.parquet"} for split in splits],
        })
    meta = {
        "license": license_name,
        "pretty_name": "TriggerBench",
        "language": ["en"],
        "task_categories": ["text-generation"],
        "tags": ["prospective-memory", "long-context", "benchmark"],
        "configs": entries,
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


GAP_NOTES = ("> **Coverage gap", "> **Deadline gap")  # rows a config lacks, and why: the card opens with them


def render_card(manifest: dict[str, Any], configs: dict[str, dict[str, Any]], stats: RowStats,
                sections: dict[str, str]) -> str:
    """The whole card: front matter, overview, statistics, audits, build, extra sections."""
    version = manifest["version"]
    parts = [front_matter(configs, manifest["config"].get("license", "cc-by-4.0"))]
    parts.append(f"# TriggerBench {version}\n")
    if "shortcut_check" in manifest:
        failing = manifest.get("shortcut_failures") or []
        parts.append(f"**Shortcut check: {manifest['shortcut_check']}**"
                     + (f" ({len(failing)} failing cells: a surface cue finds the constraint or the label in them; "
                        "see *Shortcut audit* below and `audits/shortcuts.csv`)." if failing else
                        " (no surface cue finds the constraint or the label better than chance; `audits/shortcuts.csv`).")
                     + "\n")
    parts.append(
        "Prospective-memory tasks for LLMs: an earlier, implicit constraint must be acted on when a later, benign "
        "trigger arrives, without being asked. Built by the `triggerbench` pipeline from hand-written seed blueprints; "
        "the PM-Bench seven-day agent week ships alongside (`week/week.json`).\n"
    )
    gaps = [line for body in sections.values() for line in body.splitlines() if line.startswith(GAP_NOTES)]
    if gaps:  # stated in the card's first lines, not only in the section that found them
        parts.append("\n".join(gaps) + "\n")
    parts.append("## Configs and rows\n")
    parts.append("| config | " + " | ".join(("test", "dev")) + " |\n|---|---|---|")
    for name in sorted(configs):
        parts.append(f"| `{name}` | " + " | ".join(str(configs[name].get(s, {}).get("rows", 0)) for s in ("test", "dev")) + " |")
    parts.append("\n## Tasks per dimension and variant (`pm_base`, both splits)\n")
    parts.append(stats.counts_table("pm_base"))
    parts.append("\n## Dialogue shape (`pm_base`, o200k_base tokens)\n")
    parts.append(stats.shape_table("pm_base"))
    parts.append("\nBeside the paper's Table 6 (base context, Pos-Clean means):\n")
    parts.append(stats.paper_comparison("pm_base"))
    for config in sorted({key[0] for key in stats.tokens} - {"pm_base"}):
        parts.append(f"\n### `{config}`\n")
        parts.append(stats.shape_table(config))
    for title, body in sections.items():
        if not body.lstrip().startswith("## "):  # sections that bring their own heading keep it
            parts.append(f"\n## {title}\n")
        parts.append(body.rstrip() + "\n")
    parts.append("\n## How it was built\n")
    parts.append(f"Seed {manifest['seed']}, pipeline {manifest['pipeline_version']}. Offline fallbacks used:\n")
    parts.append("```json\n" + yaml.safe_dump(manifest["fallbacks"], sort_keys=True).rstrip() + "\n```\n")
    parts.append("| stage | in | out | dropped |\n|---|---|---|---|")
    for stage in manifest["stages"]:
        dropped = ", ".join(f"{reason}: {n}" for reason, n in stage["dropped"].items()) or "-"
        parts.append(f"| {stage['name']} | {stage['items_in']} | {stage['items_out']} | {dropped} |")
    parts.append("\nDropped items and their reasons are listed in `exclusions/<stage>.jsonl`; "
                 "`manifest.json` holds the sha256 of every file and each stage's fingerprint.\n")
    return "\n".join(parts) + "\n"
