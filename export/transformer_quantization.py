"""Quantization-aware training for the task-space Transformer: its layers.

The task-space layers name their quantization points themselves
(`task_space.layer_utils.QuantizationPoints`: identity hooks in the float
layers); the QAT variants below put `export.quantization.FakeQuantMixin`
first in their bases, which turns those hooks into tfmot fake-quant ops
(range variables built by the quantizers' own `build`, see
`export.quantization`). So the teacher-forced `call` and the KV-cache
`step` of a QAT model are the float model's code with the same fake quant
applied, and the variables keep the float names (a float checkpoint
restores; the range variables are extra).

Quantization points, with TFLite's int8 kernel each one serves:

- Weights, int8 symmetric, one scale per tensor (`weight_quantizer`): the
  q/k/v/output projection kernels (`QATEinsumDense`, computed as 2-D
  matmuls: FullyConnected), the FFN kernels (`export.quantization.QATDense`)
  and the shared embedding table (`QATSharedEmbedding`), which is both the
  Gather table and the tied softmax projection's FullyConnected weights.
- Learned (moving-average) activation ranges: every projection's output
  (queries; keys and values, symmetric, also what the decoder's KV cache
  holds; attention output; FFN inner after relu; FFN outer), the scaled queries (Mul), the
  attention scores before masking (BatchMatMul output), the attention
  context (BatchMatMul output, FullyConnected input), every residual sum
  (Add), every LayerNorm output (FullyConnected input), the looked-up
  embeddings times `sqrt(d)` (Mul after the Gather), the encoder and
  decoder input embeddings (token + position + task vector) and the logits.
- Fixed range [0, 1]: the attention probabilities (Softmax output).
- Quantized again on their own grid (exact; it gives a converted graph
  the scales of tensors that arrive as float inputs or would otherwise be
  read from a float copy): keys and values entering `attend` (the KV cache
  of `step`), the gathered embedding rows (the table's grid).

What stays float (no range of its own; TFLite keeps these ops float with
Quantize/Dequantize around them): LayerNorm's own arithmetic (mean,
variance, rsqrt, gamma/beta; TFLite has no int8 LayerNorm kernel), the
position encoding (sin/cos of the step's time) and its sum with the
embeddings and the task vector (`TaskSpaceEncoding`, a float computation
over small tables, once per sentence), the masked score value (the mask
Select keeps the scores' grid, so a masked score becomes the bottom of
the scores' range rather than -1e9 in int8), attention dropout (training
only), and the final log-softmax of `step`.
"""

import math

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from export import quantization
from task_space.cached_multi_head_attention import CachedMultiHeadAttention
from task_space.shared_embedding import SharedEmbedding
from task_space.transformer_decoder_layer import TransformerDecoderLayer
from task_space.transformer_encoder_layer import TransformerEncoderLayer

activation_quantizer = quantization.activation_quantizer


class SymmetricDenseQuantizeConfig(quantization.DenseQuantizeConfig):
    """`kernel` and the output, whose learned range is symmetric (zero
    point 0): for the attention's keys and values, the right-hand operands
    of its BatchMatMuls. TFLite's int8 BatchMatMul gets those wrong with a
    nonzero zero point (measured with TF 2.21: scores several quantization
    steps off; exact once the keys' range is symmetric)."""

    def activation_quantizers(self):
        return {"output": activation_quantizer(symmetric=True)}


class LayerNormQuantizeConfig(quantization.LayerQuantizeConfig):
    """The output only (a learned range); `gamma` / `beta` stay float."""

    def activation_quantizers(self):
        return {"output": activation_quantizer()}


class MultiHeadAttentionQuantizeConfig(quantization.LayerQuantizeConfig):
    """Scaled queries, scores, probabilities [0, 1] and context around the
    attention's four `QATEinsumDense` projections (which quantize their own
    kernels and outputs)."""

    def activation_quantizers(self):
        return {"query": activation_quantizer(),
                "scores": activation_quantizer(),
                "probabilities": quantization.fixed_quantizer(0.0, 1.0),
                "context": activation_quantizer()}


class TransformerBlockQuantizeConfig(quantization.LayerQuantizeConfig):
    """The residual sum after each block of an encoder or decoder layer.

    Args:
      blocks: names of the blocks (`"self_attention"`, `"ffn"`, ...); the
        points are `"<block>_residual"`.
    """

    def __init__(self, blocks):
        self.blocks = tuple(blocks)

    def activation_quantizers(self):
        return {f"{block}_residual": activation_quantizer()
                for block in self.blocks}

    def get_config(self):
        return {"blocks": list(self.blocks)}


class SharedEmbeddingQuantizeConfig(quantization.LayerQuantizeConfig):
    """The tied `embeddings` table, the scaled lookup and the logits
    (learned ranges)."""

    weight_names = ("embeddings",)

    def activation_quantizers(self):
        return {"lookup": activation_quantizer(),
                "logits": activation_quantizer()}


class TransformerInputQuantizeConfig(quantization.LayerQuantizeConfig):
    """The encoder's and the decoder's input embeddings (learned ranges)."""

    def activation_quantizers(self):
        return {"encoder_input": activation_quantizer(),
                "decoder_input": activation_quantizer()}


def _matmul_equation(equation):
    """`(batch, contracted, out)` letters of an `EinsumDense` equation of
    the form `<batch><contracted>,<contracted><out>-><batch><out>`."""
    inputs, output = equation.split("->")
    source, kernel = inputs.split(",")
    contracted = "".join(c for c in source if c in kernel)
    batch = source[:len(source) - len(contracted)]
    out = kernel[len(contracted):]
    if (source != batch + contracted or kernel != contracted + out
            or output != batch + out):
        raise ValueError(f"QATEinsumDense needs an equation "
                         f"'<batch><in>,<in><out>-><batch><out>', got "
                         f"{equation!r}")
    return batch, contracted, out


