"""GNMT beam search in NumPy, for models whose steps run outside TensorFlow.

`beam_search` mirrors `gnmt_tf.decoding.beam_search` (and `greedy_search`
for beam size 1): GNMT length and coverage penalties, score-space pruning
and the `"gnmt"` early stopping rule, ties broken towards the lower index as
`tf.math.top_k` does. It sees a model only through a step function, so one
search serves every host runtime (`gnmt_tf.host_translator`: LiteRT and
ONNX Runtime). NumPy only: no TensorFlow import.
"""

import numpy as np

NEG_INF = np.float32(-np.inf)
COVERAGE_FLOOR = np.float32(1e-10)  # as gnmt_tf.decoding.penalties


def beam_search(step_fn, state, source_length, bos_id, eos_id, max_length,
                beam_size=5, length_penalty=0.6, coverage_penalty=0.0,
                num_hypotheses=1, beam_width=None):
    """Searches one sentence; returns its best `(ids, score)` pairs.

    Args:
      step_fn: callable `(ids, state) -> (log_probs, attention, changed)`:
        `ids` int32 `[K]`, the last token of each hypothesis; `log_probs`
        `[K, V]`; `attention` `[K, S']` (`S' >= source_length`) or None;
        `changed`, the state entries the step updated, at batch `K` (entries
        it leaves out, such as the encoder memory, keep their value).
      state: dict of arrays of batch 1, the encoded sentence.
      source_length: int `S`, source ids with the end token.
      bos_id, eos_id: int. Start and end tokens.
      max_length: int >= 1. Output limit in tokens, end token included; a
        hypothesis cut there has no end token.
      beam_size: int `K`. 1 is greedy search (the penalties are ignored
        and the score is the log-probability, as in `greedy_search`).
      length_penalty, coverage_penalty: float. GNMT's alpha and beta.
      num_hypotheses: int `N` in `[1, K]`.
      beam_width: float or None. GNMT's pruning width (the two rules of
        `gnmt_tf.decoding.beam_search`).

    Returns:
      `N` pairs `(ids, score)`, best first; `ids` (list of int) exclude the
      end token.

    Raises:
      ValueError: `K < 1`, or `N` outside `[1, K]`.
    """
    k, n = int(beam_size), int(num_hypotheses)
    if k < 1 or not 1 <= n <= k:
        raise ValueError(f"need beam_size >= 1 and 1 <= num_hypotheses <= "
                         f"beam_size, got {beam_size}, {num_hypotheses}")
    alpha = np.float32(0.0 if k == 1 else length_penalty)
    beta = np.float32(0.0 if k == 1 else coverage_penalty)

    state = {name: np.repeat(value, k, axis=0)
             for name, value in state.items()}
    last = np.full([k], bos_id, np.int32)
    alive_ids = np.zeros([k, max_length], np.int32)
    alive_log_probs = np.full([k], NEG_INF, np.float32)
    alive_log_probs[0] = 0.0  # one live hypothesis at the start
    coverage = np.zeros([k, source_length], np.float32)
    finished_ids = np.zeros([n, max_length], np.int32)
    finished_scores = np.full([n], NEG_INF, np.float32)
    finished_lengths = np.zeros([n], np.int32)

    for t in range(max_length):
        log_probs, attention, changed = step_fn(last, state)
        log_probs = log_probs.astype(np.float32)                 # [K, V]
        vocab_size = log_probs.shape[1]
        length = t + 1
        cand_log_probs = alive_log_probs[:, None] + log_probs    # [K, V]
        lp = np.power(np.float32((5.0 + length) / 6.0), alpha,
                      dtype=np.float32)
        cand_scores = cand_log_probs / lp
        if attention is not None:
            coverage = coverage + attention[:, :source_length]
            if beta != 0:
                log_coverage = np.log(np.maximum(
                    np.minimum(coverage, np.float32(1.0)), COVERAGE_FLOOR))
                cand_scores = cand_scores + (
                    beta * log_coverage.sum(axis=1, dtype=np.float32)
                )[:, None]
        if beam_width is not None:  # GNMT's two rules, as in-graph
            cand_scores = np.where(
                log_probs < log_probs.max(axis=1, keepdims=True) - beam_width,
                NEG_INF, cand_scores)
            ending = cand_scores if length >= max_length else cand_scores[
                :, eos_id]
            best_final = max(finished_scores[0], ending.max())
            cand_scores = np.where(cand_scores < best_final - beam_width,
                                   NEG_INF, cand_scores)
        flat_scores = cand_scores.reshape(-1)                    # [K * V]
        # Stable: on ties the lower index wins, as tf.math.top_k.
        top = np.argsort(-flat_scores, kind="stable")[:k]
        top_scores = flat_scores[top]
        beam, token = top // vocab_size, (top % vocab_size).astype(np.int32)
        top_log_probs = cand_log_probs.reshape(-1)[top]
        valid = top_scores > NEG_INF
        ends = (token == eos_id) | (length >= max_length)
        cand_ids = alive_ids[beam]
        cand_ids[:, t] = token

        # Ending candidates join the N best finished (old ones first).
        merged_scores = np.concatenate(
            [finished_scores, np.where(ends & valid, top_scores, NEG_INF)])
        merged_ids = np.concatenate([finished_ids, cand_ids])
        merged_lengths = np.concatenate(
            [finished_lengths, np.full([k], length, np.int32)])
        best = np.argsort(-merged_scores, kind="stable")[:n]
        finished_scores = merged_scores[best]
        finished_ids = merged_ids[best]
        finished_lengths = merged_lengths[best]

        keep = valid & ~ends
        if not keep.any():
            break
        if finished_scores[n - 1] > np.where(keep, top_scores, NEG_INF).max():
            break  # GNMT early stopping
        last = token
        alive_ids = cand_ids
        alive_log_probs = np.where(keep, top_log_probs, NEG_INF)
        coverage = coverage[beam]
        state.update({name: value[beam] for name, value in changed.items()})

    if beam_width is not None:
        keep = finished_scores >= finished_scores[0] - beam_width
        finished_scores = np.where(keep, finished_scores, NEG_INF)
        finished_lengths = np.where(keep, finished_lengths, 0)
    results = []
    for ids, score, length in zip(finished_ids, finished_scores,
                                  finished_lengths):
        ids = ids[:length].tolist()
        if ids and ids[-1] == eos_id:
            ids.pop()
        results.append((ids, float(score)))
    return results
