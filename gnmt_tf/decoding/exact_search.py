"""Exact search: depth-first search with admissible pruning (SGNMT's `dfs`).

Finds the output with the highest *unnormalised* score, the sum of the
log-probabilities of its tokens, among all outputs of at most `max_length`
tokens (ending in the end token, or cut at `max_length`, as beam search
cuts them). Used on short inputs to count the search errors of beam search:
sentences where beam search returns a lower-scoring output than the model's
best (Stahlberg & Byrne 2019, "On NMT search errors and model errors: cat
got your tongue?", arXiv:1908.10090).

How: a host-side loop over `step_fn` on one hypothesis at a time (batch 1).
Each expanded hypothesis keeps its children sorted best first; the search
dives into the best child, so the first complete output is the greedy one
and later ones only improve it. A partial hypothesis whose score is already
<= the best complete score is pruned with all its worse siblings: adding
tokens only adds log-probabilities <= 0, so none of its completions can
win. That bound is admissible only for the plain sum: GNMT's length
penalty divides by `((5 + |y|) / 6) ** alpha`, which makes longer (more
negative) sums *rise*, and the coverage penalty is not monotone in the
length either, so with either penalty this search would not be exact.

Example:

>>> model = translator.model
>>> state = model.initial_state(model.encode(source_ids), max_length=12)
>>> result = exact_search(model.step, state, start_id=translator.bos_id,
...                       end_id=translator.eos_id, max_length=12)
>>> result.ids, result.score, result.optimal
"""

import dataclasses
import math
import time
from typing import Optional, Tuple

import numpy as np

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)


@dataclasses.dataclass(frozen=True)
class ExactSearchResult:
    """The best output an exact search found.

    Attributes:
      ids: tuple of int. The output's tokens, with the end token where it
        has one (an output cut at `max_length` has none); None when the
        budget ran out before any output was complete.
      score: float. Its sum of token log-probabilities (float64 sum of the
        model's float32 log-probabilities); -inf with `ids` None.
      optimal: bool. True when the search finished: no output of at most
        `max_length` tokens scores higher. False when `max_expansions` cut
        it short (`ids` is then the best output found so far).
      expansions: int. Calls of `step_fn` made.
    """

    ids: Optional[Tuple[int, ...]]
    score: float
    optimal: bool
    expansions: int


@dataclasses.dataclass
class _Frame:
    """An expanded hypothesis: its children's tokens and scores, best
    first, and the next child to visit."""

    ids: Tuple[int, ...]
    state: object
    tokens: np.ndarray   # [K] int
    scores: np.ndarray   # [K] float64, descending
    next: int = 0


def check_budget(max_length, max_expansions, max_seconds):
    """Raises `ValueError` for a bad length limit or search budget (shared
    by the host-side searches)."""
    if not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    if max_expansions is not None and (not isinstance(max_expansions, int)
                                       or max_expansions < 1):
        raise ValueError(f"max_expansions must be an int >= 1 or None, got "
                         f"{max_expansions!r}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds must be > 0 or None, got "
                         f"{max_seconds!r}")


