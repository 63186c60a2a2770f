"""TF Serving's `batching_parameters.txt`: parse, validate, write.

The file is a text-format `BatchingParameters` proto (from
`tensorflow_serving/servables/tensorflow/session_bundle_config.proto`, which the
`tensorflow-serving-api` wheel does not ship), e.g.

    max_batch_size { value: 32 }
    batch_timeout_micros { value: 2000 }
    max_enqueued_batches { value: 100 }
    num_batch_threads { value: 4 }
    allowed_batch_sizes: 8
    allowed_batch_sizes: 32
    pad_variable_length_inputs: true

so it is read with the small text-proto parser below. Fields TF Serving knows
but the local server does not implement are accepted and listed in
`BatchingParameters.ignored`; unknown fields are an error.
"""

import dataclasses
import os
import re
from typing import Tuple

_TOKEN = re.compile(r"""
    \s+ | \#[^\n]* |
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*') |
    (?P<punct>[{}:<>\[\],;]) |
    (?P<word>[A-Za-z0-9_.+\-]+)
""", re.VERBOSE)

# TF Serving BatchingParameters fields the local server reads.
_WRAPPED_INTS = ("max_batch_size", "batch_timeout_micros",
                 "max_enqueued_batches", "num_batch_threads")
# Valid in TF Serving's proto, not implemented here.
_KNOWN_IGNORED = frozenset({
    "thread_pool_name", "enable_large_batch_splitting",
    "max_execution_batch_size", "batch_padding_policy",
    "mixed_priority_batching_policy", "low_priority_max_batch_size",
    "low_priority_batch_timeout_micros", "low_priority_allowed_batch_sizes",
    "low_priority_max_enqueued_batches", "enable_priority_queue",
    "num_tpu_batch_threads",
})


MAX_BATCH_THREADS = 1024
MAX_BATCH_TIMEOUT_MICROS = 3600 * 10**6


class TextProtoError(ValueError):
    """The text is not valid text-format protobuf (or not the expected one)."""


def _tokens(text):
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise TextProtoError(f"unexpected character {text[pos]!r} at "
                                 f"offset {pos}")
        pos = m.end()
        kind = m.lastgroup
        if kind:
            yield kind, m.group(kind)


def _scalar(kind, value):
    if kind == "string":
        return bytes(value[1:-1], "utf-8").decode("unicode_escape")
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value  # enum name


def parse_text_proto(text: str) -> dict:
    """Parse text-format protobuf into `{field: [values]}` (nested messages
    are dicts of the same form). Handles `#` comments, `f: v`, `f { ... }`,
    `f: { ... }`, `f < ... >` and `f: [a, b]`."""
    tokens = list(_tokens(text))
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else (None, None)

    def take(expected=None):
        nonlocal pos
        if pos >= len(tokens):
            raise TextProtoError("unexpected end of text")
        tok = tokens[pos]
        if expected is not None and tok[1] != expected:
            raise TextProtoError(f"expected {expected!r}, got {tok[1]!r}")
        pos += 1
        return tok

    def message(close):
        fields = {}
        while True:
            kind, value = peek()
            if value == close or (close is None and kind is None):
                if close is not None:
                    take()
                return fields
            kind, name = take()
            if kind != "word" or not re.match(r"[A-Za-z_]\w*$", name):
                raise TextProtoError(f"expected a field name, got {name!r}")
            has_colon = peek()[1] == ":"
            if has_colon:
                take()
            kind, value = peek()
            if value in ("{", "<"):
                take()
                fields.setdefault(name, []).append(
                    message("}" if value == "{" else ">"))
            elif not has_colon:
                raise TextProtoError(f"expected ':' or '{{' after {name!r}")
            elif value == "[":
                take()
                while peek()[1] != "]":
                    k, v = take()
                    fields.setdefault(name, []).append(_scalar(k, v))
                    if peek()[1] == ",":
                        take()
                take("]")
            elif kind in ("word", "string"):
                take()
                fields.setdefault(name, []).append(_scalar(kind, value))
            else:
                raise TextProtoError(f"expected a value for {name!r}, "
                                     f"got {value!r}")
            if peek()[1] in (",", ";"):
                take()

    return message(None)


def _single(fields, name):
    values = fields[name]
    if len(values) != 1:
        raise TextProtoError(f"{name} is given {len(values)} times")
    value = values[0]
    if isinstance(value, dict):  # google.protobuf wrapper: { value: N }
        if set(value) != {"value"} or len(value["value"]) != 1:
            raise TextProtoError(f"{name} must look like {name} {{ value: N }}")
        value = value["value"][0]
    return value


