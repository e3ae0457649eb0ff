"""The review queue: flagged blueprints out to a file a person edits, decisions back in.

A build exports every blueprint an oracle flagged to one YAML file (a list of entries).
A reviewer sets each entry's ``decision``:

- ``accept``: keep the blueprint as it is (the oracle was wrong);
- ``reject``: drop it;
- ``fix``: keep it with the edits under ``fix`` (dotted blueprint paths -> new values, e.g.
  ``trigger.text`` or ``constraints.0.text``), after the oracle passes on the fixed version.

The next build imports the decisions. A decision is keyed by the blueprint id and the
sha256 of the blueprint as it was flagged, so it stops applying (and the blueprint is
flagged again) as soon as its source changes. Re-exporting never loses a decision.
Only ``id``, ``content_hash``, ``decision`` and ``fix`` are read back; the other fields
(the blueprint, the oracle's reasons, the last outcome) are there to help the reviewer.
"""

from __future__ import annotations

import copy
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.hashing import sha256_json

DECISIONS = ("accept", "reject", "fix")
HEADER = """\
# triggerbench review queue: blueprints an oracle flagged.
# For each entry set `decision` to accept, reject or fix, then rebuild.
#   accept: keep as is          reject: drop it
#   fix:    apply `fix` (dotted blueprint path -> new value, e.g. trigger.text: "...")
#           and check again; the blueprint is dropped if it still fails.
# A decision applies only while the blueprint's content_hash is unchanged.
"""


class ReviewFileError(ValueError):
    """A review file that cannot be read; the message names the entry and the field."""


@dataclass(frozen=True)
class Decision:
    """A reviewer's decision about one flagged blueprint version."""

    blueprint_id: str
    content_hash: str
    decision: str
    fix: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.blueprint_id, self.content_hash)


def content_hash(blueprint: dict[str, Any]) -> str:
    """sha256 of a blueprint's canonical JSON (what a decision is tied to)."""
    return sha256_json(blueprint)


def read_entries(path: Path) -> list[dict[str, Any]]:
    """All entries of a review file (empty when the file does not exist)."""
    if not path.exists():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ReviewFileError(f"{path}: not valid YAML: {error}") from error
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        raise ReviewFileError(f"{path}: expected a list of entries (mappings)")
    return data


def load_decisions(path: Path | None) -> dict[tuple[str, str], Decision]:
    """Decided entries of the review file, keyed by (blueprint id, content hash)."""
    if path is None:
        return {}
    decisions: dict[tuple[str, str], Decision] = {}
    for index, entry in enumerate(read_entries(path)):
        where = f"{path}: entry {index} ({entry.get('id', '?')})"
        choice = entry.get("decision")
        if choice in (None, "", "pending"):
            continue
        if choice not in DECISIONS:
            raise ReviewFileError(f"{where}: decision: expected one of {', '.join(DECISIONS)}, got {choice!r}")
        if not isinstance(entry.get("id"), str) or not isinstance(entry.get("content_hash"), str):
            raise ReviewFileError(f"{where}: id and content_hash must be strings")
        fix = entry.get("fix") or {}
        if not isinstance(fix, dict) or (choice == "fix" and not fix):
            raise ReviewFileError(f"{where}: fix: a fix decision needs a mapping of dotted paths to new values")
        decision = Decision(entry["id"], entry["content_hash"], choice, dict(fix), str(entry.get("note") or ""))
        decisions[decision.key] = decision
    return decisions


def decisions_digest(path: Path | None) -> str:
    """Digest of the decisions only (pending entries and notes do not change a build)."""
    decided = sorted(
        ([d.blueprint_id, d.content_hash, d.decision, d.fix] for d in load_decisions(path).values()),
        key=lambda row: (row[0], row[1]),
    )
    return sha256_json(decided)


def apply_fix(blueprint: dict[str, Any], fix: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``blueprint`` with each dotted path in ``fix`` set to its new value."""
    fixed = copy.deepcopy(blueprint)
    for dotted, value in fix.items():
        parts = str(dotted).split(".")
        target: Any = fixed
        for part in parts[:-1]:
            target = _step(target, part, dotted)
        last = parts[-1]
        if isinstance(target, list):
            index = _index(target, last, dotted)
            target[index] = value
        elif isinstance(target, dict):
            target[last] = value
        else:
            raise ReviewFileError(f"fix: {dotted}: cannot set a field inside a {type(target).__name__}")
    return fixed


def _step(node: Any, part: str, dotted: str) -> Any:
    if isinstance(node, list):
        return node[_index(node, part, dotted)]
    if isinstance(node, dict) and part in node:
        return node[part]
    raise ReviewFileError(f"fix: {dotted}: no field {part!r} in the blueprint")


def _index(node: list[Any], part: str, dotted: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise ReviewFileError(f"fix: {dotted}: {part!r} is not an index below {len(node)}")
    return int(part)


def export_queue(path: Path, flagged: list[dict[str, Any]]) -> None:
    """Write the review file: every decided entry kept, pending entries replaced by ``flagged``.

    Each flagged entry has ``id``, ``content_hash``, ``oracle``, ``reasons``, ``blueprint``;
    an entry may also carry ``outcome`` (what the last build did with its decision).
    """
    previous = {(e.get("id"), e.get("content_hash")): e for e in read_entries(path)}
    merged: dict[tuple[str, str], dict[str, Any]] = {
        key: entry for key, entry in previous.items() if entry.get("decision") not in (None, "", "pending")
    }
    for entry in flagged:
        key = (entry["id"], entry["content_hash"])
        if key in merged:
            merged[key] = {**merged[key], **{k: v for k, v in entry.items() if k in ("reasons", "outcome")}}
        else:
            merged[key] = {"decision": None, "fix": {}, "note": "", **entry}
    ordered = [_ordered(merged[key]) for key in sorted(merged)]
    path.parent.mkdir(parents=True, exist_ok=True)
    text = HEADER + yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=100) if ordered else HEADER
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """Reviewer-facing field order: what to decide first, the evidence after."""
    first = ["id", "content_hash", "oracle", "decision", "fix", "note", "reasons", "outcome"]
    return {k: entry[k] for k in first if k in entry} | {k: v for k, v in entry.items() if k not in first}
