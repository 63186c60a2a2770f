"""Bucket search: a budgeted best-first search over output lengths (SGNMT's
`bucket` decoder, Stahlberg et al. 2017).

Partial hypotheses sit in one bucket per length. A *round* visits the
buckets from the shortest to the longest and expands the best hypothesis of
each (one `step_fn` call): its end-token child is a complete output, its
other children go to the next bucket, which the same round visits next.
So the first round is a greedy descent, and later rounds widen the search
at every length at once, where depth-first search (`exact_search`) would
first exhaust the alternatives near the end of one output.

Scores are unnormalised (the sum of token log-probabilities), and a partial
hypothesis that cannot beat the best complete output is dropped (adding
tokens only lowers the sum): when every bucket is empty the result is the
model's best output (`optimal`), the one `exact_search` finds. A budget of
expansions (`max_expansions`) or seconds (`max_seconds`) stops the search
earlier; the first round always runs to its end, so there is always an
output: with a budget of 1 it is the best complete output seen on the
greedy path (the greedy output, or an end token taken earlier on its way
that scores higher).

Example:

>>> result = bucket_search(model.step, state, start_id=bos, end_id=eos,
...                        max_length=20, max_expansions=200)
>>> result.ids, result.score, result.optimal
"""

import heapq
import itertools
import math
import time

import numpy as np

from gnmt_tf.decoding.exact_search import ExactSearchResult, check_budget
from gnmt_tf.decoding.host_steps import HostSteps


class _Children:
    """The children of one expanded hypothesis that may still win, best
    first, and the next one to take."""

    def __init__(self, ids, state, tokens, scores):
        self.ids, self.state = ids, state
        self.tokens, self.scores = tokens, scores
        self.next = 0


def bucket_search(step_fn, initial_state, start_id, end_id, max_length,
                  max_expansions=None, max_seconds=None, clock=time.monotonic):
    """Best-first search by length buckets for one sentence.

    Args:
      step_fn: callable `(ids [1], state) -> (log_probs [1, V], attention,
        new_state)` (see `gnmt_tf.decoding.host_steps.HostSteps`).
      initial_state: nested structure of tensors `[1, ...]`, with room for
        `max_length` steps.
      start_id, end_id: int. Start and end tokens.
      max_length: int >= 1. The longest output, counting the end token; an
        output cut there has no end token.
      max_expansions: int >= 1 or None. Stop after this many `step_fn`
        calls, once the first round is over.
      max_seconds: float > 0 or None. Stop after this much time (`clock`),
        once the first round is over.
      clock: callable returning seconds (for tests).

    Returns:
      An `ExactSearchResult`: `ids`, `score` (sum of log-probabilities),
      `optimal` (the search ran out of hypotheses, not of budget) and
      `expansions`.
    """
    check_budget(max_length, max_expansions, max_seconds)
    steps = HostSteps(step_fn)
    start = clock()
    best_ids, best_score = None, -math.inf
    order = itertools.count()  # ties: the older entry first
    # buckets[l]: heap of (-score of the next child, order, _Children) whose
    # children have l tokens; bucket 0 holds the start.
    buckets = [[] for _ in range(max_length)]
    root = _Children((), initial_state, np.array([start_id]), np.array([0.0]))
    buckets[0].append((-0.0, next(order), root))
    first_round = True
    while any(buckets):
        for length, bucket in enumerate(buckets):
            if bucket and -bucket[0][0] <= best_score:
                bucket.clear()  # best first: none of them can win
            if not bucket:
                continue
            if not first_round and (
                    (max_expansions is not None
                     and steps.calls >= max_expansions)
                    or (max_seconds is not None
                        and clock() - start >= max_seconds)):
                return ExactSearchResult(best_ids, best_score, False,
                                         steps.calls)
            _, _, parent = heapq.heappop(bucket)
            i = parent.next
            parent.next += 1
            if parent.next < len(parent.tokens):
                heapq.heappush(bucket, (-parent.scores[parent.next],
                                        next(order), parent))
            token, score = int(parent.tokens[i]), float(parent.scores[i])
            ids = parent.ids + (token,) if length else ()
            log_probs, _, state = steps.step([token], parent.state)
            totals = score + log_probs[0]                               # [V]
            if length + 1 == max_length:
                # Every child is complete (cut at max_length).
                child = int(np.argmax(totals))
                if totals[child] > best_score:
                    best_ids, best_score = ids + (child,), float(totals[child])
                continue
            if totals[end_id] > best_score:
                best_ids, best_score = ids + (end_id,), float(totals[end_id])
            totals[end_id] = -math.inf
            tokens = np.nonzero(totals > best_score)[0]
            if tokens.size:
                tokens = tokens[np.argsort(-totals[tokens], kind="stable")]
                children = _Children(ids, state, tokens, totals[tokens])
                heapq.heappush(buckets[length + 1],
                               (-children.scores[0], next(order), children))
        first_round = False
    return ExactSearchResult(best_ids, best_score, True, steps.calls)
