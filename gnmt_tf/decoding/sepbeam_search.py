"""Separate-beam search: system-level combination of predictors (SGNMT's
`sepbeam` decoder, Stahlberg et al. 2017).

Each predictor (a step function: a model, or any combination of models)
keeps its own beam of `K` hypotheses, ranked by its own GNMT score (Wu et
al. 2016, eq. 14) exactly as `beam_search` ranks them, with GNMT early
stopping and pruning per beam. Every predictor scores every hypothesis (all
consume all tokens), so at the end the finished hypotheses of all beams are
re-ranked by the combined score `sum_m w_m log P_m(y) / lp(y) + cp(y)` and
the best `N` returned. With one predictor this is `beam_search` exactly.

Unlike a log-linear combination inside one beam, a hypothesis only one
system likes survives in that system's beam; the combination decides among
complete outputs.

The search runs on the host (NumPy bookkeeping, one batched `step_fn` call
per predictor and step on the `M * K` hypotheses of all beams).

Example:

>>> hyps = sepbeam_search([model_a.step, model_b.step],
...                       [state_a, state_b], start_id=bos, end_id=eos,
...                       max_length=20, beam_size=4, weights=[0.5, 0.5])
>>> ids, score = hyps[0]
"""

import numpy as np

from gnmt_tf.decoding.host_steps import HostSteps

COVERAGE_FLOOR = 1e-10  # as gnmt_tf.decoding.penalties


