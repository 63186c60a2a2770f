"""In-graph ancestral sampling: draw each token from the model's
distribution (the hypotheses of GNMT's RL refinement, Wu et al. 2016, §5).

Same step-function interface and result as `greedy_search` (it is greedy
search with a sampling `select_fn`); to draw `K` samples per sentence, tile
the state first (`tile_beams(state, K)`: row `b * K + k` is sample `k` of
sentence `b`).
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.decoding.greedy_search import greedy_search


def sample_search(step_fn, initial_state, start_ids, end_id, max_lengths,
                  temperature=1.0, seed=None):
    """Samples one output per row, token by token, as one `tf.while_loop`.

    Example:

    >>> state = tile_beams(model.initial_state(encoded), 4)
    >>> result = sample_search(model.step, state,
    ...                        start_ids=tf.fill([4 * batch], bos),
    ...                        end_id=eos, max_lengths=max_lengths)
    >>> ids = tf.reshape(result.ids[:, 0], [batch, 4, -1])

    Args:
        step_fn: callable `(ids [B], state) -> (log_probs [B, V],
            attention [B, S] or None, new_state)`.
        initial_state: nested structure of tensors `[B, ...]`.
        start_ids: int32 `[B]`. First input token of each row.
        end_id: int. The end-of-sentence token.
        max_lengths: int32 `[B]` (or scalar), >= 1. Maximum output length,
            counting the end token.
        temperature: float > 0. Samples from `softmax(log_probs /
            temperature)`; 1 samples from the model's distribution.
        seed: int or None. The sampling op's seed (with TensorFlow's global
            seed, `keras.utils.set_random_seed`, it makes runs repeatable).

    Returns:
        A `DecodingResult` as `greedy_search`'s (`N = 1`), with `log_probs`
        the model's log-probability of each sample (at temperature 1).

    Raises:
        ValueError: `temperature` is not a positive number.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")

    def draw(log_probs):
        return tf.random.categorical(log_probs / temperature, 1, seed=seed,
                                     dtype=tf.int32)[:, 0]

    return greedy_search(step_fn, initial_state, start_ids, end_id,
                         max_lengths, select_fn=draw)
