"""GNMT hypothesis scoring: length penalty and coverage penalty.

Wu et al. (2016), "Google's Neural Machine Translation System",
arXiv:1609.08144, section 7, equation 14:

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
    lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha
    cp(X; Y) = beta * sum_i log(min(sum_j p_ij, 1.0))

where `p_ij` is the attention probability of the j-th target word on the i-th
source word. With `alpha = beta = 0` the score is the plain log-probability.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

# `log(0)` guard for source words that no target step attended to: their
# coverage is floored at this value before the log, so each such word adds
# `beta * log(1e-10) ~= -23 * beta` to the score instead of `-inf`.
COVERAGE_FLOOR = 1e-10


def length_penalty(lengths, alpha):
    """GNMT length penalty `lp(Y) = ((5 + |Y|) / 6) ** alpha`.

    Args:
        lengths: int or float tensor of any shape `[...]`. Hypothesis lengths
            `|Y|`, counting the end token.
        alpha: float or scalar tensor. Length-normalisation strength; `0`
            gives `lp = 1` (no normalisation), GNMT uses `0.6`-`0.7`.

    Returns:
        float32 `[...]`, the penalty (always > 0) that divides the
        log-probability.
    """
    lengths = tf.cast(lengths, tf.float32)
    alpha = tf.cast(alpha, tf.float32)
    return tf.pow((5.0 + lengths) / 6.0, alpha)


def coverage_penalty(coverage, source_mask, beta):
    """GNMT coverage penalty `cp = beta * sum_i log(min(coverage_i, 1))`.

    Source positions whose coverage is 0 are floored at `COVERAGE_FLOOR`
    (1e-10) before the log, so the penalty stays finite. With `beta >= 0` the
    penalty is always `<= 0` and is `0` once every source word has received a
    total attention of at least 1.

    Args:
        coverage: float `[..., S]`. Attention probabilities summed over the
            target steps of a hypothesis, `sum_j p_ij`, per source position
            `i`.
        source_mask: bool or 0/1 tensor broadcastable to `[..., S]`, true at
            real (non-padding) source positions; only those are summed. `None`
            means every position is real.
        beta: float or scalar tensor. Coverage strength; `0` disables it.

    Returns:
        float32 `[...]`, the penalty that is added to the normalised
        log-probability.
    """
    coverage = tf.cast(coverage, tf.float32)
    log_coverage = tf.math.log(
        tf.maximum(tf.minimum(coverage, 1.0), COVERAGE_FLOOR))
    if source_mask is not None:
        log_coverage *= tf.cast(source_mask, tf.float32)
    return tf.cast(beta, tf.float32) * tf.reduce_sum(log_coverage, axis=-1)


def gnmt_score(log_prob, lengths, coverage, source_mask, alpha, beta):
    """Full GNMT score `log_prob / lp(lengths) + cp(coverage)`.

    Args:
        log_prob: float `[...]`. Log-probability `log P(Y | X)` of each
            hypothesis (a sum of per-token log-probabilities, so `<= 0`).
        lengths: int `[...]` (or broadcastable). Hypothesis lengths, counting
            the end token.
        coverage: float `[..., S]`, or `None` for models without attention
            (then the coverage penalty is 0).
        source_mask: bool `[..., S]` (broadcastable) or `None`; see
            `coverage_penalty`.
        alpha: float. Length-penalty strength.
        beta: float. Coverage-penalty strength.

    Returns:
        float32 `[...]`, the score used to rank hypotheses (higher is better).
    """
    score = tf.cast(log_prob, tf.float32) / length_penalty(lengths, alpha)
    if coverage is not None:
        score += coverage_penalty(coverage, source_mask, beta)
    return score
