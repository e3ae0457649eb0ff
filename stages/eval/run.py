"""One resumable evaluation run: rows in, one :class:`Record` per row out.

Every request goes through :class:`pipeline.llm.LLMClient` with one request cache per run
directory (``requests.sqlite``): an answer is stored as soon as it arrives, so a run killed
mid-way resumes without resending answered requests and a rerun of a finished run sends
nothing. Rows go in chunks; per chunk: the online setting's own constraint replies, the
model's answer to the trigger, then the judge. A request that fails after the client's
retries makes its row ``failed`` with the reason; failed rows stay in every denominator.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pipeline.hashing import sha256_json
from pipeline.llm import ChatRequest, LLMClient, LLMConfig, LLMResult, RequestCache
from pipeline.seeding import derive_seed
from stages.eval import judge, memory, prompts, scorers
from stages.eval.endpoint import EndpointCheck, needs_network
from stages.eval.mem0_memory import Mem0RequestFailed, Mem0Store

CACHE_FILE = "requests.sqlite"
FAILURES_FILE = "failed_requests.json"


@dataclass
class FailureLog:
    """Requests that failed after the client's retries: replayed on a rerun instead of resent.

    The request cache keeps only answers, so without this a rerun would resend every failed
    request; ``retry`` (``--retry-failed``) forgets the log and resends them.
    """

    path: Path
    known: dict[str, tuple[str, str]]

    @classmethod
    def open(cls, path: Path, retry: bool) -> FailureLog:
        data = {} if retry or not path.exists() else json.loads(path.read_text(encoding="utf-8"))
        return cls(path, {k: (v["error"], v["detail"]) for k, v in data.items()})

    def update(self, results: Iterable[LLMResult]) -> None:
        """Record failures and forget keys that now have an answer; rewrite the file atomically."""
        for result in results:
            if result.ok:
                self.known.pop(result.key, None)
            else:
                self.known[result.key] = (result.error or "failed", result.detail)
        data = {k: {"error": e, "detail": d} for k, (e, d) in sorted(self.known.items())}
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        partial.replace(self.path)


@dataclass(frozen=True)
class EvalOptions:
    """Everything that decides a run's answers (the CLI flags)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    setting: str = "offline"
    temperature: float = 0.6
    max_tokens: int = 1024
    concurrency: int = 8
    timeout: float = 120.0
    seed: int = 0
    retry_failed: bool = False
    memory: str = "none"

    @property
    def judge_name(self) -> str:
        return self.judge_model or self.model


@dataclass
class Record:
    """One row's evaluation: requests, answers, verdict, scores (a line of responses.parquet)."""

    config: str
    kind: str
    split: str
    row: dict[str, Any]
    online: dict[int, str] = field(default_factory=dict)
    request: list[dict[str, str]] | None = None
    prompt_hash: str | None = None
    response: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_request: list[dict[str, str]] | None = None
    judge_prompt_hash: str | None = None
    verdict: str | None = None
    reason: str | None = None
    answer_matched: bool | None = None
    slot_recall: float | None = None
    correct: bool = False
    failure: str | None = None
    failure_detail: str | None = None
    memory_view: memory.MemoryView | None = None
    core: list[str] = field(default_factory=list)
    math_response: str | None = None  # aime_probe: the model's own answer to the problem, kept in its history
    math_answer: int | None = None
    math_correct: bool | None = None

    def fail(self, step: str, result: LLMResult) -> None:
        self.failure = f"{step}:{result.error or 'failed'}"
        self.failure_detail = result.detail


@dataclass
class Clients:
    """The evaluated model's and the judge's clients (sharing one request cache)."""

    model: LLMClient
    judge: LLMClient
    checks: dict[int, EndpointCheck]
    failures: FailureLog

    @classmethod
    def open(cls, options: EvalOptions, run_dir: Path) -> Clients:
        cache = RequestCache(run_dir / CACHE_FILE)
        common = {"concurrency": options.concurrency, "timeout": options.timeout}
        model_config = LLMConfig.resolve(base_url=options.base_url, model=options.model, api_key=options.api_key, **common)
        judge_url = options.judge_base_url or options.base_url
        judge_config = LLMConfig.resolve(base_url=judge_url, model=options.judge_name, api_key=options.api_key, **common)
        assert model_config is not None and judge_config is not None  # a model name is always given
        model, judge_client = LLMClient(model_config, cache), LLMClient(judge_config, cache)
        checks = {id(model): EndpointCheck(model_config), id(judge_client): EndpointCheck(judge_config)}
        return cls(model, judge_client, checks, FailureLog.open(run_dir / FAILURES_FILE, options.retry_failed))

    def stats(self) -> dict[str, Any]:
        """Request statistics of this invocation, per client."""
        return {"model": self.model.stats.as_dict(), "judge": self.judge.stats.as_dict()}

    def close(self) -> None:
        self.model.close()


