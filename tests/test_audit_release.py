"""The audit of a small release written in the real layout (zstd parquet per config/split + card YAML).

Checks: configs and splits are read through ``datasets``; lexical figures per group equal the
hand-worked values of the fixture; cosines equal a direct sentence-transformers computation;
the embedding model is recorded everywhere; the build's audit equals a CLI rerun.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from stages.audit import BUNDLED_MODEL_ID, run_audit  # noqa: E402
from stages.audit import cli as audit_cli  # noqa: E402
from stages.audit.embeddings import bundled_model_dir  # noqa: E402
from tests.conftest import REPO  # noqa: E402

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
SCHEMA = pa.schema([
    ("id", pa.string()), ("blueprint_id", pa.string()), ("dimension", pa.string()), ("variant", pa.string()),
    ("constraint_form", pa.string()), ("context", pa.string()), ("messages", pa.list_(MESSAGE)),
    ("constraint_turns", pa.list_(pa.int64())), ("trigger_turn", pa.int64()), ("resolution_turn", pa.int64()),
    ("gold_slots", pa.list_(pa.string())), ("expected", pa.string()), ("distractor_source", pa.string()),
    ("filler_turns", pa.list_(pa.int64())), ("injected_turns", pa.list_(pa.int64())),
])

# Each blueprint: constraint(s), topic-aligned fillers (user, assistant pairs), trigger, overload, resolution.
BLUEPRINTS: dict[str, dict[str, Any]] = {
    "st-cello": {
        "dimension": "state_tracking", "split": "test", "slots": ["cello", "trunk"],
        "constraints": ["I left my cello in the trunk of the car after rehearsal."],
        "fillers": [("Any tips for tuning strings in cold weather?", "Let the instrument warm up before tuning."),
                    ("Which rosin works best for beginners?", "A medium rosin suits most players.")],
        # cello trunk rehearsal vs arrived office parking -> no shared content word
        "trigger": "I've just arrived at the office parking garage.",
        "over": "Also, can you draft a polite email to my landlord?",
        "resolution": "I carried everything inside before leaving home.",
    },
    "st-keys": {
        "dimension": "state_tracking", "split": "dev", "slots": ["spare keys"],
        "constraints": ["My spare keys are with the neighbour downstairs."],
        "fillers": [("How do I reset a smart lock?", "Hold the reset button for ten seconds.")],
        # constraint {spare, keys, neighbour, downstairs} vs trigger {locked, keys, inside, apartment}: shared {keys}
        "trigger": "I locked my keys inside the apartment.",
        "over": "Please also summarise this article for me.",
        "resolution": "The neighbour moved away and returned the spare set.",
    },
    "tg-dentist": {
        "dimension": "temporal_grounding", "split": "test", "slots": ["dentist", "Thursday"],
        "constraints": ["The dentist appointment is at nine on Thursday morning."],
        "fillers": [("What should I pack for a hiking trip?", "Water, snacks, layers and a map."),
                    ("Recommend a podcast about history.", "Try one that covers ancient Rome."),
                    ("How long should I boil eggs?", "About nine minutes for hard-boiled.")],
        "trigger": "Let's plan a long lazy breakfast with friends tomorrow.",
        "over": "And write a haiku about autumn.",
    },
    "la-budget": {
        "dimension": "logical_adherence", "split": "test", "slots": ["budget", "restaurant"],
        "constraints": ["If a restaurant costs more than fifty dollars per person,",
                        "then it breaks our monthly budget rule."],
        "fillers": [("Which cuisines are popular downtown?", "Thai and Italian places are common.")],
        "trigger": "Book the tasting menu restaurant at ninety dollars per person.",
        "over": "Then list three board games.",
        "resolution": "Actually the tasting menu is forty dollars per person.",
    },
}
INJECTED = [
    ("I need a cheap hotel in the centre with free parking.", "The Lovell Lodge has free parking and wifi."),
    ("Can you book a train to Cambridge?", "There is one leaving soon; shall I reserve seats?"),
    ("Is the museum near the cello shop?", "Yes, the museum is a short walk away."),  # mentions gold slot "cello"
]


def _stamp(index: int, text: str) -> str:
    return f"[2025-04-{1 + index // 10:02d}T{8 + index % 10:02d}:00] {text}"


def _row(bp_id: str, variant: str, form: str, context: str) -> dict[str, Any]:
    bp = BLUEPRINTS[bp_id]
    messages: list[dict[str, str]] = []

    def add(role: str, text: str) -> int:
        messages.append({"role": role, "content": _stamp(len(messages), text) if role == "user" else text})
        return len(messages) - 1

    constraint_turns = []
    for text in bp["constraints"]:
        constraint_turns.append(add("user", text if form == "implicit" else f"Remind me about this: {text}"))
        add("assistant", "Understood.")
    fillers = [i for user, reply in bp["fillers"] for i in (add("user", user), add("assistant", reply))]
    injected = ([i for user, reply in INJECTED for i in (add("user", user), add("assistant", reply))]
                if context != "base" else [])
    resolution = add("user", bp["resolution"]) if variant == "neg_clean" else None
    trigger = add("user", bp["trigger"] + (" " + bp["over"] if variant == "pos_over" else ""))
    return {
        "id": f"{bp_id}-{variant}-{form}-{context}", "blueprint_id": bp_id, "dimension": bp["dimension"],
        "variant": variant, "constraint_form": form, "context": context, "messages": messages,
        "constraint_turns": constraint_turns, "trigger_turn": trigger, "resolution_turn": resolution,
        "gold_slots": bp["slots"], "expected": "silent" if variant == "neg_clean" else "intervene",
        "distractor_source": "multiwoz" if context != "base" else None, "filler_turns": fillers,
        "injected_turns": injected,
    }


def _variants(bp_id: str) -> list[str]:
    has_negative = "resolution" in BLUEPRINTS[bp_id]
    return ["pos_clean", "pos_over"] + (["neg_clean"] if has_negative else [])


def fixture_rows() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """config -> split -> rows."""
    configs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for config, form, context in [("pm_base", "implicit", "base"), ("pm_20k", "implicit", "20k"),
                                  ("explicit_base", "explicit", "base")]:
        splits: dict[str, list[dict[str, Any]]] = {"test": [], "dev": []}
        for bp_id, bp in BLUEPRINTS.items():
            splits[bp["split"]].extend(_row(bp_id, v, form, context) for v in _variants(bp_id))
        configs[config] = splits
    return configs


def write_release(root: Path) -> Path:
    """Write the fixture release (layout of RELEASE_LAYOUT.md) and return its directory."""
    yaml = ["---", "license: apache-2.0", "pretty_name: TriggerBench fixture", "configs:"]
    for config, splits in fixture_rows().items():
        yaml += [f"- config_name: {config}", "  data_files:"]
        for split, rows in splits.items():
            folder = root / "data" / config
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / f"{split}-00000-of-00001.parquet",
                           compression="zstd")
            yaml += [f"  - split: {split}", f"    path: data/{config}/{split}-*.parquet"]
    rm = root / "data" / "rm_base"  # rows without messages: no leakage audit, a failed shortcut invariant
    rm.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["rm-1"], "question": ["q"]}), rm / "test-00000-of-00001.parquet")
    yaml += ["- config_name: rm_base", "  data_files:", "  - split: test", "    path: data/rm_base/test-*.parquet"]
    (root / "README.md").write_text("\n".join(yaml + ["---", "", "# fixture", ""]), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_release(tmp_path_factory.mktemp("release") / "0.0.1")


@pytest.fixture(scope="module")
def build_audit(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The audit as the build runs it: into the (staging) release's audits/."""
    return run_audit(release, release / "audits", cache_dir=tmp_path_factory.mktemp("cache-build"))


