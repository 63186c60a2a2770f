"""`TransformerDecoderLayer`: one pre-layer-norm Transformer decoder block."""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.models.task_space.layer_utils import build_sublayer
from gnmt_tf.models.task_space.transformer_encoder_layer import TransformerEncoderLayer


@keras.utils.register_keras_serializable(package="task_space")
class TransformerDecoderLayer(TransformerEncoderLayer):
    """Masked self-attention, cross-attention and FFN, all pre-layer-norm.

    Extends `TransformerEncoderLayer` (whose self-attention and FFN blocks
    it reuses) with a cross-attention block between them:
    `x = x + dropout(CrossAttention(LayerNorm(x), memory))`.

    Two ways to run it, with the same arithmetic:
    - `call(x, memory, self_mask, cross_mask)`: all target positions at
      once (teacher forcing); `self_mask` should include the causal mask.
    - `step(x, cache, time, cross_mask)`: one new position per row, reading
      and updating a fixed-size key/value cache (see `step`).

    Args: as `TransformerEncoderLayer`.

    Call arguments:
        x: float `[B, T, d]`, decoder inputs.
        memory: float `[B, S, d]`, encoder outputs.
        self_mask: optional bool `[B, T, T]`; True = may attend.
        cross_mask: optional bool `[B, 1, S]` or `[B, T, S]`.
        training: bool.

    Returns:
        `(x [B, T, d], cross_attention [B, H, T, S])`.

    Quantization points: as `TransformerEncoderLayer`, plus
    `"cross_attention_residual"`.
    """

    def build(self, input_shape):
        super().build(input_shape)
        hidden_dim = input_shape[-1]
        self._cross_attention_norm = self.layer_norm_class(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy,
            name="cross_attention_norm")
        self._cross_attention = self.attention_class(
            self.num_heads, hidden_dim // self.num_heads,
            dropout=self.attention_dropout, dtype=self.dtype_policy,
            name="cross_attention")
        for layer in (self._cross_attention_norm, self._cross_attention):
            build_sublayer(layer, (None, None, hidden_dim))

    def compute_cross_key_value(self, memory):
        """Encoder outputs `[B, S, d]` -> cross keys, values `[B,S,H,Dh]`."""
        return self._cross_attention.project_key_value(memory)

    def _cross_attention_and_ffn(self, x, cross_key, cross_value, cross_mask,
                                 training):
        h = self._cross_attention_norm(x)
        h, probabilities = self._cross_attention.attend(
            self._cross_attention.project_query(h), cross_key, cross_value,
            mask=cross_mask, training=training)
        x = self.residual(x, h, "cross_attention", training)
        return self.feed_forward(x, training=training), probabilities

    def call(self, x, memory, self_mask=None, cross_mask=None,
             training=False):
        h = self._attention_norm(x)
        h, _ = self._attention(h, h, mask=self_mask, training=training)
        x = self.residual(x, h, "self_attention", training)
        cross_key, cross_value = self.compute_cross_key_value(memory)
        return self._cross_attention_and_ffn(
            x, cross_key, cross_value, cross_mask, training)

    def step(self, x, cache, time, cross_mask=None):
        """Decodes one position per row with a key/value cache (inference).

        Args:
            x: float `[N, 1, d]`, the input at each row's position `time`.
            cache: dict of `"cross_key"`, `"cross_value"` (float
                `[N, S, H, Dh]`, from `compute_cross_key_value`) and the
                self-attention keys/values of past positions, either
                fixed-size, `"self_key"`, `"self_value"` (float
                `[N, L, H, Dh]`: positions `< time` filled, zeros
                elsewhere), or growing, `"past_key"`, `"past_value"` (float
                `[N, t, H, Dh]`: one position per earlier `step` call, all
                of them attended to).
            time: int32 `[N]`, the position of `x` in each row; `< L`.
            cross_mask: optional bool `[N, 1, S]`, source padding.

        Returns:
            `(x [N, 1, d], cross_attention [N, H, 1, S], new_cache)`, where
            `new_cache` has this position's key/value written at `time`
            (fixed: all shapes unchanged, so it loops in `tf.while_loop`
            and in TFLite) or appended (growing: `t + 1` positions).
        """
        h = self._attention_norm(x)
        query = self._attention.project_query(h)
        key, value = self._attention.project_key_value(h)  # [N, 1, H, Dh]
        if "past_key" in cache:  # a growing cache: append, nothing masked
            keys = tf.concat([cache["past_key"], key], axis=1)
            values = tf.concat([cache["past_value"], value], axis=1)
            self_mask = None
            new_cache = dict(cache, past_key=keys, past_value=values)
        else:
            max_length = tf.shape(cache["self_key"])[1]
            positions = tf.range(max_length)[None, :]  # [1, L]
            # expand_dims, not `[:, :, None, None]`: TFLite lowers these
            # new-axis slices only where the cache length is static.
            write = tf.expand_dims(tf.expand_dims(
                tf.equal(positions, time[:, None]), -1), -1)
            keys = tf.where(write, key, cache["self_key"])  # [N, L, H, Dh]
            values = tf.where(write, value, cache["self_value"])
            self_mask = tf.expand_dims(positions <= time[:, None], 1)  # [N, 1, L]
            new_cache = dict(cache, self_key=keys, self_value=values)
        h, _ = self._attention.attend(query, keys, values, mask=self_mask)
        x = self.residual(x, h, "self_attention")
        x, probabilities = self._cross_attention_and_ffn(
            x, cache["cross_key"], cache["cross_value"], cross_mask, False)
        return x, probabilities, new_cache
