"""The GNMT sequence-to-sequence model (Wu et al. 2016, arXiv:1609.08144)."""

import dataclasses

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.config import GNMTConfig
from gnmt_tf.models.gnmt.decoder import GNMTDecoder
from gnmt_tf.models.gnmt.embedding import Embedding
from gnmt_tf.models.gnmt.encoder import GNMTEncoder
from gnmt_tf.seq2seq_model import Seq2SeqModelBase


class GNMT(Seq2SeqModelBase, keras.Model):
    """Deep residual LSTM encoder-decoder with bottom-to-top attention.

    `call` is the teacher-forced full-sequence pass used by `model.fit`;
    `encode` / `initial_state` / `step` are the step-function interface the
    shared searches in `gnmt_tf.decoding` drive (one target position per call,
    same weights and arithmetic). It is a `gnmt_tf.seq2seq_model.Seq2SeqModel`
    without task inputs.

    Args:
      config: `GNMTConfig` (or its fields as keyword arguments via `from_config`).

    Call arguments:
      inputs: dict with `source_ids` int `[B, S]` and `target_in_ids` int
        `[B, T]`, 0-padded (`target_in_ids` starts with the start token).

    Returns:
      Logits `[B, T, vocabulary_size]`.

    Example:
      >>> model = GNMT(gnmt_tf.models.gnmt.presets.get_preset("gnmt_tiny")[0])
      >>> logits = model({"source_ids": src, "target_in_ids": tgt_in})
    """

    # The layer classes, overridden by the quantization-aware model
    # (`gnmt_tf.models.gnmt.qat.QATGNMT`) with same-named fake-quantized layers.
    embedding_class = Embedding
    dense_class = keras.layers.Dense
    encoder_class = GNMTEncoder
    decoder_class = GNMTDecoder

    def __init__(self, config: GNMTConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        # Quantization-friendly training clips cell states and residual sums to
        # [-delta, delta]; delta lives in a variable so a callback can anneal it.
        self.cell_clip = None
        if config.clip_cell:
            self.cell_clip = tf.Variable(8.0, trainable=False, name="cell_clip")
        self.embedding = self.embedding_class(
            config.vocabulary_size, config.hidden_dim, name="embedding",
            embeddings_initializer=keras.initializers.RandomUniform(-0.1, 0.1))
        self.target_embedding = self.embedding
        if not config.tie_embeddings:
            self.target_embedding = self.embedding_class(
                config.vocabulary_size, config.hidden_dim, name="target_embedding",
                embeddings_initializer=keras.initializers.RandomUniform(-0.1, 0.1))
        self.encoder = self.encoder_class(
            config.num_encoder_layers, config.hidden_dim, config.dropout,
            config.residual_start, self.cell_clip, name="encoder",
            recompute=config.recompute,
            bidirectional_layers=config.bidirectional_layers)
        self.decoder = self.decoder_class(
            config.num_decoder_layers, config.hidden_dim, config.attention_dim,
            config.dropout, config.residual_start, self.cell_clip, name="decoder",
            recompute=config.recompute, input_feeding=config.input_feeding)
        self.output_bias = self.add_weight(
            "output_bias", shape=(config.vocabulary_size,), initializer="zeros")
        if not config.tie_embeddings:
            self.output_dense = self.dense_class(
                config.vocabulary_size, use_bias=False, name="output")

    def _logits(self, outputs, rows=None):
        """Logits `[..., V]`, or `[..., V']` over the vocabulary ids `rows
        [V']` (a shortlist: only those rows of the projection are used)."""
        if rows is not None:
            if self.config.tie_embeddings:
                weights = tf.gather(self.target_embedding.embeddings, rows)
            else:
                weights = tf.transpose(
                    tf.gather(self.output_dense.kernel, rows, axis=1))
            logits = (tf.matmul(outputs, weights, transpose_b=True)
                      + tf.gather(self.output_bias, rows))
        elif self.config.tie_embeddings:
            logits = tf.matmul(outputs, self.target_embedding.embeddings,
                               transpose_b=True) + self.output_bias
        else:
            logits = self.output_dense(outputs) + self.output_bias
        if self.config.logit_clip:
            gamma = self.config.logit_clip
            logits = tf.clip_by_value(logits, -gamma, gamma)
        return logits

    def encode(self, source_ids, training=False):
        """Encodes `source_ids [B, S]` -> dict(memory [B,S,H], memory_mask [B,S])."""
        source_ids = tf.convert_to_tensor(source_ids, tf.int32)
        mask = tf.not_equal(source_ids, self.config.pad_id)
        lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        memory = self.encoder(self.embedding(source_ids), lengths, training=training)
        return {"memory": memory, "memory_mask": mask}

    def call(self, inputs, training=False, return_attention=False):
        encoded = self.encode(inputs["source_ids"], training=training)
        target = self.target_embedding(tf.cast(inputs["target_in_ids"], tf.int32))
        outputs, attention = self.decoder(
            target, encoded["memory"], encoded["memory_mask"], training=training)
        logits = self._logits(outputs)
        if return_attention:
            return logits, attention
        return logits

    def dummy_inputs(self):
        """A one-token batch that builds every variable when called."""
        return {"source_ids": tf.constant([[self.config.eos_id]], tf.int32),
                "target_in_ids": tf.constant([[self.config.bos_id]], tf.int32)}

    # --- Seq2SeqModel (gnmt_tf.seq2seq_model): one fixed direction ---------

    max_target_length = None  # the LSTM state has no length limit
    default_task = {}
    trained_tasks = None
    fixed_task = {}  # its direction, from the model directory

    def task_inputs(self):
        """None: a GNMT model translates the one direction it was trained on."""
        return ()

    source_prefix = None  # nothing before the source

    def attach_model_dir(self, subwords, payload):
        """Reads the one direction the model translates from `config.json`
        (`payload`), as `fixed_task`."""
        del subwords
        self.fixed_task = {k: payload[k] for k in ("src_lang", "tgt_lang")
                           if payload.get(k)}

    def initial_state(self, encoded, max_length=None):
        """Decoding state (nested dict, every tensor `[B, ...]`) from `encode`
        (`max_length` is not needed: nothing is preallocated)."""
        del max_length
        return self.decoder.initial_state(encoded["memory"], encoded["memory_mask"])

    def step(self, ids, state):
        """`ids [N]` -> `(log_probs [N, V], attention [N, S], new_state)`."""
        outputs, attention, state = self.step_hidden(ids, state)
        return tf.nn.log_softmax(self.output_logits(outputs)), attention, state

    def step_hidden(self, ids, state):
        """`step` before the output projection: `ids [N]` -> `(hidden
        [N, H], attention [N, S], new_state)`."""
        embedded = self.target_embedding(tf.cast(ids, tf.int32))
        return self.decoder.step(embedded, state)

    def output_logits(self, hidden, rows=None):
        """`hidden [N, H]` -> logits `[N, V]`, or `[N, V']` over the ids
        `rows [V']` (`gnmt_tf.decoding.shortlist`)."""
        if rows is None:
            return self._logits(hidden)
        return self._logits(hidden, rows)

    def get_config(self):
        return dataclasses.asdict(self.config)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(GNMTConfig(**config))
