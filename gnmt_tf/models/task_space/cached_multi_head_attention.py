"""`CachedMultiHeadAttention`: scaled dot-product attention in three parts."""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import contextlib

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.models.task_space.layer_utils import QuantizationPoints
from gnmt_tf.models.task_space.layer_utils import build_sublayer
from gnmt_tf.models.task_space.layer_utils import mask_value


@keras.utils.register_keras_serializable(package="task_space")
class CachedMultiHeadAttention(QuantizationPoints, keras.layers.Layer):
    """Multi-head attention whose projections and attention are separable.

    `call(query, value, mask)` is ordinary multi-head attention (Vaswani et
    al., 2017). For incremental decoding the same computation is exposed in
    parts: `project_query(x)` and `project_key_value(x)` give per-head
    tensors, and `attend(q, k, v, mask)` combines them, so a decoder can keep
    keys/values of past positions (or of the encoder output) in a cache and
    attend to the cache with exactly the arithmetic of the full pass.

    Shapes: `B` batch, `T` query length, `S` key length, `H` heads, `Dh`
    `head_dim`, `d` the input width (`query.shape[-1]`).

    Args:
        num_heads: int. Number of attention heads `H`.
        head_dim: int. Width `Dh` of each head's queries, keys and values.
        dropout: float. Dropout applied to the attention probabilities.
        **kwargs: passed to `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        query: float `[B, T, d]`.
        value: float `[B, S, d]`; keys are projected from it too.
        mask: optional bool `[B, T, S]` or `[B, 1, S]`; True = may attend.
        training: bool. Enables dropout.

    Returns:
        `(output [B, T, d], probabilities [B, H, T, S])`; the probabilities
        are taken before dropout.

    Quantization points (`QuantizationPoints`): the scaled queries
    (`"query"`), the attention scores before masking (`"scores"`), the
    probabilities and the context (the output projection's input); keys,
    values and outputs are the projections' own outputs.
    """

    # The projection layer class (a QAT variant swaps in its own).
    einsum_dense_class = keras.layers.EinsumDense
    # One query position in float32 (a decoding step): products and sums,
    # not einsums (`_attend_one_query`). Read when a step is traced: set
    # by `one_query_products(True)` around a TFLite export; off in
    # TensorFlow, where it measured 1.12x faster at batch 32 but 0.77x at
    # batch 1 (`benchmarks/one_query_attention.py`).
    one_query_products = False

    def __init__(self, num_heads, head_dim, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.dropout = dropout

        # === Layers ===
        def projection(name):
            return self.einsum_dense_class(
                "btd,dhk->bthk", output_shape=(None, num_heads, head_dim),
                bias_axes="hk", dtype=self.dtype_policy, name=name)

        self._query_dense = projection("query")
        self._key_dense = projection("key")
        self._value_dense = projection("value")
        self._dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy)
        self._output_dense = None  # Width known at build time.

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        shape = (None, None, hidden_dim)
        self._output_dense = self.einsum_dense_class(
            "bthk,hkd->btd", output_shape=(None, hidden_dim), bias_axes="d",
            dtype=self.dtype_policy, name="output")
        for layer in (self._query_dense, self._key_dense, self._value_dense):
            build_sublayer(layer, shape)
        build_sublayer(self._output_dense,
                       (None, None, self.num_heads, self.head_dim))
        super().build(input_shape)

    def project_query(self, x):
        """`[B, T, d]` -> scaled queries `[B, T, H, Dh]`."""
        scale = tf.cast(self.head_dim ** -0.5, self.compute_dtype)
        return self.fake_quant("query", self._query_dense(x) * scale)

    def project_key_value(self, x):
        """`[B, S, d]` -> `(keys [B, S, H, Dh], values [B, S, H, Dh])`."""
        return self._key_dense(x), self._value_dense(x)

    def attend(self, query, key, value, mask=None, training=False):
        """Projected `query [B,T,H,Dh]`, `key`/`value [B,S,H,Dh]` -> call()."""
        if (self.one_query_products and query.shape[1] == 1
                and query.dtype == tf.float32):
            return self._attend_one_query(query, key, value, mask, training)
        scores = self.fake_quant("scores", tf.einsum(
            "bthk,bshk->bhts", query, key), training)  # [B, H, T, S]
        if mask is not None:
            # expand_dims, not mask[:, None]: TFLite lowers a new-axis
            # slice only with at most one unknown dimension.
            scores = tf.where(tf.expand_dims(mask, 1), scores,
                              tf.cast(mask_value(scores.dtype), scores.dtype))
        probabilities = self.fake_quant(
            "probabilities", tf.nn.softmax(scores, axis=-1), training)
        dropped = self._dropout_layer(probabilities, training=training)
        context = self.fake_quant("context", tf.einsum(
            "bhts,bshk->bthk", dropped, value), training)
        return self._output_dense(context), probabilities

    def _attend_one_query(self, query, key, value, mask, training):
        """`attend` for one query position (a decoding step), the same
        arithmetic up to float rounding, written with broadcast products
        and sums instead of the two einsums.

        Why: a step's einsums are `B * H` matrix products of one row
        each. TFLite's XNNPACK runs them as batched GEMMs, packing and
        transposing the keys and values for every call (a profile of the
        shipped Transformer's `decode_step` at 128 rows put a quarter of
        `Invoke` there); products and sums read them once, in place:
        3-4x faster per attention in TFLite. float32 only: in bfloat16
        the sums would round at bfloat16.
        """
        scores = tf.reduce_sum(query * key, axis=-1)  # [B, S, H]
        scores = self.fake_quant(
            "scores", tf.transpose(scores, [0, 2, 1]), training)  # [B, H, S]
        if mask is not None:  # [B, 1, S]: the same for every head
            scores = tf.where(mask, scores,
                              tf.cast(mask_value(scores.dtype), scores.dtype))
        probabilities = self.fake_quant(
            "probabilities", tf.nn.softmax(scores, axis=-1), training)
        dropped = self._dropout_layer(probabilities, training=training)
        weights = tf.expand_dims(tf.transpose(dropped, [0, 2, 1]), -1)
        context = self.fake_quant("context", tf.reduce_sum(
            weights * value, axis=1, keepdims=True), training)  # [B,1,H,Dh]
        return (self._output_dense(context),
                tf.expand_dims(probabilities, 2))  # [B, H, 1, S]

    def call(self, query, value, mask=None, training=False):
        key, value_heads = self.project_key_value(value)
        return self.attend(self.project_query(query), key, value_heads,
                           mask=mask, training=training)

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads,
                       "head_dim": self.head_dim,
                       "dropout": self.dropout})
        return config


@contextlib.contextmanager
def one_query_products(on=True):
    """Within it, steps traced attend with products and sums (`on`) or
    with the einsums (`CachedMultiHeadAttention.one_query_products`)."""
    before = CachedMultiHeadAttention.one_query_products
    CachedMultiHeadAttention.one_query_products = on
    try:
        yield
    finally:
        CachedMultiHeadAttention.one_query_products = before