class Progress:
    """One bar over the run's logical requests, with sent requests, cache hits, failures, tokens."""

    def __init__(self, total: int, clients: Clients) -> None:
        disabled = os.environ.get("TRIGGERBENCH_PROGRESS", "1") == "0"
        self.bar = tqdm(total=total, desc="eval", unit="req", file=sys.stderr, disable=disabled, mininterval=0.5)
        self.clients = clients

    def advance(self, count: int) -> None:
        stats = [self.clients.model.stats.as_dict(), self.clients.judge.stats.as_dict()]
        total = {k: sum(s[k] for s in stats) for k in ("requests", "cache_hits", "failures")}
        tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in stats)
        self.bar.set_postfix(sent=total["requests"], cached=total["cache_hits"], failed=total["failures"], tokens=tokens)
        self.bar.update(count)

    def close(self) -> None:
        self.bar.close()


def _send(clients: Clients, client: LLMClient, requests: Sequence[ChatRequest], progress: Progress, desc: str) -> list[LLMResult]:
    """Answer ``requests``: earlier failures are replayed (unless retried), the rest go to the client."""
    if not requests:
        return []
    keys = [client.key_for(r) for r in requests]
    known = clients.failures.known
    fresh = [i for i, key in enumerate(keys) if key not in known]
    if fresh and needs_network(client, [requests[i] for i in fresh], [keys[i] for i in fresh]):
        clients.checks[id(client)].ensure()
    results: list[LLMResult | None] = [None] * len(requests)
    for index, result in zip(fresh, client.map([requests[i] for i in fresh], desc=desc) if fresh else []):
        results[index] = result
    for index, key in enumerate(keys):
        if results[index] is None:
            error, detail = known[key]
            results[index] = LLMResult(key, False, error=error, detail=detail, cached=True, tag=requests[index].tag)
    clients.failures.update(r for r in results if r is not None)
    progress.advance(len(requests))
    return [r for r in results if r is not None]


def _model_request(options: EvalOptions, messages: list[dict[str, str]], tag: str) -> ChatRequest:
    seed = derive_seed(options.seed, sha256_json(messages), "eval") % 2**31
    return ChatRequest(messages, temperature=options.temperature, max_tokens=options.max_tokens, seed=seed, tag=tag)


def _online_round(options: EvalOptions, clients: Clients, records: list[Record], round_index: int, progress: Progress) -> None:
    todo = [(r, prompts.online_turns(r.row)) for r in records if r.failure is None]
    todo = [(r, turns[round_index]) for r, turns in todo if len(turns) > round_index]
    requests = [_model_request(options, prompts.online_prefix(r.row, turn, r.online), r.row["id"]) for r, turn in todo]
    for (record, turn), result in zip(todo, _send(clients, clients.model, requests, progress, "online replies")):
        if result.ok:
            record.online[turn] = result.text or ""
        else:
            record.fail("online_reply", result)


def _math_round(options: EvalOptions, clients: Clients, records: list[Record], progress: Progress) -> None:
    """``aime_probe``: the model answers the problem in the conversation; its answer stays in the history."""
    todo = [r for r in records if r.kind == "aime" and r.failure is None]
    requests = [_model_request(options, prompts.online_prefix(r.row, int(r.row["math_reply_turn"]), r.online), r.row["id"])
                for r in todo]
    for record, result in zip(todo, _send(clients, clients.model, requests, progress, "math")):
        if result.ok:
            record.math_response = result.text or ""
            record.online[int(record.row["math_reply_turn"])] = record.math_response
            record.math_answer = scorers.aime_extract(record.math_response)
            record.math_correct = scorers.aime_correct(record.math_response, int(record.row["aime_answer"]))
        else:
            record.fail("math", result)


def _answer(options: EvalOptions, clients: Clients, records: list[Record], progress: Progress,
            retriever: memory.Retriever | None = None) -> None:
    todo = [r for r in records if r.failure is None]
    for record in todo:
        if retriever is not None:
            record.memory_view = memory.view(record.row, memory.top_k_turns(record.row, retriever.embed), record.core)
        if record.memory_view is not None:
            record.request = record.memory_view.messages
        else:
            record.request = prompts.model_messages(record.row, options.setting, record.online)
        record.prompt_hash = sha256_json(record.request)
    requests = [_model_request(options, r.request or [], r.row["id"]) for r in todo]
    for record, result in zip(todo, _send(clients, clients.model, requests, progress, "model")):
        record.prompt_tokens = int(result.usage.get("prompt_tokens", 0))
        record.completion_tokens = int(result.usage.get("completion_tokens", 0))
        if result.ok:
            record.response = result.text or ""
        else:
            record.fail("model", result)


