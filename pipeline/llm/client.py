"""One LLM client for every stage: cached, concurrent, retrying, structured.

A stage builds a batch of :class:`ChatRequest` and calls ``client.map(requests)``; the
answers come back in order as :class:`LLMResult` (never an exception per item). Inside, one
event loop sends the requests that the cache cannot answer, at most ``concurrency`` at a
time (an adaptive limit below that cap, :mod:`pipeline.llm.adaptive`), through ``openai.AsyncOpenAI`` with the SDK's own retries off, so the rules in
:mod:`pipeline.llm.retry` are the only ones. Identical requests in a batch are sent once.
Every successful answer is written to the cache as soon as it arrives.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletion
from tqdm import tqdm

from pipeline.llm.adaptive import Gate
from pipeline.llm.cache import RequestCache, request_key
from pipeline.llm.config import LLMConfig
from pipeline.llm.errors import EndpointUnreachable
from pipeline.llm.request import ChatRequest, LLMResult
from pipeline.llm.retry import parse_retry_after
from pipeline.llm.stats import LLMStats, safe_endpoint
from pipeline.llm.structured import MODES, StructuredOutputError, parse_answer, repair_messages, response_format

log = logging.getLogger("triggerbench.llm")
_FORMAT_WORDS = ("response_format", "json_schema", "json schema", "json_object", "grammar")


class _Retryable(Exception):
    """An attempt that may succeed if repeated (rate limit or transient error)."""

    def __init__(self, kind: str, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.retry_after = retry_after


class _Fatal(Exception):
    """An attempt that will not succeed if repeated (4xx other than 408/409/429)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class _FormatRejected(Exception):
    """The endpoint refused the ``response_format`` we asked for."""


@dataclass
class _Session:
    """Per-batch state: the SDK client bound to this event loop, the adaptive limit, a shared pause."""

    api: openai.AsyncOpenAI
    gate: Gate
    pause_until: float = 0.0


