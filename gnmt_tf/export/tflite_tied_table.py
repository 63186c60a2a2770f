"""Rewrites of an int8 TFLite flatbuffer that store constants once.

A model's tied embedding table is both its Gather table and its softmax
FullyConnected weights, and QAT trains it on one symmetric int8 grid
(`gnmt_tf.quantization.weight_quantizer`). The TF 2.21 converter still writes
it three times (gnmt_small: 3 x 2 MB of 10.7 MB): `encode`'s Gather table on
the trained grid, and in `decode_step` a Gather table re-quantized
asymmetrically plus per-channel FullyConnected weights, each adding rounding
error. No converter option shares them, so `share_tied_table` points every
copy at the trained-grid buffer and re-scales the int32 biases that depend
on the changed scales; `dedupe_buffers` shares any other identical constant.
"""

import numpy as np

INT8 = 9  # tflite TensorType.INT8


def _op_names():
    from tensorflow.lite.python import schema_py_generated as schema

    return {v: k for k, v in vars(schema.BuiltinOperator).items()
            if not k.startswith("_")}


def _constant_data(model, tensor):
    data = model.buffers[tensor.buffer].data
    return None if data is None or len(data) == 0 else data


def _is_per_tensor_symmetric(tensor):
    q = tensor.quantization
    return (q is not None and q.scale is not None and len(q.scale) == 1
            and not np.any(q.zeroPoint))


def _dequantized(model, tensor):
    """The float values of an int8 constant tensor (per tensor or per
    channel)."""
    q = tensor.quantization
    values = np.frombuffer(bytes(_constant_data(model, tensor)), np.int8)
    values = values.reshape(list(tensor.shape)).astype(np.float64)
    shape = [1] * values.ndim
    axis = int(q.quantizedDimension or 0) if len(q.scale) > 1 else 0
    shape[axis] = -1 if len(q.scale) > 1 else 1
    scale = np.asarray(q.scale, np.float64).reshape(shape)
    zero = np.asarray(q.zeroPoint if q.zeroPoint is not None else [0],
                      np.float64).reshape(shape)
    return (values - zero) * scale


def _is_table_copy(model, tensor, table):
    """`tensor` is an int8 quantization of the float `table`: it dequantizes
    to it within two of its steps (not the shape alone: a toy GNMT's LSTM
    kernels can have the table's shape)."""
    q = tensor.quantization
    if (tensor.type != INT8 or list(tensor.shape) != list(table.shape)
            or _constant_data(model, tensor) is None or q is None
            or q.scale is None or len(q.scale) == 0):
        return False
    step = float(np.max(q.scale))
    return float(np.max(np.abs(_dequantized(model, tensor) - table))) <= 2 * step


def _same_grid_and_data(model, tensor, canonical):
    """`tensor` already is `canonical` (same bytes, same per-tensor grid):
    nothing to rewrite, whatever uses it."""
    return (canonical is not None and _is_per_tensor_symmetric(tensor)
            and np.array_equal(tensor.quantization.scale,
                               canonical.quantization.scale)
            and bytes(_constant_data(model, tensor))
            == bytes(_constant_data(model, canonical)))


def _set_quantization(tensor, scale):
    tensor.quantization.scale = np.asarray([scale], np.float32)
    tensor.quantization.zeroPoint = np.asarray([0], np.int64)
    tensor.quantization.quantizedDimension = 0
    tensor.quantization.min = tensor.quantization.max = None


def _rescale_bias(model, subgraph, index, factors):
    """Multiplies int32 bias tensor `index` by `factors` (scalar or per
    channel) into a new buffer, so a shared bias buffer stays intact."""
    from tensorflow.lite.python import schema_py_generated as schema

    bias = subgraph.tensors[index]
    values = np.frombuffer(bytes(_constant_data(model, bias)), np.int32)
    scaled = np.round(values * np.asarray(factors, np.float64))
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(
        np.clip(scaled, -2**31, 2**31 - 1).astype(np.int32).tobytes(),
        np.uint8)
    model.buffers.append(buffer)
    bias.buffer = len(model.buffers) - 1
    bias.quantization.scale = (np.asarray(bias.quantization.scale, np.float64)
                               / np.asarray(factors, np.float64)
                               ).astype(np.float32)


def _drop_unused_buffers(model):
    used = {t.buffer for g in model.subgraphs for t in g.tensors}
    for index, buffer in enumerate(model.buffers):
        if index not in used:
            buffer.data = None


