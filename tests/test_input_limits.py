"""Blueprint and filler YAML is loaded with a size cap and without anchors or aliases (issue 18, item 7)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline.blueprints.loader import load_corpus
from pipeline.blueprints.yamlio import MAX_YAML_BYTES

REPO = Path(__file__).resolve().parents[1]
TAXI = REPO / "blueprints" / "state_tracking" / "st-taxi-instrument.yaml"

ALIAS_BOMB = "\n".join(
    ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
) + "\n"  # 9**9 strings once expanded: the MemoryError of issue 18


def validate(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "validate", *map(str, paths)], cwd=REPO,
                          env={**os.environ}, capture_output=True, text=True, timeout=120)


def test_an_alias_bomb_is_refused_at_its_first_anchor(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB, encoding="utf-8")
    result = validate(bomb)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stdout.strip() == (f"{bomb}:1: <file>: YAML anchor &a is not allowed: write the value out "
                                     "(no anchors or aliases)")


def test_a_harmless_alias_in_a_real_blueprint_is_refused_too(tmp_path: Path) -> None:
    text = TAXI.read_text(encoding="utf-8").replace("reference_intent:", "reference_intent: &intent", 1)
    (tmp_path / "st-taxi-instrument.yaml").write_text(text + "notes: *intent\n", encoding="utf-8")
    corpus = load_corpus([tmp_path])
    assert [p.message.split(" is not")[0] for p in corpus.problems] == ["YAML anchor &intent"]


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    shutil.copy(TAXI, tmp_path / "st-taxi-instrument.yaml")
    big = tmp_path / "big.yaml"
    big.write_text("notes: |\n" + ("  " + "x" * 98 + "\n") * (MAX_YAML_BYTES // 100 + 1), encoding="utf-8")
    corpus = load_corpus([tmp_path], lint=False)
    assert [str(p) for p in corpus.problems] == [
        f"{big}:1: <file>: file is {big.stat().st_size} bytes, more than the {MAX_YAML_BYTES} allowed for a blueprint or filler file"]
    assert [s.blueprint.id for s in corpus.blueprints] == ["st-taxi-instrument"]  # the other files still load


def test_the_real_corpus_is_within_the_limits() -> None:
    corpus = load_corpus([REPO / "blueprints"])
    assert corpus.problems == [] and len(corpus.blueprints) >= 100