def exact_search(step_fn, initial_state, start_id, end_id, max_length,
                 max_expansions=None, max_seconds=None, clock=time.monotonic):
    """Depth-first search for the highest-scoring output of one sentence.

    Args:
      step_fn: callable `(ids [1], state) -> (log_probs [1, V], attention,
        new_state)`, a model's `step` (attention is ignored). Must return
        log-probabilities (<= 0), and must not change `state` in place: a
        state is stepped again for each child that is expanded.
      initial_state: nested structure of tensors `[1, ...]`: the decoding
        state of one sentence (`model.initial_state(...)`, with room for
        `max_length` steps).
      start_id: int. The first input token (BOS).
      end_id: int. The end-of-sentence token.
      max_length: int >= 1. The longest output, counting the end token.
      max_expansions: int or None. Stop after this many `step_fn` calls;
        the result is then not proven optimal (unless the search happened
        to finish).
      max_seconds: float > 0 or None. Stop after this much time (`clock`),
        likewise.
      clock: callable returning seconds (for tests).

    Returns:
      An `ExactSearchResult`.
    """
    import tensorflow as tf

    check_budget(max_length, max_expansions, max_seconds)
    start = clock()
    best_ids, best_score = None, -math.inf
    expansions = 0
    # The hypothesis to expand next: (ids, score, input token, state).
    pending = ((), 0.0, start_id, initial_state)
    stack = []
    while True:
        if pending is not None:
            if ((max_expansions is not None and expansions >= max_expansions)
                    or (max_seconds is not None
                        and clock() - start >= max_seconds)):
                return ExactSearchResult(best_ids, best_score, False,
                                         expansions)
            ids, score, last, state = pending
            pending = None
            log_probs, _, state = step_fn(tf.constant([last], tf.int32),
                                          state)
            expansions += 1
            totals = score + log_probs[0].numpy().astype(np.float64)  # [V]
            if len(ids) + 1 == max_length:
                # Every child is complete (cut at max_length).
                token = int(np.argmax(totals))
                if totals[token] > best_score:
                    best_ids, best_score = ids + (token,), float(totals[token])
            else:
                if totals[end_id] > best_score:
                    best_ids, best_score = ids + (end_id,), float(totals[end_id])
                totals[end_id] = -math.inf
                # Children that can still win, best first.
                tokens = np.nonzero(totals > best_score)[0]
                tokens = tokens[np.argsort(-totals[tokens], kind="stable")]
                if tokens.size:
                    stack.append(_Frame(ids, state, tokens, totals[tokens]))
        if not stack:
            return ExactSearchResult(best_ids, best_score, True, expansions)
        frame = stack[-1]
        # Children are sorted: once one cannot beat the best, none can.
        if (frame.next == len(frame.tokens)
                or frame.scores[frame.next] <= best_score):
            stack.pop()
            continue
        token = int(frame.tokens[frame.next])
        pending = (frame.ids + (token,), float(frame.scores[frame.next]),
                   token, frame.state)
        frame.next += 1


@dataclasses.dataclass(frozen=True)
class ExactTranslation:
    """`exact_translate`'s result: the text, its unnormalised score, whether
    it is proven optimal, the output ids and the search's expansions."""

    text: str
    score: float
    optimal: bool
    ids: Optional[Tuple[int, ...]]
    expansions: int


def exact_translate(translator, sentence, max_length=None,
                    max_length_ratio=2.0, max_expansions=None, **task):
    """Exact search for one sentence through a `Translator`'s tokenizer and
    model.

    Args:
      translator: a `gnmt_tf.translator.Translator`.
      sentence: str.
      max_length: int or None. The longest output, counting the end token;
        default: `Translator.max_lengths` with `max_length_ratio`, the limit
        beam search with that ratio has (so scores are comparable).
      max_length_ratio: float. See `SearchOptions.max_length_ratio`.
      max_expansions: int or None. See `exact_search`.
      **task: the model's task arguments (none for GNMT).

    Returns:
      An `ExactTranslation`; a blank sentence gives `("", 0.0, True)`, as
      `Translator` never runs the model on one.
    """
    import tensorflow as tf

    translator.check_inputs([sentence])
    if not sentence.strip():
        return ExactTranslation("", 0.0, True, (), 0)
    model = translator.model
    if model.max_step_score > 0:
        raise ValueError(
            "exact search needs step scores <= 0 to prune (a positive "
            f"word-count bonus allows up to {model.max_step_score:g} a step)")
    ids = {name: tf.constant([value])
           for name, value in translator.task_ids(**task).items()}
    source_ids, source_lengths = translator.tokenize(tf.constant([sentence]),
                                                     ids)
    if max_length is None:
        # `Translator.max_lengths`, computed alike (gnmt_tf.translator imports
        # this package: no import back).
        max_length = int(tf.math.ceil(max_length_ratio * tf.cast(
            source_lengths[0], tf.float32)))
        if model.max_target_length:
            max_length = min(max_length, model.max_target_length)
    state = model.initial_state(model.encode(source_ids, **ids), max_length)
    result = exact_search(model.step, state, translator.bos_id,
                          translator.eos_id, max(max_length, 1),
                          max_expansions)
    text = ""
    if result.ids is not None:
        words = [i for i in result.ids if i != translator.eos_id]
        text = translator.subwords.decode([words])[0]
    return ExactTranslation(text, result.score, result.optimal, result.ids,
                            result.expansions)
