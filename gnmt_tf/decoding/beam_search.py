"""In-graph beam search with GNMT scoring, pruning and early stopping.

The search sees a model only through a step function

    step_fn(ids [N], state) -> (log_probs [N, V], attention [N, S] or None,
                                new_state)

and runs as one `tf.while_loop` over fixed-size buffers, so the same code runs
eagerly, inside a `tf.function` with a dynamic batch size and inside an
exported SavedModel. Shapes below: `B` batch, `K` beam size, `N` returned
hypotheses, `V` vocabulary, `T` longest allowed output, `S` source length.

At each step the `K * V` one-token extensions of the live hypotheses of a
sentence are scored with the GNMT score (`penalties.gnmt_score`) and the best
`K` kept (OpenNMT/Moses style): those that end (end token, or the sentence's
maximum length reached) join the sentence's `N` best finished hypotheses, the
rest stay live. With `K = 1` this is exactly greedy search; with `K` at least
the number of extensions it is exhaustive search.

With `drop_stopped` (graph mode, where shapes may change) a sentence that
stops leaves the batch: the step loop is wrapped in a loop that, whenever a
sentence stops, moves its finished hypotheses to the output and gathers the
live sentences' rows, so a batch step costs what its live sentences need.
"""

import numbers
import typing

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.decoding import penalties, segmented_loop, top_k
from gnmt_tf.translation import EARLY_STOPPING_MODES


class DecodingResult(typing.NamedTuple):
    """Output of `beam_search` and `greedy_search`, best hypothesis first.

    Attributes:
        ids: int32 `[B, N, T]`. Generated tokens, including the end token
            (not the start token), padded with 0 after it. `T` is the longest
            returned hypothesis.
        lengths: int32 `[B, N]`. Number of tokens, including the end token.
            A hypothesis cut at its sentence's maximum length has no end token.
        scores: float32 `[B, N]`. Final GNMT score (`-inf` for an empty slot
            when a sentence has fewer than `N` hypotheses).
        log_probs: float32 `[B, N]`. Log-probability of each hypothesis.
        attention: float32 `[B, N, T, S]` attention of each generated token,
            or `None` when the step function returns none.
        num_steps: int32 scalar. Number of decoding steps that ran.
    """

    ids: tf.Tensor
    lengths: tf.Tensor
    scores: tf.Tensor
    log_probs: tf.Tensor
    attention: typing.Optional[tf.Tensor]
    num_steps: tf.Tensor


def tile_beams(nested, beam_size):
    """Repeats every row `beam_size` times: `[B, ...]` -> `[B * K, ...]`.

    Row `b * K + k` holds beam `k` of sentence `b`. Works on any nested
    structure (dict, tuple) of tensors.
    """
    return tf.nest.map_structure(
        lambda x: tf.repeat(x, beam_size, axis=0), nested)


def flatten_beams(x):
    """Merges the batch and beam axes: `[B, K, ...]` -> `[B * K, ...]`."""
    shape = tf.shape(x)
    flat = tf.reshape(x, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))
    flat.set_shape([None] + x.shape[2:].as_list())
    return flat


def unflatten_beams(x, beam_size):
    """Splits the batch and beam axes: `[B * K, ...]` -> `[B, K, ...]`."""
    shape = tf.shape(x)
    out = tf.reshape(x, tf.concat([[-1, beam_size], shape[1:]], 0))
    out.set_shape([None, beam_size] + x.shape[1:].as_list())
    return out


def gather_beams(nested, beam_indices):
    """Selects beams per sentence: `[B, K, ...]` -> `[B, K', ...]`.

    Args:
        nested: nested structure of tensors `[B, K, ...]`.
        beam_indices: int32 `[B, K']`, for each new beam the old beam it
            copies.
    """
    return tf.nest.map_structure(
        lambda x: tf.gather(x, beam_indices, axis=1, batch_dims=1), nested)


