"""Checking `PredictRequest` inputs against a signature, before the model runs.

Every problem raises `InvalidRequest` with a message naming the input (and the
element), which the server returns as `INVALID_ARGUMENT`. String inputs get
NMT-specific checks that TF Serving does not make: elements must be valid
UTF-8, at most `max_string_bytes` long and non-empty (not only whitespace),
except in the inputs of `RequestLimits.empty_allowed` (the task-space export's
``tags``, where "" means no scene tag). A request's padded size (for each
string input, its elements x its longest element, in bytes: what the model
pads the batch to) is at most `max_padded_bytes`, which bounds the memory one
request can take (`RequestTooLarge`).
"""

import dataclasses
from typing import Dict, FrozenSet

import numpy as np

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.protos import types_pb2


class InvalidRequest(ValueError):
    """The request does not fit the signature; maps to INVALID_ARGUMENT."""


class RequestTooLarge(InvalidRequest):
    """The request is over `max_padded_bytes`; maps to INVALID_ARGUMENT, so
    that clients split it (`TranslationClient` bisects such requests)."""


DEFAULT_MAX_PADDED_BYTES = 256 * 1024


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    """Per-request limits of the local server.

    Attributes:
      max_string_bytes: int. Longest string element (UTF-8 bytes).
      max_rows: int. Most rows (sentences) in one request.
      max_padded_bytes: int. Most padded bytes in one request: summed over
        the string inputs, elements x longest element (UTF-8 bytes). The
        default, 256 KiB, allows 64 sentences of 4 KiB or 2,048 of 128 bytes.
      empty_allowed: names of string inputs whose elements may be empty:
        ``tags`` of task-space exports (comma-separated scene tags, "" for
        none).
    """
    max_string_bytes: int = 4096
    max_rows: int = 4096
    max_padded_bytes: int = DEFAULT_MAX_PADDED_BYTES
    empty_allowed: FrozenSet[str] = frozenset({"tags"})


def _check_shape(key, dims, info):
    if info.tensor_shape.unknown_rank:
        return
    expected = [d.size for d in info.tensor_shape.dim]
    if len(dims) != len(expected) or any(
            e >= 0 and e != d for e, d in zip(expected, dims)):
        raise InvalidRequest(f"input {key!r} has shape {dims}, the signature "
                             f"expects {expected} (-1 = any)")


def _check_padded_size(arrays, signature_def, limits):
    sizes = {k: (arrays[k].size, max(map(len, arrays[k].reshape(-1)),
                                     default=0))
             for k, info in signature_def.inputs.items()
             if info.dtype == types_pb2.DT_STRING}
    padded = sum(n * longest for n, longest in sizes.values())
    if padded > limits.max_padded_bytes:
        key = max(sizes, key=lambda k: sizes[k][0] * sizes[k][1])
        n, longest = sizes[key]
        raise RequestTooLarge(
            f"request too large: {padded:,} padded bytes ({n:,} strings in "
            f"{key!r} x {longest:,} bytes, the longest); the limit is "
            f"{limits.max_padded_bytes:,} (gnmt-tf serve "
            "--max_request_padded_bytes): send fewer or shorter sentences "
            "per request")


def _check_strings(key, array, limits, allow_empty=False):
    for i, value in enumerate(array.reshape(-1)):
        where = f"input {key!r} element {i}"
        if len(value) > limits.max_string_bytes:
            raise InvalidRequest(f"{where} is {len(value)} bytes long; the "
                                 f"limit is {limits.max_string_bytes}")
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidRequest(
                f"{where} is not valid UTF-8 (byte 0x{value[e.start]:02x} at "
                f"offset {e.start})") from None
        if not allow_empty and not text.strip():
            raise InvalidRequest(f"{where} is empty")


def decode_inputs(inputs, signature_def,
                  limits: RequestLimits = RequestLimits()) -> Dict[str, np.ndarray]:
    """`PredictRequest.inputs` -> `{key: ndarray}`, checked against the signature.

    Args:
      inputs: the request's `map<string, TensorProto>`.
      signature_def: the `SignatureDef` being called.
      limits: `RequestLimits`.

    Raises:
      InvalidRequest: missing or unknown keys, wrong dtype or shape, malformed
        tensors, empty / non-UTF-8 / over-long strings, too many rows.
      RequestTooLarge: over `limits.max_padded_bytes`.
    """
    expected = signature_def.inputs
    missing = sorted(set(expected) - set(inputs))
    if missing:
        raise InvalidRequest(f"missing input(s) {missing}; the signature "
                             f"expects {sorted(expected)}")
    unknown = sorted(set(inputs) - set(expected))
    if unknown:
        raise InvalidRequest(f"unknown input(s) {unknown}; the signature "
                             f"expects {sorted(expected)}")
    arrays = {}
    for key, proto in inputs.items():
        info = expected[key]
        if proto.dtype != info.dtype:
            raise InvalidRequest(
                f"input {key!r} has dtype {tensor_codec.dtype_name(proto.dtype)}"
                f", the signature expects {tensor_codec.dtype_name(info.dtype)}")
        try:
            dims = tensor_codec.shape_of(proto)
            _check_shape(key, dims, info)
            if dims and dims[0] > limits.max_rows:
                raise InvalidRequest(f"input {key!r} has {dims[0]} rows; "
                                     f"the limit is {limits.max_rows}")
            array = tensor_codec.to_numpy(proto)
        except tensor_codec.TensorDecodeError as e:
            raise InvalidRequest(f"input {key!r}: {e}") from None
        if info.dtype == types_pb2.DT_STRING:
            _check_strings(key, array, limits,
                           allow_empty=key in limits.empty_allowed)
        arrays[key] = array
    _check_padded_size(arrays, signature_def, limits)
    return arrays
