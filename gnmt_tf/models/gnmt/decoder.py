"""GNMT decoder: bottom LSTM queries attention; the context feeds upper layers."""

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.models.gnmt.additive_attention import AdditiveAttention
from gnmt_tf.models.gnmt.encoder import clip_residual
from gnmt_tf.models.gnmt.lstm import LSTM
from gnmt_tf.layers.recompute import checkpointed


class GNMTDecoder(keras.layers.Layer):
    """The decoder of Wu et al. 2016 (§3, Fig. 1).

    The bottom LSTM reads the previous target embedding; its output is the query
    of an additive attention over the top encoder layer. The attention context is
    concatenated to the input of every upper layer. Because the query comes from
    the bottom layer (not the top one), training runs every layer over the whole
    target sequence at once under teacher forcing; decoding runs the same
    weights one step at a time (`step`).

    With `input_feeding` the bottom LSTM also reads the previous step's
    attention context (Luong et al. 2015 §3.3; what tensorflow/nmt's GNMT
    cell does through its `AttentionWrapper`), so the query knows what was
    already attended to. Training then runs the bottom layer and the
    attention together one position at a time (the upper layers still run
    over the whole sequence).

    Args:
      num_layers: int. Decoder layers (>= 2).
      hidden_dim: int. Units per LSTM.
      attention_dim: int. Hidden size of the additive attention.
      dropout: float. Dropout on each layer's input during training.
      residual_start: int. First 1-based layer with a residual connection.
      cell_clip: scalar `tf.Variable` or None. Quantization-friendly clipping.
      recompute: bool. Recompute each layer's activations in the backward
        pass (`gnmt_tf.layers.recompute`).
      input_feeding: bool. Feed the previous attention context to the
        bottom LSTM.

    Call arguments:
      embedded: float `[B, T, D]` embeddings of the shifted target.
      memory: float `[B, S, H]` top encoder outputs.
      memory_mask: bool `[B, S]`.

    Returns:
      `(outputs [B, T, hidden_dim], attention [B, T, S])`.
    """

    lstm_class = LSTM  # QAT swaps in its fake-quantized LSTM
    attention_class = AdditiveAttention  # and its fake-quantized attention

    def __init__(self, num_layers, hidden_dim, attention_dim, dropout=0.0,
                 residual_start=3, cell_clip=None, recompute=False,
                 input_feeding=False, **kwargs):
        super().__init__(**kwargs)
        self.recompute = recompute
        self.input_feeding = input_feeding
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.attention_dim = attention_dim
        self.dropout = dropout
        self.residual_start = residual_start
        self.cell_clip = cell_clip
        self.lstms = [self.lstm_class(hidden_dim, cell_clip, name=f"lstm_{i}")
                      for i in range(1, num_layers + 1)]
        self.attention = self.attention_class(attention_dim, name="attention")
        self.dropout_layer = keras.layers.Dropout(dropout)

    def _upper(self, layer_index, out, x):
        if layer_index >= self.residual_start:
            return clip_residual(out + x, self.cell_clip)
        return out

    def call(self, embedded, memory, memory_mask, training=False):
        recompute = self.recompute and training
        memory_keys = self.attention.project_memory(memory)
        if self.input_feeding:
            # The memory goes in as an argument, not in the closure:
            # `tf.recompute_grad` differentiates positional arguments only.
            x, context, attention = checkpointed(
                lambda e, m, k: self._fed_bottom(e, m, k, memory_mask),
                recompute)(self.dropout_layer(embedded, training=training),
                           memory, memory_keys)
        else:
            x = checkpointed(lambda e: self.lstms[0](
                self.dropout_layer(e, training=training)), recompute)(embedded)
            context, attention = self.attention(x, memory, memory_keys,
                                                memory_mask)
        for index, lstm in enumerate(self.lstms[1:], start=2):
            out = checkpointed(
                lambda x, context, lstm=lstm: lstm(tf.concat(
                    [self.dropout_layer(x, training=training), context],
                    axis=-1)), recompute)(x, context)
            x = self._upper(index, out, x)
        return x, attention

    def _fed_bottom(self, embedded, memory, memory_keys, memory_mask):
        """The bottom LSTM and the attention, one target position at a time,
        each step reading the previous context: `embedded [B, T, D]` ->
        `(x [B, T, H], context [B, T, Dm], attention [B, T, S])`."""
        bottom = self.lstms[0]
        batch_size = tf.shape(memory)[0]
        h, c = bottom.zero_state(batch_size, memory.dtype)
        context = tf.zeros_like(memory[:, 0, :])
        # Variables must not be made inside the loop below: a first call
        # (one position, thrown away) builds them under their own names.
        if not bottom.built:
            bottom(tf.concat([embedded[:, :1], context[:, None]], -1))
        if not self.attention.built:
            self.attention(h, memory, memory_keys, memory_mask)

        def body(carry, e_t):
            h, c, context, _ = carry
            x, (h, c) = bottom.step(tf.concat([e_t, context], -1), (h, c))
            context, attention = self.attention(x, memory, memory_keys,
                                                memory_mask)
            return h, c, context, attention

        attention0 = tf.zeros_like(memory_mask, memory.dtype)
        xs, _, contexts, attentions = tf.scan(
            body, tf.transpose(embedded, [1, 0, 2]),
            initializer=(h, c, context, attention0))
        return (tf.transpose(xs, [1, 0, 2]), tf.transpose(contexts, [1, 0, 2]),
                tf.transpose(attentions, [1, 0, 2]))

    def initial_state(self, memory, memory_mask):
        """Decoding state for `step`: attention memory plus zero LSTM states."""
        batch_size = tf.shape(memory)[0]
        state = {"memory": memory,
                 "memory_keys": self.attention.project_memory(memory),
                 "memory_mask": memory_mask}
        for i, lstm in enumerate(self.lstms):
            state[f"h_{i}"], state[f"c_{i}"] = lstm.zero_state(
                batch_size, memory.dtype)
        if self.input_feeding:
            state["context"] = tf.zeros_like(memory[:, 0, :])
        return state

    def step(self, embedded, state):
        """One decoding step: `embedded [N, D]` -> `(output [N, H], attention [N, S], state)`."""
        new_state = dict(state)
        if self.input_feeding:
            embedded = tf.concat([embedded, state["context"]], -1)
        x, (new_state["h_0"], new_state["c_0"]) = self.lstms[0].step(
            embedded, (state["h_0"], state["c_0"]))
        context, attention = self.attention(
            x, state["memory"], state["memory_keys"], state["memory_mask"])
        if self.input_feeding:
            new_state["context"] = context
        for i, lstm in enumerate(self.lstms[1:], start=1):
            out, (new_state[f"h_{i}"], new_state[f"c_{i}"]) = lstm.step(
                tf.concat([x, context], axis=-1),
                (state[f"h_{i}"], state[f"c_{i}"]))
            x = self._upper(i + 1, out, x)
        return x, attention, new_state

    def get_config(self):
        config = super().get_config()
        config.update({"num_layers": self.num_layers,
                       "hidden_dim": self.hidden_dim,
                       "attention_dim": self.attention_dim,
                       "dropout": self.dropout,
                       "residual_start": self.residual_start,
                       "recompute": self.recompute,
                       "input_feeding": self.input_feeding})
        return config