def _lex(result: Any, form: str, context: str, dimension: str, variant: str) -> dict[str, Any]:
    frame = result.lexical.filter((pl.col("constraint_form") == form) & (pl.col("context") == context)
                                  & (pl.col("dimension") == dimension) & (pl.col("variant") == variant))
    assert frame.height == 1
    return frame.row(0, named=True)


def test_reads_every_audited_config_and_both_splits(build_audit: Any) -> None:
    rows = build_audit.rows
    expected = sum(len(r) for splits in fixture_rows().values() for r in splits.values())
    assert rows.height == expected == 3 * (3 + 3 + 2 + 3)
    assert set(rows["config"]) == {"pm_base", "pm_20k", "explicit_base"}
    assert set(rows["split"]) == {"test", "dev"}
    assert rows.filter(pl.col("id") == "st-keys-pos_clean-implicit-base")["split"].item() == "dev"


def test_lexical_groups_match_hand_values(build_audit: Any) -> None:
    st = _lex(build_audit, "implicit", "base", "state_tracking", "pos_clean")
    # st-cello: 0 shared; st-keys: C {spare, keys, neighbour, downstairs}, T {locked, keys, inside, apartment}
    jaccards = [0.0, 1 / 7]
    assert st["n"] == 2
    assert st["jaccard_mean"] == pytest.approx(np.mean(jaccards), abs=1e-4)
    assert st["jaccard_std"] == pytest.approx(np.std(jaccards), abs=1e-4)
    assert st["overlap_mean"] == pytest.approx((0 + 1 / 4) / 2, abs=1e-4)
    assert st["zero_overlap_pct"] == pytest.approx(50.0)
    assert st["shared_mean"] == pytest.approx(0.5)
    keys = build_audit.rows.filter(pl.col("id") == "st-keys-pos_clean-implicit-base").row(0, named=True)
    assert keys["shared_words"] == ["keys"] and keys["shared_count"] == 1
    # la-budget: C {restaurant, costs, dollars, person, breaks, monthly, budget, rule} ("fifty" is a
    # scikit-learn stopword), T {book, tasting, menu, restaurant, ninety, dollars, person}: 3 shared, 12 in all
    la = _lex(build_audit, "implicit", "base", "logical_adherence", "pos_clean")
    assert la["jaccard_mean"] == pytest.approx(3 / 12, abs=1e-4)
    assert la["overlap_mean"] == pytest.approx(3 / 7, abs=1e-4)
    assert la["zero_overlap_pct"] == 0.0


