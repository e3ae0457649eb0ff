"""Every drop reason the code writes is listed in ``pipeline.vocabulary.DROP_REASONS``."""

from __future__ import annotations

import ast
from pathlib import Path

from pipeline.vocabulary import DROP_REASONS
from tests.conftest import REPO


def _literal_reasons(path: Path) -> set[str]:
    """String reasons in ``Drop(reason, ...)``, ``Dropped(id, reason, ...)`` and ``reason = "..."`` (or a choice of two)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        candidates: list[ast.AST] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Drop", "Dropped"):
            position = 0 if node.func.id == "Drop" else 1
            candidates += node.args[position:position + 1] + [k.value for k in node.keywords if k.arg == "reason"]
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "reason" for t in node.targets):
            candidates.append(node.value)
        for candidate in candidates:
            leaves = [candidate.body, candidate.orelse] if isinstance(candidate, ast.IfExp) else [candidate]
            found |= {leaf.value for leaf in leaves if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str)}
    return found


def test_every_literal_drop_reason_is_listed() -> None:
    written = set().union(*(_literal_reasons(p) for p in sorted((REPO / "stages").rglob("*.py"))),
                          *(_literal_reasons(p) for p in sorted((REPO / "pipeline").rglob("*.py"))))
    assert written and written <= set(DROP_REASONS), sorted(written - set(DROP_REASONS))
    assert {"pool-too-small", "near-duplicate", "necessity_leak"} <= written  # the scan sees each call form


def test_listed_reasons_are_written_somewhere() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "stages").rglob("*.py"))
    source += "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "pipeline").rglob("*.py") if p.name != "vocabulary.py")
    assert [r for r in DROP_REASONS if f'"{r}"' not in source] == []
