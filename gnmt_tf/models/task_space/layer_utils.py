"""Small helpers shared by the task-space Transformer layers."""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf


def build_sublayer(layer, input_shape):
    """Builds `layer` now, under its own name scope (as `__call__` would).

    Building every weight at construction time lets a model be restored
    from a checkpoint before its first call, and keeps variable creation out
    of the `tf.function`s that drive decoding.
    """
    if not layer.built:
        with tf.name_scope(layer.name):
            layer.build(input_shape)


def mask_value(dtype):
    """A large negative logit for masked attention positions in `dtype`."""
    return -3e4 if tf.as_dtype(dtype) == tf.float16 else -1e9


def causal_mask(length):
    """Bool `[length, length]`: True where query i may attend to key j<=i."""
    ones = tf.ones((length, length), tf.bool)
    return tf.linalg.band_part(ones, -1, 0)


class QuantizationPoints:
    """Names the weights and activations a quantized variant fake-quantizes.

    The float layers route each weight that feeds an int8 kernel through
    `quantized_weight` and each activation that needs an int8 range through
    `fake_quant`; both are the identity here. The quantization-aware
    variants (`gnmt_tf.models.task_space.qat`) put
    `gnmt_tf.quantization.FakeQuantMixin` first in their bases, which
    overrides both, so the float and the QAT model share one `call` and one
    incremental `step`.
    """

    def quantized_weight(self, name, variable, training=None):
        return variable

    def fake_quant(self, point, x, training=None):
        return x