def test_long_context_distractor_check(build_audit: Any) -> None:
    cello = build_audit.rows.filter(pl.col("id") == "st-cello-pos_clean-implicit-20k").row(0, named=True)
    assert cello["injected_turns"] == 6
    assert cello["injected_mentioning_slot"] == 1  # "Is the museum near the cello shop?"
    assert cello["injected_slot_words"] == ["cello"]
    dentist = build_audit.rows.filter(pl.col("id") == "tg-dentist-pos_clean-implicit-20k").row(0, named=True)
    assert dentist["injected_mentioning_slot"] == 0 and dentist["injected_sharing_slot_words"] == 0
    group = _lex(build_audit, "implicit", "20k", "state_tracking", "pos_clean")
    assert group["rows_with_injected"] == 2 and group["injected_slot_mention_rows_pct"] == pytest.approx(50.0)
    base = build_audit.rows.filter(pl.col("context") == "base")
    assert base["injected_turns"].to_list() == [0] * base.height  # base rows: empty injected_turns
    # 11 pm_20k rows; only the three st-cello variants have the museum/cello turn
    assert "of 11 long-context rows, 3 have an injected turn mentioning a gold slot and 3 one sharing" \
        in build_audit.card_markdown()


def test_cosines_match_a_direct_computation(build_audit: Any) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(bundled_model_dir()), device="cpu")
    bp = BLUEPRINTS["tg-dentist"]
    fillers = [t for pair in bp["fillers"] for t in pair]
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=build_audit.embedding.precision == "bfloat16"):
        vectors = model.encode([bp["constraints"][0], bp["trigger"], *fillers], normalize_embeddings=True)
    c, t, theta = vectors[0], vectors[1], vectors[2:]
    pairs = [float(theta[i] @ theta[j]) for i in range(len(theta)) for j in range(i + 1, len(theta))]
    row = build_audit.rows.filter(pl.col("id") == "tg-dentist-pos_clean-implicit-base").row(0, named=True)
    assert row["cos_ct"] == pytest.approx(float(c @ t), abs=1e-4)
    assert row["cos_c_theta"] == pytest.approx(float(np.mean(theta @ c)), abs=1e-4)
    assert row["cos_t_theta"] == pytest.approx(float(np.mean(theta @ t)), abs=1e-4)
    assert row["cos_theta_theta"] == pytest.approx(float(np.mean(pairs)), abs=1e-4)
    assert row["t_rank"] == 1 + sum(1 for v in theta @ c if v > c @ t)
    long_row = build_audit.rows.filter(pl.col("id") == "tg-dentist-pos_clean-implicit-20k").row(0, named=True)
    assert long_row["cos_ct"] is None


