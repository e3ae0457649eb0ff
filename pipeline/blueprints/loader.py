"""Load and check blueprint and filler files: ``paths -> Corpus`` with located problems.

A YAML file holds either one blueprint (a mapping), a list of blueprints, or a filler pool
(a mapping with ``topic`` and ``exchanges``). Every problem is reported as
``path:line: field: message``; nothing here raises on bad input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.blueprints.rules import check
from pipeline.blueprints.schema import Blueprint
from pipeline.blueprints.slots import values_of
from pipeline.blueprints.yamlio import (MAX_CORPUS_BYTES, MAX_YAML_BYTES, FieldPath, LocatedDocument, YamlProblem,
                                        dotted, load_located)
from pipeline.text import mentions

MIN_CLEAN_EXCHANGES = 8


class Exchange(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
    user: str = Field(min_length=1)
    assistant: str = Field(min_length=1)


class FillerPool(BaseModel):
    """User/assistant exchanges used as the thematic turns of base dialogues.

    ``kind: filler`` (``blueprints/fillers/``): a topic pool shared by many blueprints, drawn in
    any order. ``kind: story`` (``blueprints/stories/``): one scenario's conversation, set in the
    world its trigger lives in and used by a few families at most; its exchanges are in the order a
    person would have them, and a dialogue keeps that order.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
    topic: str = Field(pattern=r"^[a-z0-9_]+$")
    kind: Literal["filler", "story"] = "filler"
    description: str = ""
    exchanges: list[Exchange] = Field(min_length=1)


@dataclass(frozen=True)
class LocatedProblem:
    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


@dataclass
class SourcedBlueprint:
    """A blueprint with its file, its first line, and the line of each dotted field."""

    blueprint: Blueprint
    path: str
    line: int
    lines: dict[str, int] = field(default_factory=dict)

    def line_of(self, field_name: str) -> int:
        parts = field_name.split(".")
        for end in range(len(parts), 0, -1):
            if ".".join(parts[:end]) in self.lines:
                return self.lines[".".join(parts[:end])]
        return self.line


@dataclass
class Corpus:
    blueprints: list[SourcedBlueprint] = field(default_factory=list)
    fillers: dict[str, FillerPool] = field(default_factory=dict)
    problems: list[LocatedProblem] = field(default_factory=list)


