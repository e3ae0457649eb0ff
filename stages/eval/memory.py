"""Memory baselines for ``triggerbench eval --memory`` (TriggerBench §6, Table 14).

Instead of the whole stored dialogue the model sees a memory's view of it, then the trigger:

- ``none``: the stored dialogue (no memory; the setting decides what the model sees);
- ``rag``: every earlier turn embedded with the audit's embedding model; the top ``K`` turns by
  cosine to the trigger plus the last ``RECENT_EXCHANGES`` exchanges, in their original order;
- ``letta-sim``: a write-time curator (the evaluated model's endpoint) reads the dialogue in
  batches of turns and keeps an always-visible core memory of short facts; the model sees the
  core memory, the archival top-``K`` turns (as ``rag``) and the trigger;
- ``mem0``: the ``mem0ai`` library (``[memory]`` extra) reads the dialogue in the same batches
  and stores what its own extraction keeps; the model sees the memories Mem0 finds for the
  trigger and the recent exchanges (:mod:`stages.eval.mem0_memory`).

For each row :class:`MemoryView` says which turns were in the context and whether the
constraint reached the model (a constraint turn in the context, or a core fact or Mem0 memory
naming one of the row's gold slots): the constraint retrieval rate beside accuracy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from pipeline.llm import ChatRequest
from stages.eval.prompts import Message, system_prompt

K = 6
RECENT_EXCHANGES = 2
CURATOR_TURNS = 12  # turns per curator request at most
CURATOR_CHARS = 6000  # characters of turn text per curator request at most
CORE_FACTS = 12  # facts kept in core memory at most
CURATOR_MAX_TOKENS = 512
MEMORIES = ("none", "rag", "letta-sim", "mem0")


class MemoryError_(ValueError):
    """A memory that cannot run here (one clear line for the CLI)."""


class CoreMemory(BaseModel):
    """The curator's structured answer: the whole updated core memory."""

    facts: list[str] = Field(description="short facts worth remembering for later, at most 12")


@dataclass
class MemoryView:
    """What a memory showed the model for one row."""

    messages: list[Message]
    retrieved: list[int]  # top-K turn indices (retrieval only)
    context_turns: list[int]  # every stored turn index in the context (retrieved + recent)
    core: list[str] = field(default_factory=list)
    constraint_in_context: bool | None = None


def _turn_text(message: Mapping[str, Any]) -> str:
    return f"{message['role']}: {message['content']}"


def recent_turns(row: Mapping[str, Any]) -> list[int]:
    """Indices of the last ``RECENT_EXCHANGES`` exchanges before the trigger."""
    last = len(row["messages"]) - 1
    return list(range(max(0, last - 2 * RECENT_EXCHANGES), last))


def top_k_turns(row: Mapping[str, Any], embed: Callable[[Sequence[str]], np.ndarray], k: int = K) -> list[int]:
    """The ``k`` earlier turns (outside the recent window) most similar to the trigger, in turn order.

    Turns are embedded as their content; ties go to the earlier turn.
    """
    messages = row["messages"]
    recent = set(recent_turns(row))
    candidates = [i for i in range(len(messages) - 1) if i not in recent]
    if not candidates:
        return []
    vectors = embed([str(messages[i]["content"]) for i in candidates] + [str(messages[-1]["content"])])
    scores = vectors[:-1] @ vectors[-1]
    order = sorted(range(len(candidates)), key=lambda j: (-float(scores[j]), candidates[j]))
    return sorted(candidates[j] for j in order[:k])


def _constraint_hit(row: Mapping[str, Any], turns: Sequence[int], core: Sequence[str]) -> bool | None:
    constraints = set(row.get("constraint_turns") or [])
    if not constraints:
        return None
    slots = [str(s).lower() for s in row.get("gold_slots") or [] if str(s).strip()]
    in_core = any(slot in fact.lower() for fact in core for slot in slots)
    return bool(constraints & set(turns)) or in_core


CORE_TITLE = "Core memory (facts you chose to keep)"
MEM0_TITLE = "Memories recalled for this message"


def _memory_block(row: Mapping[str, Any], turns: Sequence[int], core: Sequence[str], core_title: str) -> str:
    parts = []
    if core:
        parts.append(f"{core_title}:\n" + "\n".join(f"- {f}" for f in core))
    if turns:
        lines = [f"[turn {i}] {_turn_text(row['messages'][i])}" for i in turns]
        parts.append("Retrieved from earlier in the conversation (in order):\n" + "\n".join(lines))
    return "\n\n".join(parts)


