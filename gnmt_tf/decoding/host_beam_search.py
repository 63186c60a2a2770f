"""GNMT beam search in NumPy, for models whose steps run outside TensorFlow.

`beam_search_batch` mirrors `gnmt_tf.decoding.beam_search` (and
`greedy_search` for beam size 1) over a batch of sentences: GNMT length and
coverage penalties, score-space pruning and the `"gnmt"` early stopping
rule per sentence, ties broken towards the lower index as `tf.math.top_k`
does. `beam_search` is the same search for one sentence. It sees a model
only through a step function, so one search serves every host runtime
(`gnmt_tf.host_translator`: LiteRT and ONNX Runtime). NumPy only: no
TensorFlow import.

The whole batch moves as arrays: one `step_fn` call per output position
serves every sentence still searched, and there are no per-hypothesis
Python objects in the loop. The state holds live hypotheses only, in
(sentence, beam) order: the first step runs one row per sentence (not `K`
copies of the start), a hypothesis that ended or was pruned has no row,
and a sentence that stops leaves the arrays. Candidates are scored per live
row too (each row's K best, then each sentence's K best of those). So a
step costs what the live hypotheses need, which is where GNMT's pruning
saves time.
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
    if size >= 8 * k * GROUP_SIZE:  # a vocabulary
        return _top_k_by_groups(scores, k)
    # np.partition slows ~20x on a row of mostly equal values, and a search's
    # candidate scores are mostly -inf where beams are empty or pruned: then
    # the finite entries (and the first k of a row, which hold the row's
    # first -inf entries should it have fewer than k finite ones) move into
    # a compact array, in their order, and the top k are taken there.
    keep = scores > NEG_INF
    if 2 * np.count_nonzero(keep) >= scores.size:
        return _top_k_by_partition(scores, k)
    keep[:, :k] = True
    return _top_k_among(scores, keep, k)


def _top_k_among(scores, keep, k):
    """`top_k` of each row of `scores` among its `keep` entries, each row
    keeping at least `k` (where it has fewer, the rest of its k best are
    padding indices 0): they move into a compact array, in their order, and
    the top k are taken there."""
    rows, size = scores.shape
    flat = np.flatnonzero(keep)  # ascending: row by row, in index order
    row = flat // size
    counts = np.bincount(row, minlength=rows)
    column = np.arange(len(flat)) - np.repeat(np.cumsum(counts) - counts,
                                              counts)
    compact = np.full([rows, max(counts.max(), k)], NEG_INF, scores.dtype)
    compact[row, column] = scores.reshape(-1)[flat]
    index = np.zeros(compact.shape, np.int64)  # padding: never in the top k
    index[row, column] = flat % size
    if compact.shape[1] <= 256:  # small: a stable sort is cheapest
        chosen = np.argsort(-compact, axis=1, kind="stable")[:, :k]
    else:  # (mostly finite rows: no -inf compaction again)
        chosen = _top_k_by_partition(compact, k)
    return np.take_along_axis(index, chosen, 1)


GROUP_SIZE = 16  # `_top_k_by_groups`: entries per group


def _top_k_by_groups(scores, k):
    """`top_k` of long rows (a vocabulary) through the maxima of groups.

    A row's first `G * GROUP_SIZE` entries form `G` groups of entries
    `G` apart (`g, g + G, g + 2G, ...`): viewed as `[GROUP_SIZE, G]`, their
    maxima are one fast element-wise reduction. The groups' maxima and the
    `size % GROUP_SIZE` entries left over are different entries of the row,
    so at least k of them reach the k-th largest, `t`, and the row's k best
    are among its entries `>= t`: only the groups whose maximum reaches `t`
    (usually about k) and the left-over entries are compared with `t`, and
    the few entries found (ties included) are sorted. That is ~3x cheaper
    than a partition of the whole row, and ties (an int8 model's
    log-probabilities have many) cost nothing extra. Rows where many groups
    reach `t` (many -inf entries, or many equal values) take
    `_top_k_of_wide_rows`.
    """
    rows, size = scores.shape
    groups = size // GROUP_SIZE
    main = groups * GROUP_SIZE
    maxima = scores[:, :main].reshape(rows, GROUP_SIZE, groups).max(axis=1)
    tail = scores[:, main:]
    everything = np.concatenate([maxima, tail], 1) if main < size else maxima
    width = everything.shape[1]
    cut = np.partition(everything, width - k, axis=1)[:, width - k, None]
    reach = np.flatnonzero(maxima >= cut)  # ascending: by row, by group
    wide = np.bincount(reach // groups, minlength=rows) > 8 * k
    if wide.any():
        reach = reach[~wide[reach // groups]]
    reach_row = reach // groups
    columns = (reach % groups)[:, None] + groups * np.arange(GROUP_SIZE)
    values = scores[reach_row[:, None], columns]  # [reached, GROUP_SIZE]
    hit = np.flatnonzero(values >= cut[reach_row])
    row = reach_row[hit // GROUP_SIZE]
    column, value = columns.reshape(-1)[hit], values.reshape(-1)[hit]
    if main < size:
        tail_row, tail_column = np.nonzero((tail >= cut) & ~wide[:, None])
        row = np.concatenate([row, tail_row])
        column = np.concatenate([column, tail_column + main])
        value = np.concatenate([value, tail[tail_row, tail_column]])
    # By row, then by score (best first), then by index (ties).
    order = np.lexsort((column, -value, row))
    counts = np.bincount(row, minlength=rows)
    starts = np.cumsum(counts) - counts
    found = counts >= k  # fewer: wide rows, and rows with NaN
    if found.all():
        return column[order[starts[:, None] + np.arange(k)]]
    index = np.empty([rows, k], np.int64)
    index[found] = column[order[starts[found][:, None] + np.arange(k)]]
    index[~found] = _top_k_of_wide_rows(scores[~found], k)
    return index


def _top_k_of_wide_rows(scores, k):
    """`top_k` of long rows where many entries tie: mostly -inf (a pruned
    row) through their finite entries, the others by partition."""
    finite = scores > NEG_INF
    if 2 * np.count_nonzero(finite) < scores.size:
        finite[:, :k] = True
        return _top_k_among(scores, finite, k)
    return _top_k_by_partition(scores, k)


def _top_k_by_partition(scores, k):
    """`top_k` for `k` < the row length, by one partition."""
    rows, size = scores.shape
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
    the first of the entries equal to it (ties at the cut) to fill `k`.
    Row by row with 1-D `flatnonzero` (fast), since such rows are few: a
    pruned search's rows with fewer than `k` finite scores tie at -inf."""
    index = np.empty([len(scores), k], np.int64)
    for i, (row, cut) in enumerate(zip(scores, kth[:, 0])):
        above = np.flatnonzero(row > cut)
        tied = np.flatnonzero(row == cut)[:k - len(above)]
        index[i] = np.sort(np.concatenate([above, tied]))
    return index


