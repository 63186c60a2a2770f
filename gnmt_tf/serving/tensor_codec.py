"""`TensorProto` <-> Python/NumPy conversion without TensorFlow.

Used by the client (to build requests and read responses) and by the local
server (to read requests and write responses). Strings travel in `string_val`;
numbers are written to the typed `*_val` fields, as TensorFlow Serving writes
them, and read from either those fields or `tensor_content`.
"""

import numpy as np

from gnmt_tf.serving.protos import tensor_pb2
from gnmt_tf.serving.protos import tensor_shape_pb2
from gnmt_tf.serving.protos import types_pb2

# dtype enum -> (numpy dtype, TensorProto field for the values)
_NUMERIC = {
    types_pb2.DT_FLOAT: (np.float32, "float_val"),
    types_pb2.DT_DOUBLE: (np.float64, "double_val"),
    types_pb2.DT_HALF: (np.float16, "half_val"),
    types_pb2.DT_INT8: (np.int8, "int_val"),
    types_pb2.DT_INT16: (np.int16, "int_val"),
    types_pb2.DT_INT32: (np.int32, "int_val"),
    types_pb2.DT_UINT8: (np.uint8, "int_val"),
    types_pb2.DT_UINT16: (np.uint16, "int_val"),
    types_pb2.DT_INT64: (np.int64, "int64_val"),
    types_pb2.DT_UINT32: (np.uint32, "uint32_val"),
    types_pb2.DT_UINT64: (np.uint64, "uint64_val"),
    types_pb2.DT_BOOL: (np.bool_, "bool_val"),
}
_MAX_FILL = 1 << 24  # most elements a single-value tensor may be filled to
_NUMPY_TO_ENUM = {np.dtype(v[0]): k for k, v in _NUMERIC.items()}


class TensorDecodeError(ValueError):
    """The `TensorProto` is malformed (shape and values disagree, bad dtype)."""


def dtype_name(dtype_enum: int) -> str:
    """`types_pb2.DT_STRING` -> `"DT_STRING"` (or the number if unknown)."""
    try:
        return types_pb2.DataType.Name(dtype_enum)
    except ValueError:
        return str(dtype_enum)


def numpy_dtype(dtype_enum: int):
    """`types_pb2.DT_FLOAT` -> `np.float32`; `DT_STRING` -> `object` (arrays
    of `bytes`). Raises `TensorDecodeError` for unsupported dtypes."""
    if dtype_enum == types_pb2.DT_STRING:
        return object
    if dtype_enum not in _NUMERIC:
        raise TensorDecodeError(f"unsupported dtype {dtype_name(dtype_enum)}")
    return _NUMERIC[dtype_enum][0]


def shape_of(proto) -> list:
    """Dims of a `TensorProto`; raises on unknown rank or negative dims."""
    if proto.tensor_shape.unknown_rank:
        raise TensorDecodeError("tensor_shape has unknown rank")
    dims = [d.size for d in proto.tensor_shape.dim]
    if any(d < 0 for d in dims):
        raise TensorDecodeError(f"tensor_shape has a negative dim: {dims}")
    return dims


def _shape_proto(dims):
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(d)) for d in dims])


def encode(value) -> bytes:
    """`str` -> UTF-8 bytes; lone surrogates (e.g. from reading a file with
    `errors="surrogateescape"`) become the original, invalid bytes so that the
    server can reject that one string instead of the client failing."""
    if not isinstance(value, str):
        return bytes(value)
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")


def string_tensor(values, shape=None):
    """A `DT_STRING` `TensorProto` from `str`/`bytes` values (1-D by default).

    Args:
      values: sequence of `str` (encoded as UTF-8, see `encode`) or `bytes`.
      shape: optional dims; defaults to `[len(values)]`.
    """
    encoded = [encode(v) for v in values]
    dims = [len(encoded)] if shape is None else list(shape)
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING,
                                  tensor_shape=_shape_proto(dims),
                                  string_val=encoded)


def make_tensor(array):
    """A `TensorProto` from a NumPy array (strings as `bytes`, numbers typed)."""
    array = np.asarray(array)
    if array.dtype.kind in "OSU":
        flat = [encode(v) for v in array.reshape(-1)]
        return string_tensor(flat, array.shape)
    enum = _NUMPY_TO_ENUM.get(array.dtype)
    if enum is None:
        raise TypeError(f"unsupported dtype {array.dtype}")
    _, field = _NUMERIC[enum]
    proto = tensor_pb2.TensorProto(dtype=enum,
                                   tensor_shape=_shape_proto(array.shape))
    flat = array.reshape(-1)
    if enum == types_pb2.DT_HALF:
        flat = flat.view(np.uint16)
    getattr(proto, field).extend(flat.tolist())
    return proto


def to_numpy(proto) -> np.ndarray:
    """A NumPy array from a `TensorProto` (strings as an object array of bytes).

    Raises:
      TensorDecodeError: if the shape and the number of values disagree, or the
        dtype is not supported.
    """
    dims = shape_of(proto)
    size = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if proto.dtype == types_pb2.DT_STRING:
        if proto.tensor_content:
            raise TensorDecodeError("DT_STRING tensors must use string_val, "
                                    "not tensor_content")
        values = list(proto.string_val)
        if len(values) != size:
            raise TensorDecodeError(
                f"tensor_shape {dims} needs {size} strings, got {len(values)}")
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array.reshape(dims)
    np_dtype = numpy_dtype(proto.dtype)
    field = _NUMERIC[proto.dtype][1]
    if proto.tensor_content:
        raw = proto.tensor_content
        itemsize = np.dtype(np_dtype).itemsize
        if len(raw) != size * itemsize:
            raise TensorDecodeError(
                f"tensor_content has {len(raw)} bytes, shape {dims} needs "
                f"{size * itemsize}")
        return np.frombuffer(raw, dtype=np_dtype).reshape(dims).copy()
    values = list(getattr(proto, field))
    if proto.dtype == types_pb2.DT_HALF:
        values = np.asarray(values, dtype=np.uint16).view(np.float16)
    if len(values) == 1 and 1 < size <= _MAX_FILL:
        values = list(values) * size  # TensorFlow's fill convention
    if len(values) != size:
        raise TensorDecodeError(
            f"tensor_shape {dims} needs {size} values, got {len(values)}")
    return np.asarray(values, dtype=np_dtype).reshape(dims)


def to_strings(proto) -> list:
    """The `string_val` of a `DT_STRING` tensor as `str` (invalid UTF-8 replaced)."""
    if proto.dtype != types_pb2.DT_STRING:
        raise TensorDecodeError(
            f"expected DT_STRING, got {dtype_name(proto.dtype)}")
    return [v.decode("utf-8", errors="replace") for v in proto.string_val]


def to_floats(proto) -> list:
    """The values of a numeric tensor as a flat list of Python floats."""
    return [float(v) for v in to_numpy(proto).reshape(-1)]