def view(row: Mapping[str, Any], retrieved: Sequence[int], core: Sequence[str] = (),
         core_title: str = CORE_TITLE) -> MemoryView:
    """The model's request: system prompt + memory block (retrieved turns, ``core`` facts under
    ``core_title``), the recent exchanges, the trigger."""
    messages = row["messages"]
    recent = recent_turns(row)
    older = [i for i in retrieved if i not in set(recent)]
    system = system_prompt(str(row["dimension"]))
    block = _memory_block(row, older, core, core_title)
    content = f"{system}\n\n{block}" if block else system
    request = [{"role": "system", "content": content}]
    request += [{"role": str(messages[i]["role"]), "content": str(messages[i]["content"])} for i in [*recent, len(messages) - 1]]
    context = sorted({*older, *recent})
    return MemoryView(request, sorted(retrieved), context, list(core), _constraint_hit(row, context, core))


def curator_batches(row: Mapping[str, Any]) -> list[list[int]]:
    """Earlier turns split in order into batches of at most ``CURATOR_TURNS`` turns / ``CURATOR_CHARS`` chars."""
    batches: list[list[int]] = [[]]
    size = 0
    for i, message in enumerate(row["messages"][:-1]):
        length = len(str(message["content"]))
        if batches[-1] and (len(batches[-1]) >= CURATOR_TURNS or size + length > CURATOR_CHARS):
            batches.append([])
            size = 0
        batches[-1].append(i)
        size += length
    return [b for b in batches if b]


CURATOR_SYSTEM = (
    "You maintain the core memory of an assistant in a long conversation with one user. You read the "
    "conversation a few turns at a time. Keep in core memory only short, self-contained facts that could "
    "matter later: commitments, rules the user set, where things were left, deadlines, unfinished tasks, "
    "risky changes to code or settings. Rewrite, merge or drop facts as the conversation updates them; keep "
    f"at most {CORE_FACTS}. Return the whole updated core memory."
)


def curator_request(row: Mapping[str, Any], batch: Sequence[int], core: Sequence[str], tag: str = "") -> ChatRequest:
    """One structured, temperature-0 curator step over ``batch`` given the current ``core``."""
    current = "\n".join(f"- {f}" for f in core) or "(empty)"
    turns = "\n".join(f"[turn {i}] {_turn_text(row['messages'][i])}" for i in batch)
    user = f"CURRENT CORE MEMORY:\n{current}\n\nNEW TURNS:\n{turns}"
    messages = [{"role": "system", "content": CURATOR_SYSTEM}, {"role": "user", "content": user}]
    return ChatRequest(messages, temperature=0.0, max_tokens=CURATOR_MAX_TOKENS, schema=CoreMemory, tag=tag)


def updated_core(answer: CoreMemory) -> list[str]:
    """The curator's facts, stripped, de-duplicated, at most ``CORE_FACTS``."""
    facts = [f.strip() for f in answer.facts if f.strip()]
    return list(dict.fromkeys(facts))[:CORE_FACTS]


@dataclass
class Retriever:
    """Embeds turns with the audit's embedding model (cached in the run directory)."""

    embed: Callable[[Sequence[str]], np.ndarray]
    model_label: str
    close: Callable[[], None]


def open_retriever(run_dir: Path) -> Retriever:
    """The audit's embedding model (bge-base if cached, else the bundled MiniLM) with its cache."""
    from stages.audit.embeddings import Embedder, load_embedding_model

    embedder = Embedder(load_embedding_model(), cache_dir=run_dir)
    return Retriever(embedder.embed, embedder.choice.label, embedder.close)


def needs_retriever(memory: str) -> bool:
    return memory in ("rag", "letta-sim")


def check_available(memory: str) -> None:
    """Raise :class:`MemoryError_` for a memory that cannot run."""
    if memory not in MEMORIES:
        raise MemoryError_(f"--memory must be one of {', '.join(MEMORIES)}, not {memory!r}")
    if memory == "mem0":
        from stages.eval.mem0_memory import Mem0Unavailable, check_installed

        try:
            check_installed()
        except Mem0Unavailable as exc:
            raise MemoryError_(str(exc)) from None


def describe(memory: str, retriever: Retriever | None) -> dict[str, Any]:
    """What results.json records about the memory."""
    if memory == "none":
        return {"kind": "none"}
    out: dict[str, Any] = {"kind": memory, "k": K, "recent_exchanges": RECENT_EXCHANGES,
                           "embedding_model": retriever.model_label if retriever else None}
    if memory == "letta-sim":
        out.update(curator_turns=CURATOR_TURNS, curator_chars=CURATOR_CHARS, core_facts=CORE_FACTS)
    if memory == "mem0":
        from importlib.metadata import version

        from stages.audit.embeddings import BUNDLED_MODEL_ID

        out.update(embedding_model=BUNDLED_MODEL_ID, library=f"mem0ai {version('mem0ai')}",
                   batch_turns=CURATOR_TURNS, batch_chars=CURATOR_CHARS)
    return out
