"""An LLM agent for the runtime: one chat conversation over any OpenAI-compatible endpoint.

In: an :class:`~pipeline.llm.LLMClient`, the system prompt of the run, and a context budget
(o200k_base tokens). Out: one reply string per observation. The conversation keeps the system
prompt and the most recent turns that fit the budget (older turns are dropped whole, oldest
first). A failed request raises :class:`LLMAgentError`; the runtime records it as a protocol
error and asks again, so a flaky endpoint never aborts a run.
"""

from __future__ import annotations

from pipeline import tokenizer
from pipeline.llm import ChatRequest, LLMClient
from stages.week.runtime import Observation


class LLMAgentError(RuntimeError):
    """The endpoint did not produce an answer."""


class LLMAgent:
    """A single-agent baseline (optionally in heartbeat or ledger mode, as set by the runtime)."""

    def __init__(self, client: LLMClient, system_prompt: str, context_tokens: int = 6000,
                 max_tokens: int = 160, temperature: float = 0.0) -> None:
        self.client = client
        self.system_prompt = system_prompt
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.turns: list[tuple[str, str, int]] = []  # (role, content, tokens)
        self.name = f"llm:{client.model}"

    def _window(self) -> list[dict[str, str]]:
        """System prompt + the newest turns within the budget, starting at a user turn."""
        budget = self.context_tokens - tokenizer.count(self.system_prompt) - self.max_tokens
        kept: list[tuple[str, str, int]] = []
        for turn in reversed(self.turns):
            if kept and budget - turn[2] < 0:
                break
            budget -= turn[2]
            kept.append(turn)
        kept.reverse()
        while len(kept) > 1 and kept[0][0] != "user":
            kept.pop(0)
        return [{"role": "system", "content": self.system_prompt}] + [{"role": r, "content": c} for r, c, _ in kept]

    def act(self, observation: Observation) -> str:
        """Send the observation as the next user turn; return the model's reply text."""
        self.turns.append(("user", observation.text, tokenizer.count(observation.text)))
        request = ChatRequest(self._window(), temperature=self.temperature, max_tokens=self.max_tokens,
                              tag=observation.step_id)
        result = self.client.complete(request)
        if not result.ok or result.text is None:
            self.turns.pop()
            raise LLMAgentError(f"{result.error}: {result.detail}"[:300])
        self.turns.append(("assistant", result.text, tokenizer.count(result.text)))
        return result.text
