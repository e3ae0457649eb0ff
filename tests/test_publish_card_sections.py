"""Card sections about publishing: loading a fixed version, citations, distractor licenses, changelog."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pipeline.card_sections import changelog, citation_blocks, distractor_provenance, loading_instructions
from test_publish import make_release, pm_rows

SHARED = Path(__file__).resolve().parents[2] / "shared"


def code_blocks(markdown: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", markdown, flags=re.S)


def test_loading_instructions_pin_the_tag_and_the_local_snippet_really_loads(tmp_path):
    text = loading_instructions("acme/triggerbench", "0.3.1")
    assert 'load_dataset("acme/triggerbench", "pm_base", split="test", revision="v0.3.1")' in text
    hub_snippet, local_snippet = code_blocks(text, "python")
    compile(hub_snippet, "hub", "exec")
    make_release(tmp_path / "releases", version="0.3.1", test_rows=4)
    script = local_snippet + "\nimport json\nprint(json.dumps(tasks.to_list()))\n"
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert __import__("json").loads(result.stdout.strip().splitlines()[-1]) == pm_rows("test", 4)
    unknown = loading_instructions(None, "v1.0.0")
    assert 'revision="v1.0.0"' in unknown and "ORG/NAME" in unknown and "vv1" not in unknown


def test_citations_use_the_papers_titles_and_authors_and_admit_unknowns():
    text = citation_blocks()
    (bibtex,) = code_blocks(text, "bibtex")
    assert bibtex.count("{") == bibtex.count("}")
    entries = re.findall(r"@misc\{", bibtex)
    assert len(entries) == 2
    triggerbench = (SHARED / "seeds" / "001_cade04dc1aeaed63.txt").read_text().splitlines()
    pmbench = (SHARED / "seeds" / "000_420ee992325e13b4.txt").read_text().splitlines()
    assert f"title  = {{{triggerbench[0].strip()}}}" in bibtex
    assert f"title  = {{{pmbench[0].strip()}}}" in bibtex
    author_line = next(line for line in triggerbench if line.startswith("Tianhua Zhang"))
    for surname, given in [("Zhang", "Tianhua"), ("Wang", "Xinjiang"), ("Meng", "Helen"), ("Lu", "Yan")]:
        assert f"{given} {surname}" in author_line and f"{surname}, {given}" in bibtex
    assert bibtex.count("not stated") + bibtex.count("not named") == 2


def test_distractor_provenance_states_each_used_corpus_license():
    routes = {"state_tracking": "multiwoz (local)", "safe_coding": "swe-agent (local)",
              "attention_recovery/math_interruption": "math (local)",
              "attention_recovery/coding_interruption": "swe-agent (local)"}
    text = distractor_provenance(routes)
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ") and "`" in line}
    assert len(rows) == 3
    multiwoz = next(v for k, v in rows.items() if "`multiwoz`" in k)
    assert "Apache-2.0" in multiwoz and "MIT" in multiwoz and "state_tracking" in multiwoz
    assert "b014b81fcb1ff74f54681917eee39c14c87af3e5" in (SHARED / "data/multiwoz/PROVENANCE.md").read_text()
    assert "b014b81fcb1ff74f54681917eee39c14c87af3e5" in multiwoz
    swe = next(v for k, v in rows.items() if "`swe-agent`" in k)
    assert "MIT" in swe and "safe_coding" in swe and "attention_recovery/coding_interruption" in swe
    assert "License: MIT" in (SHARED / "data/trajectories/PROVENANCE.md").read_text()
    assert "`openthoughts`" not in text and "apache-2.0 (as stated" not in text
    with_ot = distractor_provenance({"attention_recovery/math_interruption": "openthoughts (hub)"})
    assert "apache-2.0" in with_ot and "OpenThoughts-114k" in with_ot
    assert "No distractor corpus" in distractor_provenance({})


def test_changelog_reports_rows_blueprints_and_pipeline_version():
    previous = {"version": "0.1.0", "pipeline_version": "0.1.0", "seed": 0,
                "configs": {"pm_base": {"test": {"rows": 10}, "dev": {"rows": 2}},
                            "blueprints": {"test": {"rows": 3, "ids": ["a", "b", "c"]}}}}
    current = {"version": "0.2.0", "pipeline_version": "0.2.0", "seed": 0,
               "configs": {"pm_base": {"test": {"rows": 12}, "dev": {"rows": 2}},
                           "pm_20k": {"test": {"rows": 12}},
                           "blueprints": {"test": {"rows": 3, "ids": ["b", "c", "d"]}}}}
    text = changelog(previous, current)
    assert text.startswith("### 0.2.0 (since 0.1.0)")
    assert "- Pipeline version: 0.1.0 -> 0.2.0" in text
    assert "- Blueprints: 1 added, 1 removed (3 in all)" in text
    assert "  - added `d`" in text and "  - removed `a`" in text
    assert "| `pm_base` | test | 10 | 12 | +2 |" in text
    assert "| `pm_20k` | test | - | 12 | +12 |" in text
    assert "| `pm_base` | dev |" not in text
    passed = changelog({**previous, "configs": {}}, {**current, "configs": {}},
                       previous_blueprint_ids=["x"], blueprint_ids=["x", "y"])
    assert "- Blueprints: 1 added, 0 removed (2 in all)" in passed and "Row counts unchanged" in passed
    first = changelog(None, current)
    assert "First release: 3 configs, 29 rows in all, pipeline 0.2.0." in first
