"""Markdown sections of the dataset card that concern publishing (pure functions, no I/O).

In: repo id / version, the distractor sources a build used, the previous and current manifests.
Out: markdown strings the card renderer (``pipeline/card.py``) includes verbatim.

Facts about the distractor corpora come from ``../shared/data/*/PROVENANCE.md``; bibliographic
facts from the two papers' texts (``../shared/seeds``). What those texts do not state (venues, the
PM-Bench author list) is marked as unknown rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Corpus:
    """One distractor corpus: what it is, where the copy came from, and its licenses."""

    title: str
    license: str
    provenance: str


CORPORA: dict[str, Corpus] = {
    "multiwoz": Corpus(
        "MultiWOZ 2.1, validation split (999 dialogues)",
        "MultiWOZ: MIT (budzianowski/multiwoz); the ConvLab-2 distribution: Apache-2.0",
        "`data/multiwoz/val.json.zip` of thu-coai/ConvLab-2 at commit b014b81fcb1ff74f54681917eee39c14c87af3e5; "
        "when resolved from the Hub instead, `pfb30/multi_woz_v22` (MultiWOZ 2.2) under the license on its card",
    ),
    "swe-agent": Corpus(
        "SWE-agent trajectories (19 `.traj` files: 6 real GPT-4 runs, 13 demonstrations)",
        "MIT (SWE-agent)",
        "princeton-nlp/SWE-agent (now SWE-agent/SWE-agent) at commits 0772c99cb2903ccf22ba543eaf128742afa470d6 "
        "and 3b07138ec63ddb0a8efef59bfd73a55c62ca13f3, copied byte for byte",
    ),
    "math": Corpus(
        "MATH test split (Hendrycks et al., 2021): 5,000 problems with worked solutions",
        "MIT (the MATH dataset and the redistributing repository)",
        "`data/math/test.jsonl` of Zhuofeng-Li/math-evaluation-harness at commit "
        "1b9885d817962a8494728376625ce6605772edbd; used as the offline stand-in for OpenThoughts reasoning text",
    ),
    "openthoughts": Corpus(
        "OpenThoughts-114k reasoning traces",
        "apache-2.0 (as stated on the dataset card)",
        "Hugging Face dataset `open-thoughts/OpenThoughts-114k` (or a local copy in its schema)",
    ),
}

TRIGGERBENCH_BIBTEX = """@misc{zhang2026triggerbench,
  title  = {TriggerBench: Investigating Prospective Memory for Large Language Models},
  author = {Zhang, Tianhua and Wang, Xinjiang and Zhang, Qianxi and Chen, Qi and Li, Kun and
            Chen, Yaoqi and Wang, DingDong and Meng, Helen and Lu, Yan},
  year   = {2026},
  note   = {Venue not stated in the paper text available to us; year inferred from the newest works it cites.
            Project page: https://github.com/KristenZHANG/TriggerBench-Official},
}"""

PMBENCH_BIBTEX = """@misc{pmbench2026,
  title  = {PM-Bench: Evaluating Prospective Memory in LLM Agents},
  author = {{PM-Bench authors}},
  year   = {2026},
  note   = {Authors and venue are not named in the paper text available to us (please complete them from the
            published version); year inferred from the newest works it cites.},
}"""


def loading_instructions(repo_id: str | None, version: str) -> str:
    """How to load this exact version: from the Hub with ``revision="v<version>"``, and from a directory."""
    tag = version if version.startswith("v") else f"v{version}"
    plain = tag[1:]
    hub = repo_id or "ORG/NAME"
    lines = [
        "Load a fixed version by its tag, so results stay reproducible when newer versions are published:",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'tasks = load_dataset("{hub}", "pm_base", split="test", revision="{tag}")',
        f'retro = load_dataset("{hub}", "rm_base", split="test", revision="{tag}")  # matched RM controls',
        "```",
        "",
    ]
    if repo_id is None:
        lines += ["(Replace `ORG/NAME` with the repository this release was published to.)", ""]
    lines += [
        "From a local copy of the release directory (no network needed):",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'tasks = load_dataset("releases/{plain}", "pm_base", split="test")',
        "```",
        "",
        f"Each config has a `test` split (the benchmark) and a `dev` split (disjoint seed families, for prompt "
        f"tuning). `manifest.json` lists the sha256 of every file of {tag}.",
    ]
    return "\n".join(lines) + "\n"


def citation_blocks() -> str:
    """BibTeX for the two papers the benchmark implements (TriggerBench and PM-Bench)."""
    return (
        "If you use the `pm_*`, `rm_*`, `explicit_*` or `blueprints` configs, cite TriggerBench; "
        "if you use the agent week (`pmbench_week`, `week/week.json`), cite PM-Bench.\n\n"
        f"```bibtex\n{TRIGGERBENCH_BIBTEX}\n\n{PMBENCH_BIBTEX}\n```\n"
    )


def _source_names(sources_used: Mapping[str, Any]) -> dict[str, list[str]]:
    """Known corpus name -> the routes (dimensions) that used it, from several accepted shapes.

    Accepted: ``{route: "multiwoz (local)"}`` (the manifest's ``fallbacks.distractor_sources``),
    ``{route: "multiwoz"}``, or ``{corpus: count | [routes] | {...}}``.
    """
    used: dict[str, list[str]] = {}
    for key, value in sources_used.items():
        if key in CORPORA:
            routes = value if isinstance(value, list) else value.get("dimensions", []) if isinstance(value, dict) else []
            used.setdefault(key, []).extend(str(r) for r in routes)
            continue
        name = str(value).split(" (")[0].strip()
        used.setdefault(name, []).append(str(key))
    return used


def distractor_provenance(sources_used: Mapping[str, Any]) -> str:
    """A table of every distractor corpus this build used: what, used for, license, where it came from."""
    used = _source_names(sources_used)
    if not used:
        return "No distractor corpus was used (no long-context configs in this build).\n"
    rows = ["| corpus | used for | license | provenance |", "|---|---|---|---|"]
    for name in sorted(used):
        routes = ", ".join(sorted(set(used[name]))) or "-"
        corpus = CORPORA.get(name)
        if corpus is None:
            rows.append(f"| `{name}` | {routes} | unknown: not a corpus this pipeline documents | unknown |")
            continue
        rows.append(f"| {corpus.title} (`{name}`) | {routes} | {corpus.license} | {corpus.provenance} |")
    return ("Long-context rows embed turns taken from these corpora between the constraint and the trigger "
            "(`distractor_source` on each row names the corpus); their licenses apply to that text.\n\n"
            + "\n".join(rows) + "\n")


def _rows(manifest: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    return {(config, split): int(info.get("rows", 0))
            for config, splits in (manifest.get("configs") or {}).items() for split, info in splits.items()}


def _blueprint_ids(manifest: Mapping[str, Any] | None, given: Iterable[str] | None) -> set[str] | None:
    if given is not None:
        return set(given)
    if manifest is None:
        return None
    splits = (manifest.get("configs") or {}).get("blueprints") or {}
    if splits and all("ids" in info for info in splits.values()):
        return {i for info in splits.values() for i in info["ids"]}
    return None


def changelog(previous_manifest: Mapping[str, Any] | None, manifest: Mapping[str, Any], *,
              previous_blueprint_ids: Iterable[str] | None = None,
              blueprint_ids: Iterable[str] | None = None) -> str:
    """What changed since the previous version: pipeline version, rows per config/split, blueprints.

    Blueprint ids come from ``configs.blueprints.<split>.ids`` in the manifests when present, or from
    the id lists passed in; without either, the blueprint change is reported as row counts only.
    """
    version = manifest.get("version", "?")
    if previous_manifest is None:
        total = sum(_rows(manifest).values())
        return (f"### {version}\n\nFirst release: {len(manifest.get('configs') or {})} configs, {total} rows in all, "
                f"pipeline {manifest.get('pipeline_version', '?')}.\n")
    before, after = _rows(previous_manifest), _rows(manifest)
    lines = [f"### {version} (since {previous_manifest.get('version', '?')})", ""]
    old_pipe, new_pipe = previous_manifest.get("pipeline_version"), manifest.get("pipeline_version")
    lines.append(f"- Pipeline version: {old_pipe} -> {new_pipe}" if old_pipe != new_pipe
                 else f"- Pipeline version unchanged ({new_pipe})")
    if previous_manifest.get("seed") != manifest.get("seed"):
        lines.append(f"- Seed: {previous_manifest.get('seed')} -> {manifest.get('seed')}")
    old_src = (previous_manifest.get("fallbacks") or {}).get("distractor_sources")
    new_src = (manifest.get("fallbacks") or {}).get("distractor_sources")
    if old_src != new_src:
        lines.append(f"- Distractor sources changed: {old_src} -> {new_src}")
    old_ids = _blueprint_ids(previous_manifest, previous_blueprint_ids)
    new_ids = _blueprint_ids(manifest, blueprint_ids)
    if old_ids is not None and new_ids is not None:
        added, removed = sorted(new_ids - old_ids), sorted(old_ids - new_ids)
        lines.append(f"- Blueprints: {len(added)} added, {len(removed)} removed ({len(new_ids)} in all)")
        lines += [f"  - added `{i}`" for i in added] + [f"  - removed `{i}`" for i in removed]
    changed = [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    if not changed:
        lines.append("- Row counts unchanged in every config and split")
    else:
        lines += ["", "| config | split | before | now | change |", "|---|---|---|---|---|"]
        for config, split in changed:
            old, new = before.get((config, split)), after.get((config, split))
            delta = (new or 0) - (old or 0)
            lines.append(f"| `{config}` | {split} | {'-' if old is None else old} | {'-' if new is None else new} "
                         f"| {delta:+d} |")
    return "\n".join(lines) + "\n"
