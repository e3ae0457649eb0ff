"""The stage contract.

A stage is a small, deterministic function from named input artifacts to one output
artifact. It declares:

- ``name``: how the runner, the cache, the manifest and ``--only`` refer to it;
- ``inputs``: the artifacts it reads (outputs of earlier stages, by stage name);
- ``Params``: a pydantic model of its parameters (from the build config);
- ``version``: bump it to invalidate caches by hand (the source code is hashed too).

And, where it has any, what it brings to the build and to the release (the core asks every
stage and names none):

- ``provide_environment(setting)``: facts outside items and parameters it depends on (the
  blueprint corpus digest, the resolved distractor sources), looked up before any stage runs;
- ``write_release(writer, run, stats)``: the release configs made from its output;
- ``card_text(run)``: its part of the dataset card's distractor section.

Artifacts are lists of JSON-serializable dicts, each with a unique ``"id"``.
Two flavours:

- :class:`Stage` (``run``): sees all its inputs at once (dedupe, split, audits).
- :class:`MapStage` (``process``): one input item in, a list of items out, or a
  :class:`Drop` with a :class:`~pipeline.vocabulary.DropReason`. The runner caches every
  item's result by content, so a rebuild after editing one blueprint recomputes only that
  blueprint's items, and a crashed build resumes where it stopped.
"""

from __future__ import annotations

import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

from pipeline.hashing import combine, sha256_json, source_digest
from pipeline.seeding import rng_for
from pipeline.vocabulary import DropReason

if TYPE_CHECKING:
    from pipeline.config import BuildConfig
    from pipeline.release import ReleaseWriter
    from pipeline.runner import RunResult
    from pipeline.stats import RowStats

Item = dict[str, Any]
T = TypeVar("T")


@dataclass(frozen=True)
class BuildSetting:
    """What a stage may consult to state its environment: the config, the directory its relative
    paths start from, and the distractor directory asked for (``--distractors-dir`` or the config's
    ``distractors.dir``; None: the stage's own default)."""

    config: BuildConfig
    base: Path
    distractors_dir: Path | None = None


class NoParams(BaseModel):
    """Parameters of a stage that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _plain(reason: str) -> str:
    """A reason as the plain string written out (a :class:`DropReason` member gives its value)."""
    return reason.value if isinstance(reason, DropReason) else reason


@dataclass(frozen=True)
class Drop:
    """Why an item was not kept: a :class:`DropReason` (or an ``llm_<kind>`` string) and a human detail.

    The reason is stored as its plain string, so counts, exclusions and the item cache see one form.
    """

    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", _plain(self.reason))


@dataclass(frozen=True)
class Dropped:
    """A dropped item as written to ``exclusions/<stage>.jsonl``."""

    item_id: str
    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", _plain(self.reason))

    def as_json(self) -> dict[str, str]:
        return {"id": self.item_id, "reason": self.reason, "detail": self.detail}


@dataclass
class StageOutput:
    """What a stage returns: kept items, dropped items, and free-form statistics.

    ``incomplete`` (set by the runner, never stored) lists the ids of items whose result
    depended on a transient LLM failure: such an output is used once, never cached.
    """

    items: list[Item]
    dropped: list[Dropped] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    incomplete: list[str] = field(default_factory=list)


@dataclass
class StageContext:
    """Everything a stage may use besides its inputs and parameters.

    ``environment`` holds facts that change outputs but are not items or parameters
    (LLM endpoint and model, distractor corpus digests, embedding model); it is part of
    every fingerprint. ``services`` holds live objects (an LLM client) that are not. ``embedding_cache``
    is where stages keep embedding vectors (content-keyed, shared with the audit; not fingerprinted).
    """

    seed: int
    stage: str
    environment: dict[str, Any] = field(default_factory=dict)
    services: dict[str, Any] = field(default_factory=dict)
    embedding_cache: Path | None = None
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("triggerbench"))

    def rng(self, item_id: str, *extra: str) -> random.Random:
        """A random generator seeded from (build seed, item id, this stage)."""
        return rng_for(self.seed, item_id, self.stage, *extra)

    def progress(self, iterable: Iterable[T], total: int | None = None, desc: str | None = None) -> Iterator[T]:
        """Wrap ``iterable`` in a progress bar on stderr."""
        from pipeline.progress import progress

        return progress(iterable, total=total, desc=desc or self.stage)


class Stage(ABC):
    """A whole-collection stage: ``run(inputs, ctx) -> StageOutput``."""

    name: ClassVar[str]
    inputs: ClassVar[tuple[str, ...]] = ()
    Params: ClassVar[type[BaseModel]] = NoParams
    version: ClassVar[str] = "1"

    def __init__(self, params: BaseModel | dict[str, Any] | None = None) -> None:
        if params is None or isinstance(params, dict):
            params = self.Params.model_validate(params or {})
        self.params = params

    def code_version(self) -> str:
        """Digest of this stage's declared version and source code."""
        return combine(self.version, source_digest(type(self)))

    def environment_keys(self) -> tuple[str, ...]:
        """Which ``ctx.environment`` entries change this stage's output (default: none)."""
        return ()

    @classmethod
    def provide_environment(cls, setting: BuildSetting) -> dict[str, Any]:
        """Environment entries this stage brings to the build (default: none)."""
        return {}

    def write_release(self, writer: ReleaseWriter, run: RunResult, stats: RowStats) -> None:
        """Write the release configs made from this stage's output in ``run`` (default: none)."""

    def card_text(self, run: RunResult) -> str:
        """This stage's part of the card's distractor section (default: none)."""
        return ""

    def fingerprint(self, input_fingerprints: list[str], ctx: StageContext) -> str:
        """Content fingerprint: inputs + parameters + code version + seed + environment."""
        env = {k: ctx.environment.get(k) for k in self.environment_keys()}
        return combine(
            self.name,
            self.code_version(),
            sha256_json(self.params.model_dump(mode="json")),
            str(ctx.seed),
            sha256_json(env),
            *input_fingerprints,
        )

    @abstractmethod
    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        """Compute the output artifact from the input artifacts."""