def reorder_beams(x, beam_indices, beam_size, unchanged=False):
    """Reorders the beams of a state entry: `[B * K, ...]`, row `b * K + k`
    becomes old row `b * K + beam_indices[b, k]`.

    An entry the step function returned `unchanged` (the very tensor it was
    given, such as the encoder memory or cross-attention keys) is the same
    for all beams of a sentence, since the initial state is tiled
    (`tile_beams`): reordering it is the identity, so it is returned as is
    rather than copied at every step.
    """
    if unchanged:
        return x
    return flatten_beams(gather_beams(unflatten_beams(x, beam_size),
                                      beam_indices))


def state_shape_invariant(x):
    """The `tf.while_loop` shape invariant of a decoding-state entry: any
    number of rows and the other axes as they are, except that an axis of
    length 0 may grow (a KV cache that gains a position at every step)."""
    return tf.TensorShape([None] + [None if d == 0 else d
                                    for d in x.shape[1:].as_list()])


def pad_last(x, size):
    """Zero-pads the last axis of `x` up to `size` (a no-op once there)."""
    rank = x.shape.rank
    pad = tf.stack([0, size - tf.shape(x)[-1]])[tf.newaxis]
    return tf.pad(x, tf.concat([tf.zeros([rank - 1, 2], tf.int32), pad], 0))


def buffer_length(max_time, max_lengths):
    """`(max_time, max_lengths)` of a search: the buffers' length (the
    largest of `max_lengths` by default; at least 1 so that an empty batch
    still builds) and `max_lengths` clipped to it."""
    if max_time is None:
        return tf.maximum(tf.reduce_max(max_lengths), 1), max_lengths
    max_time = tf.cast(max_time, tf.int32)
    return max_time, tf.minimum(max_lengths, max_time)


def _static_value(x):
    """The Python value of `x` when known at trace time, else `None`."""
    return None if x is None else tf.get_static_value(x)


def _validate(beam_size, num_hypotheses, beam_width, early_stopping,
              coverage_penalty):
    if not isinstance(beam_size, numbers.Integral) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive int, got {beam_size!r}")
    if not isinstance(num_hypotheses, numbers.Integral) or not (
            1 <= num_hypotheses <= beam_size):
        raise ValueError(
            f"num_hypotheses must be an int in [1, beam_size={beam_size}], "
            f"got {num_hypotheses!r}")
    if early_stopping not in EARLY_STOPPING_MODES:
        raise ValueError(f"early_stopping must be one of "
                         f"{EARLY_STOPPING_MODES}, got {early_stopping!r}")
    width = _static_value(beam_width)
    if width is not None and not width > 0:
        raise ValueError(f"beam_width must be > 0 or None, got {beam_width!r}")
    beta = _static_value(coverage_penalty)
    if early_stopping == "exact" and (beta is None or beta < 0):
        raise ValueError("early_stopping='exact' needs a constant "
                         f"coverage_penalty >= 0, got {coverage_penalty!r}")


def _prune(cand_scores, log_probs, finished_scores, at_max_length, end_id,
           beam_width):
    """GNMT's two pruning rules on the candidates `[B, K, V]` of a step.

    Args:
        cand_scores: float32 `[B, K, V]`, GNMT scores of the extensions.
        log_probs: float32 `[B, K, V]`, the step's token log-probabilities.
        finished_scores: float32 `[B, N]`, best first.
        at_max_length: bool `[B]`, every candidate of the sentence ends.
        end_id: int.
        beam_width: float.
    """
    neg_inf = float("-inf")
    # Rule 1: tokens far below the hypothesis' best token at this step.
    local_best = tf.reduce_max(log_probs, axis=2, keepdims=True)
    cand_scores = tf.where(log_probs < local_best - beam_width, neg_inf,
                           cand_scores)
    # Rule 2: candidates far below the best finished hypothesis, counting
    # those that finish at this step.
    is_end = tf.equal(tf.range(tf.shape(cand_scores)[2]), end_id)
    ending = is_end[tf.newaxis, tf.newaxis] | at_max_length[:, tf.newaxis,
                                                             tf.newaxis]
    best_final = tf.maximum(
        finished_scores[:, 0],
        tf.reduce_max(tf.where(ending, cand_scores, neg_inf), axis=[1, 2]))
    return tf.where(
        cand_scores < best_final[:, tf.newaxis, tf.newaxis] - beam_width,
        neg_inf, cand_scores)


