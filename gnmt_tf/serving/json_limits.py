"""Parsing a JSON request body with bounded nesting, for the HTTP front
ends (`gnmt_tf.serving.json_codec`, `gnmt_tf.gateway.service`).

`json.loads` recurses once per nesting level, so a body of ten thousand
"[" raises `RecursionError`, and one nested just under the interpreter's
limit makes the next recursive reader of it fail. `loads` refuses a body
nested deeper than `MAX_DEPTH` levels with `JsonTooDeep`, a `ValueError`
with a one-line message, before anything else reads it.
"""

import json
from typing import Union

# Tensors of TF Serving's REST API and the gateway's fields nest a few
# levels; 64 leaves room and stays far from Python's recursion limit.
MAX_DEPTH = 64


class JsonTooDeep(ValueError):
    """JSON nested deeper than `MAX_DEPTH` levels."""

    def __init__(self, max_depth: int = MAX_DEPTH):
        super().__init__(f"JSON nested deeper than {max_depth} levels")


def _depth_over(value, max_depth: int) -> bool:
    """Whether `value` nests lists and objects more than `max_depth` deep
    (iteratively: it may be as deep as the parser allowed)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
    return False


def loads(data: Union[str, bytes], max_depth: int = MAX_DEPTH):
    """`json.loads(data)`, refusing nesting deeper than `max_depth`.

    Raises:
      JsonTooDeep: nested too deeply.
      json.JSONDecodeError, UnicodeDecodeError: as `json.loads`.
    """
    try:
        value = json.loads(data)
    except RecursionError:
        raise JsonTooDeep(max_depth) from None
    if _depth_over(value, max_depth):
        raise JsonTooDeep(max_depth)
    return value