def _curate(clients: Clients, records: list[Record], progress: Progress) -> None:
    """Letta-Sim's write-time curator: one round per batch index, rows in parallel, core memory carried."""
    batches = {id(r): memory.curator_batches(r.row) for r in records}
    for round_index in range(max((len(b) for b in batches.values()), default=0)):
        todo = [r for r in records if r.failure is None and len(batches[id(r)]) > round_index]
        requests = [memory.curator_request(r.row, batches[id(r)][round_index], r.core, r.row["id"]) for r in todo]
        for record, result in zip(todo, _send(clients, clients.model, requests, progress, "curator")):
            if result.ok and result.data is not None:
                record.core = memory.updated_core(result.parsed(memory.CoreMemory))
            else:
                record.fail("curator", result)


def _mem0(store: Mem0Store, records: list[Record]) -> None:
    """Mem0 reads each row's turns in the curator's batches, then recalls memories for the trigger.

    Mem0 is a synchronous library over one local store, so rows go one at a time.
    """
    for record in (r for r in records if r.failure is None):
        try:
            store.remember(record.row, memory.curator_batches(record.row))
        except Mem0RequestFailed as failed:
            record.fail("mem0", failed.result)
            continue
        record.core = store.recall(record.row, memory.K)
        record.memory_view = memory.view(record.row, [], record.core, memory.MEM0_TITLE)


def _judge_request(record: Record) -> ChatRequest | None:
    row, response, tag = record.row, record.response or "", record.row["id"]
    if record.kind in ("pm", "aime"):
        record.slot_recall = scorers.slot_match(response, row.get("gold_slots") or []) if row["expected"] == "intervene" else None
        return judge.pm_judge_request(row, response, tag)
    aliases = list(row.get("answer_aliases") or [])
    record.answer_matched = scorers.answer_match(response, str(row["reference_answer"]), aliases)
    if record.answer_matched:
        return None
    return judge.rm_judge_request(str(row["question"]), str(row["reference_answer"]), aliases, response, tag)


def _judge(clients: Clients, records: list[Record], progress: Progress) -> None:
    todo: list[tuple[Record, ChatRequest]] = []
    for record in records:
        if record.failure is None and (request := _judge_request(record)) is not None:
            record.judge_request = request.wire_messages()
            record.judge_prompt_hash = sha256_json(record.judge_request)
            todo.append((record, request))
    results = _send(clients, clients.judge, [q for _, q in todo], progress, "judge")
    for (record, _), result in zip(todo, results):
        if result.ok and result.data is not None:
            verdict = result.parsed(judge.Verdict)
            record.verdict, record.reason = verdict.verdict, verdict.reason
        else:
            record.fail("judge", result)


def _score(record: Record) -> None:
    if record.kind in ("pm", "aime"):
        record.correct = record.failure is None and scorers.pm_correct(str(record.row["expected"]), record.verdict)
        unanswered = record.slot_recall is None and record.failure is not None
        if record.row["expected"] == "intervene" and unanswered and record.row.get("gold_slots"):
            record.slot_recall = 0.0
    else:
        record.correct = record.failure is None and scorers.rm_correct(bool(record.answer_matched), record.verdict)


def evaluate(records: list[Record], options: EvalOptions, run_dir: Path, chunk: int | None = None,
             on_chunk: Callable[[int], None] | None = None, retriever: memory.Retriever | None = None) -> dict[str, Any]:
    """Fill every record in place; returns this invocation's request statistics.

    ``retriever`` (for ``options.memory`` rag / letta-sim) replaces the stored dialogue by the memory's view.
    """
    clients = Clients.open(options, run_dir)
    size = chunk or max(64, options.concurrency * 4)
    rounds = max((len(prompts.online_turns(r.row)) for r in records), default=0) if options.setting == "online" else 0
    curated = options.memory in ("letta-sim", "mem0")
    curation = sum(len(memory.curator_batches(r.row)) for r in records) if curated else 0
    maths = sum(r.kind == "aime" for r in records)
    progress = Progress(len(records) * (2 + rounds) + curation + maths, clients)
    store = None
    if options.memory == "mem0":
        store = Mem0Store.open(run_dir, lambda request: _send(clients, clients.model, [request], progress, "mem0")[0])
    try:
        for start in range(0, len(records), size):
            part = records[start : start + size]
            for round_index in range(rounds):
                _online_round(options, clients, part, round_index, progress)
            _math_round(options, clients, part, progress)
            if options.memory == "letta-sim":
                _curate(clients, part, progress)
            if store is not None:
                _mem0(store, part)
            _answer(options, clients, part, progress, retriever)
            _judge(clients, part, progress)
            for record in part:
                _score(record)
            if on_chunk is not None:
                on_chunk(start + len(part))
    finally:
        if store is not None:
            store.close()
        progress.close()
        clients.close()
    return clients.stats()


def records_for(config: str, kind: str, split: str, rows: list[dict[str, Any]]) -> list[Record]:
    """Fresh records for the rows of one config."""
    return [Record(config=config, kind=kind, split=split, row=row) for row in rows]

