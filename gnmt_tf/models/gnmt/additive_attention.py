"""Additive (Bahdanau) attention with one feed-forward hidden layer, as in GNMT."""

import tensorflow as tf
import tf_keras as keras


class AdditiveAttention(keras.layers.Layer):
    """score(q, k) = v . tanh(W_q q + W_k k + b), softmax over valid keys.

    Keys are projected once per sentence (`project_memory`), then reused by every
    query, in training (all target positions at once) and in decoding (one
    position per step).

    Args:
      units: int. Size of the hidden layer.

    Call arguments:
      query: `[B, T, Dq]` (or `[B, Dq]` for one step).
      memory: `[B, S, Dk]` values attended over.
      memory_keys: `[B, S, units]` from `project_memory(memory)`.
      memory_mask: bool `[B, S]`, False at padding.

    Returns:
      `(context [B, T, Dk], probabilities [B, T, S])` (no T axis for one step).
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.query_dense = keras.layers.Dense(units, use_bias=False, name="query")
        self.memory_dense = keras.layers.Dense(units, use_bias=True, name="memory")
        self.score_dense = keras.layers.Dense(1, use_bias=False, name="score")

    def project_memory(self, memory):
        return self.memory_dense(memory)

    def call(self, query, memory, memory_keys, memory_mask):
        # expand_dims, not x[:, None]: TFLite lowers a new-axis slice only
        # with at most one unknown dimension (batch and source length).
        single_step = query.shape.rank == 2
        if single_step:
            query = tf.expand_dims(query, 1)
        q = self.query_dense(query)  # [B, T, A]
        hidden = tf.tanh(tf.expand_dims(q, 2)
                         + tf.expand_dims(memory_keys, 1))  # [B, T, S, A]
        scores = tf.squeeze(self.score_dense(hidden), -1)  # [B, T, S]
        scores = tf.where(tf.expand_dims(memory_mask, 1), scores, -1e9)
        probs = tf.nn.softmax(scores, axis=-1)
        context = tf.matmul(probs, memory)  # [B, T, Dk]
        if single_step:
            return context[:, 0], probs[:, 0]
        return context, probs

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config