def _drop_below_best(finished, beam_width):
    """Empties the finished slots more than `beam_width` below the best."""
    scores = finished["scores"]                                      # [B, N]
    drop = scores < scores[:, :1] - beam_width
    empty = {"ids": 0, "scores": float("-inf"), "log_probs": float("-inf"),
             "lengths": 0, "attention": 0.0}

    def clear(name, x):
        mask = tf.reshape(drop, tf.concat(
            [tf.shape(drop), tf.ones([x.shape.rank - 2], tf.int32)], 0))
        return tf.where(mask, tf.constant(empty[name], x.dtype), x)

    return {name: clear(name, x) for name, x in finished.items()}


def beam_search(step_fn, initial_state, start_ids, end_id, beam_size,
                max_lengths, source_lengths=None, length_penalty=0.0,
                coverage_penalty=0.0, beam_width=None, num_hypotheses=1,
                early_stopping="gnmt", max_time=None, attention_width=None,
                segments=None, resize_state=None, drop_stopped=False):
    """Beam search with GNMT scoring, pruning and early stopping.

    Hypotheses are ranked by the GNMT score (Wu et al. 2016, eq. 14):
    `log P(Y|X) / ((5 + |Y|) / 6) ** alpha + beta * sum_i log(min(c_i, 1))`,
    with `c_i` the attention on source position `i` summed over the
    hypothesis' steps (see `gnmt_tf.decoding.penalties`).

    Early stopping (per sentence; the loop ends when every sentence has
    stopped, or all have reached their maximum length):

    - `"none"`: run until the sentence's maximum length.
    - `"gnmt"` (GNMT's heuristic): stop once the worst of the `N` finished
      hypotheses scores above every live hypothesis' current score. Cheap,
      but a live hypothesis could still have improved (its length penalty
      grows), so results may differ from `"none"`.
    - `"exact"` (Ctrip): stop once no live hypothesis can still beat the worst
      of the `N` finished ones. Bound: a live hypothesis with log-probability
      `L <= 0` at length `l` can only finish at some length
      `l' in [l + 1, M]` (`M` the sentence's maximum length), with
      log-probability `L' <= L` (log-probabilities only decrease) and coverage
      penalty `cp' <= 0` (`beta >= 0`, `min(c, 1) <= 1`). Its score is then
      `L' / lp(l') + cp' <= L / lp(l') <= L / max(lp(l + 1), lp(M))`, because
      `L <= 0` and `lp` is monotone in the length, so its maximum over the
      range is at an end point. When the worst finished score is above this
      bound for every live hypothesis, continuing cannot change the result:
      `"exact"` returns exactly what `"none"` returns, in fewer steps.

    Pruning (Wu et al. 2016, section 7; GNMT uses `beam_width = 3`), the
    paper's two rules:

    1. "At each step, we only consider tokens that have local scores that
       are not more than beamsize below the best token for this step": a
       live hypothesis is extended only by tokens whose log-probability at
       this step is at least its best token's minus `beam_width` (the local
       score is the token's own log-probability, compared among the tokens
       of one hypothesis).
    2. "We remove all hypotheses that are more than beamsize below the best
       final hypothesis": once a hypothesis has finished, every candidate
       (live or finishing) whose GNMT score is more than `beam_width` below
       the best finished score so far (this step's included) is dropped, and
       so are finished ones below that line in the returned n-best list.

    With `alpha = beta = 0` rule 2 is admissible (a live score can only fall)
    and rule 1 only excludes outputs with an improbable token, so an
    exhaustive beam with pruning returns the best outputs made of
    within-`beam_width` tokens that score within `beam_width` of the best of
    them; pruning mostly saves steps (fewer live hypotheses, so the search
    stops earlier).

    Example:

    >>> result = beam_search(model.step, model.initial_state(encoded),
    ...                      start_ids=tf.fill([batch], bos), end_id=eos,
    ...                      beam_size=4, max_lengths=2 * source_lengths + 10,
    ...                      source_lengths=source_lengths,
    ...                      length_penalty=0.6, coverage_penalty=0.2)
    >>> best = result.ids[:, 0]  # [B, T]

    Args:
        step_fn: callable `(ids, state) -> (log_probs, attention, new_state)`.
            `ids` int32 `[N]` are the previous tokens, `log_probs` float32
            `[N, V]` normalised log-probabilities, `attention` float32
            `[N, S]` attention probabilities of this step (or `None`), and
            `new_state` has the structure and shapes of `state`.
        initial_state: nested structure of tensors `[B, ...]`, the state for
            the first step; it is tiled to `[B * K, ...]`.
        start_ids: int32 `[B]`. First input token of each sentence.
        end_id: int. The end-of-sentence token.
        beam_size: int `K`. Live hypotheses kept per sentence.
        max_lengths: int32 `[B]` (or scalar), >= 1. Maximum output length per
            sentence, counting the end token; a hypothesis that reaches it is
            finished without an end token.
        source_lengths: int32 `[B]` or `None`. Real source length per
            sentence, to mask padding out of the coverage penalty; `None`
            counts all `S` positions.
        length_penalty: float `alpha`.
        coverage_penalty: float `beta`; needs a step function that returns
            attention.
        beam_width: float or `None`. GNMT's pruning width (both rules above).
        num_hypotheses: int `N` in `[1, K]`. Hypotheses returned per sentence.
        early_stopping: `"gnmt"`, `"exact"` or `"none"`, see above.
        max_time: int or int32 scalar, or `None`. Length `T` of the
            search's buffers and of the returned `ids` and `attention`
            (not trimmed to the longest hypothesis); `max_lengths` are
            clipped to it. Default: the largest of `max_lengths`, and the
            outputs trimmed. With `attention_width`, every shape in the
            loop follows from the input shapes: what XLA needs to compile
            the whole search (`Translator(..., jit_compile_search=True)`).
        attention_width: int or int32 scalar, or `None`. The width `S` of
            the step's attention, when known before the first step: the
            coverage and attention buffers start at that width (by default
            they start empty and are padded once `S` is seen).
        segments, resize_state: with `max_time`, run the loop in segments
            ending at these steps, the state (holding `segments[0]` steps)
            resized by `resize_state(state, length)` between them
            (`gnmt_tf.decoding.segmented_loop`); the result is the same.
        drop_stopped: bool. Take the sentences that have stopped out of the
            batch (their finished hypotheses moved to the output, the rest
            of the batch and its decoding state gathered) instead of
            stepping them on with the others, so that a batch step costs
            what its live sentences need. The same result. Every state
            entry must have the `B * K` rows first; the batch size then
            changes within the loop, so not with `segments` (XLA).

    Returns:
        A `DecodingResult` with `ids [B, N, T]`, `lengths [B, N]`,
        `scores [B, N]`, `log_probs [B, N]`, `attention [B, N, T, S]` (or
        `None`) and `num_steps`.
    """
    _validate(beam_size, num_hypotheses, beam_width, early_stopping,
              coverage_penalty)
    k, n = int(beam_size), int(num_hypotheses)
    alpha, beta = length_penalty, coverage_penalty
    neg_inf = float("-inf")

    start_ids = tf.cast(start_ids, tf.int32)
    batch_size = tf.shape(start_ids)[0]
    max_lengths = tf.broadcast_to(tf.cast(max_lengths, tf.int32), [batch_size])
    tf.debugging.assert_positive(
        max_lengths, message="beam_search: max_lengths must be >= 1")
    trim = max_time is None
    max_time, max_lengths = buffer_length(max_time, max_lengths)
    width = 0 if attention_width is None else attention_width
    if source_lengths is not None:
        source_lengths = tf.cast(source_lengths, tf.int32)

    def fill(shape, value, dtype=tf.float32):
        return tf.fill(tf.stack(shape), tf.constant(value, dtype))

    # Attention width S is only known once step_fn has run, so coverage and
    # attention buffers start with S = 0 and are zero-padded on the first step.
    alive = {
        "last": tf.tile(start_ids[:, tf.newaxis], [1, k]),           # [B, K]
        "ids": fill([batch_size, k, max_time], 0, tf.int32),         # [B, K, T]
        "log_probs": tf.concat([fill([batch_size, 1], 0.0),
                                fill([batch_size, k - 1], neg_inf)], 1),
        "coverage": fill([batch_size, k, width], 0.0),               # [B, K, S]
        "attention": fill([batch_size, k, max_time, width], 0.0), # [B, K, T, S]
    }
    finished = {
        "ids": fill([batch_size, n, max_time], 0, tf.int32),         # [B, N, T]
        "scores": fill([batch_size, n], neg_inf),                    # [B, N]
        "log_probs": fill([batch_size, n], neg_inf),                 # [B, N]
        "lengths": fill([batch_size, n], 0, tf.int32),               # [B, N]
        "attention": fill([batch_size, n, max_time, width], 0.0), # [B, N, T, S]
    }
    state = tile_beams(initial_state, k)                         # [B * K, ...]
    stopped = fill([batch_size], False, tf.bool)                         # [B]
    has_attention = [False]  # set while tracing/running the loop body

    static_batch = None if drop_stopped else start_ids.shape[0]

    def body(t, alive, finished, state, stopped, max_lengths=max_lengths,
             source_lengths=source_lengths):
        batch_size = tf.shape(alive["last"])[0]
        log_probs, attention, new_state = step_fn(
            tf.reshape(alive["last"], [-1]), state)
        log_probs = unflatten_beams(tf.cast(log_probs, tf.float32), k)
        # Static where known, so that `top_k` sees the rows' width.
        vocab_size = log_probs.shape[2] or tf.shape(log_probs)[2]     # [B,K,V]
        if attention is None:
            if _static_value(beta) != 0:
                raise ValueError(
                    "step_fn returned attention=None, so coverage_penalty "
                    f"must be the constant 0, got {coverage_penalty!r}")
            attention = tf.zeros(tf.stack([batch_size * k, width]))
        else:
            has_attention[0] = True
        attention = unflatten_beams(tf.cast(attention, tf.float32), k)
        src_len = tf.shape(attention)[2]                              # [B,K,S]
        if source_lengths is None:
            source_mask = tf.ones(tf.stack([batch_size, src_len]), tf.bool)
        else:
            source_mask = tf.sequence_mask(source_lengths, src_len)   # [B, S]
        time_mask = tf.one_hot(t, max_time)                              # [T]

        coverage = pad_last(alive["coverage"], src_len) + attention
        history = (pad_last(alive["attention"], src_len)
                   + time_mask[:, tf.newaxis] * attention[:, :, tf.newaxis])
        length = t + 1
        cand_log_probs = alive["log_probs"][:, :, tf.newaxis] + log_probs
        cand_scores = penalties.gnmt_score(                          # [B,K,V]
            cand_log_probs, length, coverage[:, :, tf.newaxis],
            source_mask[:, tf.newaxis, tf.newaxis], alpha, beta)
        if beam_width is not None:
            cand_scores = _prune(cand_scores, log_probs, finished["scores"],
                                 length >= max_lengths, end_id, beam_width)

        # Keep the K best of the K * V candidates.
        top_scores, top = top_k.top_k(tf.reshape(
            cand_scores, [static_batch or batch_size, k * vocab_size]),
            k)
        beam, token = top // vocab_size, top % vocab_size          # [B, K]
        top_log_probs = tf.gather(
            tf.reshape(cand_log_probs, [batch_size, k * vocab_size]), top,
            batch_dims=1)
        valid = top_scores > neg_inf
        ends = (token == end_id) | (length >= max_lengths[:, tf.newaxis])
        cand_ids = (gather_beams(alive["ids"], beam)
                    + tf.cast(time_mask, tf.int32) * token[:, :, tf.newaxis])
        cand_history = gather_beams(history, beam)

        # Ending candidates join the N best finished hypotheses. Old ones come
        # first, so on a tie top_k keeps them and late steps change nothing.
        candidates = {
            "ids": cand_ids,
            "scores": tf.where(ends & valid, top_scores, neg_inf),
            "log_probs": tf.where(ends & valid, top_log_probs, neg_inf),
            "lengths": tf.fill(tf.shape(token), length),
            "attention": cand_history,
        }
        finished = dict(finished,
                        attention=pad_last(finished["attention"], src_len))
        merged = tf.nest.map_structure(
            lambda old, new: tf.concat([old, new], 1), finished, candidates)
        _, best_finished = tf.math.top_k(merged["scores"], n)
        finished = gather_beams(merged, best_finished)

        # The others stay live.
        keep = valid & ~ends
        alive_log_probs = tf.where(keep, top_log_probs, neg_inf)
        stop = stopped | ~tf.reduce_any(keep, axis=1)
        worst_finished = finished["scores"][:, n - 1]                    # [B]
        if early_stopping == "gnmt":
            alive_scores = tf.where(keep, top_scores, neg_inf)
            stop |= worst_finished > tf.reduce_max(alive_scores, axis=1)
        elif early_stopping == "exact":
            best_lp = tf.maximum(
                penalties.length_penalty(length + 1, alpha),
                penalties.length_penalty(max_lengths, alpha))            # [B]
            bound = alive_log_probs / best_lp[:, tf.newaxis]
            stop |= worst_finished > tf.reduce_max(bound, axis=1)
        alive = {
            "last": token,
            "ids": cand_ids,
            "log_probs": tf.where(stop[:, tf.newaxis], neg_inf,
                                  alive_log_probs),
            "coverage": gather_beams(coverage, beam),
            "attention": cand_history,
        }
        state = tf.nest.map_structure(
            lambda new, old: reorder_beams(new, beam, k, unchanged=new is old),
            new_state, state)
        return t + 1, alive, finished, state, stop

    def cond(t, alive, finished, state, stopped):
        return (t < max_time) & ~tf.reduce_all(stopped)

    def buffer_shape(x):
        # Only the beam axis is static: B, T and S vary (S from 0 to S).
        return tf.TensorShape([None, x.shape[1]] + [None] * (x.shape.rank - 2))

    def shape_invariants(loop_vars):
        return (tf.TensorShape([]),
                tf.nest.map_structure(buffer_shape, loop_vars[1]),
                tf.nest.map_structure(buffer_shape, loop_vars[2]),
                tf.nest.map_structure(state_shape_invariant, loop_vars[3]),
                tf.TensorShape([None]))

    loop_vars = (tf.constant(0), alive, finished, state, stopped)
    if drop_stopped:
        if segments is not None:
            raise ValueError("drop_stopped changes the batch size within "
                             "the loop: not with segments")
        num_steps, finished = _drop_stopped_loop(
            body, loop_vars, shape_invariants, max_time, max_lengths,
            source_lengths, k)
    else:
        num_steps, _, finished, _, _ = segmented_loop.while_loop(
            cond, body, loop_vars, shape_invariants, max_time, 3, segments,
            resize_state)

    if beam_width is not None:
        finished = _drop_below_best(finished, beam_width)
    out_time = (tf.maximum(tf.reduce_max(finished["lengths"]), 0) if trim
                else max_time)
    return DecodingResult(
        ids=finished["ids"][:, :, :out_time],
        lengths=finished["lengths"],
        scores=finished["scores"],
        log_probs=finished["log_probs"],
        attention=(finished["attention"][:, :, :out_time]
                   if has_attention[0] else None),
        num_steps=num_steps,
    )


