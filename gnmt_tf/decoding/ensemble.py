"""Ensembles of step functions (SGNMT-style predictor combination).

Stahlberg et al. (2017), "SGNMT -- A Flexible NMT Decoding Platform": several
models ("predictors") are combined at every step; the combined step function
plugs into any search in `gnmt_tf.decoding`.
"""

import math

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf


class EnsembleStepFunction:
    """Combines step functions by a weighted average of their probabilities.

    `log_probs = log(sum_m w_m * exp(log_probs_m))` with the weights
    normalised to sum to 1, so the result is again a normalised distribution.
    The attention is the weighted average of the members' attention (members
    without attention are left out and the others' weights renormalised; it
    is `None` when no member has attention). Members must share the target
    vocabulary and, for attention, the source length `S`.

    The ensemble state is the tuple of the members' states, in order.

    Example:

    >>> ensemble = EnsembleStepFunction([model_a.step, model_b.step])
    >>> state = (model_a.initial_state(enc_a), model_b.initial_state(enc_b))
    >>> result = beam_search(ensemble, state, start_ids, end_id, 4, max_len)

    Args:
        step_fns: list of callables `(ids [N], state) -> (log_probs [N, V],
            attention [N, S] or None, new_state)`.
        weights: list of positive floats, one per member, or `None` for a
            uniform average.
    """

    def __init__(self, step_fns, weights=None):
        self.step_fns = list(step_fns)
        if not self.step_fns:
            raise ValueError("EnsembleStepFunction needs at least one step_fn")
        if weights is None:
            weights = [1.0] * len(self.step_fns)
        weights = [float(w) for w in weights]
        if len(weights) != len(self.step_fns):
            raise ValueError(f"got {len(weights)} weights for "
                             f"{len(self.step_fns)} step functions")
        if any(not w > 0 for w in weights):
            raise ValueError(f"ensemble weights must be > 0, got {weights}")
        total = sum(weights)
        self.weights = [w / total for w in weights]

    def __call__(self, ids, state):
        """`(ids [N], states) -> (log_probs [N, V], attention, states)`."""
        if len(state) != len(self.step_fns):
            raise ValueError(f"ensemble state must be a tuple of "
                             f"{len(self.step_fns)} member states, "
                             f"got {len(state)}")
        outputs = [fn(ids, s) for fn, s in zip(self.step_fns, state)]
        log_probs = tf.reduce_logsumexp(tf.stack(
            [tf.cast(lp, tf.float32) + math.log(w)
             for (lp, _, _), w in zip(outputs, self.weights)]), axis=0)
        attended = [(tf.cast(att, tf.float32), w)
                    for (_, att, _), w in zip(outputs, self.weights)
                    if att is not None]
        attention = None
        if attended:
            total = sum(w for _, w in attended)
            attention = tf.add_n([att * (w / total) for att, w in attended])
        return log_probs, attention, tuple(s for _, _, s in outputs)
