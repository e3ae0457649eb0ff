"""The LLM layer: one cached, concurrent, fault-tolerant client for OpenAI-compatible endpoints.

A stage gets the client from ``ctx.services.get("llm")`` (None when the build is offline),
builds a batch of :class:`ChatRequest`, and calls ``client.map(batch)``; each
:class:`LLMResult` is an answer or a failure whose ``as_drop()`` is the item's Drop.
"""

from pipeline.llm.cache import RequestCache, request_key
from pipeline.llm.client import LLMClient
from pipeline.llm.config import LLMConfig
from pipeline.llm.request import ChatRequest, LLMResult
from pipeline.llm.retry import RetryPolicy, parse_retry_after
from pipeline.llm.stats import LLMStats, safe_endpoint

__all__ = [
    "ChatRequest",
    "LLMClient",
    "LLMConfig",
    "LLMResult",
    "LLMStats",
    "RequestCache",
    "RetryPolicy",
    "parse_retry_after",
    "request_key",
    "safe_endpoint",
]