@dataclasses.dataclass(frozen=True)
class BatchingParameters:
    """Server-side dynamic batching, with TF Serving's parameter names.

    Attributes:
      max_batch_size: int. Most rows (sentences) in one model call.
      batch_timeout_micros: int. How long a non-full batch waits for more work
        (at most an hour).
      max_enqueued_batches: int. Batches that may wait; past that, requests
        are rejected with UNAVAILABLE (clients retry).
      num_batch_threads: int. Batches run at once (at most 1024).
      allowed_batch_sizes: tuple of int. If set, batches are padded (with
        copies of their first row) up to the next allowed size; increasing,
        the last one equal to `max_batch_size`.
      pad_variable_length_inputs: bool. Pad inputs whose non-batch dims differ
        (zeros / empty strings) so that they can be concatenated.
      ignored: tuple of str. TF Serving fields read but not implemented.
    """
    max_batch_size: int = 32
    batch_timeout_micros: int = 1000
    max_enqueued_batches: int = 100
    num_batch_threads: int = dataclasses.field(
        default_factory=lambda: max(1, os.cpu_count() or 1))
    allowed_batch_sizes: Tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False
    ignored: Tuple[str, ...] = ()

    def __post_init__(self):
        for name in _WRAPPED_INTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.max_batch_size < 1:
            raise ValueError("max_batch_size must be >= 1")
        if not 0 <= self.batch_timeout_micros <= MAX_BATCH_TIMEOUT_MICROS:
            raise ValueError(f"batch_timeout_micros must be in "
                             f"0..{MAX_BATCH_TIMEOUT_MICROS} (1 hour)")
        if self.max_enqueued_batches < 1:
            raise ValueError("max_enqueued_batches must be >= 1")
        if not 1 <= self.num_batch_threads <= MAX_BATCH_THREADS:
            raise ValueError(
                f"num_batch_threads must be in 1..{MAX_BATCH_THREADS}")
        sizes = tuple(self.allowed_batch_sizes)
        object.__setattr__(self, "allowed_batch_sizes", sizes)
        if sizes:
            if any(not isinstance(s, int) or s < 1 for s in sizes):
                raise ValueError("allowed_batch_sizes must be positive integers")
            if any(a >= b for a, b in zip(sizes, sizes[1:])):
                raise ValueError("allowed_batch_sizes must increase")
            if sizes[-1] != self.max_batch_size:
                raise ValueError(
                    f"the last allowed_batch_sizes ({sizes[-1]}) must equal "
                    f"max_batch_size ({self.max_batch_size})")

    def padded_size(self, rows: int) -> int:
        """Batch size after padding to `allowed_batch_sizes` (or `rows`)."""
        for size in self.allowed_batch_sizes:
            if size >= rows:
                return size
        return rows

    @classmethod
    def from_text(cls, text: str) -> "BatchingParameters":
        """Parse the text proto; raises `ValueError` naming the problem."""
        fields = parse_text_proto(text)
        kwargs, ignored = {}, []
        for name in fields:
            if name in _WRAPPED_INTS:
                kwargs[name] = _single(fields, name)
            elif name == "allowed_batch_sizes":
                kwargs[name] = tuple(fields[name])
            elif name == "pad_variable_length_inputs":
                value = _single(fields, name)
                if not isinstance(value, bool):
                    raise TextProtoError(f"{name} must be true or false")
                kwargs[name] = value
            elif name in _KNOWN_IGNORED:
                ignored.append(name)
            else:
                raise TextProtoError(f"unknown batching parameter {name!r}")
        return cls(**kwargs, ignored=tuple(ignored))

    @classmethod
    def from_file(cls, path) -> "BatchingParameters":
        """Read a `batching_parameters.txt`."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            return cls.from_text(text)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    def to_text(self) -> str:
        """The text proto TF Serving's `--batching_parameters_file` reads."""
        lines = [f"{name} {{ value: {getattr(self, name)} }}"
                 for name in _WRAPPED_INTS]
        lines += [f"allowed_batch_sizes: {s}" for s in self.allowed_batch_sizes]
        lines.append("pad_variable_length_inputs: "
                     f"{'true' if self.pad_variable_length_inputs else 'false'}")
        return "\n".join(lines) + "\n"
