"""Every drop reason the code writes is a ``pipeline.vocabulary.DropReason`` member, listed in the README."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pipeline.stage import Drop, Dropped
from pipeline.vocabulary import DROP_REASON_HELP, DropReason, drop_reason_table, llm_drop_reason
from tests.conftest import REPO

SOURCES = sorted([*(REPO / "stages").rglob("*.py"), *(REPO / "pipeline").rglob("*.py")])
README_MARKERS = ("<!-- drop-reasons:begin -->", "<!-- drop-reasons:end -->")


def _reason_expressions(tree: ast.AST) -> list[ast.expr]:
    """Reason arguments of ``Drop(reason, ...)`` / ``Dropped(id, reason, ...)`` and values of ``reason = ...``."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Drop", "Dropped"):
            position = 0 if node.func.id == "Drop" else 1
            found += node.args[position:position + 1] + [k.value for k in node.keywords if k.arg == "reason"]
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "reason" for t in node.targets):
            found.append(node.value)
    return found


def _problems(path: Path) -> tuple[list[str], set[str]]:
    """Reason expressions in ``path`` that are neither a member nor ``llm_drop_reason(...)``; members named."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
             and isinstance(node.value, ast.Name) and node.value.id == "DropReason"}
    bad = [f"{path.relative_to(REPO)}:{expr.lineno}: {ast.unparse(expr)}" for expr in _reason_expressions(tree)
           for leaf in ([expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else [expr])
           if isinstance(leaf, (ast.Constant, ast.JoinedStr, ast.BinOp))]  # a literal or a built string
    return bad, named


def test_every_drop_site_uses_a_member() -> None:
    results = [_problems(path) for path in SOURCES]
    bad = [line for problems, _ in results for line in problems]
    named = set().union(*(names for _, names in results))
    assert bad == [], bad
    assert named <= {m.name for m in DropReason}, sorted(named - {m.name for m in DropReason})
    # Every member is written by some stage (none is dead), and the scan sees each call form.
    assert {m.name for m in DropReason} <= named, sorted({m.name for m in DropReason} - named)


def test_members_are_snake_case_with_a_meaning() -> None:
    for reason in DropReason:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", reason.value) and reason.value == reason.name.lower(), reason
    assert set(DROP_REASON_HELP) == set(DropReason)


def test_a_member_is_written_as_its_plain_string() -> None:
    drop, dropped = Drop(DropReason.TOO_LONG, "9000 tokens"), Dropped("x", DropReason.NEAR_DUPLICATE)
    assert type(drop.reason) is str and drop.reason == "too_long" and f"{DropReason.TOO_LONG}" == "too_long"
    assert dropped.as_json() == {"id": "x", "reason": "near_duplicate", "detail": ""}
    assert type(dropped.as_json()["reason"]) is str
    assert llm_drop_reason("timeout") == "llm_timeout" and llm_drop_reason(None) == "llm_failed"


def test_readme_lists_every_reason() -> None:
    """The README's table is ``drop_reason_table()``; regenerate it with
    ``python -c "from pipeline.vocabulary import drop_reason_table; print(drop_reason_table())"``."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    begin, end = README_MARKERS
    assert begin in readme and end in readme
    section = readme.split(begin, 1)[1].split(end, 1)[0].strip()
    assert section == drop_reason_table()
    assert all(f"| `{reason.value}` |" in section for reason in DropReason)


def test_every_transient_llm_failure_kind_is_a_listed_drop_kind() -> None:
    from pipeline.llm.errors import TRANSIENT_ERRORS
    from pipeline.vocabulary import LLM_DROP_KINDS

    assert TRANSIENT_ERRORS <= set(LLM_DROP_KINDS), sorted(TRANSIENT_ERRORS - set(LLM_DROP_KINDS))
