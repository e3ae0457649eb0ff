"""LLM agents for the runtime over any OpenAI-compatible endpoint: one conversation, or a council.

In: an :class:`~pipeline.llm.LLMClient`, a system prompt and a context budget (o200k_base
tokens). Out: one reply string per observation. A conversation keeps the system prompt and
the most recent turns that fit the budget (older turns are dropped whole, oldest first). A
failed request raises :class:`LLMAgentError`; the runtime records it as a protocol error and
asks again, so a flaky endpoint never aborts a run. :class:`LLMCouncil` runs the three
subagents of the hierarchical setup as three such conversations, sent concurrently.
"""

from __future__ import annotations

from typing import Any

from pipeline import tokenizer
from pipeline.llm import ChatRequest, LLMClient, LLMResult
from stages.week.hierarchy import ROLES, Signal, parse_signal, subagent_prompt
from stages.week.runtime import Observation


class LLMAgentError(RuntimeError):
    """The endpoint did not produce an answer."""


class LLMAgent:
    """A single-agent baseline (optionally in heartbeat or ledger mode, as set by the runtime)."""

    def __init__(self, client: LLMClient, system_prompt: str, context_tokens: int = 6000,
                 max_tokens: int = 160, temperature: float = 0.0, name: str | None = None) -> None:
        self.client = client
        self.system_prompt = system_prompt
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.turns: list[tuple[str, str, int]] = []  # (role, content, tokens)
        self.name = name or f"llm:{client.model}"

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

    def request_for(self, text: str, tag: str = "") -> ChatRequest:
        """Add ``text`` as the next user turn; the request that asks for the answer."""
        self.turns.append(("user", text, tokenizer.count(text)))
        return ChatRequest(self._window(), temperature=self.temperature, max_tokens=self.max_tokens, tag=tag)

    def accept(self, result: LLMResult) -> str:
        """Record the answer to the last :meth:`request_for` (or drop that turn and raise)."""
        if not result.ok or result.text is None:
            self.turns.pop()
            raise LLMAgentError(f"{result.error}: {result.detail}"[:300])
        self.turns.append(("assistant", result.text, tokenizer.count(result.text)))
        return result.text

    def act(self, observation: Observation) -> str:
        """Send the observation as the next user turn; return the model's reply text."""
        return self.accept(self.client.complete(self.request_for(observation.text, observation.step_id)))

    def cost(self) -> dict[str, Any]:
        """The client's request counters so far (requests, cache hits, tokens)."""
        stats = self.client.stats.as_dict()
        return {k: stats[k] for k in ("requests", "cache_hits", "failures", "prompt_tokens", "completion_tokens")}


class LLMCouncil:
    """The three subagents as three conversations on one client; one concurrent batch per step."""

    def __init__(self, client: LLMClient, channels: list[str], context_tokens: int = 6000,
                 max_tokens: int = 200) -> None:
        self.client = client
        self.members = {role: LLMAgent(client, subagent_prompt(role, channels), context_tokens, max_tokens,
                                       name=role) for role in ROLES}

    @property
    def prompts(self) -> dict[str, str]:
        return {role: agent.system_prompt for role, agent in self.members.items()}

    def propose(self, observation: Observation, channels: list[str]) -> list[Signal]:
        requests = [agent.request_for(observation.text, f"{observation.step_id}:{role}")
                    for role, agent in self.members.items()]
        try:
            results = self.client.map(requests, desc="subagents")
        except Exception:
            for agent in self.members.values():
                agent.turns.pop()  # keep each conversation alternating; the runtime offers the step again
            raise
        signals = []
        for (role, agent), result in zip(self.members.items(), results):
            try:
                raw = agent.accept(result)
            except LLMAgentError as exc:
                signals.append(Signal(role, error=f"no answer ({exc})"))
                continue
            signals.append(parse_signal(role, raw, channels, set(observation.menu)))
        return signals