def _length_penalty(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


def _coverage_penalty(coverage, source_length, beta):
    """`[R, S]` summed attention -> `[R]` GNMT coverage penalty."""
    log_coverage = np.log(np.maximum(np.minimum(
        coverage[:, :source_length], 1.0), COVERAGE_FLOOR))
    return beta * log_coverage.sum(axis=1)


def sepbeam_search(step_fns, initial_states, start_id, end_id, max_length,
                   beam_size=4, weights=None, length_penalty=0.6,
                   coverage_penalty=0.0, source_length=None, num_hypotheses=1,
                   beam_width=None):
    """Searches one sentence with one beam per predictor.

    Args:
      step_fns: list of `M` callables `(ids [R], state) -> (log_probs
        [R, V], attention [R, S] or None, new_state)` over one target
        vocabulary.
      initial_states: list of `M` nested structures of tensors `[1, ...]`
        (one sentence each, with room for `max_length` steps).
      start_id, end_id: int. Start and end tokens.
      max_length: int >= 1. Output limit, end token included.
      beam_size: int `K` >= 1, per predictor.
      weights: `M` floats > 0 (normalised to sum to 1) or None (uniform),
        for the combined score.
      length_penalty, coverage_penalty: GNMT's alpha and beta. A beam's
        coverage penalty uses its own predictor's attention (beta != 0 needs
        every predictor to return attention over the same source).
      source_length: int or None. Real source positions for the coverage
        penalty (None: all).
      num_hypotheses: int `N` in `[1, K]`. Each beam keeps `N` finished
        ones; the best `N` of all beams are returned.
      beam_width: float or None. GNMT's pruning, per beam (see
        `beam_search`).

    Returns:
      A list of at most `N` pairs `(ids, score)`, best combined score
      first; `ids` (tuple of int) end with the end token unless cut at
      `max_length`.
    """
    m, k, n = len(step_fns), int(beam_size), int(num_hypotheses)
    if m < 1 or len(initial_states) != m:
        raise ValueError(f"need one initial state per step function, got "
                         f"{len(initial_states)} for {m}")
    if k < 1 or not 1 <= n <= k:
        raise ValueError(f"need beam_size >= 1 and 1 <= num_hypotheses <= "
                         f"beam_size, got {beam_size}, {num_hypotheses}")
    if not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    weights = np.ones(m) if weights is None else np.asarray(weights, float)
    if weights.shape != (m,) or not (weights > 0).all():
        raise ValueError(f"need {m} weights > 0, got {weights.tolist()}")
    weights = weights / weights.sum()
    alpha, beta = float(length_penalty), float(coverage_penalty)
    steps = [HostSteps(fn) for fn in step_fns]
    rows = m * k                   # row r: slot r % k of predictor r // k
    owner = np.repeat(np.arange(m), k)
    states = [HostSteps.select(s, np.zeros(rows, np.int64))
              for s in initial_states]
    last = np.full(rows, start_id, np.int32)
    ids = np.zeros([rows, 0], np.int64)
    log_probs = np.zeros([rows, m])                # each predictor's sum
    log_probs[np.arange(rows) % k != 0] = -np.inf  # one live slot per beam
    coverage = None                                # [rows, S], own predictor
    finished = [[] for _ in range(m)]   # per beam: (score, ids, log_probs)
    stopped = np.zeros(m, bool)

    for t in range(max_length):
        length = t + 1
        outputs = [step.step(last, state) for step, state in zip(steps,
                                                                 states)]
        step_log_probs = np.stack([o[0] for o in outputs], 1)   # [R, M, V]
        vocab_size = step_log_probs.shape[2]
        own = step_log_probs[np.arange(rows), owner]            # [R, V]
        if beta != 0:
            attention = [o[1] for o in outputs]
            if any(a is None for a in attention) or len(
                    {a.shape[1] for a in attention}) > 1:
                raise ValueError("coverage_penalty needs predictors that "
                                 "all return attention over one source")
            own_attention = np.stack(attention, 1)[np.arange(rows), owner]
            coverage = (own_attention if coverage is None
                        else coverage + own_attention)              # [R, S]
        penalty = (_coverage_penalty(coverage, source_length, beta)
                   if beta != 0 else np.zeros(rows))
        cand_all = log_probs[:, :, None] + step_log_probs       # [R, M, V]
        cand_own = cand_all[np.arange(rows), owner]             # [R, V]
        cand_scores = (cand_own / _length_penalty(length, alpha)
                       + penalty[:, None])
        new_rows, new_tokens, keep_rows = [], [], []
        for b in range(m):
            slots = np.arange(b * k, (b + 1) * k)
            scores = cand_scores[slots].astype(np.float32)      # [K, V]
            if stopped[b]:
                scores[:] = -np.inf
            if beam_width is not None:
                scores = _prune(scores, own[slots], finished[b], length,
                                max_length, end_id, beam_width)
            flat = scores.reshape(-1)
            top = np.argsort(-flat, kind="stable")[:k]
            beam, token = top // vocab_size, top % vocab_size
            valid = flat[top] > -np.inf
            ends = (token == end_id) | (length >= max_length)
            for j in np.nonzero(valid & ends)[0]:
                r = slots[beam[j]]
                finished[b].append((float(flat[top[j]]),
                                    tuple(ids[r].tolist()) + (int(token[j]),),
                                    cand_all[r, :, token[j]]))
            finished[b].sort(key=lambda f: -f[0])  # stable: old ones first
            del finished[b][n:]
            keep = valid & ~ends
            best_live = flat[top][keep].max() if keep.any() else -np.inf
            if not keep.any() or (len(finished[b]) == n
                                  and finished[b][-1][0] > best_live):
                stopped[b] = True
            new_rows.append(slots[beam])
            new_tokens.append(token)
            keep_rows.append(keep & ~stopped[b])
        if stopped.all():
            break
        parents = np.concatenate(new_rows)
        tokens = np.concatenate(new_tokens).astype(np.int32)
        keep = np.concatenate(keep_rows)
        log_probs = np.where(keep[:, None],
                             cand_all[parents, :, tokens], -np.inf)
        ids = np.concatenate([ids[parents], tokens[:, None]], 1)
        if coverage is not None:
            coverage = coverage[parents]
        last = tokens
        states = [HostSteps.select(o[2], parents) for o in outputs]

    return _combine(finished, weights, alpha, n, beam_width)


def _prune(scores, own_log_probs, finished, length, max_length, end_id,
           beam_width):
    """GNMT's two pruning rules on one beam's candidates `[K, V]`."""
    scores = np.where(own_log_probs < own_log_probs.max(axis=1, keepdims=True)
                      - beam_width, -np.inf, scores)
    ending = scores if length >= max_length else scores[:, end_id]
    best_final = max([f[0] for f in finished[:1]] + [ending.max()])
    return np.where(scores < best_final - beam_width, -np.inf,
                    scores).astype(np.float32)


def _combine(finished, weights, alpha, n, beam_width):
    """The `N` best finished hypotheses of all beams by combined score."""
    best = {}
    for b, beam in enumerate(finished):
        for own_score, ids, log_probs in beam:
            if beam_width is not None and own_score < beam[0][0] - beam_width:
                continue  # pruning rule 2, as beam_search's n-best list
            lp = _length_penalty(len(ids), alpha)
            # The beam's own coverage penalty: its score minus its
            # normalised log-probability.
            penalty = own_score - log_probs[b] / lp
            score = float(weights @ log_probs / lp + penalty)
            if ids not in best or score > best[ids]:
                best[ids] = score
    ranked = sorted(best.items(), key=lambda item: -item[1])
    return ranked[:n]