def _plan(model, table, names):
    """`(canonical tensor, [(subgraph, tensor index)] to rewrite)` for the
    int8 copies of `table`, or None if one use is not understood."""
    canonical, copies = None, []
    for subgraph in model.subgraphs:
        for index, tensor in enumerate(subgraph.tensors):
            if not _is_table_copy(model, tensor, table):
                continue
            if canonical is None and _is_per_tensor_symmetric(tensor):
                canonical = tensor
            elif not _same_grid_and_data(model, tensor, canonical):
                copies.append((subgraph, index))
    if canonical is None:
        return None
    for subgraph, index in copies:
        for op in subgraph.operators:
            if index not in op.inputs:
                continue
            name = names[_builtin(model, op)]
            if name == "FULLY_CONNECTED" and list(op.inputs).index(index) == 1:
                continue
            if name == "GATHER" and list(op.inputs).index(index) == 0 and all(
                    names[_builtin(model, c)] in ("FULLY_CONNECTED",
                                                  "QUANTIZE")
                    and list(c.inputs).index(op.outputs[0]) == 0
                    for c in subgraph.operators if op.outputs[0] in c.inputs):
                continue
            return None
    return canonical, copies


def _builtin(model, op):
    code = model.operatorCodes[op.opcodeIndex]
    return max(code.builtinCode, code.deprecatedBuiltinCode)


def share_tied_table(flatbuffer, table):
    """Points every int8 copy of the tied table `[V, d]` at one buffer on
    the trained per-tensor grid (see the module docstring). Gather copies
    int8 bytes unchanged, so its output takes the table's scale too; only
    Gathers whose output feeds FullyConnected or Quantize ops (which read
    their input scale at run time) are rewritten.

    Args:
        flatbuffer: a converted int8 TFLite model as `bytes`.
        table: float array `[vocabulary_size, hidden_dim]`, the model's
            embedding table (as trained, or fake-quantized).

    Returns:
        The rewritten model as `bytes`; `flatbuffer` unchanged if there is
        no per-tensor symmetric copy to share or a copy has a use other than
        the ones described above.
    """
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(flatbuffer))
    names = _op_names()
    plan = _plan(model, np.asarray(table, np.float64), names)
    if plan is None:
        return flatbuffer
    canonical, copies = plan
    scale = float(canonical.quantization.scale[0])
    for subgraph, index in copies:
        tensor = subgraph.tensors[index]
        old_scales = np.asarray(tensor.quantization.scale, np.float64)
        for op in list(subgraph.operators):
            if index not in op.inputs:
                continue
            name = names[_builtin(model, op)]
            if name == "FULLY_CONNECTED":
                if len(op.inputs) > 2 and op.inputs[2] >= 0:
                    # bias scale = input scale * weight scale (per channel)
                    _rescale_bias(model, subgraph, op.inputs[2],
                                  old_scales / scale)
                continue
            output = subgraph.tensors[op.outputs[0]]  # GATHER
            _set_quantization(output, scale)
            for consumer in subgraph.operators:
                if (op.outputs[0] in consumer.inputs
                        and names[_builtin(model, consumer)]
                        == "FULLY_CONNECTED" and len(consumer.inputs) > 2
                        and consumer.inputs[2] >= 0):
                    _rescale_bias(model, subgraph, consumer.inputs[2],
                                  float(old_scales[0]) / scale)
        _set_quantization(tensor, scale)
        tensor.buffer = canonical.buffer
    _drop_unused_buffers(model)
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def int8_table_tensors(flatbuffer, table):
    """`(buffer index, scales)` of every int8 copy of the float `table` in
    any subgraph: where a tied table is stored, and on which grid."""
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(flatbuffer))
    table = np.asarray(table, np.float64)
    return [(t.buffer, tuple(t.quantization.scale))
            for g in model.subgraphs for t in g.tensors
            if _is_table_copy(model, t, table)]


def dedupe_buffers(flatbuffer):
    """Makes tensors with byte-identical constant data share one buffer
    (TFLite buffers are model-wide, so tensors of any subgraph may) and
    drops the duplicates' data; same graphs and signatures.
    """
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(flatbuffer))
    canonical = {}  # data -> first buffer index
    remap = {}
    for index, buffer in enumerate(model.buffers):
        if buffer.data is None or len(buffer.data) == 0:
            continue
        key = bytes(buffer.data)
        remap[index] = canonical.setdefault(key, index)
    for subgraph in model.subgraphs:
        for tensor in subgraph.tensors:
            tensor.buffer = remap.get(tensor.buffer, tensor.buffer)
    for index, target in remap.items():
        if target != index:
            model.buffers[index].data = None
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))
