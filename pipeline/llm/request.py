"""What a stage asks the LLM (:class:`ChatRequest`) and what it gets back (:class:`LLMResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from pipeline.llm.errors import TRANSIENT_ERRORS
from pipeline.llm.structured import schema_of, with_schema_instruction
from pipeline.stage import Drop
from pipeline.vocabulary import llm_drop_reason

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to obtain.

    ``schema`` asks for a JSON object validated against that pydantic model.
    ``sample`` tells apart otherwise identical requests whose answers should differ
    (several rollouts at a temperature > 0); it is part of the cache key. ``seed`` is sent
    to servers that honour it. ``tag`` is the caller's label (an item id) for logs only.
    """

    messages: Sequence[Mapping[str, str]]
    temperature: float = 0.0
    max_tokens: int | None = 512
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    sample: int = 0
    schema: type[BaseModel] | None = None
    tag: str = ""

    def wire_messages(self) -> list[dict[str, Any]]:
        """The messages as sent (with the schema instruction for structured requests)."""
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in self.messages]
        return with_schema_instruction(messages, self.schema) if self.schema is not None else messages

    def sampling(self) -> dict[str, Any]:
        """Sampling arguments for ``chat.completions.create`` (unset ones left out)."""
        params: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.seed is not None:
            params["seed"] = self.seed
        if self.stop:
            params["stop"] = list(self.stop)
        return params

    def key_payload(self) -> dict[str, Any]:
        """Everything about this request that can change the answer (model excluded)."""
        return {
            "messages": self.wire_messages(),
            "sampling": self.sampling(),
            "schema": schema_of(self.schema) if self.schema is not None else None,
            "sample": self.sample,
        }


@dataclass
class LLMResult:
    """The outcome of one request: an answer (``ok``) or a failure with a reason.

    ``text`` is the raw answer; ``data`` the validated JSON object of a structured request.
    ``error`` is a short reason (``rate_limited``, ``timeout``, ``server_error``,
    ``connection_error``, ``bad_response``, ``invalid_output``, ``http_<status>``) and
    ``detail`` a human explanation. ``attempts`` counts HTTP requests sent for it here.
    """

    key: str
    ok: bool
    text: str | None = None
    data: dict[str, Any] | None = None
    error: str | None = None
    detail: str = ""
    cached: bool = False
    attempts: int = 0
    mode: str | None = None
    tag: str = ""
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def transient(self) -> bool:
        """True for a failure that says nothing about the request (outage, overload, rate limit)."""
        return not self.ok and self.error in TRANSIENT_ERRORS

    def parsed(self, model: type[M]) -> M:
        """The validated answer as an instance of ``model`` (only for ``ok`` structured results)."""
        if not self.ok or self.data is None:
            raise ValueError(f"no structured answer: {self.error} {self.detail}".strip())
        return model.model_validate(self.data)

    def as_drop(self) -> Drop:
        """The :class:`Drop` a stage returns for an item whose request failed (reason ``llm_<error>``)."""
        return Drop(reason=llm_drop_reason(self.error), detail=self.detail)

    def to_cache(self) -> dict[str, Any]:
        """What the request cache stores for a successful answer."""
        return {"text": self.text, "data": self.data, "mode": self.mode, "usage": self.usage}

    @classmethod
    def from_cache(cls, key: str, value: Mapping[str, Any], tag: str = "") -> LLMResult:
        return cls(
            key=key,
            ok=True,
            text=value.get("text"),
            data=value.get("data"),
            cached=True,
            mode=value.get("mode"),
            tag=tag,
            usage=dict(value.get("usage") or {}),
        )