def _check(beam_size, num_hypotheses):
    k, n = int(beam_size), int(num_hypotheses)
    if k < 1 or not 1 <= n <= k:
        raise ValueError(f"need beam_size >= 1 and 1 <= num_hypotheses <= "
                         f"beam_size, got {beam_size}, {num_hypotheses}")
    return k, n


def beam_search_batch(step_fn, state, source_lengths, bos_id, eos_id,
                      max_lengths, beam_size=5, length_penalty=0.6,
                      coverage_penalty=0.0, num_hypotheses=1,
                      beam_width=None, step_gathers=False):
    """Searches a batch of sentences; returns each one's best pairs.

    Args:
      step_fn: callable `(ids, state) -> (log_probs, attention, changed)`:
        `ids` int32 `[R]`, the last token of each row (`R` the live
        hypotheses, at most `K` for each sentence still searched, one each
        at the first step); `log_probs` `[R, V]`; `attention`
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
      step_gathers: bool. `step_fn` takes a third argument, `rows`: per
        state entry, int64 `[R]` indices or None, and its input entry is
        `state[name][rows[name]]` (None: all of `state[name]`, in order).
        The search then never gathers the state itself: it composes the
        indices, and the step gathers each entry once, where it copies it
        anyway (the TFLite runtime: straight into the interpreter's
        input). Otherwise the search gathers each entry after the step.

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
    # The state's rows are the True entries of `live`, in row-major order.
    live = np.zeros([batch, k], bool)
    live[:, 0] = True  # one live hypothesis at the start
    last = np.full([batch], bos_id, np.int32)  # the live rows' last tokens
    alive_ids = np.zeros([batch, k, max_time], np.int32)
    alive_log_probs = np.full([batch, k], NEG_INF, np.float32)
    alive_log_probs[:, 0] = 0.0  # one live hypothesis at the start
    # Attention summed per hypothesis: kept only for the coverage penalty.
    coverage = (np.zeros([batch, k, width], np.float32) if beta != 0
                else None)
    finished_ids = np.zeros([batch, n, max_time], np.int32)
    finished_scores = np.full([batch, n], NEG_INF, np.float32)
    finished_lengths = np.zeros([batch, n], np.int32)
    state = dict(state)
    # The live rows of each entry: state[name][take[name]] (None: all).
    take = dict.fromkeys(state)

    for t in range(max_time):
        if step_gathers:
            log_probs, attention, changed = step_fn(last, state, take)
        else:
            log_probs, attention, changed = step_fn(last, state)
        a = len(active)
        live_slots = np.flatnonzero(live)  # [R] of the a * K slots
        log_probs = np.asarray(log_probs, np.float32)  # [R, V]
        length = t + 1
        row_log_probs = alive_log_probs.reshape(-1)[live_slots]   # [R]
        # A candidate's score is its row's log-prob plus its own, divided
        # by the length penalty, plus its row's coverage penalty: within a
        # row it ranks as its log-prob does. So each row's K best come
        # from the log-probs, and only those K are scored (the same float
        # operations, in the same order, as scoring the whole row).
        row_top = top_k(log_probs, k)                              # [R, K']
        # (Indexing, not np.take_along_axis: ~5x less overhead on these
        # small arrays, which a batch-1 step has many of.)
        row_index = np.arange(len(row_top))[:, None]
        row_top_log_probs = log_probs[row_index, row_top]          # [R, K']
        row_scores = row_log_probs[:, None] + row_top_log_probs
        lp = np.power(np.float32((5.0 + length) / 6.0), alpha,
                      dtype=np.float32)
        if lp != 1:
            row_scores /= lp
        row_penalty = None  # [R, 1]: each row's coverage penalty
        if attention is not None and beta != 0:
            attention = np.asarray(attention, np.float32)[:, :width]
            coverage = coverage + _to_slots(attention, live_slots,
                                            a * k).reshape(a, k, width)
            log_coverage = np.log(np.maximum(
                np.minimum(coverage, np.float32(1.0)), COVERAGE_FLOOR))
            log_coverage *= source_mask[active][:, None, :]
            row_penalty = (beta * log_coverage.sum(
                axis=2, dtype=np.float32)).reshape(-1)[live_slots][:, None]
            row_scores = row_scores + row_penalty
        if beam_width is not None:  # GNMT's rule 1: near the row's best
            near_best = row_top_log_probs[:, :1] - beam_width
            row_scores = np.where(row_top_log_probs < near_best, NEG_INF,
                                  row_scores)
        # A sentence's K best candidates are among its rows' K best each:
        # those ([R, K]) go to one small [A, K * K] array, in (beam, rank)
        # order, so ties still go to the lower beam, then the lower token.
        ranks = row_top.shape[1]
        slot_scores = np.full([a * k, ranks], NEG_INF, np.float32)
        slot_scores[live_slots] = row_scores
        top = np.argsort(-slot_scores.reshape(a, k * ranks), axis=1,
                         kind="stable")[:, :k]                     # [A, K]
        sentences = np.arange(a)[:, None]
        top_scores = slot_scores.reshape(a, -1)[sentences, top]
        beam, rank = top // ranks, top % ranks
        row_of_slot = np.full(a * k, -1, np.int64)
        row_of_slot[live_slots] = np.arange(len(live_slots))
        row = row_of_slot.reshape(a, k)[sentences, beam]
        row = np.maximum(row, 0)  # a slot without a row scored -inf: unused
        token = row_top[row, rank].astype(np.int32)
        top_log_probs = row_log_probs[row] + row_top_log_probs[row, rank]
        if beam_width is not None:  # rule 2: near the best finished
            sentence = live_slots // k  # [R] each row's place in `active`
            at_end = length >= max_lengths[active]
            eos_scores = row_log_probs + log_probs[:, eos_id]
            if lp != 1:
                eos_scores /= lp
            if row_penalty is not None:
                eos_scores = eos_scores + row_penalty[:, 0]
            eos_scores = np.where(log_probs[:, eos_id] < near_best[:, 0],
                                  NEG_INF, eos_scores)
            ending = np.full(a, NEG_INF, np.float32)
            np.maximum.at(ending, sentence,
                          np.where(at_end[sentence], row_scores[:, 0],
                                   eos_scores))
            best_final = np.maximum(finished_scores[active, 0], ending)
            top_scores = np.where(
                top_scores < (best_final - beam_width)[:, None], NEG_INF,
                top_scores)
        valid = top_scores > NEG_INF
        ends = (token == eos_id) | (length >= max_lengths[active][:, None])
        cand_ids = alive_ids[sentences, beam]  # [A, K, T]
        cand_ids[:, :, t] = token

        # Ending candidates join the N best finished (old ones first; the
        # finished stay sorted, so a step where none ends changes nothing).
        finishing = ends & valid
        if finishing.any():
            merged_scores = np.concatenate(
                [finished_scores[active],
                 np.where(finishing, top_scores, NEG_INF)], 1)   # [A, N + K]
            best = np.argsort(-merged_scores, axis=1, kind="stable")[:, :n]
            finished_scores[active] = merged_scores[sentences, best]
            finished_ids[active] = np.concatenate(
                [finished_ids[active], cand_ids], 1)[sentences, best]
            finished_lengths[active] = np.concatenate(
                [finished_lengths[active], np.full([a, k], length, np.int32)],
                1)[sentences, best]

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
        new_live = keep[rows]
        last = token[rows][new_live]
        alive_ids = cand_ids[rows]
        alive_log_probs = np.where(keep, top_log_probs, NEG_INF)[rows]
        if beta != 0:
            coverage = coverage[rows[:, None], beam]
        # One gather per entry: each kept hypothesis takes its parent's row.
        gather = row[rows][new_live]
        # Entries the step leaves unchanged are the same for every row of a
        # sentence: they need a gather only when rows moved between sentences.
        moved = len(rows) < a or not np.array_equal(new_live.sum(axis=1),
                                                    live.sum(axis=1))
        for name, rows_before in take.items():
            if name in changed:
                state[name], take[name] = changed[name], gather
            elif moved:
                take[name] = (gather if rows_before is None
                              else rows_before[gather])
        if not step_gathers:
            for name, rows_now in take.items():
                if rows_now is not None:
                    state[name], take[name] = state[name][rows_now], None
        live = new_live

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


def _to_slots(values, live_slots, slots):
    """`values` `[R, ...]`, one per live slot, as `[slots, ...]` with zeros
    in the other slots (whose hypotheses score -inf whatever they hold)."""
    if len(live_slots) == slots:
        return values
    full = np.zeros((slots,) + values.shape[1:], values.dtype)
    full[live_slots] = values
    return full


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
