"""What an oracle says about one blueprint, in the form recorded on the item."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OFFLINE_METHOD = "offline-rules"
OFFLINE_NOTE = "rule-based stand-in for the LLM oracle (no LLM endpoint configured)"


@dataclass
class Outcome:
    """``passed`` or not, how it was decided, the individual checks and the failure reasons.

    ``llm_error``/``llm_detail`` are set when the LLM calls for this blueprint failed for
    good (the stage then drops it with that reason instead of judging it).
    """

    passed: bool
    method: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    llm_error: str | None = None
    llm_detail: str = ""

    def record(self, **extra: Any) -> dict[str, Any]:
        """The JSON object stored under ``item["oracles"][<oracle>]``."""
        out: dict[str, Any] = {"passed": self.passed, "method": self.method}
        if self.method == OFFLINE_METHOD:
            out["note"] = OFFLINE_NOTE
        out["checks"] = self.checks
        if self.reasons:
            out["reasons"] = self.reasons
        out.update(extra)
        return out


def method_name(model: str | None) -> str:
    """``llm:<model>`` for LLM oracles."""
    return f"llm:{model}" if model else "llm"