class LLMClient:
    """Send chat requests to an OpenAI-compatible endpoint; see the module docstring."""

    def __init__(self, config: LLMConfig, cache: RequestCache | None = None) -> None:
        self.config = config
        self.cache = cache
        self._model = config.model
        self._mode_lock = threading.Lock()
        self._mode_index = 0 if config.structured_mode == "auto" else MODES.index(config.structured_mode)
        self.stats = LLMStats(endpoint=safe_endpoint(config.base_url), model=config.model,
                              concurrency_cap=config.concurrency)
        self._limit = 0.0  # the adaptive in-flight limit, carried from batch to batch (0: start at the cap)

    @classmethod
    def from_settings(
        cls,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        cache_path: Path | str | None = None,
        **limits: Any,
    ) -> LLMClient | None:
        """A client from flags, then environment (see :class:`LLMConfig`); None when not configured."""
        config = LLMConfig.resolve(base_url=base_url, model=model, api_key=api_key, **limits)
        if config is None:
            return None
        return cls(config, RequestCache(cache_path) if cache_path is not None else None)

    def __repr__(self) -> str:
        return f"LLMClient(endpoint={self.stats.endpoint!r}, model={self._model!r})"

    @property
    def model(self) -> str:
        """The model name; asks the endpoint's ``/models`` once when none was configured."""
        if self._model is None:
            with openai.OpenAI(**self._sdk_args()) as api:
                listed = [m.id for m in api.models.list()]
            if len(listed) != 1:
                found = ", ".join(sorted(listed)[:10]) or "none"
                raise RuntimeError(f"{self.stats.endpoint} lists {len(listed)} models ({found}); pass --llm-model")
            self._model = listed[0]
            self.stats.model = self._model
        return self._model

    def check_reachable(self, timeout: float = 10.0) -> None:
        """Raise :class:`EndpointUnreachable` unless the endpoint answers HTTP at all (any status)."""
        url = self.config.base_url.rstrip("/") + "/models"
        headers = {"Authorization": f"Bearer {self.config.api_key}"}
        try:
            with httpx.Client(timeout=min(timeout, self.config.timeout)) as http:
                http.get(url, headers=headers)
        except httpx.TimeoutException:
            raise EndpointUnreachable(self.stats.endpoint, f"no answer within {min(timeout, self.config.timeout):g}s") from None
        except httpx.TransportError as error:
            raise EndpointUnreachable(self.stats.endpoint, _short(error)) from None

    def environment(self) -> dict[str, str | None]:
        """Facts that change LLM outputs, for stage fingerprints (no key, no credentials)."""
        return {"llm_endpoint": self.stats.endpoint, "llm_model": self.model}

    def key_for(self, request: ChatRequest) -> str:
        """The cache key of ``request`` (independent of the endpoint URL and key)."""
        return request_key(self.model, request.key_payload())

    def map(self, requests: Sequence[ChatRequest], desc: str = "llm") -> list[LLMResult]:
        """Answer ``requests`` concurrently (synchronous façade); results keep the input order."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.amap(requests, desc))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.amap(requests, desc)).result()

    def complete(self, request: ChatRequest) -> LLMResult:
        """Answer one request (prefer :meth:`map` over a batch)."""
        return self.map([request])[0]

    async def amap(self, requests: Sequence[ChatRequest], desc: str = "llm") -> list[LLMResult]:
        """Async :meth:`map`: cache lookups, in-batch dedupe, then concurrent sends."""
        keys = [self.key_for(r) for r in requests]
        stored = self.cache.get_many(sorted(set(keys))) if self.cache is not None else {}
        results: list[LLMResult | None] = [None] * len(requests)
        first_index: dict[str, int] = {}
        for index, (request, key) in enumerate(zip(requests, keys)):
            if key in stored:
                results[index] = LLMResult.from_cache(key, stored[key], request.tag)
                self.stats.add("cache_hits")
            elif key in first_index:
                self.stats.add("cache_hits")
            else:
                first_index[key] = index
        if first_index:
            fresh = await self._send_all([(requests[i], keys[i]) for i in first_index.values()], desc)
            answers = {result.key: result for result in fresh}
            for index, key in enumerate(keys):
                if results[index] is None:
                    own = first_index[key] == index
                    results[index] = answers[key] if own else _copy_for(answers[key], requests[index].tag)
        return [r for r in results if r is not None]

    async def _send_all(self, work: list[tuple[ChatRequest, str]], desc: str) -> list[LLMResult]:
        disabled = os.environ.get("TRIGGERBENCH_PROGRESS", "1") == "0" or len(work) < 2
        bar = tqdm(total=len(work), desc=desc, file=sys.stderr, disable=disabled, leave=False, unit="req")
        async with openai.AsyncOpenAI(**self._sdk_args()) as api:
            session = _Session(api=api, gate=Gate(self.config.concurrency, self.stats, self._limit, self.config.adaptive))

            async def one(request: ChatRequest, key: str) -> LLMResult:
                result = await self._answer(session, request, key)
                bar.update(1)
                return result

            try:
                return list(await asyncio.gather(*(one(r, k) for r, k in work)))
            finally:
                self._limit = session.gate.limit
                bar.close()

    def _sdk_args(self) -> dict[str, Any]:
        return {
            "base_url": self.config.base_url,
            "api_key": self.config.api_key,
            "timeout": self.config.timeout,
            "max_retries": 0,
        }

    async def _answer(self, session: _Session, request: ChatRequest, key: str) -> LLMResult:
        """Retry / repair loop for one request; always returns, never raises for the item."""
        policy = self.config.retry
        messages = request.wire_messages()
        attempts = repairs = limited = transient = unconnected = 0
        while True:
            mode = self._mode() if request.schema is not None else None
            attempts += 1
            try:
                completion = await self._post(session, request, messages, mode)
            except _FormatRejected as rejected:
                if self._downgrade(mode):
                    continue
                return self._fail(request, key, "http_400", f"response_format {mode} rejected: {rejected}", attempts)
            except _Fatal as error:
                return self._fail(request, key, error.kind, error.detail, attempts)
            except _Retryable as error:
                if error.kind == "rate_limited":
                    limited += 1
                    self.stats.add("rate_limited")
                    count, budget = limited, policy.max_rate_limit_retries
                else:
                    transient += 1
                    unconnected += error.kind == "connection_error"
                    self.stats.add("transient_errors")
                    count, budget = transient, policy.max_retries
                if count > budget:
                    detail = f"{error.detail} (gave up after {count} {error.kind} errors)"
                    if unconnected == attempts:
                        # every attempt failed to connect: the endpoint is down, not this request
                        self.stats.add_failure(error.kind)
                        raise EndpointUnreachable(self.stats.endpoint, detail)
                    return self._fail(request, key, error.kind, detail, attempts)
                delay = policy.wait(count - 1, key, error.retry_after)
                if error.kind == "rate_limited" and error.retry_after is not None:
                    loop_now = asyncio.get_running_loop().time()
                    session.pause_until = max(session.pause_until, loop_now + delay)
                self.stats.add("retries")
                log.info("retrying %s after %s in %.2fs: %s", request.tag or key[:12], error.kind, delay, error.detail)
                await asyncio.sleep(delay)
                continue
            text, usage = _read(completion)
            self.stats.add("prompt_tokens", usage.get("prompt_tokens", 0))
            self.stats.add("completion_tokens", usage.get("completion_tokens", 0))
            data = None
            if request.schema is not None:
                try:
                    data = parse_answer(text, request.schema).model_dump(mode="json")
                except StructuredOutputError as problem:
                    if repairs >= self.config.max_repairs:
                        detail = f"{problem} (after {repairs} repair rounds)"
                        return self._fail(request, key, "invalid_output", detail, attempts)
                    repairs += 1
                    self.stats.add("repairs")
                    messages = repair_messages(messages, text, str(problem))
                    continue
            result = LLMResult(key, True, text, data, attempts=attempts, mode=mode, tag=request.tag, usage=usage)
            if self.cache is not None:
                self.cache.put(key, result.to_cache())
            return result

    async def _post(
        self, session: _Session, request: ChatRequest, messages: list[dict[str, Any]], mode: str | None
    ) -> ChatCompletion:
        """One HTTP request; raises :class:`_Retryable`, :class:`_Fatal` or :class:`_FormatRejected`."""
        loop = asyncio.get_running_loop()
        while (wait := session.pause_until - loop.time()) > 0:
            await asyncio.sleep(wait)
        extra: dict[str, Any] = {}
        if request.schema is not None and mode is not None:
            fmt = response_format(request.schema, mode)
            if fmt is not None:
                extra["response_format"] = fmt
        async with session.gate.slot() as slot:
            self.stats.add("requests")
            body = {"model": self.model, "messages": messages, **request.sampling(), **extra}
            # the SDK's documented raw ``post``: same transport, errors and parsing as
            # ``chat.completions.create`` without re-validating our already plain-JSON body
            call = session.api.post("/chat/completions", cast_to=ChatCompletion, body=body)
            try:
                completion = await asyncio.wait_for(call, timeout=self.config.timeout + 1.0)
            except openai.RateLimitError as error:
                slot.congested()
                raise _Retryable("rate_limited", _short(error), parse_retry_after(error.response.headers)) from error
            except (openai.APITimeoutError, asyncio.TimeoutError) as error:
                slot.congested()
                self.stats.add("timeouts")
                raise _Retryable("timeout", f"no answer within {self.config.timeout:g}s") from error
            except openai.APIConnectionError as error:
                raise _Retryable("connection_error", _short(error)) from error
            except openai.APIStatusError as error:
                raise _classify_status(error, mode) from error
            except (openai.APIResponseValidationError, ValueError) as error:
                raise _Retryable("bad_response", f"unreadable response body: {_short(error)}") from error
        if not isinstance(completion, ChatCompletion) or not completion.choices:
            raise _Retryable("bad_response", "the response is not a chat completion")
        return completion

    def _mode(self) -> str:
        with self._mode_lock:
            return MODES[self._mode_index]

    def _downgrade(self, rejected: str | None) -> bool:
        """Stop using the rejected structured-output mode; False when there is nothing to fall back to."""
        with self._mode_lock:
            if MODES[self._mode_index] != rejected:
                return True  # another request already moved on
            if self.config.structured_mode != "auto" or self._mode_index >= len(MODES) - 1:
                return False
            self._mode_index += 1
            log.warning("endpoint rejected response_format %s; using %s", rejected, MODES[self._mode_index])
            return True

    def _fail(self, request: ChatRequest, key: str, kind: str, detail: str, attempts: int) -> LLMResult:
        self.stats.add_failure(kind)
        log.warning("request %s failed (%s): %s", request.tag or key[:12], kind, detail)
        return LLMResult(key, False, error=kind, detail=detail, attempts=attempts, tag=request.tag)

    def close(self) -> None:
        """Release the request cache."""
        if self.cache is not None:
            self.cache.close()


def _classify_status(error: openai.APIStatusError, mode: str | None) -> Exception:
    status = error.status_code
    retry_after = parse_retry_after(error.response.headers)
    message = str(error).lower()
    # llama-cpp-python answers an unknown response_format with HTTP 500, others with 400/422
    if status in (400, 422, 500) and mode not in (None, "text") and any(word in message for word in _FORMAT_WORDS):
        return _FormatRejected(_short(error))
    if status >= 500 or status in (408, 409):
        return _Retryable("server_error", f"HTTP {status}: {_short(error)}", retry_after)
    return _Fatal(f"http_{status}", _short(error))


def _read(completion: ChatCompletion) -> tuple[str, dict[str, int]]:
    """The first choice's text and the token usage of a completion."""
    text = completion.choices[0].message.content or ""
    usage = completion.usage
    counts = {"prompt_tokens": 0, "completion_tokens": 0}
    if usage is not None:
        counts = {"prompt_tokens": int(usage.prompt_tokens or 0), "completion_tokens": int(usage.completion_tokens or 0)}
    return text, counts


def _short(error: BaseException, limit: int = 300) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _copy_for(result: LLMResult, tag: str) -> LLMResult:
    """A duplicate request's result: same answer, marked as not sent."""
    return LLMResult(
        result.key, result.ok, result.text, result.data, result.error, result.detail,
        cached=True, attempts=0, mode=result.mode, tag=tag, usage=dict(result.usage),
    )
