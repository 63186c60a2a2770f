"""GNMT encoder: bidirectional bottom LSTM, then residual LSTMs."""

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.models.gnmt.lstm import LSTM
from gnmt_tf.layers.recompute import checkpointed


def clip_residual(x, clip):
    return x if clip is None else tf.clip_by_value(x, -clip, clip)


class GNMTEncoder(keras.layers.Layer):
    """The encoder of Wu et al. 2016 (§3, Fig. 3).

    Layer 1 runs a forward and a backward LSTM over the embedded source and
    concatenates their outputs; layers 2..L are forward LSTMs; layers from
    `residual_start` up add their input to their output (residual connection),
    clipped to [-delta, delta] when `cell_clip` is set.

    With `bidirectional_layers` k > 1, layers 2..k are bidirectional too, each
    direction with hidden_dim / 2 units (their concatenation is hidden_dim
    wide, so the residual sums still match). On Multi30k this did not make
    the attention of a three-layer encoder align (Spearman -0.48 at step
    500, `benchmarks/attention_alignment.py`); a one-layer encoder does,
    which is why `gnmt_small` has one.

    Args:
      num_layers: int. Encoder layers, the bidirectional one included.
      hidden_dim: int. Units per LSTM (each direction of layer 1 included).
      dropout: float. Dropout on each layer's input during training.
      residual_start: int. First 1-based layer with a residual connection.
      cell_clip: scalar `tf.Variable` or None. Quantization-friendly clipping.
      recompute: bool. Recompute each layer's activations in the backward pass.
      bidirectional_layers: int. Bottom layers that are bidirectional (>= 1).

    Call arguments:
      embedded: float `[B, S, D]` source embeddings.
      lengths: int `[B]` source lengths (padding at the end).

    Returns:
      Top-layer outputs `[B, S, hidden_dim]`.
    """

    lstm_class = LSTM  # QAT swaps in its fake-quantized LSTM

    def __init__(self, num_layers, hidden_dim, dropout=0.0, residual_start=3,
                 cell_clip=None, recompute=False, bidirectional_layers=1,
                 **kwargs):
        super().__init__(**kwargs)
        self.recompute = recompute
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.dropout = dropout
        self.residual_start = residual_start
        self.cell_clip = cell_clip
        self.bidirectional_layers = bidirectional_layers
        lstm = self.lstm_class
        self.forward_lstm = lstm(hidden_dim, cell_clip, name="lstm_1_forward")
        self.backward_lstm = lstm(hidden_dim, cell_clip, name="lstm_1_backward")
        # Layer i (2-based) is upper_lstms[i - 2]; a bidirectional one also
        # has upper_backward_lstms[i - 2]. Unidirectional layers keep the
        # names they always had, so older checkpoints load.
        upper = range(2, num_layers + 1)
        self.upper_lstms = [
            lstm(hidden_dim // 2, cell_clip, name=f"lstm_{i}_forward")
            if i <= bidirectional_layers
            else lstm(hidden_dim, cell_clip, name=f"lstm_{i}") for i in upper]
        self.upper_backward_lstms = [
            lstm(hidden_dim // 2, cell_clip, name=f"lstm_{i}_backward")
            for i in upper if i <= bidirectional_layers]
        self.dropout_layer = keras.layers.Dropout(dropout)

    def reverse(self, x, lengths):
        """Reverses the first `lengths[b]` steps of each row of `x [B, S, D]`."""
        return tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)

    def _bidirectional(self, forward_lstm, backward_lstm, x, lengths,
                       recompute):
        forward = checkpointed(forward_lstm, recompute)(x)
        backward = self.reverse(checkpointed(backward_lstm, recompute)(
            self.reverse(x, lengths)), lengths)
        return forward, backward

    def call(self, embedded, lengths, training=False):
        recompute = self.recompute and training
        x = self.dropout_layer(embedded, training=training)
        forward, backward = self._bidirectional(
            self.forward_lstm, self.backward_lstm, x, lengths, recompute)
        if self.num_layers == 1:
            # One layer: average the two directions, so the decoder always
            # sees hidden_dim features.
            return 0.5 * (forward + backward)
        x = tf.concat([forward, backward], axis=-1)  # [B, S, 2H]
        for index, lstm in enumerate(self.upper_lstms, start=2):
            if index <= self.bidirectional_layers:
                out = tf.concat(self._bidirectional(
                    lstm, self.upper_backward_lstms[index - 2],
                    self.dropout_layer(x, training=training), lengths,
                    recompute), axis=-1)
            else:
                out = checkpointed(
                    lambda x, lstm=lstm: lstm(
                        self.dropout_layer(x, training=training)),
                    recompute)(x)
            if index >= self.residual_start:
                out = clip_residual(out + x, self.cell_clip)
            x = out
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"num_layers": self.num_layers,
                       "hidden_dim": self.hidden_dim,
                       "dropout": self.dropout,
                       "residual_start": self.residual_start,
                       "recompute": self.recompute,
                       "bidirectional_layers": self.bidirectional_layers})
        return config
