"""Structured output: ask for JSON matching a pydantic model, pull it out, validate, repair.

Three ways to ask, best first (the client falls back when an endpoint rejects one):

- ``json_schema``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM, llama.cpp);
- ``json_object_schema``: ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's
  grammar-constrained form; its server rejects ``json_schema``);
- ``json_object``: ``response_format={"type": "json_object"}`` (JSON mode, no schema);
- ``text``: no ``response_format``; the JSON is extracted from free text.

In every mode the schema is also stated in the last user message, so weak models and
text mode see it too, and the request (hence its cache key) does not depend on the mode.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError

MODES = ("json_schema", "json_object_schema", "json_object", "text")
_MAX_ERROR_CHARS = 800


class StructuredOutputError(ValueError):
    """An answer that is not a JSON object matching the requested schema."""


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model`` (what is sent and what is hashed into the cache key)."""
    return model.model_json_schema()


def schema_name(model: type[BaseModel]) -> str:
    """A response-format name: letters, digits, ``_`` and ``-`` only, at most 64 chars."""
    name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in model.__name__)
    return name[:64] or "answer"


def response_format(model: type[BaseModel], mode: str) -> dict[str, Any] | None:
    """The ``response_format`` argument for ``mode`` (None in text mode)."""
    if mode == "json_schema":
        spec = {"name": schema_name(model), "schema": schema_of(model), "strict": False}
        return {"type": "json_schema", "json_schema": spec}
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema_of(model)}
    if mode == "json_object":
        return {"type": "json_object"}
    if mode == "text":
        return None
    raise ValueError(f"unknown structured-output mode {mode!r}; expected one of {MODES}")


def with_schema_instruction(messages: list[dict[str, Any]], model: type[BaseModel]) -> list[dict[str, Any]]:
    """A copy of ``messages`` whose last user message ends with the schema instruction."""
    schema = json.dumps(schema_of(model), sort_keys=True, separators=(",", ":"))
    note = f"\n\nReply with exactly one JSON object, no other text, matching this JSON schema:\n{schema}"
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message.get("role") == "user":
            message["content"] = f"{message.get('content') or ''}{note}"
            return out
    return [*out, {"role": "user", "content": note.strip()}]


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and surrounding prose are skipped)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise StructuredOutputError("the answer contains no JSON object")


def parse_answer(text: str | None, model: type[BaseModel]) -> BaseModel:
    """Validate the answer ``text`` against ``model``; raise :class:`StructuredOutputError`."""
    if not text or not text.strip():
        raise StructuredOutputError("the answer is empty")
    data = extract_json_object(text)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise StructuredOutputError(describe_validation_error(error)) from error


def describe_validation_error(error: ValidationError) -> str:
    """A short, model-readable list of what is wrong: ``field: message`` per problem."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem.get("loc", ())) or "(object)"
        lines.append(f"{where}: {problem.get('msg', 'invalid')}")
    return "; ".join(lines)[:_MAX_ERROR_CHARS]


def repair_messages(messages: list[dict[str, Any]], bad_answer: str | None, problem: str) -> list[dict[str, Any]]:
    """``messages`` plus the rejected answer and a request to fix it (one repair round)."""
    feedback = (
        f"That answer was rejected: {problem[:_MAX_ERROR_CHARS]}. "
        "Reply again with only the corrected JSON object that matches the schema."
    )
    return [*messages, {"role": "assistant", "content": bad_answer or ""}, {"role": "user", "content": feedback}]
