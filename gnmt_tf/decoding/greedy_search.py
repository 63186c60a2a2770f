"""In-graph greedy search: pick the most probable token at every step.

Same step-function interface and result as `beam_search`, with one hypothesis
per sentence; equivalent to `beam_search(..., beam_size=1)` but cheaper.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.decoding.beam_search import DecodingResult
from gnmt_tf.decoding.beam_search import buffer_length
from gnmt_tf.decoding.beam_search import pad_last
from gnmt_tf.decoding.beam_search import state_shape_invariant
from gnmt_tf.decoding import segmented_loop


def greedy_search(step_fn, initial_state, start_ids, end_id, max_lengths,
                  select_fn=None, max_time=None, attention_width=None,
                  segments=None, resize_state=None):
    """Greedy decoding as one `tf.while_loop`.

    Each sentence stops at its end token or at its maximum length; the loop
    stops when all have. Runs eagerly, in a `tf.function` with a dynamic batch
    size and in a SavedModel.

    Example:

    >>> result = greedy_search(model.step, model.initial_state(encoded),
    ...                        start_ids=tf.fill([batch], bos), end_id=eos,
    ...                        max_lengths=2 * source_lengths + 10)
    >>> ids = result.ids[:, 0]  # [B, T]

    Args:
        step_fn: callable `(ids [B], state) -> (log_probs [B, V],
            attention [B, S] or None, new_state)`; see `beam_search`.
        initial_state: nested structure of tensors `[B, ...]`.
        start_ids: int32 `[B]`. First input token of each sentence.
        end_id: int. The end-of-sentence token.
        max_lengths: int32 `[B]` (or scalar), >= 1. Maximum output length per
            sentence, counting the end token.
        select_fn: callable `log_probs [B, V] -> int32 ids [B]` picking each
            step's token, or None: the most probable one (`argmax`).
            `gnmt_tf.decoding.sampling.sample_search` samples with it.
        max_time, attention_width: fixed buffer shapes, as in
            `beam_search` (`T = max_time`, outputs not trimmed).
        segments, resize_state: the loop in segments, as in `beam_search`.

    Returns:
        A `DecodingResult` with `N = 1`: `ids [B, 1, T]`, `lengths [B, 1]`,
        `scores [B, 1]` (equal to `log_probs`: no penalties),
        `log_probs [B, 1]`, `attention [B, 1, T, S]` (or `None`) and
        `num_steps`.
    """
    start_ids = tf.cast(start_ids, tf.int32)
    batch_size = tf.shape(start_ids)[0]
    max_lengths = tf.broadcast_to(tf.cast(max_lengths, tf.int32), [batch_size])
    tf.debugging.assert_positive(
        max_lengths, message="greedy_search: max_lengths must be >= 1")
    trim = max_time is None
    max_time, max_lengths = buffer_length(max_time, max_lengths)
    width = 0 if attention_width is None else attention_width
    has_attention = [False]

    def body(t, last, ids, log_prob, lengths, history, done, state):
        log_probs, attention, state = step_fn(last, state)
        log_probs = tf.cast(log_probs, tf.float32)                    # [B, V]
        if attention is None:
            attention = tf.zeros(tf.stack([batch_size, width]))
        else:
            has_attention[0] = True
        attention = tf.cast(attention, tf.float32)                    # [B, S]
        token = (tf.argmax(log_probs, axis=-1, output_type=tf.int32)
                 if select_fn is None
                 else tf.cast(select_fn(log_probs), tf.int32))            # [B]
        token_log_prob = tf.gather(log_probs, token, batch_dims=1)
        active = ~done
        time_mask = tf.one_hot(t, max_time)                              # [T]
        ids += (tf.cast(time_mask, tf.int32)
                * tf.where(active, token, 0)[:, tf.newaxis])
        log_prob += tf.where(active, token_log_prob, 0.0)
        lengths += tf.cast(active, tf.int32)
        history = pad_last(history, tf.shape(attention)[1])       # [B, T, S]
        history += (time_mask[:, tf.newaxis]
                    * tf.where(active[:, tf.newaxis], attention, 0.0)[
                        :, tf.newaxis])
        done |= (token == end_id) | (t + 1 >= max_lengths)
        return t + 1, token, ids, log_prob, lengths, history, done, state

    def cond(t, last, ids, log_prob, lengths, history, done, state):
        return (t < max_time) & ~tf.reduce_all(done)

    loop_vars = (
        tf.constant(0),
        start_ids,
        tf.zeros(tf.stack([batch_size, max_time]), tf.int32),
        tf.zeros([batch_size]),
        tf.zeros([batch_size], tf.int32),
        tf.zeros(tf.stack([batch_size, max_time, width])),
        tf.zeros([batch_size], tf.bool),
        initial_state,
    )
    def shape_invariants(loop_vars):
        return (tf.TensorShape([]), tf.TensorShape([None]),
                tf.TensorShape([None, None]), tf.TensorShape([None]),
                tf.TensorShape([None]), tf.TensorShape([None, None, None]),
                tf.TensorShape([None]),
                tf.nest.map_structure(state_shape_invariant, loop_vars[7]))

    num_steps, _, ids, log_prob, lengths, history, _, _ = (
        segmented_loop.while_loop(cond, body, loop_vars, shape_invariants,
                                  max_time, 7, segments, resize_state))

    out_time = tf.maximum(tf.reduce_max(lengths), 0) if trim else max_time
    log_prob = log_prob[:, tf.newaxis]
    return DecodingResult(
        ids=ids[:, tf.newaxis, :out_time],
        lengths=lengths[:, tf.newaxis],
        scores=log_prob,
        log_probs=log_prob,
        attention=(history[:, tf.newaxis, :out_time]
                   if has_attention[0] else None),
        num_steps=num_steps,
    )
