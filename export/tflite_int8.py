"""int8 TFLite: the QAT model's `encode` + `decode_step`.

`convert_module_int8` converts an `export.tflite.StepModule` over a QAT
model (`export.qat.QATGNMT`, `export.transformer_qat.QATTaskSpaceTransformer`:
their fake-quant ops carry every range) with the converter's default
optimisation: the fake-quant ranges become the int8 scales, no calibration
data needed. `export.tflite.export_tflite(..., "int8")` and
`export.tflite.convert(model, "int8")` use it; the flatbuffer has the same
two signatures as the float formats', so
`gnmt_tf.tflite_translator.TFLiteTranslator` drives it.

Post-training full-integer quantization (a representative dataset instead
of QAT) is not offered: with TF 2.21 the converter's calibration crashes the
process (segmentation fault) on this two-signature model with `While` loops.
The post-training baselines are `export.tflite`'s dynamic-range and float16.

What is int8 and what stays float (QAT model, measured on the converted
flatbuffer; `int8_report` lists a model's tensor types):

- Weights are stored int8 with one scale per tensor, as trained: LSTM
  `kernel` / `recurrent_kernel`, the attention's query and score
  projections, the embedding table, which is also the tied softmax
  projection. The table is stored once, on the grid QAT trained
  (`export.tflite_tied_table.share_tied_table` undoes the converter's
  re-quantized copies; `dedupe_buffers` shares any other identical
  constants). gnmt_small (3+3 x 256, 8k vocabulary): 6.7 MB against
  25.5 MB for float32 TFLite.
- `decode_step` runs int8: the embedding Gather, every LSTM's input and
  recurrent FullyConnected, the attention's query / memory-key sum, tanh
  hidden layer, score FullyConnected, masking Select, Softmax and context
  BatchMatMul, the Concatenations, the softmax projection and the
  LogSoftmax (TFLite's int8 LogSoftmax has a fixed output grid of 1/16 nat
  over [-16, 0]; the host-side beam search adds those up in float).
- `encode` runs the LSTMs step by step inside `While` loops whose input and
  recurrent FullyConnected are int8 (`QATLSTM` computes the input projection
  per step in inference for exactly this; in training it is one
  whole-sequence matmul, same arithmetic).
- Float: the LSTM gate arithmetic (gate sum, Logistic, Tanh, the cell-state
  Mul/Add), because the gate pre-activations and, without GNMT's cell
  clipping, the cell state have no quantization range (see
  `export.quantization`; with `clip_cell` the cell state is quantized to
  [-delta, delta]); the residual sums; in `encode`, the attention's memory
  projection (a `tensordot` over `[B, S, H]` that the converter keeps in
  float with a float weight copy, 0.25 MB for gnmt_small); the signature
  inputs and outputs (`ids` int32; `log_probs`, `attention` and the decoder
  state float32, so the host search works in float and feeds the state back
  unchanged). Quantize / Dequantize ops sit at those borders; only builtin
  ops are used (no Flex delegate).

Task-space Transformer QAT models convert with the same converter settings
and the same tied-table sharing. int8 there: every q/k/v/output projection and FFN FullyConnected
(`QATEinsumDense` / `QATDense` add bias and quantize on the 2-D matmul, so
the converter fuses them), the attention BatchMatMuls (keys and values on
symmetric grids: TFLite's int8 BatchMatMul mishandles a nonzero right-hand
zero point), masking Selects, Softmaxes, residual Adds, the embedding
Gather and the logits FullyConnected / LogSoftmax. Float: LayerNorm
arithmetic (mean, variance, rsqrt; its output is quantized), the sinusoidal
positions and the task vector added to the embeddings, and `encode`'s
`TaskSpaceEncoding` (two small FullyConnected, Gathers, Softmax).
"""

import tempfile

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import numpy as np
import tensorflow as tf

from export.tflite_tied_table import share_tied_table

SIGNATURE_KEYS = ("encode", "decode_step")


def _converter(module, tmp):
    tf.saved_model.save(module, tmp, signatures=module.signatures())
    converter = tf.lite.TFLiteConverter.from_saved_model(
        tmp, signature_keys=list(SIGNATURE_KEYS))
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter


def dedupe_buffers(flatbuffer):
    """Makes tensors with byte-identical constant data share one buffer.

    The converter writes a constant once per use: the tied embedding table
    is both `decode_step`'s Gather table and its softmax FullyConnected
    weights, and `encode` has a third copy, which for a small model is most
    of the file. TFLite buffers are model-wide, so tensors (in any subgraph)
    may share one; the data of the unused duplicates is dropped.

    Args:
      flatbuffer: a TFLite model as `bytes`.

    Returns:
      The model as `bytes`, same graphs and signatures.
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


def is_qat_model(model):
    from export.quantization import qat_layers

    return bool(qat_layers(model))


def convert_module_int8(module, table=None):
    """Converts a `StepModule` over a QAT model to int8 TFLite `bytes`.

    Args:
      module: an `export.tflite.StepModule` whose model fake-quantizes.
      table: float array `[vocabulary_size, hidden_dim]`, a tied embedding
        table to store once (`export.tflite_tied_table`), or None to keep
        the converter's copies.
    """
    with tempfile.TemporaryDirectory(prefix="gnmt_tf_int8_") as tmp:
        converter = _converter(module, tmp)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        # Per-tensor scales, as trained (per-channel would re-quantize the
        # FullyConnected weights and store the tied embedding once more).
        converter._experimental_disable_per_channel = True
        flatbuffer = converter.convert()
    if table is not None:
        flatbuffer = share_tied_table(flatbuffer, table)
    return dedupe_buffers(flatbuffer)


def tied_table(model):
    """The embedding table a model ties to its softmax projection (float
    `[vocabulary_size, hidden_dim]`), or None when it has none."""
    if not getattr(model.config, "tie_embeddings", True):
        return None
    return model.embedding.embeddings.numpy()


def int8_report(model_path):
    """Tensor types of a TFLite model, all subgraphs (signatures and loop
    bodies): `{"int8": [tensor names], "float32": [...], ...}`. Weight
    tensors carry their fake-quant op's name (`LastValueQuant`)."""
    from gnmt_tf.tflite_translator import interpreter_class

    interpreter = interpreter_class()(model_path=str(model_path))
    count = interpreter.num_subgraphs()
    report = {}
    for index in range(count if isinstance(count, int) else count()):
        for detail in interpreter.get_tensor_details(index):
            dtype = np.dtype(detail["dtype"]).name
            report.setdefault(dtype, []).append(detail["name"])
    return report