class QATEinsumDense(quantization.FakeQuantMixin, keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` with a fake-quantized kernel and output
    (`export.quantization.DenseQuantizeConfig`).

    The einsum runs as one 2-D matmul (input flattened to `[-1, in]`,
    kernel to `[in, out]`): the same arithmetic, and what TFLite runs as an
    int8 FullyConnected with the kernel stored int8. With
    `symmetric_output` set before it is built, the output range is
    symmetric (`SymmetricDenseQuantizeConfig`).
    """

    symmetric_output = False

    def build(self, input_shape):
        _, self._contracted, _ = _matmul_equation(self.equation)
        super().build(input_shape)
        if self.bias is not None and self.bias.shape != self.kernel.shape[
                len(self._contracted):]:
            # The task-space layers' biases cover every output axis.
            raise ValueError("QATEinsumDense needs a bias over all output "
                             f"axes, got bias_axes {self.bias_axes!r}")
        self._build_quantizers(
            SymmetricDenseQuantizeConfig() if self.symmetric_output
            else quantization.DenseQuantizeConfig())

    def call(self, inputs, training=None):
        kernel = self.quantized_weight("kernel", self.kernel, training)
        rank = len(self._contracted)
        size_in = math.prod(kernel.shape[:rank])
        out_shape = kernel.shape[rank:]
        flat = tf.reshape(inputs, [-1, size_in])
        outputs = tf.matmul(flat, tf.reshape(kernel, [size_in, -1]))
        # Bias, activation and the output quantizer on the 2-D matmul, the
        # reshape after them: a Reshape between the MatMul and its bias add
        # leaves the converter a MatMul without an output range, which it
        # keeps float (with a float copy of the kernel).
        if self.bias is not None:
            outputs += tf.reshape(self.bias, [-1])
        if self.activation is not None:
            outputs = self.activation(outputs)
        outputs = self.fake_quant("output", outputs, training)
        return tf.reshape(outputs, tf.concat(
            [tf.shape(inputs)[:inputs.shape.rank - rank], out_shape], 0))


class QATLayerNormalization(quantization.FakeQuantMixin,
                            keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` with a fake-quantized output
    (`LayerNormQuantizeConfig`); its arithmetic stays float."""

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(LayerNormQuantizeConfig())

    def call(self, inputs, training=None):
        return self.fake_quant("output", super().call(inputs), training)


class QATCachedMultiHeadAttention(quantization.FakeQuantMixin,
                                  CachedMultiHeadAttention):
    """`CachedMultiHeadAttention` with `QATEinsumDense` projections and the
    points of `MultiHeadAttentionQuantizeConfig`, in `call` and in the
    `project_query` / `project_key_value` / `attend` parts alike; `attend`
    puts keys and values (maybe from a cache) back on their projection's
    grid."""

    einsum_dense_class = QATEinsumDense

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for dense in (self._key_dense, self._value_dense):
            dense.symmetric_output = True  # BatchMatMul right-hand operands

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(MultiHeadAttentionQuantizeConfig())

    def attend(self, query, key, value, mask=None, training=False):
        # Keys and values may come from a decoding cache, a float input of a
        # converted step graph: quantizing them again on their projection's
        # grid (exact for values already on it) gives the converter their
        # scale, so the attention BatchMatMuls run int8.
        key = self._key_dense.fake_quant("output", key, False, observe=False)
        value = self._value_dense.fake_quant("output", value, False,
                                             observe=False)
        return super().attend(query, key, value, mask, training)


class QATTransformerEncoderLayer(quantization.FakeQuantMixin,
                                 TransformerEncoderLayer):
    """`TransformerEncoderLayer` of QAT sublayers (attention, `QATDense`
    FFN, LayerNorms) with fake-quantized residual sums
    (`TransformerBlockQuantizeConfig`)."""

    attention_class = QATCachedMultiHeadAttention
    dense_class = quantization.QATDense
    layer_norm_class = QATLayerNormalization
    residual_blocks = ("self_attention", "ffn")

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(TransformerBlockQuantizeConfig(
            self.residual_blocks))


class QATTransformerDecoderLayer(QATTransformerEncoderLayer,
                                 TransformerDecoderLayer):
    """`TransformerDecoderLayer` as `QATTransformerEncoderLayer`, plus the
    cross-attention block; `step` applies the same fake quant as `call`."""

    residual_blocks = ("self_attention", "cross_attention", "ffn")


class QATSharedEmbedding(quantization.FakeQuantMixin, SharedEmbedding):
    """`SharedEmbedding` whose lookup and tied projection both use the
    fake-quantized table, with fake-quantized scaled lookups and logits
    (`SharedEmbeddingQuantizeConfig`); float32 only."""

    def build(self, input_shape=None):
        super().build(input_shape)
        self._build_quantizers(SharedEmbeddingQuantizeConfig())

    def call(self, ids):
        table = self.quantized_weight("embeddings", self.embeddings)
        # The rows again on the table's grid (exact; inference mode, so the
        # table's range is not updated from them): TFLite then gathers
        # from the int8 table instead of from a float copy of it.
        rows = self.quantized_weight("embeddings", tf.gather(table, ids),
                                     training=False)
        return self.fake_quant("lookup", rows * self.hidden_dim ** 0.5)
