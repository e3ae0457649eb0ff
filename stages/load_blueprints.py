"""``load_blueprints`` and ``load_fillers``: the hand-written corpus enters the pipeline.

In: the YAML files under the configured blueprints directory.
Out: one item per seed blueprint (``{"id", "blueprint", "source"}``), or one item per
filler topic (``{"id": "topic:<name>", "pool"}``). Any schema or lint problem stops the
build with every problem listed as ``path:line: field: message``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pipeline.bounds import Count

from pipeline.blueprints.loader import Corpus, load_corpus
from pipeline.blueprints.schema import to_json
from pipeline.errors import InputError
from pipeline.hashing import combine, sha256_file
from pipeline.stage import BuildSetting, Dropped, Stage, StageContext, StageOutput
from pipeline.vocabulary import DropReason


class BlueprintProblems(InputError):
    """The corpus has problems; the message lists them all."""


class LoadParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    limit: Count | None = None


def corpus_digest(root: Path) -> str:
    """Digest of every YAML file under ``root`` (relative path + bytes)."""
    files = sorted(p for p in root.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file())
    return combine(*(f"{p.relative_to(root).as_posix()}:{sha256_file(p)}" for p in files))


def blueprint_environment(setting: BuildSetting) -> dict[str, str]:
    """The blueprint directory of a build and the digest of its YAML files."""
    root = setting.config.blueprints_path(setting.base)
    return {"blueprints_dir": str(root), "blueprints_digest": corpus_digest(root)}


def _load(ctx: StageContext, lint: bool = True) -> Corpus:
    root = Path(ctx.environment["blueprints_dir"])
    corpus = load_corpus([root], lint=lint)
    if corpus.problems:
        listing = "\n".join(str(p) for p in corpus.problems[:200])
        raise BlueprintProblems(f"{len(corpus.problems)} problem(s) in {root}:\n{listing}")
    return corpus


class LoadBlueprints(Stage):
    """Seed blueprints, sorted by file path (``--limit N`` keeps the first N)."""

    name = "load_blueprints"
    Params = LoadParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("blueprints_digest",)

    @classmethod
    def provide_environment(cls, setting: BuildSetting) -> dict[str, str]:
        return blueprint_environment(setting)

    def run(self, inputs: dict, ctx: StageContext) -> StageOutput:
        corpus = _load(ctx)
        root = Path(ctx.environment["blueprints_dir"])
        sourced = sorted(corpus.blueprints, key=lambda s: (s.path, s.line))
        dropped: list[Dropped] = []
        if self.params.limit is not None:
            dropped = [Dropped(s.blueprint.id, DropReason.BEYOND_LIMIT, f"--limit {self.params.limit}")
                       for s in sourced[self.params.limit :]]
            sourced = sourced[: self.params.limit]
        items = [
            {"id": s.blueprint.id, "blueprint": to_json(s.blueprint), "source": Path(s.path).relative_to(root).as_posix()}
            for s in sourced
        ]
        return StageOutput(items=items, dropped=dropped, stats={"items_in": len(corpus.blueprints)})


class LoadFillers(Stage):
    """Filler pools by topic."""

    name = "load_fillers"

    def environment_keys(self) -> tuple[str, ...]:
        return ("blueprints_digest",)

    @classmethod
    def provide_environment(cls, setting: BuildSetting) -> dict[str, str]:
        return blueprint_environment(setting)

    def run(self, inputs: dict, ctx: StageContext) -> StageOutput:
        corpus = _load(ctx, lint=False)  # load_blueprints lints the corpus
        items = [{"id": f"topic:{topic}", "pool": pool.model_dump(mode="json")} for topic, pool in sorted(corpus.fillers.items())]
        return StageOutput(items=items)
