"""`SharedEmbedding`: one matrix for source, target and output projection."""

import contextlib

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
        self._transposed = None  # `E^T` within `hoisted_projection`

    @contextlib.contextmanager
    def hoisted_projection(self):
        """Within, `project` multiplies by `E^T` computed once, on entry.

        Entered while tracing a compiled search, before its loop, so that
        the transpose runs once a search rather than at every step: XLA's
        CPU dot with the transposed operand took 2.4x as long at 4 rows
        (736 against 306 us for `[4, 256] x [256, 8000]`, the step of
        beam 4 at batch 1), and XLA folds a transpose inside the loop back
        into the dot. Not for exports: a converter would store `E^T` as a
        second copy of the matrix.
        """
        self._transposed = tf.transpose(
            self.quantized_weight("embeddings", self.embeddings))
        try:
            yield
        finally:
            self._transposed = None

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, self.hidden_dim),
            initializer=keras.initializers.RandomNormal(
                stddev=self.hidden_dim ** -0.5))
        super().build(input_shape)

    def call(self, ids):
        # The gather reads `E` as a tensor first: a gather straight from the
        # variable (ResourceGather) switches it to copy-on-read for good, and
        # every later read of it (the output projection, at each search step)
        # then copies the whole [V, d] matrix (8 MB at V 8000).
        embeddings = tf.cast(tf.convert_to_tensor(
            self.quantized_weight("embeddings", self.embeddings)),
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
        if rows is None and self._transposed is not None:
            logits = tf.matmul(flat, tf.cast(self._transposed, x.dtype))
        else:
            logits = tf.matmul(flat, embeddings, transpose_b=True)
        logits = self.fake_quant("logits", logits)
        return tf.reshape(logits, tf.concat([tf.shape(x)[:-1], [width]], 0))

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_size": self.vocabulary_size,
                       "hidden_dim": self.hidden_dim})
        return config
