"""Forced decoding: the score of given outputs under a step function.

The same step-function interface as the searches of this package, and the
same GNMT score (`penalties.gnmt_score`), so the score of a search's own
output under forced decoding is the score the search gave it; for n-best
rescoring under another model or predictor combination (SGNMT's forced
decoding).
"""

import typing

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.decoding import penalties


class ForcedResult(typing.NamedTuple):
    """Output of `forced_decode`.

    Attributes:
        scores: float32 `[B]`. GNMT score of each output (its summed step
            scores with the length and coverage penalties).
        log_probs: float32 `[B]`. Summed step scores (`log P(Y|X)` for one
            model).
        token_scores: float32 `[B, T]`. Each token's step score, 0 after
            the output's length.
    """

    scores: tf.Tensor
    log_probs: tf.Tensor
    token_scores: tf.Tensor


def forced_decode(step_fn, initial_state, start_ids, target_ids,
                  target_lengths, source_lengths=None, length_penalty=0.0,
                  coverage_penalty=0.0):
    """Scores given outputs step by step, as one `tf.while_loop`.

    Example:

    >>> result = forced_decode(model.step, model.initial_state(encoded, T),
    ...                        tf.fill([batch], bos), target_ids, lengths)
    >>> result.scores  # [B]

    Args:
        step_fn: callable `(ids [B], state) -> (scores [B, V], attention
            [B, S] or None, new_state)`; see `beam_search`.
        initial_state: nested structure of tensors `[B, ...]`.
        start_ids: int32 `[B]`. First input token of each sentence.
        target_ids: int32 `[B, T]`. The outputs, the end token included
            where an output has one (as `DecodingResult.ids`), 0-padded.
        target_lengths: int32 `[B]`. Tokens of each output (>= 1).
        source_lengths: int32 `[B]` or None; see `beam_search`.
        length_penalty: float `alpha`.
        coverage_penalty: float `beta`; needs attention unless 0.

    Returns:
        A `ForcedResult`.
    """
    target_ids = tf.cast(target_ids, tf.int32)
    target_lengths = tf.cast(target_lengths, tf.int32)
    batch_size = tf.shape(target_ids)[0]
    max_time = tf.shape(target_ids)[1]
    inputs = tf.concat([tf.cast(start_ids, tf.int32)[:, tf.newaxis],
                        target_ids[:, :-1]], axis=1)                   # [B, T]
    has_attention = [False]

    def body(t, state, token_scores, coverage):
        scores, attention, state = step_fn(inputs[:, t], state)
        active = t < target_lengths                                       # [B]
        score = tf.gather(tf.cast(scores, tf.float32), target_ids[:, t],
                          batch_dims=1)
        token_scores = token_scores.write(t, tf.where(active, score, 0.0))
        if attention is None:
            if tf.get_static_value(coverage_penalty) != 0:
                raise ValueError(
                    "step_fn returned attention=None, so coverage_penalty "
                    f"must be the constant 0, got {coverage_penalty!r}")
            attention = tf.zeros(tf.stack([batch_size, 0]))
        else:
            has_attention[0] = True
        attention = tf.cast(attention, tf.float32)
        coverage = (tf.pad(coverage, [[0, 0], [0, tf.shape(attention)[1]
                                               - tf.shape(coverage)[1]]])
                    + tf.where(active[:, tf.newaxis], attention, 0.0))
        return t + 1, state, token_scores, coverage

    _, _, token_scores, coverage = tf.while_loop(
        lambda t, *_: t < max_time, body,
        (tf.constant(0), initial_state,
         tf.TensorArray(tf.float32, size=max_time),
         tf.zeros(tf.stack([batch_size, 0]))),
        shape_invariants=(
            tf.TensorShape([]),
            tf.nest.map_structure(lambda x: x.shape, initial_state),
            tf.TensorShape(None), tf.TensorShape([None, None])))
    token_scores = tf.transpose(token_scores.stack())                 # [B, T]
    token_scores.set_shape([None, None])
    log_probs = tf.reduce_sum(token_scores, axis=1)
    source_mask = None
    if source_lengths is not None:
        source_mask = tf.sequence_mask(source_lengths, tf.shape(coverage)[1])
    scores = penalties.gnmt_score(
        log_probs, target_lengths, coverage if has_attention[0] else None,
        source_mask, length_penalty, coverage_penalty)
    return ForcedResult(scores, log_probs, token_scores)
