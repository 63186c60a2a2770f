"""Joint training of a translation model and its convolutional alignment head.

`AlignedTranslationModel` wraps a GNMT (`gnmt_tf.models.GNMT`) or a task-space
Transformer (`task_space.TaskSpaceTransformer` and subclasses): its `call`
returns the wrapped model's logits, so the usual masked cross-entropy,
metrics and `gnmt_tf.training.trainer.compile_model` / `fit` work unchanged,
while `train_step` adds `alignment_weight` times the head's loss
(`gnmt_tf.alignment.conv_alignment_head.alignment_loss`) whenever the features carry
a link matrix under `LINKS_KEY`. The step-function interface (`encode`,
`initial_state`, `step`) and `config` pass through, so the shared searches
and `gnmt_tf.translator.Translator` drive the wrapper like the bare model.

Links are word-level fast_align links made subword-level by
`subword_links` (a subword pair is linked when their words are linked) and
laid out like the model's teacher-forced outputs by `link_pairs`: row `t` is
label position `t` (the `t`-th target subword, whose attention row is
computed from decoder input `t`), column `s` is source subword `s`; the
appended EOS/BOS positions carry no links. `make_aligned_dataset` is
`gnmt_tf.data.datasets.make_dataset` (and, with task inputs,
`gnmt_tf.data.multiway.make_task_dataset`) plus a dense `[B, T, S]` link matrix.

Gradient into the attention: by default (`stop_gradient=True`) the head reads
the attention maps as constants, so the alignment loss trains the head only
and cannot bend the attention the translation loss shaped (the translation
model trains exactly as without the head; Ctrip adds the head to a trained
model's attention). `stop_gradient=False` lets the alignment loss also
sharpen the attention, as in guided-alignment training.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tf_keras as keras

from gnmt_tf.alignment.conv_alignment_head import ConvAlignmentHead
from gnmt_tf.seq2seq_model import Seq2SeqModelBase
from gnmt_tf.alignment.conv_alignment_head import alignment_loss
from gnmt_tf.alignment.conv_alignment_head import pixel_mask
from gnmt_tf.pipeline.placeholder_mapping import word_index_of_pieces

LINKS_KEY = "alignment_links"
Link = Tuple[int, int]


# --- Links at subword level ---------------------------------------------------

def subword_links(source_pieces: Sequence[str], target_pieces: Sequence[str],
                  word_links: Iterable[Link]) -> List[Link]:
    """Word links `(i, j)` -> subword links `(s, t)`: every subword of word
    `i` with every subword of word `j`.

    The pieces must come from the space-joined words (`" ".join(words)`),
    so that SentencePiece's word starts are the words.
    """
    return links_of_word_indices(word_index_of_pieces(source_pieces),
                                 word_index_of_pieces(target_pieces),
                                 word_links)


def links_of_word_indices(source_words: Sequence[int],
                          target_words: Sequence[int],
                          word_links: Iterable[Link]) -> List[Link]:
    """Word links `(i, j)` -> subword links `(s, t)`, given the word index
    of each source and target subword (-1: of no word, never linked)."""
    by_source, by_target = {}, {}
    for s, i in enumerate(source_words):
        by_source.setdefault(i, []).append(s)
    for t, j in enumerate(target_words):
        by_target.setdefault(j, []).append(t)
    return sorted({(s, t) for i, j in word_links
                   for s in by_source.get(i, ()) for t in by_target.get(j, ())})


def link_pairs(links: Iterable[Link], source_offset: int = 0) -> np.ndarray:
    """Subword links `(s, t)` -> int32 `[N, 2]` of `(row t, column s)`.

    `source_offset` shifts columns when the model's source has tokens before
    the subwords (e.g. a `<2xx>` target-language token).
    """
    pairs = [(t, s + source_offset) for s, t in links]
    return np.asarray(pairs, np.int32).reshape(-1, 2)


def dense_links(links: Iterable[Link], source_length: int,
                target_length: int) -> np.ndarray:
    """Subword links `(s, t)` -> float32 `[target_length, source_length]`."""
    matrix = np.zeros([target_length, source_length], np.float32)
    for s, t in links:
        if s < source_length and t < target_length:
            matrix[t, s] = 1.0
    return matrix


def alignment_error_rate(predicted: Iterable[Iterable[Link]],
                         reference: Iterable[Iterable[Link]]) -> float:
    """AER (Och & Ney 2003) with every reference link sure: `1 - F1`."""
    hits = num_predicted = num_reference = 0
    for p, r in zip(predicted, reference):
        p, r = set(p), set(r)
        hits += len(p & r)
        num_predicted += len(p)
        num_reference += len(r)
    if num_predicted + num_reference == 0:
        return 0.0
    return 1.0 - 2.0 * hits / (num_predicted + num_reference)


# --- Dataset ------------------------------------------------------------------

def make_aligned_dataset(source_ids, target_ids, links, max_tokens,
                         max_length, task_inputs=None, shuffle=True,
                         shuffle_buffer=30000, repeat=True, seed=None):
    """The training dataset with a link matrix per pair.

    As `gnmt_tf.data.datasets.make_dataset` (EOS appended to sources, BOS
    prepended to decoder inputs, over-long pairs dropped, length-bucketed
    batches of about `max_tokens` padded tokens), plus
    `features[LINKS_KEY]` float32 `[B, T, S]`.

    Args:
        source_ids, target_ids: lists of lists of int (no special tokens;
            sources may start with a `<2xx>` token).
        links: per pair, int `[N, 2]` `(row t, column s)` from `link_pairs`.
        max_tokens, max_length, shuffle, shuffle_buffer, repeat, seed: as
            `make_dataset`.
        task_inputs: optional dict name -> per-pair values (e.g.
            `src_lang`, `tgt_lang` `[N]`, `tags` `[N, K]`) added to the
            features.

    Returns:
        A dataset of `(features, labels)`.
    """
    from gnmt_tf.data.datasets import (
                                       batch_by_length, kept_indices, permuted, ragged_sequences,
                                       teacher_forcing_features)

    keep = kept_indices(source_ids, target_ids, max_length)
    if not keep:
        raise ValueError("no sentence pairs left after length filtering "
                         f"(max_length={max_length})")
    if shuffle:  # corpora of several directions come grouped by direction
        keep = permuted(keep, seed)
    columns = teacher_forcing_features([source_ids[i] for i in keep],
                                       [target_ids[i] for i in keep])
    columns["link_pairs"] = ragged_sequences(
        [np.asarray(links[i], np.int32).reshape(-1) for i in keep])
    for name, values in (task_inputs or {}).items():
        columns[name] = np.asarray(values, np.int32)[keep]

    def densify(x):
        pairs = tf.reshape(x.pop("link_pairs"), [-1, 2])
        shape = tf.stack([tf.shape(x["labels"])[0],
                          tf.shape(x["source_ids"])[0]])
        x[LINKS_KEY] = tf.minimum(tf.scatter_nd(
            pairs, tf.ones(tf.shape(pairs)[:1], tf.float32), shape), 1.0)
        return x

    return batch_by_length(columns, max_tokens, max_length, shuffle,
                           shuffle_buffer, repeat, seed, transform=densify)


# --- The model ------------------------------------------------------------------

def attention_channels(config) -> int:
    """Channels of a model's cross-attention image: `L*H` for the
    Transformer (`num_layers`, `num_heads`), 1 for GNMT."""
    heads = getattr(config, "num_heads", None)
    layers = getattr(config, "num_layers", None)
    return int(heads * layers) if heads and layers else 1


class AlignedTranslationModel(Seq2SeqModelBase, keras.Model):
    """A translation model with a jointly trained `ConvAlignmentHead`.

    Args:
        translation_model: a model whose `call(inputs, training,
            return_attention=True)` returns `(logits, attention)`:
            `gnmt_tf.models.GNMT` (`[B, T, S]`) or a `TaskSpaceTransformer`
            (`[B, L*H, T, S]`).
        head: `ConvAlignmentHead` or None (a default one).
        alignment_weight: float. Weight of the alignment loss in the total.
        stop_gradient: bool. Cut the alignment loss's gradient into the
            attention (see the module docstring).
        freeze_translation_model: bool. Train the head only: the wrapped
            model is not trainable and always runs in inference mode (no
            dropout), so the head learns the attention it will read at
            translation time (`gnmt_tf.alignment.head_training`).
        negative_ratio, label_rate, positive_weight, mine_hard_negatives:
            the loss's sampling (see `gnmt_tf.alignment.conv_alignment_head`).
        **kwargs: passed to `keras.Model`.

    Call arguments:
        inputs: the wrapped model's feature dict; `LINKS_KEY` (links
            `[B, T, S]`) is used by `train_step` / `test_step` and ignored
            by `call`.
        training: bool.
        return_attention: bool. As the wrapped model's.

    Returns:
        The wrapped model's logits `[B, T, V]` (with `return_attention`,
        `(logits, attention)`). `align(inputs)` returns
        `(logits, attention, probabilities [B, T, S])`.

    `fit` reports `loss` (total), `translation_loss`, `alignment_loss` and
    the compiled metrics.

    Example:
    ```python
    model = AlignedTranslationModel(GNMT(config), alignment_weight=0.5)
    compile_model(model, train_config)
    model.fit(make_aligned_dataset(src, tgt, links, 2048, 64), ...)
    ```
    """

    def __init__(self, translation_model, head=None, alignment_weight=1.0,
                 stop_gradient=True, negative_ratio=3.0, label_rate=0.9,
                 positive_weight=1.0, mine_hard_negatives=True,
                 freeze_translation_model=False, **kwargs):
        super().__init__(**kwargs)
        self.translation_model = translation_model
        self.freeze_translation_model = bool(freeze_translation_model)
        if self.freeze_translation_model:
            translation_model.trainable = False
        self.head = head or ConvAlignmentHead(name="alignment_head")
        self.alignment_weight = alignment_weight
        self.stop_gradient = stop_gradient
        self.negative_ratio = negative_ratio
        self.label_rate = label_rate
        self.positive_weight = positive_weight
        self.mine_hard_negatives = mine_hard_negatives
        self.num_channels = attention_channels(translation_model.config)
        shape = ([None, None, None] if self.num_channels == 1
                 else [None, self.num_channels, None, None])
        self.head.build(shape)
        self.total_loss_tracker = keras.metrics.Mean("loss")
        self.translation_loss_tracker = keras.metrics.Mean("translation_loss")
        self.alignment_loss_tracker = keras.metrics.Mean("alignment_loss")

    # --- What the rest of gnmt_tf sees -----------------------------------
    @property
    def config(self):
        return self.translation_model.config

    def dummy_inputs(self):
        return self.translation_model.dummy_inputs()

    def encode(self, *args, **kwargs):
        return self.translation_model.encode(*args, **kwargs)

    def initial_state(self, *args, **kwargs):
        return self.translation_model.initial_state(*args, **kwargs)

    def step(self, ids, state):
        return self.translation_model.step(ids, state)

    def compiled_step_context(self):
        return self.translation_model.compiled_step_context()

    @property
    def max_target_length(self):
        return self.translation_model.max_target_length

    def task_inputs(self):
        return self.translation_model.task_inputs()

    @property
    def default_task(self):
        return self.translation_model.default_task

    @property
    def trained_tasks(self):
        return self.translation_model.trained_tasks

    @property
    def fixed_task(self):
        return self.translation_model.fixed_task

    @property
    def source_prefix(self):
        return self.translation_model.source_prefix

    def attach_model_dir(self, subwords, payload):
        self.translation_model.attach_model_dir(subwords, payload)

    # --- Forward passes ----------------------------------------------------
    @staticmethod
    def _features(inputs):
        return {k: v for k, v in inputs.items() if k != LINKS_KEY}

    def _translation_training(self, training) -> bool:
        return bool(training) and not self.freeze_translation_model

    def call(self, inputs, training=False, return_attention=False):
        return self.translation_model(self._features(inputs),
                                      training=self._translation_training(
                                          training),
                                      return_attention=return_attention)

    def masks(self, inputs):
        """`(source_mask [B, S], target_mask [B, T])` of a feature dict."""
        pad = self.config.pad_id
        source_mask = tf.not_equal(inputs["source_ids"], pad)
        # Label t exists iff decoder input t does (BOS + target vs
        # target + EOS), so the decoder inputs give the target mask.
        target_mask = tf.not_equal(inputs["target_in_ids"], pad)
        return source_mask, target_mask

    def align(self, inputs, training=False, return_logits=False):
        """`(logits, attention, probabilities)`; with `return_logits`, the
        head's logits come fourth."""
        logits, attention = self.translation_model(
            self._features(inputs),
            training=self._translation_training(training),
            return_attention=True)
        head_input = (tf.stop_gradient(attention) if self.stop_gradient
                      else attention)
        source_mask, target_mask = self.masks(inputs)
        probabilities, head_logits = self.head(
            head_input, source_mask=source_mask, target_mask=target_mask,
            return_logits=True)
        if return_logits:
            return logits, attention, probabilities, head_logits
        return logits, attention, probabilities

    def _compute_losses(self, x, y, training):
        logits, _, _, head_logits = self.align(x, training=training,
                                               return_logits=True)
        translation_loss = self.compiled_loss(
            y, logits, regularization_losses=self.losses)
        if LINKS_KEY in x:
            valid = pixel_mask(*self.masks(x))
            align = alignment_loss(
                x[LINKS_KEY], head_logits, valid, training=training,
                negative_ratio=self.negative_ratio,
                label_rate=self.label_rate,
                positive_weight=self.positive_weight,
                mine_hard_negatives=self.mine_hard_negatives)
        else:
            align = tf.constant(0.0)
        return logits, translation_loss, align

    def train_step(self, data):
        x, y = data[0], data[1]
        with tf.GradientTape() as tape:
            logits, translation_loss, align = self._compute_losses(x, y, True)
            total = translation_loss + self.alignment_weight * align
        self.optimizer.minimize(total, self.trainable_variables, tape=tape)
        return self._update_metrics(y, logits, translation_loss, align)

    def test_step(self, data):
        x, y = data[0], data[1]
        logits, translation_loss, align = self._compute_losses(x, y, False)
        return self._update_metrics(y, logits, translation_loss, align)

    def _update_metrics(self, y, logits, translation_loss, align):
        self.compiled_metrics.update_state(y, logits)
        self.translation_loss_tracker.update_state(translation_loss)
        self.alignment_loss_tracker.update_state(align)
        self.total_loss_tracker.update_state(
            translation_loss + self.alignment_weight * align)
        return {m.name: m.result() for m in self.metrics}

    @property
    def metrics(self):
        # The compiled loss's own "loss" tracker (translation only) gives way
        # to the total.
        own = [self.total_loss_tracker, self.translation_loss_tracker,
               self.alignment_loss_tracker]
        return own + [m for m in super().metrics
                      if m.name != "loss" and all(m is not o for o in own)]

    # --- Inference helpers ---------------------------------------------------
    def forced_alignment(self, source_ids, target_ids, task_inputs=None,
                         batch_size=32):
        """Teacher-forced pass over given outputs: per pair, the head's
        probabilities and the raw attention averaged over channels, both
        `[len(target)+1, len(source)+1]` (rows: target subwords then EOS;
        columns: source ids then EOS) as NumPy arrays.

        Args:
            source_ids: lists of int (model source without EOS, e.g. with a
                `<2xx>` token first when the model uses one).
            target_ids: lists of int (the translation's subwords).
            task_inputs: optional dict name -> per-pair values.
        """
        from gnmt_tf.text.subword import BOS_ID, EOS_ID

        probabilities, attentions = [], []
        for start in range(0, len(source_ids), batch_size):
            src = [list(s) + [EOS_ID]
                   for s in source_ids[start:start + batch_size]]
            tgt = [[BOS_ID] + list(t)
                   for t in target_ids[start:start + batch_size]]
            features = {
                "source_ids": _pad(src), "target_in_ids": _pad(tgt)}
            for name, values in (task_inputs or {}).items():
                features[name] = tf.constant(
                    np.asarray(values[start:start + batch_size], np.int32))
            _, attention, probs = self.align(features)
            attention = attention.numpy()
            if attention.ndim == 4:
                attention = attention.mean(axis=1)
            probs = probs.numpy()
            for k, (s, t) in enumerate(zip(src, tgt)):
                probabilities.append(probs[k, :len(t), :len(s)])
                attentions.append(attention[k, :len(t), :len(s)])
        return probabilities, attentions


def _pad(rows) -> tf.Tensor:
    width = max(len(r) for r in rows)
    return tf.constant([list(r) + [0] * (width - len(r)) for r in rows],
                       tf.int32)


def predicted_links(probabilities: np.ndarray, threshold: float = 0.5,
                    source_length: Optional[int] = None,
                    target_length: Optional[int] = None) -> List[Link]:
    """Subword links `(s, t)` whose probability exceeds `threshold`
    (optionally only within the given lengths, e.g. without EOS)."""
    probabilities = np.asarray(probabilities)
    t_max = target_length or probabilities.shape[0]
    s_max = source_length or probabilities.shape[1]
    rows, cols = np.nonzero(probabilities[:t_max, :s_max] > threshold)
    return sorted(zip(cols.tolist(), rows.tolist()))
