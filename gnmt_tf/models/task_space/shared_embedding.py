"""`SharedEmbedding`: one matrix for source, target and output projection."""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.models.task_space.layer_utils import QuantizationPoints


@keras.utils.register_keras_serializable(package="task_space")
class SharedEmbedding(QuantizationPoints, keras.layers.Layer):
    """Token embedding tied with the output softmax projection.

    One matrix `E [V, d]` embeds source tokens, target tokens, and (its
    transpose) projects decoder states to vocabulary logits, as in Vaswani
    et al. (2017, section 3.4) with a shared source/target subword
    vocabulary. Looked-up embeddings are multiplied by `sqrt(d)`; `E` is
    initialised with standard deviation `d^-0.5`, so scaled embeddings start
    with unit variance, comparable to the position encodings, while logits
    `x @ E^T` of unit-variance states also start with unit variance.

    Args:
        vocabulary_size: int. `V`.
        hidden_dim: int. `d`.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        ids: int `[...]`.

    Returns:
        `call(ids)`: float `[..., d]`, scaled by `sqrt(d)`.
        `project(x, rows=None)`: logits `[..., V]` for states `x [..., d]`,
        or `[..., V']` over the vocabulary ids `rows [V']` (a shortlist).
    """

    def __init__(self, vocabulary_size, hidden_dim, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, self.hidden_dim),
            initializer=keras.initializers.RandomNormal(
                stddev=self.hidden_dim ** -0.5))
        super().build(input_shape)

    def call(self, ids):
        embeddings = tf.cast(
            self.quantized_weight("embeddings", self.embeddings),
            self.compute_dtype)
        scale = tf.cast(self.hidden_dim ** 0.5, self.compute_dtype)
        return tf.gather(embeddings, ids) * scale

    def project(self, x, rows=None):
        embeddings = tf.cast(
            self.quantized_weight("embeddings", self.embeddings), x.dtype)
        width = self.vocabulary_size
        if rows is not None:  # a shortlist: only these rows of E
            embeddings = tf.gather(embeddings, rows)
            width = tf.size(rows)
        # A plain 2-D matmul: TF's CPU float16 einsum with "..." gave wrong
        # results (TF 2.21), breaking mixed_float16 decoding.
        flat = tf.reshape(x, [-1, self.hidden_dim])
        logits = self.fake_quant(
            "logits", tf.matmul(flat, embeddings, transpose_b=True))
        return tf.reshape(logits, tf.concat([tf.shape(x)[:-1], [width]], 0))

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_size": self.vocabulary_size,
                       "hidden_dim": self.hidden_dim})
        return config