def _drop_stopped_loop(body, loop_vars, shape_invariants, max_time,
                       max_lengths, source_lengths, beam_size):
    """`beam_search`'s loop, taking stopped sentences out of the batch.

    An outer loop runs the step loop until a sentence stops (or the buffers
    end), moves the finished hypotheses of the sentences that stopped to
    the output (at their place in the batch), and gathers the others'
    rows of everything the step loop carries, the decoding state included.

    Returns:
      `(num_steps, finished)`, `finished` for the whole batch.
    """
    t, alive, finished, state, stopped = loop_vars
    batch_size = tf.shape(stopped)[0]
    rows = tf.range(batch_size)                 # live row -> sentence
    lengths_given = source_lengths is not None
    if not lengths_given:  # a loop variable cannot be None
        source_lengths = tf.zeros([batch_size], tf.int32)
    output = finished

    def outer_cond(t, alive, finished, state, stopped, rows, max_lengths,
                   source_lengths, output):
        return (t < max_time) & (tf.size(rows) > 0)

    def outer_body(t, alive, finished, state, stopped, rows, max_lengths,
                   source_lengths, output):
        def step(t, alive, finished, state, stopped):
            return body(t, alive, finished, state, stopped, max_lengths,
                        source_lengths if lengths_given else None)

        def until_a_stop(t, alive, finished, state, stopped):
            return (t < max_time) & ~tf.reduce_any(stopped)

        inner = (t, alive, finished, state, stopped)
        t, alive, finished, state, stopped = tf.while_loop(
            until_a_stop, step, inner,
            shape_invariants=shape_invariants(inner))
        done = stopped | (t >= max_time)
        # The attention history is as wide as the source once a step ran.
        width = tf.shape(finished["attention"])[-1]
        shapes = {name: value.shape for name, value in output.items()}
        output = dict(output, attention=pad_last(output["attention"], width))
        where_done = tf.where(done)[:, 0]
        sentences = tf.gather(rows, where_done)[:, tf.newaxis]
        output = {name: tf.tensor_scatter_nd_update(
            value, sentences, tf.gather(finished[name], where_done))
            for name, value in output.items()}
        for name, value in output.items():  # static shapes, as they came
            value.set_shape(shapes[name][:-1].concatenate([None])
                            if name == "attention" else shapes[name])
        live = tf.where(~done)[:, 0]

        def gather(x):
            return tf.gather(x, live)

        def gather_flat(x):  # a state entry: [B * K, ...]
            return flatten_beams(gather(unflatten_beams(x, beam_size)))

        return (t, tf.nest.map_structure(gather, alive),
                tf.nest.map_structure(gather, finished),
                tf.nest.map_structure(gather_flat, state),
                gather(stopped), gather(rows), gather(max_lengths),
                gather(source_lengths), output)

    def invariants(loop_vars):
        buffers = shape_invariants(loop_vars[:5])
        any_rows = tf.TensorShape([None])
        return buffers + (any_rows, any_rows, any_rows,
                          buffers[2])

    loop_vars = (t, alive, finished, state, stopped, rows, max_lengths,
                 source_lengths, output)
    result = tf.while_loop(outer_cond, outer_body, loop_vars,
                           shape_invariants=invariants(loop_vars))
    return result[0], result[-1]
