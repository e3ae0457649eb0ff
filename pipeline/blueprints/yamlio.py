"""YAML loading that remembers the line of every field, for ``path:line: field: message``.

Input limits (documented in ``blueprints/README.md``): a file larger than
:data:`MAX_YAML_BYTES` is refused before it is read (see :mod:`pipeline.blueprints.loader`),
and anchors and aliases (``&name`` / ``*name``) are refused outright: the corpus never needs
them, and a few nested aliases expand into gigabytes (a "billion laughs" alias bomb).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

FieldPath = tuple[str | int, ...]


class YamlProblem(Exception):
    """A YAML file that cannot be turned into data (syntax error, duplicate key, ...)."""

    def __init__(self, line: int, field_name: str, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.field_name = field_name
        self.message = message


@dataclass
class LocatedDocument:
    """Parsed YAML data plus the 1-based line of each field path."""

    data: Any
    lines: dict[FieldPath, int] = field(default_factory=dict)

    def line_of(self, path: FieldPath) -> int:
        """Line of the deepest known prefix of ``path`` (1 if nothing matches)."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return 1


MAX_YAML_BYTES = 256 * 1024  # per blueprint or filler file; the largest in the corpus is ~22 KB
MAX_CORPUS_BYTES = 32 * 1024 * 1024  # all files of one corpus together

_constructor = yaml.SafeLoader(stream="")
# libyaml's parser and composer when PyYAML was built with it (about 5x faster on the corpus), else PyYAML's own
_FAST_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_anchors(text: str) -> None:
    """Raise :class:`YamlProblem` at the first anchor or alias of ``text`` (no alias bombs, no shared nodes)."""
    for event in yaml.parse(text, Loader=_FAST_LOADER):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            kind = "alias" if isinstance(event, yaml.AliasEvent) else "anchor"
            sign = "*" if kind == "alias" else "&"
            raise YamlProblem(event.start_mark.line + 1, "<file>",
                              f"YAML {kind} {sign}{event.anchor} is not allowed: write the value out (no anchors or aliases)")


def load_located(text: str) -> LocatedDocument:
    """Parse one YAML document, keeping lines; raise :class:`YamlProblem` on bad input."""
    try:
        if "&" in text or "*" in text:  # an anchor or alias needs one of these; most files have neither
            _refuse_anchors(text)
        node = yaml.compose(text, Loader=_FAST_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlProblem(line, "<file>", f"YAML syntax error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise YamlProblem(1, "<file>", f"YAML error: {exc}") from None
    if node is None:
        raise YamlProblem(1, "<file>", "file is empty")
    doc = LocatedDocument(data=None)
    doc.data = _convert(node, (), doc.lines)
    return doc


def _convert(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int]) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _constructor.construct_object(key_node)
            if not isinstance(key, str):
                raise YamlProblem(key_node.start_mark.line + 1, str(key), "keys must be strings")
            if key in result:
                raise YamlProblem(key_node.start_mark.line + 1, _dotted(path + (key,)), "duplicate key")
            lines[path + (key,)] = key_node.start_mark.line + 1
            result[key] = _convert(value_node, path + (key,), lines)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(child, path + (index,), lines) for index, child in enumerate(node.value)]
    return _constructor.construct_object(node)


def _dotted(path: FieldPath) -> str:
    return ".".join(str(part) for part in path) or "<file>"


dotted = _dotted
