"""YAML loading that remembers the line of every value (private)."""

from __future__ import annotations

from typing import Any

__all__ = ["Lines", "load_yaml"]

Path_ = tuple[Any, ...]
Lines = dict[Path_, int]


def _convert(node: Any, path: Path_, lines: Lines, loader: Any, source: str) -> Any:
    import yaml  # lazy: yaml ~8-17 ms; pipeline list / Python pipelines skip it

    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, (dict, list)):  # `{{x: 1}}` is a mapping used as a key
                raise ValueError(
                    f"{source}:{key_node.start_mark.line + 1}: invalid YAML: a mapping key must"
                    " be a plain value, not a mapping or list (quote a `{{ ... }}` reference)"
                )
            out[key] = _convert(value_node, (*path, key), lines, loader, source)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(v, (*path, i), lines, loader, source) for i, v in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_yaml(text: str, source: str) -> tuple[Any, Lines]:
    """Parses ``text`` and returns ``(data, {path: line})``.

    Paths are tuples of mapping keys and list indices (``("steps", "train", "args", 2)``);
    a mapping value's line is the line of its key.

    Args:
        text: the YAML text.
        source: the file name, for error messages.

    Raises:
        ValueError: the text is not valid YAML (the message names the file and line).
    """
    import yaml  # lazy: yaml ~8-17 ms; pipeline list / Python pipelines skip it

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ValueError(f"{source}{line}: invalid YAML: {problem}") from None
    lines: Lines = {}
    if node is None:
        return None, lines
    return _convert(node, (), lines, yaml.SafeLoader(""), source), lines