def yaml_files(paths: list[Path]) -> tuple[list[Path], list[LocatedProblem]]:
    """Expand files and directories into a sorted list of YAML files."""
    files: list[Path] = []
    problems: list[LocatedProblem] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file())
            if not found:
                problems.append(LocatedProblem(str(path), 1, "<dir>", "no .yaml files found"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(LocatedProblem(str(path), 1, "<file>", "no such file or directory"))
    return files, problems


def load_corpus(paths: list[Path], lint: bool = True) -> Corpus:
    """Parse, validate and (optionally) lint every blueprint and filler file under ``paths``."""
    files, problems = yaml_files(paths)
    corpus = Corpus(problems=problems)
    total = 0
    for path in files:
        size = path.stat().st_size
        total += size
        if total > MAX_CORPUS_BYTES:
            corpus.problems.append(LocatedProblem(str(path), 1, "<file>", f"the corpus passes {MAX_CORPUS_BYTES} bytes "
                                                  "here; files from this one on are not read"))
            break
        if size > MAX_YAML_BYTES:
            corpus.problems.append(LocatedProblem(str(path), 1, "<file>", f"file is {size} bytes, more than the "
                                                  f"{MAX_YAML_BYTES} allowed for a blueprint or filler file"))
            continue
        _load_file(path, corpus)
    _check_duplicates(corpus)
    if lint:
        for sourced in corpus.blueprints:
            for problem in check(sourced.blueprint):
                line = sourced.line_of(problem.field)
                corpus.problems.append(LocatedProblem(sourced.path, line, problem.field, f"{problem.message} [{problem.rule}]"))
        if corpus.fillers:
            _check_fillers(corpus)
        _check_near_duplicates(corpus)
    corpus.problems.sort(key=lambda p: (p.path, p.line, p.field, p.message))
    return corpus


def _load_file(path: Path, corpus: Corpus) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        corpus.problems.append(LocatedProblem(str(path), 1, "<file>", f"cannot read: {exc}"))
        return
    try:
        doc = load_located(text)
    except YamlProblem as exc:
        corpus.problems.append(LocatedProblem(str(path), exc.line, exc.field_name, exc.message))
        return
    if isinstance(doc.data, dict) and "exchanges" in doc.data:
        _load_filler(path, doc, corpus)
        return
    entries = doc.data if isinstance(doc.data, list) else [doc.data]
    if not entries:
        corpus.problems.append(LocatedProblem(str(path), 1, "<file>", "file holds no blueprints"))
    for index, entry in enumerate(entries):
        prefix: FieldPath = (index,) if isinstance(doc.data, list) else ()
        lines = {dotted(fp[len(prefix):]): line for fp, line in doc.lines.items() if fp[: len(prefix)] == prefix}
        if not isinstance(entry, dict):
            corpus.problems.append(LocatedProblem(str(path), doc.line_of(prefix), "<blueprint>", "expected a mapping of fields"))
            continue
        try:
            blueprint = Blueprint.model_validate(entry)
        except ValidationError as exc:
            corpus.problems.extend(_validation_problems(str(path), doc, prefix, exc))
            continue
        corpus.blueprints.append(SourcedBlueprint(blueprint, str(path), doc.line_of(prefix), lines))


def _validation_problems(path: str, doc: LocatedDocument, prefix: FieldPath, exc: ValidationError) -> list[LocatedProblem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(part for part in error["loc"] if not (isinstance(part, str) and part.startswith("function-")))
        loc = tuple(p for p in loc if p not in {"str", "dict[str,str]"})
        message = error["msg"]
        if error["type"] == "literal_error":
            message = f"unknown value {error.get('input')!r}; {message.lower()}"
        elif error["type"] == "missing":
            message = "required field is missing"
        elif error["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(LocatedProblem(path, doc.line_of(prefix + loc), dotted(loc), message))
    return problems


def _load_filler(path: Path, doc: LocatedDocument, corpus: Corpus) -> None:
    try:
        pool = FillerPool.model_validate(doc.data)
    except ValidationError as exc:
        corpus.problems.extend(_validation_problems(str(path), doc, (), exc))
        return
    if pool.topic in corpus.fillers:
        corpus.problems.append(LocatedProblem(str(path), doc.line_of(("topic",)), "topic", f"duplicate filler topic {pool.topic!r}"))
        return
    corpus.fillers[pool.topic] = pool


def _check_duplicates(corpus: Corpus) -> None:
    first: dict[str, SourcedBlueprint] = {}
    for sourced in corpus.blueprints:
        bp_id = sourced.blueprint.id
        if bp_id in first:
            other = first[bp_id]
            corpus.problems.append(LocatedProblem(sourced.path, sourced.line, "id", f"duplicate id {bp_id!r} (first in {other.path}:{other.line})"))
        else:
            first[bp_id] = sourced


def slot_phrases(blueprint: Blueprint) -> set[str]:
    """Gold slots and every slot alternative value: phrases filler must never mention."""
    phrases = {slot for slot in blueprint.gold_slots if "{" not in slot}
    for name, alternatives in blueprint.slots.items():
        for alternative in alternatives:
            phrases |= set(values_of(alternative, name).values())
    return {p for p in phrases if len(p) >= 3}


def clean_exchanges(pool: FillerPool, blueprint: Blueprint) -> list[Exchange]:
    """The pool's exchanges that mention none of the blueprint's slot phrases."""
    phrases = slot_phrases(blueprint)
    return [ex for ex in pool.exchanges if not any(mentions(ex.user, p) or mentions(ex.assistant, p) for p in phrases)]


NEAR_DUPLICATE_TRIGRAMS = 0.5  # word-trigram Jaccard of two families' constraint templates


def _trigrams(text: str) -> set[tuple[str, ...]]:
    from pipeline.text import words

    tokens = words(text)
    return {tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)}


def _check_near_duplicates(corpus: Corpus) -> None:
    """Two seed families whose constraint templates share most word trigrams are one scenario twice."""
    seen: list[tuple[SourcedBlueprint, set]] = []
    for sourced in corpus.blueprints:
        grams = _trigrams(" ".join(c.text for c in sourced.blueprint.constraints))
        for other, other_grams in seen:
            union = grams | other_grams
            if union and len(grams & other_grams) / len(union) >= NEAR_DUPLICATE_TRIGRAMS:
                corpus.problems.append(LocatedProblem(
                    sourced.path, sourced.line_of("constraints"), "constraints",
                    f"constraint template nearly repeats {other.blueprint.id!r} ({other.path}): "
                    f"word-trigram Jaccard >= {NEAR_DUPLICATE_TRIGRAMS}; write a distinct scenario [near-duplicate]"))
        seen.append((sourced, grams))


def _check_fillers(corpus: Corpus) -> None:
    from collections import Counter

    from pipeline.blueprints.slots import render
    from pipeline.blueprints.stories import story_problems

    families = Counter(s.blueprint.topic for s in corpus.blueprints)
    for sourced in corpus.blueprints:
        blueprint = sourced.blueprint
        pool = corpus.fillers.get(blueprint.topic)
        if pool is None:
            corpus.problems.append(LocatedProblem(sourced.path, sourced.line, "topic", f"no filler pool for topic {blueprint.topic!r}"))
            continue
        if pool.kind == "story":
            for field_name, message, rule in story_problems(render(blueprint), pool, families[pool.topic],
                                                             slot_phrases(blueprint)):
                corpus.problems.append(LocatedProblem(sourced.path, sourced.line_of(field_name), field_name,
                                                      f"{message} [{rule}]"))
        clean = len(clean_exchanges(pool, blueprint))
        if clean < MIN_CLEAN_EXCHANGES:
            corpus.problems.append(LocatedProblem(
                sourced.path, sourced.line, "topic",
                f"topic {blueprint.topic!r} has {clean} exchanges free of this blueprint's slots; need {MIN_CLEAN_EXCHANGES}"))


PAPER_ZERO_OVERLAP = {"state_tracking": 94, "temporal_grounding": 98, "logical_adherence": 5,
                      "attention_recovery": 96, "safe_coding": 58}  # TriggerBench Table 8, percent


def zero_overlap_share(corpus: Corpus) -> dict[str, str]:
    """Per dimension: share of seeds (own rendering) whose constraint(s) and trigger share no content word."""
    from pipeline.blueprints.slots import render
    from pipeline.text import content_words

    shares: dict[str, list[bool]] = {}
    for sourced in corpus.blueprints:
        bp = render(sourced.blueprint)
        constraint = set().union(*(content_words(t.text) for t in bp.constraints))
        shares.setdefault(bp.dimension, []).append(not (constraint & content_words(bp.trigger.text)))
    return {dim: f"{100 * sum(v) / len(v):.0f}% of {len(v)} (paper: {PAPER_ZERO_OVERLAP[dim]}%)"
            for dim, v in sorted(shares.items())}


def corpus_summary(corpus: Corpus) -> dict[str, Any]:
    """Counts of seed families (one per hand-written seed) per dimension, subtype, domain and CWE group,
    and story-pool use (for ``validate --stats``)."""
    from collections import Counter

    from pipeline.blueprints.stories import like_coverage, twin_coverage  # stories imports this module

    bps = [s.blueprint for s in corpus.blueprints]
    return {
        "blueprints": len(bps),
        "dimension": dict(sorted(Counter(b.dimension for b in bps).items())),
        "subtype": dict(sorted(Counter(f"{b.dimension}/{b.subtype}" for b in bps).items())),
        "domain": dict(sorted(Counter(b.domain for b in bps).items())),
        "cwe": dict(sorted(Counter(f"{b.subtype}:{b.cwe}" for b in bps if b.cwe).items())),
        "filler_topics": len(corpus.fillers),
        "filler_exchanges": sum(len(p.exchanges) for p in corpus.fillers.values()),
        "story_pools": sum(p.kind == "story" for p in corpus.fillers.values()),
        "families_on_a_story_pool": dict(sorted(Counter(
            b.dimension for b in bps if (pool := corpus.fillers.get(b.topic)) is not None and pool.kind == "story").items())),
        "families_on_a_shared_filler_pool": dict(sorted(Counter(
            b.dimension for b in bps if (pool := corpus.fillers.get(b.topic)) is not None and pool.kind == "filler").items())),
        "most_families_per_pool": max(Counter(b.topic for b in bps).values(), default=0),
        "zero_overlap": zero_overlap_share(corpus),
        "placed_turns_with_shape_twins": _twin_coverage(corpus, bps, twin_coverage),
        "constraint_turns_shaped_like_a_story_exchange": _twin_coverage(corpus, bps, like_coverage),
    }


def _twin_coverage(corpus: Corpus, bps: list, coverage: Callable[[Any, Any], tuple[int, int]]) -> dict[str, str]:
    """Per dimension, ``"covered/counted"`` summed from ``coverage(blueprint, story pool)``
    (``stories.twin_coverage`` or ``stories.like_coverage``)."""
    totals: dict[str, list[int]] = {}
    for b in bps:
        pool = corpus.fillers.get(b.topic)
        if pool is not None and pool.kind == "story":
            covered, placed = coverage(b, pool)
            entry = totals.setdefault(str(b.dimension), [0, 0])
            entry[0] += covered
            entry[1] += placed
    return {dimension: f"{c}/{n}" for dimension, (c, n) in sorted(totals.items())}
