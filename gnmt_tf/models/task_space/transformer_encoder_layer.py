"""`TransformerEncoderLayer`: one pre-layer-norm Transformer encoder block."""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tf_keras as keras

from gnmt_tf.models.task_space.cached_multi_head_attention import CachedMultiHeadAttention
from gnmt_tf.models.task_space.layer_utils import QuantizationPoints
from gnmt_tf.models.task_space.layer_utils import build_sublayer


@keras.utils.register_keras_serializable(package="task_space")
class TransformerEncoderLayer(QuantizationPoints, keras.layers.Layer):
    """Self-attention and feed-forward blocks with pre-layer normalization.

    `x = x + dropout(SelfAttention(LayerNorm(x)))`, then
    `x = x + dropout(FFN(LayerNorm(x)))` with `FFN = Dense(relu) -> Dense`.
    Pre-LN (Xiong et al., 2020) trains without learning-rate warm-up
    tricks; the stack that uses these layers must end with a LayerNorm.

    Args:
        num_heads: int. Attention heads; must divide the input width `d`.
        intermediate_dim: int. Inner width of the feed-forward block.
        dropout: float. Dropout on the residual branches and inside the FFN.
        attention_dropout: float. Dropout on attention probabilities.
        layer_norm_epsilon: float.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        x: float `[B, S, d]`.
        mask: optional bool `[B, 1, S]` (key padding) or `[B, S, S]`;
            True = may attend.
        training: bool.

    Returns:
        float `[B, S, d]`.

    Quantization points (`QuantizationPoints`): each residual sum,
    `"<block>_residual"` for the blocks `"self_attention"` and `"ffn"`.
    """

    # Sublayer classes (a QAT variant swaps in its own).
    attention_class = CachedMultiHeadAttention
    dense_class = keras.layers.Dense
    layer_norm_class = keras.layers.LayerNormalization

    def __init__(self, num_heads, intermediate_dim, dropout=0.0,
                 attention_dropout=0.0, layer_norm_epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        policy = self.dtype_policy

        # === Layers ===
        def layer_norm(name):
            return self.layer_norm_class(
                epsilon=self.layer_norm_epsilon, dtype=policy, name=name)

        self._attention_norm = layer_norm("self_attention_norm")
        self._attention = self.attention_class(
            self.num_heads, hidden_dim // self.num_heads,
            dropout=self.attention_dropout, dtype=policy,
            name="self_attention")
        self._ffn_norm = layer_norm("ffn_norm")
        self._ffn_inner = self.dense_class(
            self.intermediate_dim, activation="relu", dtype=policy,
            name="ffn_inner")
        self._ffn_outer = self.dense_class(
            hidden_dim, dtype=policy, name="ffn_outer")
        self._dropout_layer = keras.layers.Dropout(self.dropout, dtype=policy)

        shape = (None, None, hidden_dim)
        for layer in (self._attention_norm, self._attention, self._ffn_norm,
                      self._ffn_inner):
            build_sublayer(layer, shape)
        build_sublayer(self._ffn_outer, (None, None, self.intermediate_dim))
        super().build(input_shape)

    def residual(self, x, h, block, training=False):
        """`x + dropout(h)`: the residual sum after `block`."""
        return self.fake_quant(
            f"{block}_residual", x + self._dropout_layer(h, training=training),
            training)

    def feed_forward(self, x, training=False):
        """The residual FFN block, `[B, T, d] -> [B, T, d]`."""
        h = self._ffn_inner(self._ffn_norm(x))
        h = self._ffn_outer(self._dropout_layer(h, training=training))
        return self.residual(x, h, "ffn", training)

    def call(self, x, mask=None, training=False):
        h = self._attention_norm(x)
        h, _ = self._attention(h, h, mask=mask, training=training)
        x = self.residual(x, h, "self_attention", training)
        return self.feed_forward(x, training=training)

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads,
                       "intermediate_dim": self.intermediate_dim,
                       "dropout": self.dropout,
                       "attention_dropout": self.attention_dropout,
                       "layer_norm_epsilon": self.layer_norm_epsilon})
        return config
