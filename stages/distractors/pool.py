"""``distractor_pool``: the resolved corpora -> time-free snippets with their token counts.

In: nothing but the environment (``distractors``: which source serves which dimension).
Out: one item per snippet ``{"id", "source", "messages": [[role, content]...], "tokens": [...]}``
where ``tokens[i]`` is the o200k count of ``" " + content`` for user messages (they follow a
timestamp prefix) and of ``content`` for assistant messages, so a stretched row's length is a
sum, never a re-tokenization. Dropped, with reasons: exchanges holding a time expression
(``time_expression``; ``stats["filters"][source]["time-patterns"]`` counts the exchanges matching each
pattern of :data:`~stages.distractors.units.TIME_PATTERNS`) or too long to inject (``too_long``);
``stats["filters"][source]["mid_conversation"]`` counts the snippets that open after such a cut, and
``opening_tokens`` the tokens of those that open where their conversation does.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from pipeline import tokenizer
from pipeline.hashing import combine, source_digest
from pipeline.stage import BuildSetting, Dropped, Stage, StageContext, StageOutput
from pipeline.vocabulary import DropReason
from stages.distractors import loaders, units
from stages.distractors.card import distractor_section
from stages.distractors.resolve import distractor_environment
from stages.distractors.units import TIME_PATTERNS, Conversation, exchanges, time_patterns

if TYPE_CHECKING:
    from pipeline.runner import RunResult


class PoolParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_snippet_tokens: int = 3000
    max_exchange_tokens: int = 2500
    # per-source limits: a coding agent's step (a 100-line file view, a test run) is long but whole
    max_exchange_tokens_by_source: dict[str, int] = {"swe-agent": 6000}


def load_source(name: str, kind: str, location: str, files: tuple[str, ...]) -> list[Conversation]:
    """Read one resolved source into conversations."""
    if kind == "hub":
        import datasets

        rows = datasets.load_dataset(location, split="train")
        if name == "multiwoz":
            return loaders.multiwoz(list(rows), name)
        if name == "math":
            return loaders.math_solutions((json.dumps(r) for r in rows), name)
        return loaders.openthoughts(rows, name)
    root = Path(location)
    conversations: list[Conversation] = []
    for relative in files:
        path = root / relative
        if name == "swe-agent":
            conversations.append(loaders.trajectory(json.loads(path.read_text(encoding="utf-8")), relative, name))
        elif name == "math":
            conversations += loaders.math_solutions(path.read_text(encoding="utf-8").splitlines(), name)
        elif name == "openthoughts":
            conversations += loaders.openthoughts(_rows(path), name)
        else:
            conversations += loaders.multiwoz(_json(path), name)
    return conversations


def _json(path: Path):
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            member = next(n for n in archive.namelist() if n.endswith(".json"))
            return json.loads(archive.read(member))
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    return json.loads(path.read_text(encoding="utf-8"))


def _rows(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in io.StringIO(path.read_text(encoding="utf-8")) if line.strip()]


class DistractorPool(Stage):
    name = "distractor_pool"
    Params = PoolParams

    def environment_keys(self) -> tuple[str, ...]:
        return ("distractors",)

    @classmethod
    def provide_environment(cls, setting: BuildSetting) -> dict[str, object]:
        """The resolved source of every dimension (a local directory, else a Hub id, else an error)."""
        return {"distractors": distractor_environment(setting)}

    def card_text(self, run: RunResult) -> str:
        return distractor_section(run)

    def code_version(self) -> str:
        """This module and the loaders and filters it calls (sibling modules are not in the default digest)."""
        return combine(self.version, source_digest(type(self), loaders, units))

    def run(self, inputs: dict, ctx: StageContext) -> StageOutput:
        sources = {s["name"]: s for s in ctx.environment["distractors"]["sources"].values()}
        out = StageOutput(items=[], stats={"filters": {}})
        for name in sorted(sources):
            source = sources[name]
            conversations = load_source(name, source["kind"], source["location"], tuple(source["files"]))
            filters = out.stats["filters"].setdefault(name, {"conversations": len(conversations),
                                                            DropReason.TIME_EXPRESSION.value: 0, DropReason.TOO_LONG.value: 0,
                                                            "mid_conversation": 0, "opening_tokens": 0,
                                                            "time-patterns": dict.fromkeys(TIME_PATTERNS, 0)})
            pairs = [exchanges(conversation.messages) for conversation in conversations]
            counts = iter(tokenizer.count_many(t for exchange in pairs for t in _pair_texts(exchange)))
            for conversation, exchange in ctx.progress(list(zip(conversations, pairs)), desc=f"pool {name}"):
                self._cut(conversation, exchange, [next(counts) for _ in range(2 * len(exchange))], out, filters)
            filters["snippets"] = sum(1 for item in out.items if item["source"] == name)
        return out

    def _cut(self, conversation: Conversation, pairs: list, counts: list[int], out: StageOutput, filters: dict) -> None:
        """Cut one conversation's exchanges (``pairs``, with the token ``counts`` of ``_pair_texts``) into snippets."""
        run: list[tuple] = []
        run_tokens = 0
        limit = self.params.max_exchange_tokens_by_source.get(conversation.source, self.params.max_exchange_tokens)

        def close() -> None:
            nonlocal run, run_tokens
            if run:
                first = run[0][0]
                messages = [[role, content] for _, pair, _ in run for role, content in pair]
                tokens = [c for _, _, pair_counts in run for c in pair_counts]
                out.items.append({"id": f"{conversation.id}#{first}", "source": conversation.source,
                                  "messages": messages, "tokens": tokens})
                filters["mid_conversation"] += first > 0  # after a cut exchange (or a full snippet), not at the opening
                filters["opening_tokens"] += sum(tokens) if first == 0 else 0
            run, run_tokens = [], 0

        for index, (pair, pair_counts) in enumerate(zip(pairs, zip(counts[::2], counts[1::2]))):
            exchange_id = f"{conversation.id}#{index}"
            found = sorted(set(time_patterns(pair[0][1])) | set(time_patterns(pair[1][1])), key=list(TIME_PATTERNS).index)
            if found:
                out.dropped.append(Dropped(exchange_id, DropReason.TIME_EXPRESSION,
                                           f"a turn holds a time expression ({', '.join(found)})"))
                filters[DropReason.TIME_EXPRESSION.value] += 1
                for pattern in found:
                    filters["time-patterns"][pattern] += 1
                close()
                continue
            size = sum(pair_counts)
            if size > limit:
                out.dropped.append(Dropped(exchange_id, DropReason.TOO_LONG, f"{size} tokens"))
                filters[DropReason.TOO_LONG.value] += 1
                close()
                continue
            if run_tokens + size > max(limit, self.params.max_snippet_tokens):
                close()
            run.append((index, pair, pair_counts))
            run_tokens += size
        close()


def _pair_texts(pairs: list) -> list[str]:
    """The texts whose tokens a snippet counts: each exchange's user turn (as it follows a space) and reply."""
    return [text for user, assistant in pairs for text in (" " + user[1], assistant[1])]
