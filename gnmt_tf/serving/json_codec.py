"""TF Serving's REST JSON <-> tensors, without TensorFlow.

A predict request body is `{"signature_name": S, "instances": [...]}` (row
format) or `{"signature_name": S, "inputs": ...}` (columnar format):

- `instances` is a list of rows. With one input, a row is its value (or an
  object with its name); with several, an object with one key per input. The
  rows are stacked: row values of shape `[d1, ...]` become a `[N, d1, ...]`
  tensor.
- `inputs` is the value of the single input, or an object `{name: value}`; a
  value keeps its own shape (a scalar option such as `repeat` is a number).

Strings are JSON strings (sent as UTF-8) or `{"b64": "..."}` for bytes;
numbers are JSON numbers. The response mirrors the request's format:
`{"predictions": [...]}` (one value per row, or one object per row when
there are several outputs) or `{"outputs": value}` (`{"outputs": {name:
value}}` for several). Output strings are JSON strings, or `{"b64": ...}` for
outputs whose name ends in `_bytes`, as TF Serving writes them; float32 values
are written with their shortest decimal form.

The request is turned into `TensorProto`s typed by the signature, so that it is
checked by the same `gnmt_tf.serving.validation` as a gRPC request; what cannot be
read, including JSON nested deeper than `gnmt_tf.serving.json_limits.MAX_DEPTH`,
raises `InvalidRequest` (HTTP 400).
"""

import base64
import binascii
import dataclasses
import json
from typing import Dict

import numpy as np

from gnmt_tf.serving import json_limits
from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.protos import tensor_pb2
from gnmt_tf.serving.protos import types_pb2
from gnmt_tf.serving.validation import InvalidRequest

BYTES_SUFFIX = "_bytes"
_B64 = "b64"
_FLOAT_ENUMS = (types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_HALF)


