"""Quantization-aware task-space Transformer: `QATTaskSpaceTransformer`, its
fake-quant layers, and its data for `gnmt_tf.export.qat.qat_finetune` (model type
``task_space_transformer_qat``).

The float layers name their quantization points themselves
(`gnmt_tf.models.task_space.layer_utils.QuantizationPoints`, identity hooks); the QAT
layers put `gnmt_tf.quantization.FakeQuantMixin` first in their bases, so a
QAT model's `call` and KV-cached `step` are the float code with fake quant
applied. int8 (one scale per tensor): every projection, FFN and embedding
kernel. Learned ranges: each projection output, the scaled queries, the
scores, the attention context, every residual sum and LayerNorm output, the
embeddings and the logits; [0, 1]: the attention probabilities. Float in
TFLite: LayerNorm arithmetic, the positions and task vector added to the
embeddings, the masked score value and the final log-softmax.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.quantization import (FakeQuantMixin, LayerQuantizeConfig,
                                  QATDense, activation_quantizer,
                                  fixed_quantizer, quantized_matmul)
from gnmt_tf.models.task_space.cached_multi_head_attention import CachedMultiHeadAttention
from gnmt_tf.models.task_space.shared_embedding import SharedEmbedding
from gnmt_tf.models.task_space.task_space_translation_model import TaskSpaceTranslationModel
from gnmt_tf.models.task_space.transformer_decoder_layer import TransformerDecoderLayer
from gnmt_tf.models.task_space.transformer_encoder_layer import TransformerEncoderLayer


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


class QATEinsumDense(FakeQuantMixin, keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` with a fake-quantized kernel and output,
    computed as one 2-D matmul (`gnmt_tf.quantization.quantized_matmul`).

    With `symmetric_output` set before it is built, the output range is
    symmetric (zero point 0): for the attention's keys and values, the
    right-hand operands of its BatchMatMuls, which TFLite's int8 kernel gets
    wrong with a nonzero zero point (TF 2.21: scores several steps off).
    """

    symmetric_output = False

    def build(self, input_shape):
        _, contracted, _ = _matmul_equation(self.equation)
        self._num_contracted = len(contracted)
        super().build(input_shape)
        if self.bias is not None and self.bias.shape != self.kernel.shape[
                self._num_contracted:]:
            # The task-space layers' biases cover every output axis.
            raise ValueError("QATEinsumDense needs a bias over all output "
                             f"axes, got bias_axes {self.bias_axes!r}")
        self._build_quantizers(LayerQuantizeConfig(
            ["kernel"], output=activation_quantizer(self.symmetric_output)))

    def call(self, inputs, training=None):
        return quantized_matmul(self, inputs, self._num_contracted, training)


class QATLayerNormalization(FakeQuantMixin, keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` with a fake-quantized output (a
    learned range); its arithmetic and `gamma` / `beta` stay float."""

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(LayerQuantizeConfig(
            output=activation_quantizer()))

    def call(self, inputs, training=None):
        return self.fake_quant("output", super().call(inputs), training)


class QATCachedMultiHeadAttention(FakeQuantMixin, CachedMultiHeadAttention):
    """`CachedMultiHeadAttention` with `QATEinsumDense` projections and
    fake-quantized scaled queries, scores, probabilities [0, 1] and context,
    in `call` and in `project_query` / `project_key_value` / `attend`."""

    einsum_dense_class = QATEinsumDense

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for dense in (self._key_dense, self._value_dense):
            dense.symmetric_output = True  # BatchMatMul right-hand operands

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(LayerQuantizeConfig(
            query=activation_quantizer(), scores=activation_quantizer(),
            probabilities=fixed_quantizer(0.0, 1.0),
            context=activation_quantizer()))

    def attend(self, query, key, value, mask=None, training=False):
        # Keys and values may come from a decoding cache, a float input of a
        # converted step graph: quantizing them again on their projection's
        # grid (exact for values already on it) gives the converter their
        # scale, so the attention BatchMatMuls run int8.
        key = self._key_dense.fake_quant("output", key, False, observe=False)
        value = self._value_dense.fake_quant("output", value, False,
                                             observe=False)
        return super().attend(query, key, value, mask, training)


class QATTransformerEncoderLayer(FakeQuantMixin, TransformerEncoderLayer):
    """`TransformerEncoderLayer` of QAT sublayers with a fake-quantized
    residual sum after each block (``<block>_residual``)."""

    attention_class = QATCachedMultiHeadAttention
    dense_class = QATDense
    layer_norm_class = QATLayerNormalization
    residual_blocks = ("self_attention", "ffn")

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(LayerQuantizeConfig(**{
            f"{block}_residual": activation_quantizer()
            for block in self.residual_blocks}))


class QATTransformerDecoderLayer(QATTransformerEncoderLayer,
                                 TransformerDecoderLayer):
    """`TransformerDecoderLayer` as `QATTransformerEncoderLayer`, plus the
    cross-attention block; `step` applies the same fake quant as `call`."""

    residual_blocks = ("self_attention", "cross_attention", "ffn")


class QATSharedEmbedding(FakeQuantMixin, SharedEmbedding):
    """`SharedEmbedding` whose lookup and tied projection both use the
    fake-quantized table, with fake-quantized scaled lookups and logits
    (learned ranges); float32 only."""

    def build(self, input_shape=None):
        super().build(input_shape)
        self._build_quantizers(LayerQuantizeConfig(
            ["embeddings"], lookup=activation_quantizer(),
            logits=activation_quantizer()))

    def call(self, ids):
        table = self.quantized_weight("embeddings", self.embeddings)
        # The rows again on the table's grid (exact; inference mode, so the
        # table's range is not updated from them): TFLite then gathers
        # from the int8 table instead of from a float copy of it.
        rows = self.quantized_weight("embeddings", tf.gather(table, ids),
                                     training=False)
        return self.fake_quant("lookup", rows * self.hidden_dim ** 0.5)


class QATTaskSpaceTransformer(FakeQuantMixin, TaskSpaceTranslationModel):
    """`TaskSpaceTranslationModel` of the QAT layers above that also
    fake-quantizes the encoder and decoder input embeddings; everything
    else, variable names included, is the float model's.

    Args: as `TaskSpaceTransformer`.
    """

    embedding_class = QATSharedEmbedding
    encoder_layer_class = QATTransformerEncoderLayer
    decoder_layer_class = QATTransformerDecoderLayer
    layer_norm_class = QATLayerNormalization

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self._build_quantizers(LayerQuantizeConfig(
            encoder_input=activation_quantizer(),
            decoder_input=activation_quantizer()))


def finetune_data(model, subwords, payload, data_dir, train_config):
    """`(train_config, dataset)` of a ``task_space_transformer_qat``
    fine-tuning run (`gnmt_tf.export.qat.qat_finetune`): the float model's own
    fine-tuning data (`gnmt_tf.models.task_space.training.finetune_data`)."""
    from gnmt_tf.models.task_space.training import finetune_data as float_finetune_data

    return float_finetune_data(model, subwords, payload, data_dir,
                               train_config)
