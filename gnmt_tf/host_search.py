"""GNMT beam search in NumPy, for models whose steps run outside TensorFlow.

`beam_search_batch` mirrors `gnmt_tf.decoding.beam_search` (and
`greedy_search` for beam size 1) over a batch of sentences: GNMT length and
coverage penalties, score-space pruning and the `"gnmt"` early stopping
rule per sentence, ties broken towards the lower index as `tf.math.top_k`
does. `beam_search` is the same search for one sentence. It sees a model
only through a step function, so one search serves every host runtime
(`gnmt_tf.host_translator`: LiteRT and ONNX Runtime). NumPy only: no
TensorFlow import.

The whole batch moves as arrays: row `b * K + k` of the state is beam `k`
of the `b`-th sentence still searched, one `step_fn` call per output
position serves all of them, and a sentence that stops leaves the arrays
(the state shrinks with it, so later steps run only on live sentences).
There are no per-hypothesis Python objects in the loop.
"""

import numpy as np

NEG_INF = np.float32(-np.inf)
COVERAGE_FLOOR = np.float32(1e-10)  # as gnmt_tf.decoding.penalties


def top_k(scores, k):
    """Indices of the `k` largest entries of each row of `scores` `[A, M]`,
    best first, the lower index first on ties (as `tf.math.top_k` and a
    stable sort of `-scores`), in O(M) per row rather than a full sort.

    Returns:
      int64 `[A, min(k, M)]`.
    """
    rows, size = scores.shape
    if k == 1:
        return np.argmax(scores, axis=1)[:, None]  # the first maximum
    if size <= k:
        return np.argsort(-scores, axis=1, kind="stable")
    # The k-th largest value of each row; where exactly k entries reach it
    # (no tie across the cut) they are the answer. `flatnonzero` because
    # the 2-D `nonzero` is ~20x slower on a beam search's [A, K * V].
    kth = np.partition(scores, size - k, axis=1)[:, size - k, None]
    reach = np.flatnonzero(scores >= kth)  # ascending flat positions
    counts = np.bincount(reach // size, minlength=rows)
    if (counts == k).all():
        index = (reach % size).reshape(rows, k)
    else:
        index = np.empty([rows, k], np.int64)
        clean = counts == k
        index[clean] = (reach[np.repeat(clean, counts)] % size).reshape(-1, k)
        index[~clean] = _first_k_reaching(scores[~clean], kth[~clean], k)
    order = np.argsort(-np.take_along_axis(scores, index, 1), axis=1,
                       kind="stable")
    return np.take_along_axis(index, order, 1)


def _first_k_reaching(scores, kth, k):
    """`[R, k]` ascending indices per row: every entry above `kth`, then
    the first of the entries equal to it (ties at the cut) to fill `k`."""
    above = scores > kth
    tie = scores == kth
    room = k - above.sum(axis=1, keepdims=True)
    take = above | (tie & (np.cumsum(tie, axis=1) <= room))
    return np.nonzero(take)[1].reshape(len(scores), k)


def _check(beam_size, num_hypotheses):
    k, n = int(beam_size), int(num_hypotheses)
    if k < 1 or not 1 <= n <= k:
        raise ValueError(f"need beam_size >= 1 and 1 <= num_hypotheses <= "
                         f"beam_size, got {beam_size}, {num_hypotheses}")
    return k, n


def beam_search_batch(step_fn, state, source_lengths, bos_id, eos_id,
                      max_lengths, beam_size=5, length_penalty=0.6,
                      coverage_penalty=0.0, num_hypotheses=1,
                      beam_width=None):
    """Searches a batch of sentences; returns each one's best pairs.

    Args:
      step_fn: callable `(ids, state) -> (log_probs, attention, changed)`:
        `ids` int32 `[R]`, the last token of each row (`R = A * K`, `A`
        the sentences still searched); `log_probs` `[R, V]`; `attention`
        `[R, S']` (`S'` >= the longest source) or None; `changed`, the
        state entries the step updated, at batch `R` (entries it leaves
        out, such as the encoder memory, keep their value).
      state: dict of arrays of batch `B`, the encoded sentences (padded to
        common shapes: padding must get zero attention).
      source_lengths: ints `[B]`, source ids with the end token; coverage
        counts these positions only.
      bos_id, eos_id: int. Start and end tokens.
      max_lengths: int or ints `[B]`, each >= 1. Output limit in tokens,
        end token included; a hypothesis cut there has no end token.
      beam_size: int `K`. 1 is greedy search (the penalties are ignored
        and the score is the log-probability, as in `greedy_search`).
      length_penalty, coverage_penalty: float. GNMT's alpha and beta.
      num_hypotheses: int `N` in `[1, K]`.
      beam_width: float or None. GNMT's pruning width (the two rules of
        `gnmt_tf.decoding.beam_search`).

    Returns:
      A list of `B` lists of `N` pairs `(ids, score)`, best first; `ids`
      (list of int) exclude the end token.

    Raises:
      ValueError: `K < 1`, `N` outside `[1, K]`, or a max length below 1.
    """
    k, n = _check(beam_size, num_hypotheses)
    alpha = np.float32(0.0 if k == 1 else length_penalty)
    beta = np.float32(0.0 if k == 1 else coverage_penalty)
    source_lengths = np.asarray(source_lengths, np.int64).reshape(-1)
    batch = len(source_lengths)
    max_lengths = np.broadcast_to(np.asarray(max_lengths, np.int64),
                                  [batch])
    if batch == 0:
        return []
    if max_lengths.min() < 1:
        raise ValueError(f"max lengths must be >= 1, got {max_lengths}")
    max_time, width = int(max_lengths.max()), int(source_lengths.max())
    source_mask = (np.arange(width)[None, :]
                   < source_lengths[:, None]).astype(np.float32)  # [B, S]

    active = np.arange(batch)  # the sentences still searched, in row order
    state = {name: np.repeat(value, k, axis=0)                  # [A * K, ...]
             for name, value in state.items()}
    last = np.full([batch * k], bos_id, np.int32)
    alive_ids = np.zeros([batch, k, max_time], np.int32)
    alive_log_probs = np.full([batch, k], NEG_INF, np.float32)
    alive_log_probs[:, 0] = 0.0  # one live hypothesis at the start
    coverage = np.zeros([batch, k, width], np.float32)
    finished_ids = np.zeros([batch, n, max_time], np.int32)
    finished_scores = np.full([batch, n], NEG_INF, np.float32)
    finished_lengths = np.zeros([batch, n], np.int32)

    for t in range(max_time):
        log_probs, attention, changed = step_fn(last, state)
        a = len(active)
        log_probs = np.asarray(log_probs, np.float32).reshape(a, k, -1)
        vocab_size = log_probs.shape[2]
        length = t + 1
        cand_log_probs = alive_log_probs[:, :, None] + log_probs  # [A, K, V]
        lp = np.power(np.float32((5.0 + length) / 6.0), alpha,
                      dtype=np.float32)
        cand_scores = cand_log_probs / lp
        if attention is not None:
            coverage = coverage + np.asarray(attention, np.float32).reshape(
                a, k, -1)[:, :, :width]
            if beta != 0:
                log_coverage = np.log(np.maximum(
                    np.minimum(coverage, np.float32(1.0)), COVERAGE_FLOOR))
                log_coverage *= source_mask[active][:, None, :]
                cand_scores = cand_scores + (
                    beta * log_coverage.sum(axis=2, dtype=np.float32)
                )[:, :, None]
        if beam_width is not None:  # GNMT's two rules, as in-graph
            cand_scores = np.where(
                log_probs < log_probs.max(axis=2, keepdims=True) - beam_width,
                NEG_INF, cand_scores)
            ending = np.where(length >= max_lengths[active],
                              cand_scores.max(axis=(1, 2)),
                              cand_scores[:, :, eos_id].max(axis=1))
            best_final = np.maximum(finished_scores[active, 0], ending)
            cand_scores = np.where(
                cand_scores < (best_final - beam_width)[:, None, None],
                NEG_INF, cand_scores)
        flat_scores = cand_scores.reshape(a, k * vocab_size)
        top = top_k(flat_scores, k)                                # [A, K]
        top_scores = np.take_along_axis(flat_scores, top, 1)
        beam, token = top // vocab_size, (top % vocab_size).astype(np.int32)
        top_log_probs = np.take_along_axis(
            cand_log_probs.reshape(a, k * vocab_size), top, 1)
        valid = top_scores > NEG_INF
        ends = (token == eos_id) | (length >= max_lengths[active][:, None])
        cand_ids = np.take_along_axis(alive_ids, beam[:, :, None], 1)
        cand_ids[:, :, t] = token

        # Ending candidates join the N best finished (old ones first).
        merged_scores = np.concatenate(
            [finished_scores[active],
             np.where(ends & valid, top_scores, NEG_INF)], 1)   # [A, N + K]
        best = np.argsort(-merged_scores, axis=1, kind="stable")[:, :n]
        finished_scores[active] = np.take_along_axis(merged_scores, best, 1)
        finished_ids[active] = np.take_along_axis(
            np.concatenate([finished_ids[active], cand_ids], 1),
            best[:, :, None], 1)
        finished_lengths[active] = np.take_along_axis(
            np.concatenate([finished_lengths[active],
                            np.full([a, k], length, np.int32)], 1), best, 1)

        keep = valid & ~ends
        best_alive = np.where(keep, top_scores, NEG_INF).max(axis=1)
        # GNMT early stopping, per sentence.
        go_on = keep.any(axis=1) & ~(finished_scores[active, n - 1]
                                     > best_alive)
        if not go_on.any():
            break
        rows = np.flatnonzero(go_on)  # positions in `active` that go on
        beam = beam[rows]
        active = active[rows]
        last = token[rows].reshape(-1)
        alive_ids = cand_ids[rows]
        alive_log_probs = np.where(keep, top_log_probs, NEG_INF)[rows]
        coverage = coverage[rows[:, None], beam]
        # One gather per entry: the beam reorder and the shrinking batch.
        gather = ((rows * k)[:, None] + beam).reshape(-1)
        for name, value in state.items():
            if name in changed:
                state[name] = changed[name][gather]
            elif len(rows) < a:  # the same for all beams of a sentence
                state[name] = value.reshape((a, k) + value.shape[1:])[
                    rows].reshape((-1,) + value.shape[1:])

    if beam_width is not None:
        keep = finished_scores >= finished_scores[:, :1] - beam_width
        finished_scores = np.where(keep, finished_scores, NEG_INF)
        finished_lengths = np.where(keep, finished_lengths, 0)
    results = []
    for ids_n, scores_n, lengths_n in zip(finished_ids, finished_scores,
                                          finished_lengths):
        pairs = []
        for ids, score, length in zip(ids_n, scores_n, lengths_n):
            ids = ids[:length].tolist()
            if ids and ids[-1] == eos_id:
                ids.pop()
            pairs.append((ids, float(score)))
        results.append(pairs)
    return results


def beam_search(step_fn, state, source_length, bos_id, eos_id, max_length,
                beam_size=5, length_penalty=0.6, coverage_penalty=0.0,
                num_hypotheses=1, beam_width=None):
    """Searches one sentence; returns its best `(ids, score)` pairs.

    `beam_search_batch` for a batch of one: `state` holds arrays of batch
    1, `source_length` and `max_length` are ints.

    Returns:
      `N` pairs `(ids, score)`, best first; `ids` (list of int) exclude the
      end token.
    """
    return beam_search_batch(
        step_fn, state, [source_length], bos_id, eos_id, [max_length],
        beam_size=beam_size, length_penalty=length_penalty,
        coverage_penalty=coverage_penalty, num_hypotheses=num_hypotheses,
        beam_width=beam_width)[0]
