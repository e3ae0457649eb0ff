"""Where the LLM is and how hard to push it: endpoint, model, key, limits.

Values come from explicit arguments (the ``--llm-base-url`` / ``--llm-model`` flags) first,
then the standard environment variables ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
``OPENAI_MODEL``. The LLM path is on only when a base URL or a model is given: an
``OPENAI_API_KEY`` alone never turns it on, so nobody spends money by accident. Local
servers that need no key get a dummy one. The key is kept out of ``repr`` and of every
statistic (see :func:`pipeline.llm.stats.safe_endpoint`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from pipeline.llm.retry import RetryPolicy
from pipeline.llm.structured import MODES

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
DUMMY_API_KEY = "sk-no-key-required"


@dataclass(frozen=True)
class LLMConfig:
    """Connection and limits of one LLM client.

    ``model`` may be None: the client then asks the endpoint's ``/models`` once and uses
    the first model it lists (handy for a local single-model server).
    ``structured_mode`` is ``"auto"`` (try ``json_schema``, fall back when rejected) or one of
    :data:`pipeline.llm.structured.MODES` to pin it.
    """

    base_url: str
    model: str | None = None
    api_key: str = field(default=DUMMY_API_KEY, repr=False)
    concurrency: int = 8
    timeout: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_repairs: int = 2
    structured_mode: str = "auto"
    adaptive: bool = True  # AIMD in-flight limit below ``concurrency`` (False: always ``concurrency``)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if self.max_repairs < 0:
            raise ValueError("max_repairs must be >= 0")
        if self.structured_mode != "auto" and self.structured_mode not in MODES:
            raise ValueError(f"structured_mode must be 'auto' or one of {MODES}")

    @classmethod
    def resolve(
        cls,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        environ: Mapping[str, str] | None = None,
        **limits: object,
    ) -> LLMConfig | None:
        """Build a config from arguments, then environment; None when no LLM is configured."""
        env = os.environ if environ is None else environ
        base_url = base_url or env.get("OPENAI_BASE_URL") or None
        model = model or env.get("OPENAI_MODEL") or None
        if base_url is None and model is None:
            return None
        key = api_key or env.get("OPENAI_API_KEY") or DUMMY_API_KEY
        return cls(base_url=base_url or OPENAI_DEFAULT_BASE_URL, model=model, api_key=key, **limits)  # type: ignore[arg-type]
