"""Fail fast on a wrong endpoint: one ``GET /models`` before the first request that must be sent.

An unreachable server or a model it does not list stops the run at once with a clear
message instead of after every row's retries. Nothing is checked when every request of a
run is already answered in the cache (a finished run reruns offline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import openai

from pipeline.llm import ChatRequest, LLMClient, LLMConfig, safe_endpoint


class EndpointError(RuntimeError):
    """The endpoint cannot be reached, refuses the key, or does not serve the model."""


@dataclass
class EndpointCheck:
    """Check one endpoint and model once (``ensure`` is a no-op after the first success)."""

    config: LLMConfig
    done: bool = False

    def ensure(self) -> None:
        if self.done:
            return
        where = safe_endpoint(self.config.base_url)
        try:
            with openai.OpenAI(base_url=self.config.base_url, api_key=self.config.api_key, timeout=15, max_retries=1) as api:
                listed = [m.id for m in api.models.list()]
        except openai.NotFoundError:
            listed = []  # the server has no /models: the first request will tell
        except openai.AuthenticationError as error:
            raise EndpointError(f"{where} refused the API key (HTTP {error.status_code}); check OPENAI_API_KEY") from None
        except (openai.APIConnectionError, openai.APITimeoutError) as error:
            raise EndpointError(f"cannot reach the endpoint {where}: {type(error).__name__}; is the server running?") from None
        except openai.APIStatusError as error:
            raise EndpointError(f"{where}/models answered HTTP {error.status_code}") from None
        model = self.config.model
        if listed and model not in listed:
            shown = ", ".join(sorted(listed)[:10])
            raise EndpointError(f"{where} does not serve model {model!r} (it lists: {shown})")
        self.done = True


def needs_network(client: LLMClient, requests: Sequence[ChatRequest], keys: Sequence[str] | None = None) -> bool:
    """Whether any of ``requests`` (whose cache ``keys`` may be given) is missing from the client's cache."""
    unique = sorted(set(keys if keys is not None else [client.key_for(r) for r in requests]))
    return bool(unique) and (client.cache is None or len(client.cache.get_many(unique)) < len(unique))
