"""`SinusoidalPositionEncoding`: fixed sine/cosine position signals."""

import math

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras


@keras.utils.register_keras_serializable(package="task_space")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """Sinusoidal position encodings (Vaswani et al., 2017, section 3.5).

    For position `p` and `i < d/2`, channel `i` is `sin(p / w_i)` and channel
    `d/2 + i` is `cos(p / w_i)`, with `w_i = max_wavelength^(2i/d)`; the sine
    and cosine halves are concatenated rather than interleaved (as in
    tensor2tensor), which is equivalent up to a fixed permutation. Encodings
    are computed from the positions, so there is no length limit, and the
    layer has no weights.

    Args:
        hidden_dim: int. Encoding width `d` (even).
        max_wavelength: float. The longest wavelength.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        positions: int `[...]`; e.g. `tf.range(T)` or a per-row decoding
            time `[N]`.

    Returns:
        float `[..., d]` in the layer's compute dtype.
    """

    def __init__(self, hidden_dim, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        if hidden_dim % 2:
            raise ValueError(f"hidden_dim must be even, got {hidden_dim}")
        self.hidden_dim = hidden_dim
        self.max_wavelength = max_wavelength

    def call(self, positions):
        half = self.hidden_dim // 2
        exponents = tf.range(half, dtype=tf.float32) / float(half)
        inverse_wavelengths = tf.exp(
            -math.log(self.max_wavelength) * exponents)  # [d/2]
        angles = (tf.cast(positions, tf.float32)[..., None]
                  * inverse_wavelengths)  # [..., d/2]
        encoding = tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)
        return tf.cast(encoding, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_dim": self.hidden_dim,
                       "max_wavelength": self.max_wavelength})
        return config
