"""Fake quantization shared by the QAT variants of every model family.

tfmot's `quantize_model` clones only Sequential and functional models, and
its `QuantizeWrapperV2` intercepts only `__call__` and renames every
variable, while our models are subclassed and decode through `step` methods
(tensorflow/model-optimization#292, #812; tensorflow/tensorflow#40699,
#61329). So we keep tfmot's quantizers and `QuantizeConfig` and drop its
model surgery: QAT layers (`gnmt_tf.models.gnmt.qat`, `gnmt_tf.models.task_space.qat`) mix
in `FakeQuantMixin`, build their quantizers' range variables with the
quantizers' own `build` and apply them (fake-quant ops, straight-through
gradients) wherever the float layer computes the matching value, in `call`
and `step` alike, under the float layers' variable names.
"""

import math

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tensorflow_model_optimization as tfmot
import tf_keras as keras
from tf_keras.src.engine import base_layer_utils

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


class LayerQuantizeConfig(tfmot.quantization.keras.QuantizeConfig):
    """The tfmot `QuantizeConfig` of a QAT layer: its int8 weights and its
    named activation points.

    tfmot's configs cover the `activation` attributes of built-in layers;
    ours compute their nonlinearities inline, so the QAT layers look points
    up by name (`FakeQuantMixin.fake_quant`), and read quantized weights from
    `get_weights_and_quantizers` themselves: assigning tensors onto the
    layer, as `set_quantize_weights` would, untracks the variables and their
    checkpoint entries.

    Args:
      weight_names: weight attributes, quantized by `weight_quantizer`.
      **points: activation point name -> its `Quantizer`.

    Example:
      >>> LayerQuantizeConfig(["kernel"], output=activation_quantizer())
    """

    def __init__(self, weight_names=(), **points):
        self.weight_names = tuple(weight_names)
        self.points = points

    def weight_quantizers(self):
        """`{weight attribute: Quantizer}`."""
        return {name: weight_quantizer() for name in self.weight_names}

    def activation_quantizers(self):
        """`{activation point: Quantizer}`."""
        return dict(self.points)

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
        return [self.points["output"]] if "output" in self.points else []

    def get_config(self):
        return {"weight_names": list(self.weight_names),
                "points": sorted(self.points)}


def resolve_training(training):
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
    names (`gnmt_tf.models.task_space.layer_utils.QuantizationPoints`).
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
        return quantizer(variable, resolve_training(training), weights)

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
        return quantizer(x, resolve_training(training), weights)

    def quantizers(self):
        """`{name: Quantizer}` of weights and activation points."""
        return {**{n: q for n, (q, _) in self._fq.weights.items()},
                **{n: q for n, (q, _) in self._fq.activations.items()}}


def quantized_matmul(layer, inputs, num_contracted, training=None):
    """A QAT dense layer's output: `inputs [..., *in] @ kernel [*in, *out]`.

    One 2-D matmul with the bias, activation and `layer`'s ``output``
    quantizer applied to it and the reshape after them, which TFLite runs as
    an int8 FullyConnected on an int8-stored kernel (a Reshape between the
    MatMul and its bias add leaves it float, on a float copy of the kernel).
    Static sizes where known: the converter lowers GNMT attention's
    broadcasts only when at most one dimension is unknown.
    """
    kernel = layer.quantized_weight("kernel", layer.kernel, training)
    size_in = math.prod(kernel.shape[:num_contracted])
    out_shape = kernel.shape[num_contracted:].as_list()
    if kernel.shape.rank != 2:
        kernel = tf.reshape(kernel, [size_in, -1])
    outputs = tf.matmul(tf.reshape(inputs, [-1, size_in]), kernel)
    if layer.bias is not None:
        outputs = outputs + tf.reshape(layer.bias, [-1])
    outputs = layer.fake_quant("output", layer.activation(outputs), training)
    rank = inputs.shape.rank - num_contracted
    if rank == 1 and len(out_shape) == 1:
        return outputs
    dynamic = tf.shape(inputs)
    leading = [size if size is not None else dynamic[i]
               for i, size in enumerate(inputs.shape[:rank])]
    return tf.reshape(outputs, leading + out_shape)


class QATDense(FakeQuantMixin, keras.layers.Dense):
    """`keras.layers.Dense` with a fake-quantized kernel and output (a
    learned range); see `quantized_matmul`."""

    def build(self, input_shape):
        super().build(input_shape)
        self._build_quantizers(LayerQuantizeConfig(
            ["kernel"], output=activation_quantizer()))

    def call(self, inputs, training=None):
        return quantized_matmul(self, inputs, 1, training)


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
      model: a built QAT model (`gnmt_tf.models.gnmt.qat.QATGNMT`,
        `gnmt_tf.models.task_space.qat.QATTaskSpaceTransformer`).
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