def test_embedding_model_recorded_in_every_output(build_audit: Any, release: Path) -> None:
    out = release / "audits"
    assert build_audit.embedding_model == BUNDLED_MODEL_ID  # bge-base-en-v1.5 is not available offline here
    semantic = pl.read_csv(out / "semantic.csv")
    assert semantic.height > 0 and set(semantic["model"]) == {BUNDLED_MODEL_ID}
    assert set(pl.read_csv(out / "lexical.csv")["embedding_model"]) == {BUNDLED_MODEL_ID}
    assert set(pl.read_parquet(out / "rows.parquet")["embedding_model"]) == {BUNDLED_MODEL_ID}
    report = (out / "report.md").read_text(encoding="utf-8")
    card = build_audit.card_markdown()
    for text in (report, card):
        assert BUNDLED_MODEL_ID in text and "scikit-learn ENGLISH_STOP_WORDS" in text
    for png in ("overlap_distributions.png", "similarity_heatmap.png", "ct_vs_background.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png})" in report


def test_rerun_uses_the_embedding_cache(release: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = run_audit(release, tmp_path / "a", cache_dir=cache)
    second = run_audit(release, tmp_path / "b", cache_dir=cache)
    assert first.embed_stats.encoded > 0  # each distinct text encoded once (semantic and shortcut audits share them)
    assert second.embed_stats.encoded == 0 and second.embed_stats.cached == first.embed_stats.distinct
    for name in first.files:  # a rebuild with the build cache must give byte-identical audit files
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


AUDIT_IN_A_FRESH_PROCESS = """
import json, sys
from pathlib import Path
from stages.audit.run import run_audit
release, out, cache, results = map(Path, sys.argv[1:5])
result = run_audit(release, out, cache_dir=cache, result_cache=results)
print(json.dumps([result.embed_stats.encoded, "sentence_transformers" in sys.modules, "torch" in sys.modules]))
"""


@pytest.mark.slow  # a second Python process
def test_a_build_audit_of_cached_texts_never_loads_the_model(release: Path, tmp_path: Path) -> None:
    """A build's audit resolves the bundled model without loading it: when every text is in the embedding
    cache (a test run's builds of the same seeds), a fresh process audits without importing torch."""
    cache = tmp_path / "cache"
    first = run_audit(release, tmp_path / "a", cache_dir=cache)
    done = subprocess.run([sys.executable, "-c", AUDIT_IN_A_FRESH_PROCESS, str(release), str(tmp_path / "b"), str(cache),
                           str(tmp_path / "results")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, False, False]
    for name in first.files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="triggerbench audit")
    audit_cli.configure(parser)
    return audit_cli.run(parser.parse_args(argv))


def test_build_audit_equals_cli_rerun(build_audit: Any, release: Path, tmp_path: Path) -> None:
    out = tmp_path / "rerun"
    # no manifest.json to verify against (a staging-like directory); exit 1: the fixture's rows break
    # shortcut invariants (rm_base rows have no messages at all)
    assert _cli([str(release), "--out", str(out), "--cache-dir", str(tmp_path / "fresh-cache"), "--no-verify"]) == 1
    failing = pl.read_csv(out / "shortcuts.csv").filter(pl.col("fails"))
    assert ("rm_base", "no_messages_rows") in failing.select("config", "finder").rows()
    built = release / "audits"
    assert (out / "lexical.csv").read_bytes() == (built / "lexical.csv").read_bytes()
    for name in ("semantic.csv", "rows.parquet"):
        read = pl.read_csv if name.endswith(".csv") else pl.read_parquet
        rerun, build = read(out / name), read(built / name)
        assert rerun.columns == build.columns and rerun.height == build.height
        floats = [c for c, t in rerun.schema.items() if t == pl.Float64]
        assert rerun.drop(floats).equals(build.drop(floats))
        for column in floats:  # a cold embedding cache may differ in the last float bits only
            assert np.allclose(rerun[column].to_numpy(), build[column].to_numpy(), atol=2e-4, equal_nan=True), column


def test_cli_refuses_to_write_inside_a_release(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli([str(release), "--out", str(release / "audits-again")]) == 1
    assert "immutable" in capsys.readouterr().err
    assert not (release / "audits-again").exists()


def test_release_without_card_configs_is_read_from_data_folders(build_audit: Any, release: Path,
                                                                 tmp_path: Path) -> None:
    """The build may audit its staging directory before the card exists: configs come from data/."""
    import shutil

    bare = tmp_path / "0.0.1"
    shutil.copytree(release / "data", bare / "data")
    result = run_audit(bare, tmp_path / "out", cache_dir=tmp_path / "cache")
    assert result.lexical.equals(build_audit.lexical)
    assert set(result.rows["config"]) == {"pm_base", "pm_20k", "explicit_base"}


def test_cli_unloadable_embedding_model_is_a_clear_error(release: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli([str(release), "--out", str(tmp_path / "out"), "--embedding-model", "no-such-org/no-model",
                 "--no-verify"]) == 1
    error = capsys.readouterr().err
    assert "no-such-org/no-model" in error and "Traceback" not in error
    assert not (tmp_path / "out").exists()
