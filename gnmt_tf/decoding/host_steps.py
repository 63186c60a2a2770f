"""A TensorFlow step function driven from a host-side (NumPy) search.

The host searches (`exact_search`, `bucket_search`, `sepbeam_search`,
`constrained_search`) choose hypotheses with Python data structures that a
graph cannot express (stacks, priority queues, per-hypothesis constraint
state), but run the model through the same step protocol as the in-graph
searches: `step_fn(ids [N], state) -> (log_probs [N, V], attention [N, S] or
None, new_state)`. `HostSteps` converts at that boundary: NumPy ids in,
NumPy log-probabilities out, the state kept as TensorFlow tensors and rows
of it picked with `tf.gather`.
"""

import numpy as np

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf


class HostSteps:
    """Runs `step_fn` on NumPy ids; selects state rows.

    Args:
      step_fn: callable `(ids [N], state) -> (log_probs [N, V], attention
        [N, S] or None, new_state)`; `state` a nested structure of tensors
        whose first axis is the batch `N`. It must not change `state` in
        place (a state is stepped once per hypothesis that extends it).

    Attributes:
      calls: int. `step_fn` calls made.
      rows: int. Hypotheses stepped (the sum of `N` over the calls).
    """

    def __init__(self, step_fn):
        self.step_fn = step_fn
        self.calls = 0
        self.rows = 0

    def step(self, ids, state):
        """`ids` int `[N]` -> `(log_probs float64 [N, V], attention float64
        [N, S] or None, new_state)`."""
        ids = np.asarray(ids, np.int32)
        log_probs, attention, state = self.step_fn(tf.constant(ids), state)
        self.calls += 1
        self.rows += len(ids)
        return (np.asarray(log_probs, np.float64),
                None if attention is None else np.asarray(attention,
                                                          np.float64),
                state)

    @staticmethod
    def select(state, rows):
        """The state of the hypotheses `rows` (int `[N']`, repeats allowed)."""
        rows = tf.constant(np.asarray(rows, np.int32))
        return tf.nest.map_structure(lambda x: tf.gather(x, rows), state)
