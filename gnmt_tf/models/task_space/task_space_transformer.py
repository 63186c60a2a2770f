"""`TaskSpaceTransformer`: one Transformer for many directions and scenes."""

import contextlib
from typing import Mapping

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.layers.recompute import checkpointed
from gnmt_tf.seq2seq_model import Seq2SeqModelBase
from gnmt_tf.models.task_space.cached_multi_head_attention import one_query_products
from gnmt_tf.models.task_space.config import TransformerConfig
from gnmt_tf.models.task_space.layer_utils import QuantizationPoints
from gnmt_tf.models.task_space.layer_utils import build_sublayer
from gnmt_tf.models.task_space.layer_utils import causal_mask
from gnmt_tf.models.task_space.shared_embedding import SharedEmbedding
from gnmt_tf.models.task_space.sinusoidal_position_encoding import SinusoidalPositionEncoding
from gnmt_tf.models.task_space.task_space_encoding import TaskSpaceEncoding
from gnmt_tf.models.task_space.transformer_decoder_layer import TransformerDecoderLayer
from gnmt_tf.models.task_space.transformer_encoder_layer import TransformerEncoderLayer

TASK_KEYS = ("src_lang", "tgt_lang", "tags")


@keras.utils.register_keras_serializable(package="task_space")
class TaskSpaceTransformer(Seq2SeqModelBase, QuantizationPoints, keras.Model):
    """Pre-LN Transformer conditioned on a task (direction + scene tags).

    The encoder-decoder of Vaswani et al. (2017) with pre-layer-norm blocks,
    sinusoidal positions and one embedding matrix shared by source, target
    and output projection, made multi-task as in Ctrip's MT platform: the
    encoder and the decoder each own a `TaskSpaceEncoding` whose task vector
    is added to every token embedding (see that class for why).

    Shapes: `B` batch, `S` source length, `T` target length, `V`
    vocabulary, `L` layers, `H` heads, `K` scene tags, `d` width.

    Args:
        config: `TransformerConfig` or its `to_dict()`; the whole model
            config (`get_config()` returns `{"config": config.to_dict()}`).
        **kwargs: passed to `keras.Model` (`name`, `dtype`, ...).

    Call arguments:
        inputs: dict with `"source_ids"` int32 `[B, S]` (`pad_id` =
            padding), `"target_in_ids"` int32 `[B, T]` (`bos_id` first),
            `"src_lang"` int32 `[B]`, `"tgt_lang"` int32 `[B]` and
            `"tags"` int or float `[B, K]` multi-hot (the last three may be
            omitted when `config.use_task_space` is False).
        training: bool. Enables dropout.
        return_attention: bool. Also return all cross-attention maps.

    Returns:
        float32 logits `[B, T, V]`; with `return_attention=True`,
        `(logits, attention)` with attention probabilities `[B, L*H, T, S]`
        (layer-major: index `l*H + h`).

    Incremental decoding (the interface of the shared beam search):
    `encode(...) -> encoded`, `initial_state(encoded, max_length) -> state`,
    `step(ids, state) -> (log_probs, attention, state)`; every tensor of
    `state` has leading dimension `N`, so a search may `tf.repeat` /
    `tf.gather` it along axis 0.

    Example:
    ```python
    model = TaskSpaceTransformer.from_preset("transformer_tiny")
    model.compile(keras.optimizers.Adam(1e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dataset)  # yields (features_dict, target_out_ids, weights)
    ```

    Quantization points (`QuantizationPoints`; the QAT variant is
    `gnmt_tf.models.task_space.qat.QATTaskSpaceTransformer`): the encoder's and
    the decoder's input embeddings, `"encoder_input"` / `"decoder_input"`
    (token embedding + position + task vector), besides those of its
    layers.
    """

    # Sublayer classes (a QAT variant swaps in its own).
    embedding_class = SharedEmbedding
    encoder_layer_class = TransformerEncoderLayer
    decoder_layer_class = TransformerDecoderLayer
    layer_norm_class = keras.layers.LayerNormalization

    def __init__(self, config, **kwargs):
        if isinstance(config, Mapping):
            config = TransformerConfig.from_dict(config)
        if not isinstance(config, TransformerConfig):
            raise TypeError(
                f"config must be a TransformerConfig or dict, got {config!r}")
        super().__init__(**kwargs)
        self.config = config
        c, policy = config, self.dtype_policy

        # === Layers ===
        self.embedding = self.embedding_class(
            c.vocabulary_size, c.hidden_dim, dtype=policy, name="embedding")
        self.position_encoding = SinusoidalPositionEncoding(
            c.hidden_dim, dtype=policy, name="position_encoding")
        self.encoder_task_encoding = self.decoder_task_encoding = None
        if c.use_task_space:
            self.encoder_task_encoding, self.decoder_task_encoding = [
                TaskSpaceEncoding(c.num_languages, c.num_tags, c.hidden_dim,
                                  dtype=policy, name=f"{side}_task_encoding")
                for side in ("encoder", "decoder")]
        layer_args = dict(
            num_heads=c.num_heads, intermediate_dim=c.intermediate_dim,
            dropout=c.dropout, attention_dropout=c.attention_dropout,
            layer_norm_epsilon=c.layer_norm_epsilon, dtype=policy)
        self.encoder_layers = [
            self.encoder_layer_class(**layer_args, name=f"encoder_layer_{i}")
            for i in range(c.num_layers)]
        self.decoder_layers = [
            self.decoder_layer_class(**layer_args, name=f"decoder_layer_{i}")
            for i in range(c.num_layers)]
        self.encoder_norm, self.decoder_norm = [
            self.layer_norm_class(
                epsilon=c.layer_norm_epsilon, dtype=policy, name=name)
            for name in ("encoder_norm", "decoder_norm")]
        self.embedding_dropout = keras.layers.Dropout(c.dropout, dtype=policy)

        # All weights exist from here on: checkpoints restore before the
        # first call, and decoding tf.functions never create variables.
        shape = (None, None, c.hidden_dim)
        for layer in self.layers:
            build_sublayer(layer, shape)
        self.built = True

    @classmethod
    def from_preset(cls, name, **overrides):
        """A fresh model from a `gnmt_tf.models.task_space.presets` name, with overrides."""
        return cls(TransformerConfig.from_preset(name, **overrides))

    def _embed(self, ids, task, positions, side, training=False):
        """The `side` ("encoder"/"decoder") input: ids `[B, T]`, task
        `[B, d]` or None, positions `[T]` or `[B, T]` -> `[B, T, d]`."""
        x = self.embedding(ids) + self.position_encoding(positions)
        if task is not None:
            x += task[:, None, :]
        x = self.fake_quant(f"{side}_input", x, training)
        return self.embedding_dropout(x, training=training)

    def encode(self, source_ids, src_lang=None, tgt_lang=None, tags=None,
               training=False):
        """Runs the encoder.

        Args:
            source_ids: int32 `[B, S]`; `pad_id` marks padding.
            src_lang, tgt_lang: int32 `[B]`; tags: `[B, K]` multi-hot.
                Required when `config.use_task_space`.

        Returns:
            dict `encoded`: `"memory"` float `[B, S, d]`, `"source_mask"`
            bool `[B, S]` (True = real token) and, with the task space,
            `"decoder_task"` float `[B, d]` (the decoder's task vector).
        """
        source_ids = tf.convert_to_tensor(source_ids)
        source_mask = tf.not_equal(source_ids, self.config.pad_id)
        encoded = {"source_mask": source_mask}
        encoder_task = None
        if self.config.use_task_space:
            if src_lang is None or tgt_lang is None or tags is None:
                raise ValueError(
                    "src_lang, tgt_lang and tags are required when "
                    "use_task_space is True")
            encoder_task = self.encoder_task_encoding(src_lang, tgt_lang, tags)
            encoded["decoder_task"] = self.decoder_task_encoding(
                src_lang, tgt_lang, tags)
        x = self._embed(source_ids, encoder_task,
                        tf.range(tf.shape(source_ids)[1]), "encoder",
                        training)
        # [B, 1, S]; expand_dims, since TFLite lowers a new-axis slice
        # only with one unknown dimension (B and S are).
        mask = tf.expand_dims(source_mask, 1)
        recompute = self.config.recompute and training
        for layer in self.encoder_layers:
            x = checkpointed(
                lambda x, layer=layer: layer(x, mask=mask, training=training),
                recompute)(x)
        encoded["memory"] = self.encoder_norm(x)
        return encoded

    def decode(self, target_in_ids, encoded, training=False):
        """Teacher-forced decoder: `target_in_ids [B, T]` -> `call()`."""
        target_in_ids = tf.convert_to_tensor(target_in_ids)
        length = tf.shape(target_in_ids)[1]
        target_mask = tf.not_equal(target_in_ids, self.config.pad_id)
        self_mask = causal_mask(length)[None] & target_mask[:, None, :]
        cross_mask = encoded["source_mask"][:, None, :]  # [B, 1, S]
        x = self._embed(target_in_ids, encoded.get("decoder_task"),
                        tf.range(length), "decoder", training)
        maps = []
        recompute = self.config.recompute and training
        for layer in self.decoder_layers:
            x, probabilities = checkpointed(
                lambda x, memory, layer=layer: layer(
                    x, memory, self_mask=self_mask, cross_mask=cross_mask,
                    training=training), recompute)(x, encoded["memory"])
            maps.append(probabilities)  # [B, H, T, S]
        logits = self.embedding.project(self.decoder_norm(x))
        return tf.cast(logits, tf.float32), tf.concat(maps, axis=1)

    def call(self, inputs, training=False, return_attention=False):
        required = ("source_ids", "target_in_ids") + (
            TASK_KEYS if self.config.use_task_space else ())
        missing = [key for key in required if key not in inputs]
        if missing:
            raise ValueError(
                f"inputs lack {missing}; expected a dict with {required}")
        encoded = self.encode(
            inputs["source_ids"], *(inputs.get(key) for key in TASK_KEYS),
            training=training)
        logits, attention = self.decode(inputs["target_in_ids"], encoded,
                                        training=training)
        if return_attention:
            return logits, attention
        return logits

    # --- Seq2SeqModel (gnmt_tf.seq2seq_model) -------------------------------

    # `<2xx>` token ids per language, for a model trained with one before
    # each source (the Johnson et al. baseline); None for the task space.
    # `TaskSpaceTranslationModel.attach_model_dir` sets it from the model
    # directory.
    language_token_ids = None
    # The task of a typical request (warm-up requests); set from the model
    # directory by `attach_model_dir`.
    default_task = {"src_lang": "en", "tgt_lang": "de", "tags": ()}
    trained_tasks = None  # from the model directory, as default_task
    fixed_task = {}

    @property
    def max_target_length(self):
        """The KV cache's default and the longest target the model is for."""
        return self.config.max_sequence_length

    def task_inputs(self):
        """Source language, target language, scene tags (multi-hot)."""
        return self.config.task_inputs()

    @property
    def source_prefix(self):
        """`("tgt_lang", <2xx> id per language)` for the baseline; None with
        the task space."""
        if self.language_token_ids is None:
            return None
        return "tgt_lang", tuple(self.language_token_ids)

    runs_in_low_precision = True  # the `dtype` policies of `__init__`
    # `initial_state(..., growing_cache=True)` exists (`Translator` uses it).
    supports_growing_cache = True
    resizes_cache = True  # the fixed cache's length axis (`resize_cache`)
    # The encoder has no loop, so its TFLite `encode` takes any batch size
    # (GNMT's `tf.scan` lowers only at a fixed one).
    exports_encode_at_any_batch = True

    def compiled_step_context(self):
        """The context a step is traced in for an XLA-compiled search
        (`Translator(..., jit_compile_search=True)`): attention with
        products and sums (`one_query_products`), which XLA fuses; the
        einsums are slower there at batch 32 (docs/benchmarks.md,
        the whole search compiled by XLA)."""
        return one_query_products(True)

    @contextlib.contextmanager
    def compiled_search_context(self):
        """`compiled_step_context`, and the output projection's transposed
        matrix computed once a search (`SharedEmbedding.hoisted_projection`)."""
        with self.compiled_step_context(), self.embedding.hoisted_projection():
            yield

    def initial_state(self, encoded, max_length=None, growing_cache=False):
        """The decoding state before the first `step`.

        Args:
            encoded: the dict from `encode` (leading dimension `N`).
            max_length: int or int32 scalar; steps the KV cache can hold
                (default `config.max_sequence_length`).
            growing_cache: bool. Start the self-attention cache empty and
                append a position at each step, instead of allocating
                `max_length` positions. The in-graph searches run faster
                with it (each step copies and attends to the positions so
                far, not to all `max_length`); exports whose shapes must
                stay fixed (TFLite, the `decode_step` signature, XLA) keep
                the fixed cache.

        Returns:
            dict `state`: `"time"` int32 `[N]` (zeros), `"source_mask"` bool
            `[N, S]`, `"decoder_task"` `[N, d]` (with the task space), and
            per decoder layer `"layer_{i}"`: `"self_key"`, `"self_value"`
            zeros `[N, max_length, H, Dh]` (or, growing, `"past_key"`,
            `"past_value"` `[N, 0, H, Dh]`), `"cross_key"`, `"cross_value"`
            `[N, S, H, Dh]`.
        """
        if max_length is None:
            max_length = self.config.max_sequence_length
        memory = encoded["memory"]
        batch = tf.shape(memory)[0]
        state = {"time": tf.zeros([batch], tf.int32),
                 "source_mask": encoded["source_mask"]}
        if "decoder_task" in encoded:
            state["decoder_task"] = encoded["decoder_task"]
        cache_shape = [batch, 0 if growing_cache else max_length,
                       self.config.num_heads, self.config.head_dim]
        names = (("past_key", "past_value") if growing_cache
                 else ("self_key", "self_value"))
        for i, layer in enumerate(self.decoder_layers):
            cross_key, cross_value = layer.compute_cross_key_value(memory)
            state[f"layer_{i}"] = {
                names[0]: tf.zeros(cache_shape, memory.dtype),
                names[1]: tf.zeros(cache_shape, memory.dtype),
                "cross_key": cross_key,
                "cross_value": cross_value}
        return state

    def resize_cache(self, state, max_length):
        """`state` with its fixed self-attention cache zero-padded to
        `max_length` positions (positions past a row's time are masked,
        so the padding changes no result)."""
        resized = dict(state)
        for i in range(len(self.decoder_layers)):
            layer = dict(state[f"layer_{i}"])
            for name in ("self_key", "self_value"):
                cache = layer[name]
                pad = max_length - tf.shape(cache)[1]
                layer[name] = tf.pad(cache, [[0, 0], [0, pad], [0, 0], [0, 0]])
            resized[f"layer_{i}"] = layer
        return resized

    def step(self, ids, state):
        """Decodes one token per row.

        Args:
            ids: int32 `[N]`, the previous token (`bos_id` at the start).
            state: from `initial_state` or the previous `step`; row `n` is
                at position `state["time"][n]`, which must be below the
                cache length `max_length` (a growing cache has no limit).

        Returns:
            `(log_probs, attention, new_state)`: float32 log-softmax `[N, V]`,
            float32 `[N, S]` last-layer cross-attention averaged over heads,
            and the state advanced by one position (same structure and
            shapes; a growing cache gains a position).
        """
        hidden, attention, new_state = self.step_hidden(ids, state)
        log_probs = tf.nn.log_softmax(self.output_logits(hidden))
        return log_probs, attention, new_state

    def step_hidden(self, ids, state):
        """`step` before the output projection: `(hidden [N, d], attention
        [N, S], new_state)`, `hidden` the final layer norm's output."""
        time = state["time"]
        x = self._embed(ids[:, None], state.get("decoder_task"),
                        time[:, None], "decoder")  # [N, 1, d]
        cross_mask = tf.expand_dims(state["source_mask"], 1)  # [N, 1, S]
        new_state = dict(state, time=time + 1)
        for i, layer in enumerate(self.decoder_layers):
            x, probabilities, new_state[f"layer_{i}"] = layer.step(
                x, state[f"layer_{i}"], time, cross_mask=cross_mask)
        attention = tf.reduce_mean(
            tf.cast(probabilities[:, :, 0, :], tf.float32), axis=1)  # [N, S]
        return self.decoder_norm(x)[:, 0], attention, new_state

    def output_logits(self, hidden, rows=None):
        """float32 logits `[N, V]` of `hidden [N, d]`, or `[N, V']` over the
        vocabulary ids `rows [V']` (`gnmt_tf.decoding.shortlist`)."""
        return tf.cast(self.embedding.project(hidden, rows), tf.float32)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": self.dtype_policy.name,
                "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
