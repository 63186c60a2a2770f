"""Ensembles of step functions (SGNMT-style predictor combination).

Stahlberg et al. (2017), "SGNMT -- A Flexible NMT Decoding Platform": several
models ("predictors") are combined at every step; the combined step function
plugs into any search in `gnmt_tf.decoding`. Two combinations: a weighted
average of probabilities (`EnsembleStepFunction`) and SGNMT's log-linear sum
of scores (`LogLinearStepFunction`), which also takes predictors that are no
models (`WordCountPredictor`, an n-gram LM).
"""

import functools
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


def check_weights(weights, count, what="predictors"):
    """Validates log-linear weights: `count` finite numbers >= 0, at least
    one > 0. Returns them as a list of floats.

    Raises:
      ValueError: the wrong number, a negative, NaN or infinite weight, or
        all zero; the message names the problem.
    """
    weights = [float(w) for w in weights]
    if len(weights) != count:
        raise ValueError(f"got {len(weights)} weights for {count} {what}")
    bad = [w for w in weights if not (math.isfinite(w) and w >= 0)]
    if bad:
        raise ValueError(f"weights must be finite and >= 0, got {weights}")
    if not any(w > 0 for w in weights):
        raise ValueError(f"at least one weight must be > 0, got {weights}")
    return weights


class LogLinearStepFunction:
    """Combines step functions log-linearly, as SGNMT combines predictors.

    `scores = sum_m w_m * scores_m`: each member's `[N, V]` scores (a
    model's log-probabilities, an n-gram LM's, a word-count bonus) times its
    weight. Unlike `EnsembleStepFunction` the result is not a normalised
    distribution; every search here ranks by summed step scores, so it plugs
    in unchanged (exact search needs scores <= 0: see `max_step_score`). A
    weight of 0 takes a member out exactly (`0 * -inf` counts as 0).

    The attention is the weight-averaged attention of the members that
    return one (members without, or of weight 0, are left out); `None` when
    none does. The state is the tuple of the members' states, in order.

    Args:
        step_fns: list of callables `(ids [N], state) -> (scores [N, V],
            attention [N, S] or None, new_state)`.
        weights: list of floats >= 0 (finite, one > 0), or `None` for all 1.
        max_scores: list of the most each member's step score can be (0 for
            log-probabilities, the default), for `max_step_score`.
    """

    def __init__(self, step_fns, weights=None, max_scores=None):
        self.step_fns = list(step_fns)
        if not self.step_fns:
            raise ValueError("LogLinearStepFunction needs at least one "
                             "step_fn")
        if weights is None:
            weights = [1.0] * len(self.step_fns)
        self.weights = check_weights(weights, len(self.step_fns),
                                     "step functions")
        self.max_scores = [0.0] * len(self.step_fns) if max_scores is None \
            else [float(m) for m in max_scores]

    @property
    def max_step_score(self):
        """An upper bound of one step's combined score: `sum_m w_m * max_m`
        (0 when every member returns log-probabilities)."""
        return sum(w * m for w, m in zip(self.weights, self.max_scores))

    def __call__(self, ids, state):
        """`(ids [N], states) -> (scores [N, V], attention, states)`."""
        if len(state) != len(self.step_fns):
            raise ValueError(f"combined state must be a tuple of "
                             f"{len(self.step_fns)} member states, "
                             f"got {len(state)}")
        outputs = [fn(ids, s) for fn, s in zip(self.step_fns, state)]
        # Members of weight 0 still step (their state must follow the
        # hypothesis) but add nothing, not even 0 * -inf. Plain `*` and `+`
        # keep the graph to the ops a SavedModel already has.
        weighted = [tf.cast(lp, tf.float32) * w if w != 1 else
                    tf.cast(lp, tf.float32)
                    for (lp, _, _), w in zip(outputs, self.weights) if w > 0]
        scores = functools.reduce(lambda a, b: a + b, weighted)
        attended = [(tf.cast(att, tf.float32), w)
                    for (_, att, _), w in zip(outputs, self.weights)
                    if att is not None and w > 0]
        attention = None
        if attended:
            total = sum(w for _, w in attended)
            attention = functools.reduce(
                lambda a, b: a + b,
                [att * (w / total) for att, w in attended])
        return scores, attention, tuple(s for _, _, s in outputs)


class WordCountPredictor:
    """A word-count bonus (SGNMT's `wc` predictor): every token but the end
    token scores 1, so with weight `w` a hypothesis gains `w` per token;
    against the models' bias towards short outputs. Stateless (its state
    is `{}`).

    Args:
        vocab_size: int `V`.
        end_id: int. The end token, which scores 0.
    """

    max_score = 1.0

    def __init__(self, vocab_size, end_id):
        self.vocab_size = int(vocab_size)
        self.end_id = int(end_id)

    def initial_state(self, batch_size):
        """The (empty) state of `batch_size` sentences: `{}`."""
        del batch_size
        return {}

    def step(self, ids, state):
        """`(ids [N], {}) -> (scores [N, V], None, {})`."""
        row = 1.0 - tf.one_hot(self.end_id, self.vocab_size)            # [V]
        return tf.tile(row[tf.newaxis], tf.stack([tf.shape(ids)[0], 1])), \
            None, state
