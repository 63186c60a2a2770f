"""`ExampleGRU`: a gated recurrent decoder attending over embedded source
words.

Deliberately small: the point is the interface (`encode`, `initial_state`,
`step`, and `call` for `model.fit`), not the quality.
"""

import dataclasses

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.seq2seq_model import Seq2SeqModelBase


class GatedCell(keras.layers.Layer):
    """A one-gate recurrent cell (a minimal gated unit): `h' = z * h + (1 -
    z) * tanh(W [x, h])`, `z = sigmoid(U [x, h])`. Two kernels rather than a
    GRU's split one, so the exports use only ops the other families use."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units
        self.gate = keras.layers.Dense(units, activation="sigmoid",
                                       name="gate")
        self.candidate = keras.layers.Dense(units, activation="tanh",
                                            name="candidate")

    def call(self, inputs, states):
        hidden = states[0]
        both = tf.concat([inputs, hidden], -1)
        gate = self.gate(both)
        hidden = gate * hidden + (1.0 - gate) * self.candidate(both)
        return hidden, [hidden]


@dataclasses.dataclass
class ExampleGRUConfig:
    """The model's size and its vocabulary's special ids."""

    vocabulary_size: int = 64
    hidden_dim: int = 32
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3


class ExampleGRU(Seq2SeqModelBase, keras.Model):
    """A gated recurrent decoder (`GatedCell`) with scaled dot-product attention over the projected
    source embeddings; one fixed direction (no task inputs).

    Call arguments:
      inputs: dict with `source_ids` int32 `[B, S]` and `target_in_ids`
        int32 `[B, T]`, 0-padded.
      return_attention: also return the attention `[B, T, S]`.

    Returns:
      Logits `[B, T, vocabulary_size]`.
    """

    # `encode` has no loop: its exports take any batch size.
    exports_encode_at_any_batch = True

    def __init__(self, config: ExampleGRUConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.embedding = keras.layers.Embedding(
            config.vocabulary_size, config.hidden_dim, name="embedding")
        self.source_projection = keras.layers.Dense(
            config.hidden_dim, activation="tanh", name="source_projection")
        self.cell = GatedCell(config.hidden_dim, name="cell")
        self.decoder = keras.layers.RNN(self.cell, return_sequences=True,
                                        name="decoder")
        self.output_layer = keras.layers.Dense(config.vocabulary_size,
                                               name="output")

    def dummy_inputs(self):
        return {"source_ids": tf.constant([[self.config.eos_id]], tf.int32),
                "target_in_ids": tf.constant([[self.config.bos_id]],
                                             tf.int32)}

    def call(self, inputs, training=False, return_attention=False):
        encoded = self.encode(inputs["source_ids"])
        queries = self.decoder(self.embedding(inputs["target_in_ids"]))
        logits, attention = self._predict(queries, encoded["memory"],
                                          encoded["mask"])
        return (logits, attention) if return_attention else logits

    def encode(self, source_ids):
        mask = tf.cast(tf.not_equal(source_ids, self.config.pad_id),
                       tf.float32)
        return {"memory": self.source_projection(self.embedding(source_ids)),
                "mask": mask}

    def initial_state(self, encoded, max_length=None):
        batch = tf.shape(encoded["memory"])[0]
        return {"hidden": tf.zeros([batch, self.config.hidden_dim]),
                "memory": encoded["memory"], "mask": encoded["mask"]}

    def step(self, ids, state):
        hidden, _ = self.cell(self.embedding(ids), [state["hidden"]])
        logits, attention = self._predict(tf.expand_dims(hidden, 1),
                                          state["memory"], state["mask"])
        return (tf.nn.log_softmax(logits[:, 0]), attention[:, 0],
                dict(state, hidden=hidden))

    def _predict(self, queries, memory, mask):
        """`queries [B, T, H]` -> `(logits [B, T, V], attention [B, T, S])`."""
        scale = float(self.config.hidden_dim) ** -0.5
        scores = tf.einsum("bth,bsh->bts", queries, memory) * scale
        # expand_dims, not mask[:, None]: TFLite's builtins have no
        # new-axis slice.
        scores += (1.0 - tf.expand_dims(mask, 1)) * -1e9
        attention = tf.nn.softmax(scores)
        context = tf.einsum("bts,bsh->bth", attention, memory)
        return (self.output_layer(tf.concat([queries, context], -1)),
                attention)
