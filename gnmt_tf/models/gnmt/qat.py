"""Quantization-aware GNMT: `QATGNMT`, its fake-quant layers, and its data
for `gnmt_tf.export.qat.qat_finetune` (model type ``gnmt_qat``).

Quantized per LSTM: `kernel` and `recurrent_kernel` (int8, symmetric, per
tensor), the layer input, the input projection `x W + b`, the recurrent
projection `h U` (its range is updated after the `tf.scan`, from all steps
at once), `h` (fixed [-1, 1]) and, with GNMT's cell clipping, `c` (the
model's [-delta, delta], held at its trained value during fine-tuning).
In int8 TFLite, `decode_step` runs int8 from the embedding Gather to the
LogSoftmax (output grid 1/16 nat) and `encode`'s LSTM loops run int8
FullyConnecteds; float stay the gate arithmetic (no range), the residual
sums, `encode`'s attention memory projection, and the signatures' inputs
and outputs.
"""

import dataclasses

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.quantization import (NUM_BITS, FakeQuantMixin,
                                  LayerQuantizeConfig, QATDense,
                                  activation_quantizer, fixed_quantizer,
                                  quantizers, resolve_training)
from gnmt_tf.config import GNMTConfig
from gnmt_tf.models.gnmt.additive_attention import AdditiveAttention
from gnmt_tf.models.gnmt.decoder import GNMTDecoder
from gnmt_tf.models.gnmt.encoder import GNMTEncoder
from gnmt_tf.models.gnmt.lstm import LSTM
from gnmt_tf.models.gnmt.model import GNMT


class ClipRangeQuantizer(quantizers.Quantizer):
    """Fake-quantizes to [-clip, clip], clip read at every call.

    GNMT's quantization-friendly training (Wu et al. 2016, section 6) clips
    cell states and residual sums to [-delta, delta] (delta annealed in a
    variable, `GNMT.cell_clip`) and logits to [-gamma, gamma]; those clips are
    exactly the quantization ranges, so nothing needs to be learned. At
    conversion time the variable is frozen to its value.

    Args:
      clip: a scalar `tf.Variable` or a float.
    """

    def __init__(self, clip):
        self.clip = clip

    def build(self, tensor_shape, name, layer):
        return {}

    def __call__(self, inputs, training, weights, **kwargs):
        clip = tf.cast(tf.convert_to_tensor(self.clip), inputs.dtype)
        return tf.quantization.fake_quant_with_min_max_vars(
            inputs, -clip, clip, num_bits=NUM_BITS, narrow_range=True)

    def get_config(self):
        clip = self.clip
        return {"clip": float(clip.numpy()) if hasattr(clip, "numpy") else clip}

    def __eq__(self, other):
        return isinstance(other, ClipRangeQuantizer) and (
            self.get_config() == other.get_config())


