"""Semantic-audit wall time versus a bare ``SentenceTransformer.encode`` of the same distinct texts.

Rows come from a release (``--release DIR``: its base ``pm_*``/``explicit_*`` rows) or, by default,
are made from real MultiWOZ dialogues in ``../shared/data`` in the row format (first user turn as the
constraint, last turn as the trigger, the turns between as fillers). Both sides use the same loaded
model, batch size and normalisation; the audit side starts from an empty embedding cache, so it
pays for hashing, the SQLite cache, cosine computation and bookkeeping. A warm-cache rerun is
timed too. Prints throughput ratio = bare seconds / audit seconds (goal: >= 0.9).

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python bench/audit_embedding.py [--dialogues 300] [--release DIR]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from stages.audit import semantic
from stages.audit.embeddings import DEFAULT_BATCH_SIZE, Embedder, load_embedding_model
from stages.audit.reader import iter_rows, open_source

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def multiwoz_rows(limit: int) -> list[dict[str, Any]]:
    """Rows in the release format built from the first ``limit`` MultiWOZ validation dialogues."""
    with zipfile.ZipFile(DATA / "multiwoz" / "val.json.zip") as archive:
        dialogues = json.loads(archive.read("val.json"))
    rows = []
    for dialogue_id in sorted(dialogues)[:limit]:
        log = dialogues[dialogue_id]["log"]
        messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": turn["text"]} for i, turn in enumerate(log)]
        if len(messages) < 4:
            continue
        rows.append({"id": dialogue_id, "messages": messages, "constraint_turns": [0],
                     "trigger_turn": len(messages) - 1, "filler_turns": list(range(1, len(messages) - 1))})
    return rows


def release_rows(release: str) -> list[dict[str, Any]]:
    """Base-context rows of a release."""
    source = open_source(release)
    return [row for config in source.configs for _, row in iter_rows(source, config) if row.get("context") == "base"]


def distinct_texts(rows: list[dict[str, Any]]) -> list[str]:
    texts: list[str] = []
    for row in rows:
        part = semantic.utterances(row)
        texts.extend([*part.constraint, part.trigger, *part.filler])
    return list(dict.fromkeys(texts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=300, help="MultiWOZ dialogues to use (default 300)")
    parser.add_argument("--release", help="use the base rows of this release instead of MultiWOZ")
    parser.add_argument("--embedding-model", default=None)
    parser.add_argument("--rounds", type=int, default=4, help="timing rounds; the minimum of each side is reported")
    args = parser.parse_args()

    rows = release_rows(args.release) if args.release else multiwoz_rows(args.dialogues)
    texts = distinct_texts(rows)
    loaded = load_embedding_model(args.embedding_model)
    model = loaded.model
    model.encode(texts[:64], batch_size=DEFAULT_BATCH_SIZE)  # warm-up
    print(f"model: {loaded.choice.label}; rows: {len(rows)}; distinct texts: {len(texts)}; "
          f"batch size {DEFAULT_BATCH_SIZE}")

    bare_times: list[float] = []
    audit_times: list[float] = []
    warm_times: list[float] = []

    def bare_round() -> None:
        started = time.perf_counter()
        model.encode(texts, batch_size=DEFAULT_BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True)
        bare_times.append(time.perf_counter() - started)

    for round_index in range(args.rounds):
        if round_index % 2 == 0:  # alternate which side goes first, against drift in machine load
            bare_round()
        with tempfile.TemporaryDirectory() as cache:
            embedder = Embedder(loaded, Path(cache))
            started = time.perf_counter()
            semantic.audit_rows(rows, embedder)
            audit_times.append(time.perf_counter() - started)
            assert embedder.stats.encoded == len(texts)
            embedder.close()
            warm = Embedder(loaded, Path(cache))
            started = time.perf_counter()
            semantic.audit_rows(rows, warm)
            warm_times.append(time.perf_counter() - started)
            warm.close()
        if round_index % 2 == 1:
            bare_round()
    print("rounds (bare / audit cold, s): " + ", ".join(f"{b:.2f}/{a:.2f}" for b, a in zip(bare_times, audit_times)))
    bare, audit, warm = min(bare_times), min(audit_times), min(warm_times)
    print(f"bare encode:          {bare:8.2f} s  ({len(texts) / bare:7.1f} texts/s)")
    print(f"semantic audit, cold: {audit:8.2f} s  ({len(texts) / audit:7.1f} texts/s)")
    print(f"semantic audit, warm: {warm:8.2f} s  (embedding cache hit for every text)")
    print(f"throughput ratio audit/bare (cold): {bare / audit:.3f}x  (goal >= 0.9x)")
    print(f"speed-up of a warm rerun over bare encode: {bare / warm:.1f}x")


if __name__ == "__main__":
    main()
