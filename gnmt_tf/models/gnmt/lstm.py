"""An LSTM layer built from plain kernels, with optional cell-state clipping.

Written by hand rather than using `keras.layers.LSTM` because GNMT's
quantization-friendly training clips cell states to [-delta, delta] (Wu et al.
2016, §6), which Keras' LSTM cannot do, and because tfmot cannot quantize Keras'
LSTM while it can quantize this layer's `kernel` / `recurrent_kernel` through a
custom `QuantizeConfig`. It also exposes a single `step` so that decoding reuses
the exact weights and arithmetic of the full-sequence pass.
"""

import tensorflow as tf
import tf_keras as keras


class LSTM(keras.layers.Layer):
    """Unidirectional LSTM over a whole sequence, or one step at a time.

    Gates are ordered (input, forget, candidate, output); the forget bias starts
    at 1. Sequences are left-aligned (padding at the end), so padded positions
    never influence valid ones and no mask is needed.

    Args:
      units: int. Hidden and cell size.
      cell_clip: a scalar `tf.Variable` or None. When given, cell states are
        clipped to [-cell_clip, cell_clip] at every step.

    Call arguments:
      inputs: float `[B, T, D]`.
      initial_state: optional `(h, c)`, each `[B, units]`.

    Returns:
      Hidden states `[B, T, units]`.
    """

    def __init__(self, units, cell_clip=None, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.cell_clip = cell_clip

    def build(self, input_shape):
        input_dim = input_shape[-1]
        self.kernel = self.add_weight(
            "kernel", shape=(input_dim, 4 * self.units),
            initializer="glorot_uniform")
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", shape=(self.units, 4 * self.units),
            initializer="orthogonal")
        self.bias = self.add_weight(
            "bias", shape=(4 * self.units,),
            initializer=keras.initializers.Constant(
                [0.0] * self.units + [1.0] * self.units
                + [0.0] * 2 * self.units))
        super().build(input_shape)

    def zero_state(self, batch_size, dtype=tf.float32):
        zeros = tf.zeros([batch_size, self.units], dtype)
        return zeros, zeros

    def _cell(self, projected_input, h, c):
        # projected_input = x @ kernel + bias, [B, 4H].
        gates = projected_input + tf.matmul(h, self.recurrent_kernel)
        i, f, g, o = tf.split(gates, 4, axis=-1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        if self.cell_clip is not None:
            c = tf.clip_by_value(c, -self.cell_clip, self.cell_clip)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, c

    def step(self, x, state):
        """One time step: `x [B, D]`, `state (h, c)` -> `(h, (h, c))`."""
        h, c = self._cell(tf.matmul(x, self.kernel) + self.bias, *state)
        return h, (h, c)

    def call(self, inputs, initial_state=None):
        batch_size = tf.shape(inputs)[0]
        if initial_state is None:
            initial_state = self.zero_state(batch_size, inputs.dtype)
        # The input projection of all time steps is one large matmul; only the
        # recurrent matmul stays inside the loop.
        projected = tf.einsum("btd,dg->tbg", inputs, self.kernel) + self.bias

        def body(state, x_t):
            return self._cell(x_t, *state)

        hs, _ = tf.scan(body, projected, initializer=initial_state)
        return tf.transpose(hs, [1, 0, 2])  # [B, T, H]

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config