@dataclasses.dataclass(frozen=True)
class JsonPredictRequest:
    """A parsed predict body: `data` is the `instances` list (`row_format`)
    or the `inputs` value."""
    signature_name: str
    row_format: bool
    data: object


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def parse_predict_request(body: bytes) -> JsonPredictRequest:
    """Read a predict request body (checks its form, not its tensors)."""
    try:
        doc = json_limits.loads(body)
    except json_limits.JsonTooDeep as e:
        raise InvalidRequest(str(e)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidRequest(f"JSON parse error: {e}") from None
    if not isinstance(doc, dict):
        raise InvalidRequest(f"the request body must be a JSON object, "
                             f"got {_json_type(doc)}")
    signature_name = doc.get("signature_name", "")
    if not isinstance(signature_name, str):
        raise InvalidRequest("'signature_name' must be a string")
    if ("instances" in doc) == ("inputs" in doc):
        raise InvalidRequest("the request must have one of 'instances' (row "
                             "format) or 'inputs' (columnar format)")
    if "inputs" in doc:
        return JsonPredictRequest(signature_name, False, doc["inputs"])
    instances = doc["instances"]
    if not isinstance(instances, list):
        raise InvalidRequest(f"'instances' must be a list, got "
                             f"{_json_type(instances)}")
    if not instances:
        raise InvalidRequest("'instances' is empty")
    return JsonPredictRequest(signature_name, True, instances)


def _is_b64(value) -> bool:
    return isinstance(value, dict) and list(value) == [_B64]


def _is_object(value) -> bool:
    """A JSON object that is not a `{"b64": ...}` value."""
    return isinstance(value, dict) and not _is_b64(value)


def _shape(value, where) -> list:
    """Dims of a nested list (a scalar has none); ragged lists raise."""
    if not isinstance(value, list):
        return []
    if not value:
        return [0]
    inner = _shape(value[0], where)
    for item in value[1:]:
        if _shape(item, where) != inner:
            raise InvalidRequest(f"{where} is a ragged list: its elements "
                                 "must all have the same shape")
    return [len(value)] + inner


def _leaves(value):
    if isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _string(value, where) -> bytes:
    if isinstance(value, str):
        return tensor_codec.encode(value)
    if _is_b64(value) and isinstance(value[_B64], str):
        try:
            return base64.b64decode(value[_B64], validate=True)
        except binascii.Error as e:
            raise InvalidRequest(f"{where}: bad base64 ({e})") from None
    raise InvalidRequest(f"{where} holds {_json_type(value)} where strings "
                         "(or {\"b64\": ...}) are expected (DT_STRING)")


def _number(value, dtype_enum, where):
    name = tensor_codec.dtype_name(dtype_enum)
    if dtype_enum == types_pb2.DT_BOOL:
        if isinstance(value, bool):
            return value
        raise InvalidRequest(f"{where} holds {_json_type(value)} where "
                             f"booleans are expected ({name})")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequest(f"{where} holds {_json_type(value)} where "
                             f"numbers are expected ({name})")
    if dtype_enum not in _FLOAT_ENUMS and not isinstance(value, int):
        raise InvalidRequest(f"{where} holds {value!r} where integers are "
                             f"expected ({name})")
    return value


def to_tensor(value, dtype_enum: int, where: str):
    """A `TensorProto` of `dtype_enum` from a JSON value (nested lists)."""
    shape = _shape(value, where)
    if dtype_enum == types_pb2.DT_STRING:
        return tensor_codec.string_tensor(
            [_string(v, where) for v in _leaves(value)], shape)
    try:
        np_dtype = tensor_codec.numpy_dtype(dtype_enum)
        values = [_number(v, dtype_enum, where) for v in _leaves(value)]
        array = np.array(values, dtype=np_dtype).reshape(shape)
    except tensor_codec.TensorDecodeError as e:
        raise InvalidRequest(f"{where}: {e}") from None
    except OverflowError:
        raise InvalidRequest(f"{where} holds a number out of the range of "
                             f"{tensor_codec.dtype_name(dtype_enum)}") from None
    return tensor_codec.make_tensor(array)


def _tensor_for(key, value, signature_def, where):
    info = signature_def.inputs.get(key)
    if info is None:  # validation names the unknown input
        return tensor_pb2.TensorProto()
    return to_tensor(value, info.dtype, where)


def request_tensors(request: JsonPredictRequest, signature_def) -> Dict:
    """`{input key: TensorProto}` of a parsed request, typed by the
    signature's inputs (missing or unknown keys are left to
    `gnmt_tf.serving.validation.decode_inputs`)."""
    names = sorted(signature_def.inputs)
    if not request.row_format:
        data = request.data
        if _is_object(data):
            return {k: _tensor_for(k, v, signature_def, f"input {k!r}")
                    for k, v in data.items()}
        if len(names) != 1:
            raise InvalidRequest(f"'inputs' is a single value, but the "
                                 f"signature has several inputs {names}: "
                                 "send an object with one key per input")
        return {names[0]: _tensor_for(names[0], data, signature_def,
                                      f"input {names[0]!r}")}
    rows = request.data
    if _is_object(rows[0]):
        keys = sorted(rows[0])
        columns = {k: [] for k in keys}
        for i, row in enumerate(rows):
            if not _is_object(row) or sorted(row) != keys:
                raise InvalidRequest(
                    f"'instances' element {i} must be an object with the "
                    f"keys {keys}, as element 0")
            for k in keys:
                columns[k].append(row[k])
    else:
        if len(names) != 1:
            raise InvalidRequest(
                f"'instances' holds values, but the signature has several "
                f"inputs {names}: send one object per row")
        for i, row in enumerate(rows):
            if _is_object(row):
                raise InvalidRequest(f"'instances' element {i} is an object,"
                                     " element 0 is not")
        columns = {names[0]: rows}
    return {k: _tensor_for(k, column, signature_def,
                           f"input {k!r} of 'instances'")
            for k, column in columns.items()}


def _json_values(array: np.ndarray, name: str):
    """Nested lists of JSON values of an output array."""
    if array.dtype.kind == "f" and array.dtype.itemsize <= 4:
        # str(np.float32) is the shortest decimal that reads back the same.
        flat = [float(str(v)) for v in array.reshape(-1)]
        return np.array(flat, dtype=object).reshape(array.shape).tolist()
    if array.dtype.kind in "OSU":
        if name.endswith(BYTES_SUFFIX):
            flat = [{_B64: base64.b64encode(tensor_codec.encode(v)).decode()}
                    for v in array.reshape(-1)]
        else:
            flat = [v.decode("utf-8", errors="replace")
                    if isinstance(v, bytes) else str(v)
                    for v in array.reshape(-1)]
        result = np.empty(len(flat), dtype=object)
        result[:] = flat
        return result.reshape(array.shape).tolist()
    return array.tolist()


def predict_response(outputs: Dict[str, np.ndarray], row_format: bool) -> dict:
    """The JSON of a predict response, in the request's format."""
    if not row_format:
        values = {k: _json_values(np.asarray(v), k)
                  for k, v in outputs.items()}
        if len(values) == 1:
            return {"outputs": next(iter(values.values()))}
        return {"outputs": values}
    rows = set()
    for k, v in outputs.items():
        if np.ndim(v) == 0:
            raise InvalidRequest(f"output {k!r} is a scalar: it has no rows; "
                                 "use the columnar format ('inputs')")
        rows.add(len(v))
    if len(rows) > 1:
        raise InvalidRequest(f"the outputs have different numbers of rows "
                             f"({sorted(rows)}); use the columnar format "
                             "('inputs')")
    columns = {k: _json_values(np.asarray(v), k) for k, v in outputs.items()}
    if len(columns) == 1:
        return {"predictions": next(iter(columns.values()))}
    n = rows.pop() if rows else 0
    return {"predictions": [{k: column[i] for k, column in columns.items()}
                            for i in range(n)]}


def status_json(response) -> dict:
    """A `GetModelStatusResponse` as TF Serving's REST API writes it."""
    from google.protobuf import json_format

    return json_format.MessageToDict(
        response, always_print_fields_with_no_presence=True,
        preserving_proto_field_name=True)


def metadata_json(response) -> dict:
    """A `GetModelMetadataResponse` as TF Serving's REST API writes it:
    `{"model_spec": ..., "metadata": {"signature_def": SignatureDefMap}}`."""
    from google.protobuf import json_format

    from gnmt_tf.serving.protos import get_model_metadata_pb2

    sig_map = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(sig_map)
    options = dict(always_print_fields_with_no_presence=True,
                   preserving_proto_field_name=True)
    return {"model_spec": json_format.MessageToDict(response.model_spec,
                                                    **options),
            "metadata": {"signature_def": json_format.MessageToDict(
                sig_map, **options)}}