class QATLSTM(FakeQuantMixin, LSTM):
    """`LSTM` with fake-quantized weights and activations (see the module
    docstring): same variables and arithmetic, plus the range variables."""

    def build(self, input_shape):
        super().build(input_shape)
        points = {"input": activation_quantizer(),
                  "projected": activation_quantizer(),
                  "recurrent": activation_quantizer(),
                  "output": fixed_quantizer(-1.0, 1.0)}
        if self.cell_clip is not None:
            points["cell"] = ClipRangeQuantizer(self.cell_clip)
        self._build_quantizers(LayerQuantizeConfig(
            ["kernel", "recurrent_kernel"], **points))

    def _weights(self, training):
        return (self.quantized_weight("kernel", self.kernel, training),
                self.quantized_weight("recurrent_kernel",
                                      self.recurrent_kernel, training))

    def _qcell(self, projected_input, h, c, recurrent_kernel):
        # h is on the output grid already except for a given initial state;
        # quantizing it again is exact.
        h = self.fake_quant("output", h, False, observe=False)
        recurrent = self.fake_quant(
            "recurrent", tf.matmul(h, recurrent_kernel), False, observe=False)
        gates = projected_input + recurrent
        i, f, g, o = tf.split(gates, 4, axis=-1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        if self.cell_clip is not None:
            c = tf.clip_by_value(c, -self.cell_clip, self.cell_clip)
            # Fixed range: safe inside the recurrence (nothing to update).
            c = self.fake_quant("cell", c, False, observe=False)
        h = self.fake_quant("output", tf.sigmoid(o) * tf.tanh(c), False,
                            observe=False)
        return h, c

    def step(self, x, state):
        kernel, recurrent_kernel = self._weights(False)
        x = self.fake_quant("input", x, False)
        projected = self.fake_quant(
            "projected", tf.matmul(x, kernel) + self.bias, False)
        h, c = self._qcell(projected, *state, recurrent_kernel)
        return h, (h, c)

    def call(self, inputs, initial_state=None, training=None):
        training = resolve_training(training)
        batch_size = tf.shape(inputs)[0]
        if initial_state is None:
            initial_state = self.zero_state(batch_size, inputs.dtype)
        kernel, recurrent_kernel = self._weights(training)
        inputs = self.fake_quant("input", inputs, training)
        if training or self._fq.calibration is not None:
            # Training: the input projection of all steps is one large
            # matmul, which also updates (or calibrates) its range.
            projected = self.fake_quant(
                "projected",
                tf.einsum("btd,dg->tbg", inputs, kernel) + self.bias, training)

            def body(state, x_t):
                return self._qcell(x_t, *state, recurrent_kernel)
        else:
            # Inference (and export): the same arithmetic one step at a time
            # inside the loop, a 2-D matmul that TFLite runs as an int8
            # FullyConnected with int8-stored weights (the whole-sequence
            # einsum becomes a float matmul on a float weight copy).
            projected = tf.transpose(inputs, [1, 0, 2])

            def body(state, x_t):
                x_t = self.fake_quant(
                    "projected", tf.matmul(x_t, kernel) + self.bias, False,
                    observe=False)
                return self._qcell(x_t, *state, recurrent_kernel)

        hs, _ = tf.scan(body, projected, initializer=initial_state)
        # The recurrent matmul's range cannot be updated inside the scan; it
        # is updated here from all its inputs at once (an extra matmul, in
        # training and calibration only).
        if training or self._fq.calibration is not None:
            previous = tf.concat([initial_state[0][None], hs[:-1]], 0)
            self.fake_quant("recurrent", tf.einsum(
                "tbh,hg->tbg", previous, recurrent_kernel), training)
        return tf.transpose(hs, [1, 0, 2])  # [B, T, H]


class QATEmbedding(FakeQuantMixin, keras.layers.Embedding):
    """`keras.layers.Embedding` over a fake-quantized table (a lookup's
    output is on the table's grid already); `quantized_embeddings` serves
    the tied softmax projection."""

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(LayerQuantizeConfig(["embeddings"]))

    def quantized_embeddings(self, training=None):
        return self.quantized_weight("embeddings", self.embeddings, training)

    def call(self, inputs, training=None):
        return tf.gather(self.quantized_embeddings(training),
                         tf.cast(inputs, tf.int32))


class QATAdditiveAttention(FakeQuantMixin, AdditiveAttention):
    """`AdditiveAttention` with `QATDense` projections and fake-quantized
    memory, tanh hidden layer [-1, 1] and probabilities [0, 1]."""

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.query_dense = QATDense(units, use_bias=False, name="query")
        self.memory_dense = QATDense(units, use_bias=True, name="memory")
        self.score_dense = QATDense(1, use_bias=False, name="score")
        self._build_quantizers(LayerQuantizeConfig(
            memory=activation_quantizer(),
            hidden=fixed_quantizer(-1.0, 1.0),
            probabilities=fixed_quantizer(0.0, 1.0)))

    def project_memory(self, memory):
        return self.memory_dense(self.fake_quant("memory", memory))

    def call(self, query, memory, memory_keys, memory_mask, training=None):
        training = resolve_training(training)
        single_step = query.shape.rank == 2
        if single_step:  # expand_dims: see AdditiveAttention.call
            query = tf.expand_dims(query, 1)
        memory = self.fake_quant("memory", memory, training)
        q = self.query_dense(query, training=training)  # [B, T, A]
        hidden = self.fake_quant(
            "hidden", tf.tanh(tf.expand_dims(q, 2)
                              + tf.expand_dims(memory_keys, 1)),
            training)  # [B, T, S, A]
        scores = tf.squeeze(self.score_dense(hidden, training=training), -1)
        scores = tf.where(tf.expand_dims(memory_mask, 1), scores, -1e9)
        probs = self.fake_quant("probabilities", tf.nn.softmax(scores, -1),
                                training)
        # No range of its own: the context only feeds the next layers'
        # concatenated inputs, whose quantizer gives the scale (TFLite's int8
        # Concatenation needs one scale for its inputs and output).
        context = tf.matmul(probs, memory)  # [B, T, Dk]
        if single_step:
            return context[:, 0], probs[:, 0]
        return context, probs


class QATGNMTEncoder(GNMTEncoder):
    """`GNMTEncoder` with `QATLSTM`s, whose sequence reversals are Gathers
    (same results): TFLite's REVERSE_SEQUENCE has no int8 kernel, GATHER
    has."""

    lstm_class = QATLSTM

    def reverse(self, x, lengths):
        steps = tf.range(tf.shape(x)[1])[None, :]
        lengths = lengths[:, None]
        indices = tf.where(steps < lengths, lengths - 1 - steps, steps)
        return tf.gather(x, indices, batch_dims=1)


class OutputQuantizers(FakeQuantMixin, keras.layers.Layer):
    """The softmax projection's points (a weightless layer): the decoder
    output and the logits, whose range is [-gamma, gamma] when the model
    clips them (`logit_clip`), else learned."""

    def __init__(self, logit_clip=None, **kwargs):
        super().__init__(name="output_quantizers", **kwargs)
        self.logit_clip = logit_clip
        self._build_quantizers(LayerQuantizeConfig(
            decoder_output=activation_quantizer(),
            logits=(ClipRangeQuantizer(logit_clip) if logit_clip
                    else activation_quantizer())))

    def call(self, inputs):
        return inputs


class QATGNMTDecoder(GNMTDecoder):
    """`GNMTDecoder` with `QATLSTM`s and a `QATAdditiveAttention`."""

    lstm_class = QATLSTM
    attention_class = QATAdditiveAttention


class QATGNMT(GNMT):
    """`GNMT` with fake quantization: same constructor, call, `encode` /
    `initial_state` / `step` and variable names (so the same checkpoint
    paths), with `QATLSTM`s, a `QATAdditiveAttention`, `QATEmbedding`s, a
    `QATDense` output projection when untied, and `OutputQuantizers` on the
    decoder output and logits.

    Args:
      config: `GNMTConfig`.
    """

    embedding_class = QATEmbedding
    dense_class = QATDense
    encoder_class = QATGNMTEncoder
    decoder_class = QATGNMTDecoder

    def __init__(self, config: GNMTConfig, **kwargs):
        super().__init__(config, **kwargs)
        self.output_quantizers = OutputQuantizers(config.logit_clip)

    def _logits(self, outputs, rows=None):
        fq = self.output_quantizers
        outputs = fq.fake_quant("decoder_output", outputs)
        bias = self.output_bias
        if self.config.tie_embeddings:
            table = self.target_embedding.quantized_embeddings()
            if rows is not None:  # a shortlist (gnmt_tf.decoding.shortlist)
                table, bias = tf.gather(table, rows), tf.gather(bias, rows)
            logits = tf.matmul(outputs, table, transpose_b=True)
        elif rows is not None:
            raise ValueError("a shortlist needs tie_embeddings in a QAT GNMT")
        else:
            logits = self.output_dense(outputs)
        logits = logits + bias
        if self.config.logit_clip:
            gamma = self.config.logit_clip
            logits = tf.clip_by_value(logits, -gamma, gamma)
        return fq.fake_quant("logits", logits)


def finetune_data(model, subwords, payload, data_dir, train_config):
    """`(train_config, dataset)` of a ``gnmt_qat`` fine-tuning run
    (`gnmt_tf.export.qat.qat_finetune`): the float run's data
    (`gnmt_tf.training.finetune_data`), delta held where the float training
    left it."""
    from gnmt_tf.training.finetune_data import gnmt_finetune_data

    delta = (float(model.cell_clip.numpy()) if model.cell_clip is not None
             else train_config.delta_end)
    train_config = dataclasses.replace(
        train_config, delta_start=delta, delta_end=delta, delta_anneal_steps=1)
    return gnmt_finetune_data(model, subwords, payload, data_dir, train_config)
