"""A search's step loop run in segments, the decoding state resized
between them.

A search compiled with XLA needs fixed shapes, so a Transformer's KV cache
is allocated for the longest output the source allows (`max_length_ratio`
times its padded width), and every step writes and attends to all of it,
and the beam search copies all of it when it reorders the beams. Most
outputs are far shorter. Run in segments, the loop starts with a cache of
a fraction of that length and grows it (`resize_state`) when a segment's
last step is reached: each step then copies a cache at most about twice
as long as needed. Segment lengths are tensors that XLA sees as constants
(they follow from the source's padded width), so every shape stays fixed
within a segment, at the price of one compiled loop body per segment.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

# The loop's segments end at these fractions of the buffers' length.
SEGMENT_FRACTIONS = (0.5, 1.0)


def segment_lengths(max_time, fractions=SEGMENT_FRACTIONS):
    """int32 scalars: the steps each segment ends at (`max_time` last),
    at least 1 each and never decreasing."""
    max_time = tf.cast(max_time, tf.int32)
    ends = [tf.maximum(tf.cast(tf.math.ceil(
        fraction * tf.cast(max_time, tf.float32)), tf.int32), 1)
        for fraction in fractions[:-1]]
    return [tf.minimum(end, max_time) for end in ends] + [max_time]


def while_loop(cond, body, loop_vars, shape_invariants, max_time,
               state_index, segments=None, resize_state=None):
    """`tf.while_loop(cond, body, loop_vars)` over a search's steps, whose
    first loop variable is the step `t` and `loop_vars[state_index]` the
    decoding state.

    Args:
      cond, body: as `tf.while_loop`'s.
      loop_vars: tuple; `loop_vars[0]` the int32 step.
      shape_invariants: callable `loop_vars -> shape invariants`.
      max_time: int32 scalar; the most steps.
      state_index: int; where the decoding state is in `loop_vars`.
      segments: list of int32 scalars (`segment_lengths`) or None (one
        loop). The state given must hold `segments[0]` steps.
      resize_state: callable `(state, length) -> state` with room for
        `length` steps; needed with `segments`.

    Returns:
      The final loop variables.
    """
    if segments is None:
        return tf.while_loop(cond, body, loop_vars,
                             shape_invariants=shape_invariants(loop_vars),
                             maximum_iterations=max_time)
    for i, end in enumerate(segments):
        if i:
            loop_vars = (loop_vars[:state_index]
                         + (resize_state(loop_vars[state_index], end),)
                         + loop_vars[state_index + 1:])

        def segment_cond(t, *rest, end=end):
            return (t < end) & cond(t, *rest)

        loop_vars = tf.while_loop(
            segment_cond, body, loop_vars,
            shape_invariants=shape_invariants(loop_vars),
            maximum_iterations=max_time)
    return loop_vars
