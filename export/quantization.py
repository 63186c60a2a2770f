"""Quantization-aware training: `QuantizeConfig`s and fake-quant layers.

tensorflow-model-optimization (tfmot) quantizes a model by cloning it
(`quantize_model` = `quantize_annotate_model` + `quantize_apply`), and its
cloning only understands `Sequential` and functional models: a subclassed
`keras.Model` such as `GNMT` is rejected ("`to_quantize` can only either be a
tf.keras Sequential or Functional model"; tensorflow/tensorflow#40699,
tensorflow/model-optimization#292, #812, and `clone_model`'s missing support
for subclassed models behind it). Its default 8-bit scheme has no entry for
recurrent layers either (tensorflow/tensorflow#61329). Wrapping our layers in
`QuantizeWrapperV2` by hand does not work for GNMT either: the wrapper only
intercepts `__call__` and swaps the quantized weights in by assigning layer
attributes, while decoding calls `LSTM.step`, `AdditiveAttention
.project_memory` and reads `embedding.embeddings` directly, and the wrapper
moves every variable to `<layer>/layer/...` so float checkpoints no longer
restore.

So we keep tfmot's pieces and drop its model surgery:

- tfmot `QuantizeConfig`s (below) say, per layer type, which weights and which
  named activation points are quantized and by which tfmot `Quantizer`
  (`LastValueQuantizer` for weights, `MovingAverageQuantizer` for learned
  activation ranges, `FixedQuantizer` for bounded ones, `ClipRangeQuantizer`
  for GNMT's clipped accumulators and logits);
- QAT variants of our layers (`QATLSTM`, `QATAdditiveAttention`, `QATDense`,
  `QATEmbedding`) build those quantizers' range variables with the quantizer's
  own `build` and apply them with the quantizer's own `__call__` (fake-quant
  ops, straight-through gradients) wherever the float layer does the matching
  matmul, in `call` and in the one-step `step` alike. They keep the float
  layers' variable names, so a float checkpoint restores into them;
- `export.qat.QATGNMT` swaps them into a `GNMT`.

The same machinery (`LayerQuantizeConfig`, `FakeQuantMixin`,
`init_weight_ranges`, `calibrate`, `QATDense`) quantizes the task-space
Transformer: its layers are in `export.transformer_quantization`, the model
in `export.transformer_qat`.

Quantization points of one LSTM (`LSTMQuantizeConfig`): the weights `kernel`
and `recurrent_kernel` (int8, symmetric, per tensor); the layer input; the
input projection `x W + b`; the recurrent projection `h U` (its range is
updated after the `tf.scan` from all steps at once: variables cannot be
updated inside the scan); the hidden state `h` (fixed range [-1, 1]: it is
`sigmoid * tanh`); the cell state `c` only when GNMT's cell clipping is on
(range [-delta, delta] from the model's `cell_clip` variable). The gate sums
and nonlinearities have no range of their own and stay float in TFLite (see
`export.tflite_int8`).

Range variables start at tfmot's [-6, 6]; `init_weight_ranges` sets the
weight ranges from the weights and `calibrate` sets activation ranges from a
few batches, so that a freshly restored QAT model is already a sensible
quantized model before fine-tuning moves the ranges with the data.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tensorflow_model_optimization as tfmot
import tf_keras as keras
from tf_keras.src.engine import base_layer_utils

from gnmt_tf.layers.additive_attention import AdditiveAttention
from gnmt_tf.layers.lstm import LSTM

quantizers = tfmot.quantization.keras.quantizers
NUM_BITS = 8


def weight_quantizer():
    """int8 weights: symmetric, narrow range [-127, 127], one scale per tensor
    (TFLite's int8 FullyConnected / Gather scheme)."""
    return quantizers.LastValueQuantizer(
        num_bits=NUM_BITS, per_axis=False, symmetric=True, narrow_range=True)


def activation_quantizer(symmetric=False):
    """int8 activations with a learned (moving-average) range, asymmetric
    unless `symmetric` (zero point 0)."""
    return quantizers.MovingAverageQuantizer(
        num_bits=NUM_BITS, per_axis=False, symmetric=symmetric,
        narrow_range=False)


def fixed_quantizer(low, high):
    """int8 activations whose range is known: tanh, sigmoid products, softmax."""
    return quantizers.FixedQuantizer(
        num_bits=NUM_BITS, init_min=low, init_max=high, narrow_range=False)


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

    def __ne__(self, other):
        return not self.__eq__(other)


class LayerQuantizeConfig(tfmot.quantization.keras.QuantizeConfig):
    """A tfmot `QuantizeConfig` for a layer with named activation points.

    tfmot's `get_activations_and_quantizers` covers `activation` attributes of
    built-in layers; our layers compute their nonlinearities inline, so the
    quantized activations are named points (`activation_quantizers`) that the
    QAT layers look up. The QAT layers read quantized weights from
    `get_weights_and_quantizers` themselves instead of `set_quantize_weights`
    assigning them onto the layer: replacing a tracked variable attribute with
    a tensor would untrack the variable (and its checkpoint entry).

    Subclasses set `weight_names` and implement `activation_quantizers`.
    """

    weight_names = ()

    def weight_quantizers(self):
        """`{weight attribute: Quantizer}`."""
        return {name: weight_quantizer() for name in self.weight_names}

    def activation_quantizers(self):
        """`{activation point: Quantizer}`."""
        return {}

    def get_weights_and_quantizers(self, layer):
        return [(getattr(layer, name), quantizer)
                for name, quantizer in self.weight_quantizers().items()]

    def get_activations_and_quantizers(self, layer):
        return []

    def set_quantize_weights(self, layer, quantize_weights):
        pass  # the QAT layers use the quantized tensors directly (see above)

    def set_quantize_activations(self, layer, quantize_activations):
        pass

    def get_output_quantizers(self, layer):
        quantizer = self.activation_quantizers().get("output")
        return [quantizer] if quantizer is not None else []

    def get_config(self):
        return {}


class LSTMQuantizeConfig(LayerQuantizeConfig):
    """`kernel`, `recurrent_kernel`; input, input projection, `h`, clipped `c`.

    Args:
      cell_clip: the model's `cell_clip` variable, or None (no cell clipping:
        the cell state stays float).
    """

    weight_names = ("kernel", "recurrent_kernel")

    def __init__(self, cell_clip=None):
        self.cell_clip = cell_clip

    def activation_quantizers(self):
        points = {"input": activation_quantizer(),
                  "projected": activation_quantizer(),
                  "recurrent": activation_quantizer(),
                  "output": fixed_quantizer(-1.0, 1.0)}
        if self.cell_clip is not None:
            points["cell"] = ClipRangeQuantizer(self.cell_clip)
        return points


class DenseQuantizeConfig(LayerQuantizeConfig):
    """`kernel` and the output (a learned range)."""

    weight_names = ("kernel",)

    def activation_quantizers(self):
        return {"output": activation_quantizer()}


class EmbeddingQuantizeConfig(LayerQuantizeConfig):
    """The `embeddings` table only: a lookup's output is the table's values,
    already on the table's int8 grid."""

    weight_names = ("embeddings",)


class AttentionQuantizeConfig(LayerQuantizeConfig):
    """Additive attention around its three `QATDense`s (which quantize their
    own kernels and outputs): memory in, tanh hidden layer [-1, 1], softmax
    probabilities [0, 1]."""

    def activation_quantizers(self):
        return {"memory": activation_quantizer(),
                "hidden": fixed_quantizer(-1.0, 1.0),
                "probabilities": fixed_quantizer(0.0, 1.0)}


class OutputQuantizeConfig(LayerQuantizeConfig):
    """GNMT's softmax projection: decoder output in, logits out.

    The projection matrix is the (tied) target embedding or the `output`
    Dense, quantized by their own configs. Logits get the range
    [-gamma, gamma] when the model clips them (`logit_clip`), else a learned
    one.

    Args:
      logit_clip: float gamma or None.
    """

    def __init__(self, logit_clip=None):
        self.logit_clip = logit_clip

    def activation_quantizers(self):
        logits = (ClipRangeQuantizer(self.logit_clip) if self.logit_clip
                  else activation_quantizer())
        return {"decoder_output": activation_quantizer(), "logits": logits}

    def get_config(self):
        return {"logit_clip": self.logit_clip}


def _training(training):
    """A Python bool: `training`, else the enclosing Keras call's mode."""
    if training is None:
        training = base_layer_utils.call_context().training
    if isinstance(training, (bool, int)) or training is None:
        return bool(training)
    raise TypeError("QAT layers need a Python bool `training`, got a tensor")


class _Quantizers:
    """The quantizers of one layer and their range variables.

    A plain object (not tracked by Keras); the variables themselves belong to
    the layer (`add_weight`), so checkpoints hold them.
    """

    def __init__(self):
        self.weights = {}      # weight name -> (Quantizer, variables)
        self.activations = {}  # point name -> (Quantizer, variables)
        self.calibration = None  # point name -> [sum_min, sum_max, count]


class FakeQuantMixin:
    """Builds and applies a `LayerQuantizeConfig`'s quantizers in a layer.

    Put it first in a QAT layer's bases: its `quantized_weight` and
    `fake_quant` then override a float layer's identity hooks of the same
    names (`task_space.layer_utils.QuantizationPoints`).
    """

    def _build_quantizers(self, quantize_config):
        fq = _Quantizers()
        pairs = quantize_config.get_weights_and_quantizers(self)
        for name, (variable, quantizer) in zip(quantize_config.weight_names,
                                               pairs):
            fq.weights[name] = (quantizer,
                                quantizer.build(variable.shape, name, self))
        for name, quantizer in quantize_config.activation_quantizers().items():
            fq.activations[name] = (quantizer,
                                    quantizer.build(None, name, self))
        self._fq = fq

    def quantized_weight(self, name, variable, training=None):
        quantizer, weights = self._fq.weights[name]
        return quantizer(variable, _training(training), weights)

    def fake_quant(self, point, x, training=None, observe=True):
        """Fake-quantizes activation `x` at `point`.

        While `calibrate` runs, learned ranges are not applied but recorded
        (`observe=True`) or skipped (`observe=False`: inside `tf.scan`).
        """
        quantizer, weights = self._fq.activations[point]
        if self._fq.calibration is not None and weights:
            if not observe:
                return x
            stats = self._fq.calibration.setdefault(point, [0.0, 0.0, 0])
            stats[0] += float(tf.reduce_min(x))
            stats[1] += float(tf.reduce_max(x))
            stats[2] += 1
            return x
        return quantizer(x, _training(training), weights)

    def quantizers(self):
        """`{name: Quantizer}` of weights and activation points."""
        return {**{n: q for n, (q, _) in self._fq.weights.items()},
                **{n: q for n, (q, _) in self._fq.activations.items()}}


class QATLSTM(FakeQuantMixin, LSTM):
    """`LSTM` with fake-quantized weights and activations (`LSTMQuantizeConfig`).

    Same variables (`kernel`, `recurrent_kernel`, `bias`) and arithmetic as
    `LSTM`, plus the quantizers' range variables.
    """

    def __init__(self, units, cell_clip=None, **kwargs):
        super().__init__(units, cell_clip, **kwargs)
        self.quantize_config = LSTMQuantizeConfig(cell_clip)

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(self.quantize_config)

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
        training = _training(training)
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


class QATDense(FakeQuantMixin, keras.layers.Dense):
    """`keras.layers.Dense` (no activation) with a fake-quantized kernel and
    output (`DenseQuantizeConfig`)."""

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(DenseQuantizeConfig())

    def call(self, inputs, training=None):
        kernel = self.quantized_weight("kernel", self.kernel, training)
        # One 2-D matmul with its bias, activation and output quantizer, the
        # reshape after them: TFLite then runs an int8 FullyConnected (a
        # Reshape between MatMul and bias add leaves it float).
        flat = tf.reshape(inputs, [-1, kernel.shape[0]])
        outputs = tf.matmul(flat, kernel)
        if self.use_bias:
            outputs = outputs + self.bias
        outputs = self.fake_quant("output", self.activation(outputs), training)
        if inputs.shape.rank == 2:
            return outputs
        # Static sizes where known: the converter lowers the attention's
        # broadcasts only when at most one dimension is unknown.
        dynamic = tf.shape(inputs)
        leading = [size if size is not None else dynamic[i]
                   for i, size in enumerate(inputs.shape[:-1])]
        return tf.reshape(outputs, leading + [kernel.shape[1]])


class QATEmbedding(FakeQuantMixin, keras.layers.Embedding):
    """`keras.layers.Embedding` over a fake-quantized table
    (`EmbeddingQuantizeConfig`); `quantized_embeddings` serves the tied
    softmax projection."""

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(EmbeddingQuantizeConfig())

    def quantized_embeddings(self, training=None):
        return self.quantized_weight("embeddings", self.embeddings, training)

    def call(self, inputs, training=None):
        return tf.gather(self.quantized_embeddings(training),
                         tf.cast(inputs, tf.int32))


class QATAdditiveAttention(FakeQuantMixin, AdditiveAttention):
    """`AdditiveAttention` with `QATDense` projections and fake-quantized
    memory, hidden layer, probabilities and context
    (`AttentionQuantizeConfig`)."""

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.query_dense = QATDense(units, use_bias=False, name="query")
        self.memory_dense = QATDense(units, use_bias=True, name="memory")
        self.score_dense = QATDense(1, use_bias=False, name="score")
        self._build_quantizers(AttentionQuantizeConfig())

    def project_memory(self, memory):
        return self.memory_dense(self.fake_quant("memory", memory))

    def call(self, query, memory, memory_keys, memory_mask, training=None):
        training = _training(training)
        single_step = query.shape.rank == 2
        if single_step:
            query = query[:, None, :]
        memory = self.fake_quant("memory", memory, training)
        q = self.query_dense(query, training=training)  # [B, T, A]
        hidden = self.fake_quant(
            "hidden", tf.tanh(q[:, :, None, :] + memory_keys[:, None, :, :]),
            training)  # [B, T, S, A]
        scores = tf.squeeze(self.score_dense(hidden, training=training), -1)
        scores = tf.where(memory_mask[:, None, :], scores, -1e9)
        probs = self.fake_quant("probabilities", tf.nn.softmax(scores, -1),
                                training)
        # No range of its own: the context only feeds the next layers'
        # concatenated inputs, whose quantizer gives the scale (TFLite's int8
        # Concatenation needs one scale for its inputs and output).
        context = tf.matmul(probs, memory)  # [B, T, Dk]
        if single_step:
            return context[:, 0], probs[:, 0]
        return context, probs


def qat_layers(model):
    """Every layer of `model` (depth first) that fake-quantizes."""
    return [layer for layer in model._flatten_layers(include_self=True)
            if isinstance(layer, FakeQuantMixin)]


def init_weight_ranges(model):
    """Sets every weight quantizer's range from its weight's current values.

    tfmot's `LastValueQuantizer` learns ranges only in training steps; after
    restoring float weights the ranges would still be tfmot's initial
    [-6, 6]. Ranges are symmetric, as `weight_quantizer`'s.
    """
    for layer in qat_layers(model):
        for name, (_, weights) in layer._fq.weights.items():
            bound = tf.reduce_max(tf.abs(getattr(layer, name)))
            weights["min_var"].assign(-bound)
            weights["max_var"].assign(bound)


def calibrate(model, batches):
    """Sets learned activation ranges from `model`'s inputs `batches`.

    Runs the teacher-forced pass in inference mode with fake quantization of
    activations turned off and sets each learned range to the mean of the
    per-batch minima and maxima (zero always included, as TFLite needs;
    symmetric around zero for a symmetric quantizer).

    Args:
      model: a QAT model (`export.qat.QATGNMT`,
        `export.transformer_qat.QATTaskSpaceTransformer`), built.
      batches: iterable of model inputs (`{"source_ids", "target_in_ids"}`,
        plus the task inputs for a task-space model).

    Returns:
      Number of batches used.
    """
    layers = qat_layers(model)
    for layer in layers:
        layer._fq.calibration = {}
    count = 0
    try:
        for features in batches:
            model(features, training=False)
            count += 1
    finally:
        stats = {}
        for layer in layers:
            stats[layer] = layer._fq.calibration
            layer._fq.calibration = None
    for layer, points in stats.items():
        for point, (low, high, n) in points.items():
            quantizer, weights = layer._fq.activations[point]
            low, high = min(low / n, 0.0), max(high / n, 0.0)
            if quantizer.get_config().get("symmetric"):
                low, high = -max(-low, high), max(-low, high)
            weights["min_var"].assign(low)
            weights["max_var"].assign(high)
    return count
