"""``triggerbench show RELEASE_OR_HUB_ID ROW_ID [--config C] [--full]``: one row as a conversation.

For a reviewer reading rows as a person would: each message with its role, time and the gap since
the previous user turn; the constraint, resolution, trigger and filler turns marked; an injected
block collapsed to its source and size (``--full`` prints it); and the row's twins (other
variants, the explicit form, long contexts, the RM probe) listed by id and config.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from datetime import datetime
from typing import Any

from pipeline.text import strip_timestamp, timestamp_of
from stages.audit.reader import AuditSourceError, ReleaseSource, iter_rows, open_source
WIDTH = 100


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the show verb's arguments to ``parser``."""
    parser.add_argument("release", metavar="RELEASE_OR_HUB_ID", help="a release directory or a Hub dataset id")
    parser.add_argument("row_id", metavar="ROW_ID", help="a row id, e.g. st-badge-side-door--s00.pos_clean.implicit.base")
    parser.add_argument("--config", default=None, help="the config holding the row (default: from the id)")
    parser.add_argument("--revision", default=None, help="Hub revision (tag such as v0.1.0)")
    parser.add_argument("--full", action="store_true", help="print injected distractor turns instead of collapsing them")


def config_of(row_id: str) -> str:
    """``<blueprint>.<variant>.<form>.<context>`` -> ``pm_<context>``, ``explicit_<context>`` or ``rm_<context>``."""
    parts = row_id.split(".")
    if len(parts) < 4:
        raise ValueError(f"{row_id!r} is not a row id (<blueprint>.<variant>.<form>.<context>); pass --config")
    variant, form, context = parts[-3], parts[-2], parts[-1]
    prefix = "rm" if variant == "rm" else "explicit" if form == "explicit" else "pm"
    return f"{prefix}_{context}"


def find_row(release: ReleaseSource, config: str, row_id: str) -> dict[str, Any] | None:
    """The row ``row_id`` of ``config`` with all its columns, or None."""
    return next((row for _, row in iter_rows(release, config, columns=None) if row["id"] == row_id), None)


def _marks(row: dict[str, Any]) -> dict[int, str]:
    marks = {i: "FILLER" for i in row.get("filler_turns") or []}
    marks |= {i: "CONSTRAINT" for i in row.get("constraint_turns") or []}
    if row.get("resolution_turn") is not None:
        marks[row["resolution_turn"]] = "RESOLUTION"
    trigger = row.get("trigger_turn")
    marks[len(row["messages"]) - 1 if trigger is None else trigger] = "TRIGGER"
    return marks


def render(row: dict[str, Any], full: bool = False) -> list[str]:
    """The row as printable lines."""
    messages, marks = row["messages"], _marks(row)
    injected = set(row.get("injected_turns") or [])
    lines, previous, block = [], None, []

    def flush() -> None:
        if block:
            words = sum(len(messages[i]["content"].split()) for i in block)
            lines.append(f"   ... {len(block)} injected turns ({block[0]}-{block[-1]}, {words} words) from "
                         f"{row.get('distractor_source') or 'a distractor corpus'}; --full prints them")
            block.clear()

    for i, message in enumerate(messages):
        content = message["content"] or ""
        found = timestamp_of(content)
        stamp = gap = ""
        if found:
            at = datetime.fromisoformat(found)
            stamp = found.replace("T", " ")
            gap = "" if previous is None else f" (+{int((at - previous).total_seconds() // 60)} min)"
            previous = at
            content = strip_timestamp(content)
        if i in injected and not full:
            block.append(i)
            continue
        flush()
        tag = marks.get(i, "INJECTED" if i in injected else "")
        head = f"[{i:>3}] {message['role']:<9} {stamp}{gap}" + (f"  <{tag}>" if tag else "")
        lines.append(head)
        lines += textwrap.wrap(content, WIDTH, initial_indent="      ", subsequent_indent="      ") or ["      "]
    flush()
    return lines


def twins(release: ReleaseSource, row: dict[str, Any]) -> list[str]:
    """Ids of the other rows of the same blueprint in every config, as ``config: id``."""
    blueprint = row.get("blueprint_id")
    return [f"{config}: {other['id']}" for config in release.configs
            for _, other in iter_rows(release, config, columns=("id", "blueprint_id"))
            if other.get("blueprint_id") == blueprint and other["id"] != row["id"]]


def run(args: argparse.Namespace) -> int:
    """Print the row; 1 when the release or the row cannot be found."""
    try:
        config = args.config or config_of(args.row_id)
        release = open_source(args.release, args.revision)
        if config not in release.configs:
            raise AuditSourceError(f"{args.release} has no config {config!r}; configs: {', '.join(release.configs)}")
        row = find_row(release, config, args.row_id)
    except (AuditSourceError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if row is None:
        print(f"error: no row {args.row_id!r} in {config} of {args.release}", file=sys.stderr)
        return 1
    header = [f"{row['id']}  ({config})"]
    details = {k: row.get(k) for k in ("dimension", "subtype", "variant", "expected", "n_tokens", "n_turns",
                                       "distractor_source") if row.get(k) is not None}
    header.append("  " + ", ".join(f"{k}: {v}" for k, v in details.items()))
    if row.get("reference_intent"):
        header.append(f"  reference intent: {row['reference_intent']}")
    if row.get("question"):
        header.append(f"  RM question: {row['question']}  answer: {row.get('reference_answer')}")
    print("\n".join(header + [""] + render(row, args.full) + ["", "twins:"] + [f"  {t}" for t in twins(release, row)]))
    return 0
