"""The core knows no stage: only ``pipeline/registry.py`` of ``pipeline/`` imports ``stages``."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO


def _stage_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        found += [f"{path.name}:{node.lineno}: {name}" for name in names
                  if name == "stages" or name.startswith("stages.")]
    return found


def test_only_the_registry_imports_stages() -> None:
    offenders = [f"{path.parent.name}/{line}" for path in sorted((REPO / "pipeline").rglob("*.py"))
                 if path != REPO / "pipeline" / "registry.py" for line in _stage_imports(path)]
    assert offenders == []
    assert _stage_imports(REPO / "pipeline" / "registry.py")  # the registry does name them


def test_the_check_sees_a_stage_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from stages.stretch import Stretch\n    import stages.audit\n"
                     "from pipeline import stage\n", encoding="utf-8")
    assert _stage_imports(probe) == ["probe.py:2: stages.stretch", "probe.py:3: stages.audit"]