class MapStage(Stage):
    """A per-item stage over its first input: ``process(item, ctx) -> list[Item] | Drop``.

    Later inputs (if any) are side inputs, given to :meth:`setup` before processing.
    Items are processed and cached independently; outputs keep input order.
    ``forkable``: ``process`` is CPU-bound and calls no service, so the runner may compute items in forked
    worker processes that inherit the prepared stage (:mod:`pipeline.forked`).
    """

    forkable: ClassVar[bool] = False

    def setup(self, side_inputs: dict[str, list[Item]], ctx: StageContext) -> None:
        """Prepare shared state (lookup tables, corpora) before the first item."""

    def prepare(self, items: list[Item], ctx: StageContext) -> None:
        """Batch work that the items about to be processed share (one embedding call for all of them,
        say), after :meth:`setup` and before the first :meth:`process`. ``items``: the uncached ones.
        Must not change what ``process`` returns, only how fast. Default: nothing."""

    def side_input_digest(self, name: str, items: list[Item]) -> str:
        """Digest of what :meth:`setup` reads of side input ``name`` (part of every item's cache key).
        Default: all of it. A stage that reads a part overrides this with the digest of that part,
        computed by the same function its ``setup`` reads through, so an edit elsewhere keeps its items."""
        return sha256_json(items)

    @abstractmethod
    def process(self, item: Item, ctx: StageContext) -> list[Item | Dropped] | Drop:
        """Map one input item to its output items, or drop it with a reason.

        When one input yields several outputs, some of them may be dropped on their own:
        return them as :class:`Dropped` entries (with the derived item's id) among the items.
        """

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        """Uncached reference implementation; the runner uses its cached equivalent."""
        main, *side = self.inputs
        self.setup({name: inputs[name] for name in side}, ctx)
        self.prepare(inputs[main], ctx)
        out = StageOutput(items=[])
        for item in inputs[main]:
            result = self.process(item, ctx)
            if isinstance(result, Drop):
                out.dropped.append(Dropped(item["id"], result.reason, result.detail))
            else:
                out.items.extend(x for x in result if isinstance(x, dict))
                out.dropped.extend(x for x in result if isinstance(x, Dropped))
        return out
