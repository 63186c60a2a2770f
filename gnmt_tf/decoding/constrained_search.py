"""Lexically constrained beam search with dynamic beam allocation (Post &
Vilar 2018, "Fast Lexically Constrained Decoding with Dynamic Beam
Allocation for Neural Machine Translation", NAACL).

Constraints are token sequences (a glossary term in the model's subwords)
that must each appear, contiguously, in the output. Every hypothesis tracks
how far it is into each constraint: for a constraint not yet met, the
longest suffix of the output that is a prefix of it (a failed continuation
falls back to a shorter match, as a string matcher does, so an occurrence
is never missed). Its *progress* is the number of constraint tokens met:
the lengths of the constraints met plus the longest partial match.

Each step proposes, for the live hypotheses: the `K` best extensions, each
hypothesis' best extension, and every extension that advances an unmet
constraint (its next token, or a constraint's first token). The beam is
divided into `C + 1` banks by progress (`C` the number of constraint
tokens), `K // (C + 1)` slots each, the remainder to the top bank; a bank
with fewer candidates passes its slots to the bank below (as Sockeye's
implementation of the method). The end
token is allowed only once every constraint is met, so a high-scoring
output that skips a term cannot win. Hypotheses are ranked by the GNMT
length-normalised score (no coverage penalty) with GNMT early stopping.

With a beam large enough to keep every candidate the search is exhaustive:
it returns the best-scoring outputs that contain every constraint.

Example:

>>> hyps = constrained_search(model.step, state, bos, eos, max_length=30,
...                           constraints=[[812, 44], [1290]], beam_size=10)
>>> hyps[0].ids, hyps[0].score, hyps[0].met
"""

import dataclasses
from typing import Tuple

import numpy as np

from gnmt_tf.decoding.host_steps import HostSteps


@dataclasses.dataclass(frozen=True)
class ConstrainedHypothesis:
    """A finished output of `constrained_search`.

    Attributes:
      ids: tuple of int. The output, ending with the end token unless cut
        at `max_length`.
      score: float. GNMT length-normalised log-probability.
      met: bool. Every constraint appears in `ids` (False only for the
        fallback returned when no output within `max_length` met them).
    """

    ids: Tuple[int, ...]
    score: float
    met: bool


def _advance(matched, constraints, ids, token):
    """The match lengths after appending `token` to `ids`: a met
    constraint (match = its length) stays met."""
    out = []
    for done, constraint in zip(matched, constraints):
        if done == len(constraint):
            out.append(done)
            continue
        new_ids = ids + (token,)
        k = min(done + 1, len(constraint), len(new_ids))
        while k and new_ids[len(new_ids) - k:] != constraint[:k]:
            k -= 1
        out.append(k)
    return tuple(out)


def _progress(matched, constraints):
    met = sum(n for n, c in zip(matched, constraints) if n == len(c))
    partial = max([n for n, c in zip(matched, constraints) if n < len(c)],
                  default=0)
    return met + partial


def _all_met(matched, constraints):
    return all(n == len(c) for n, c in zip(matched, constraints))


def _allocate(candidates, banks, beam_size):
    """Dynamic beam allocation: `candidates` sorted best first, each a
    tuple whose last entry is its progress -> the `beam_size` kept, best
    first.

    Bank sizes as Sockeye's `get_bank_sizes` (Post & Vilar's
    implementation): `beam_size // banks` each, the remainder to the top
    bank; then, from the top bank down, the slots a bank cannot fill move to
    the bank below. So a beam smaller than the number of banks still goes
    to the hypotheses that have met the most constraint tokens.
    """
    counts = [0] * banks
    for candidate in candidates:
        counts[candidate[-1]] += 1
    sizes = [beam_size // banks] * banks
    sizes[-1] += beam_size - sum(sizes)
    for bank in reversed(range(banks)):
        extra = sizes[bank] - counts[bank]
        if extra > 0:
            sizes[bank] -= extra
            sizes[(bank - 1) % banks] += extra
    kept = []
    for candidate in candidates:
        if sizes[candidate[-1]]:
            sizes[candidate[-1]] -= 1
            kept.append(candidate)
    return kept[:beam_size]


def constrained_search(step_fn, initial_state, start_id, end_id, max_length,
                       constraints, beam_size=10, length_penalty=0.6,
                       num_hypotheses=1):
    """Beam search whose outputs contain every constraint.

    Args:
      step_fn: callable `(ids [R], state) -> (log_probs [R, V], attention,
        new_state)` (attention ignored).
      initial_state: nested structure of tensors `[1, ...]`, one sentence,
        with room for `max_length` steps.
      start_id, end_id: int.
      max_length: int >= 1. Output limit, end token included.
      constraints: list of non-empty token sequences.
      beam_size: int `K` >= 1.
      length_penalty: float. GNMT's alpha.
      num_hypotheses: int `N` in `[1, K]`.

    Returns:
      A list of at most `N` `ConstrainedHypothesis`, best first; when no
      output within `max_length` contains every constraint, the best
      output found (ignoring them) with `met=False`.
    """
    constraints = [tuple(int(t) for t in c) for c in constraints]
    if any(not c for c in constraints):
        raise ValueError("constraints must be non-empty token sequences")
    if any(end_id in c for c in constraints):
        raise ValueError("a constraint may not contain the end token")
    k, n = int(beam_size), int(num_hypotheses)
    if k < 1 or not 1 <= n <= k:
        raise ValueError(f"need beam_size >= 1 and 1 <= num_hypotheses <= "
                         f"beam_size, got {beam_size}, {num_hypotheses}")
    if not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    banks = sum(map(len, constraints)) + 1
    steps = HostSteps(step_fn)
    # Live hypotheses: (ids, log_prob, matched), row i of `state`.
    live = [((), 0.0, (0,) * len(constraints))]
    state = initial_state
    last = [start_id]
    finished, fallback = [], None  # (score, ids)

    for t in range(max_length):
        length = t + 1
        lp = ((5.0 + length) / 6.0) ** length_penalty
        log_probs, _, state = steps.step(last, state)
        totals = (np.array([h[1] for h in live])[:, None]
                  + log_probs)                                      # [R, V]
        vocab_size = totals.shape[1]
        # Candidate extensions (row, token).
        pairs = set()
        top = np.argsort(-totals.reshape(-1), kind="stable")[:k]
        pairs.update(zip((top // vocab_size).tolist(),
                         (top % vocab_size).tolist()))
        pairs.update((r, int(np.argmax(totals[r]))) for r in range(len(live)))
        for r, (_, _, matched) in enumerate(live):
            for done, c in zip(matched, constraints):
                if done < len(c):
                    pairs.update({(r, c[done]), (r, c[0])})
        candidates = []
        for r, token in pairs:
            ids, _, matched = live[r]
            total = float(totals[r, token])
            new_matched = _advance(matched, constraints, ids, token)
            ends = token == end_id or length == max_length
            score = total / lp
            if ends:
                out = ids + (token,)
                if fallback is None or score > fallback[0]:
                    fallback = (score, out)
                if _all_met(new_matched, constraints):
                    finished.append((score, out))
                continue
            candidates.append((score, r, token, total, new_matched,
                               _progress(new_matched, constraints)))
        finished = sorted(finished, key=lambda f: -f[0])[:n]
        if not candidates:
            break
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        kept = _allocate(candidates, banks, k)
        if len(finished) == n and finished[-1][0] > kept[0][0]:
            break  # GNMT early stopping
        state = steps.select(state, [c[1] for c in kept])
        live = [(live[c[1]][0] + (c[2],), c[3], c[4]) for c in kept]
        last = [c[2] for c in kept]

    if finished:
        return [ConstrainedHypothesis(ids, score, True)
                for score, ids in finished]
    if fallback is None:
        return []
    return [ConstrainedHypothesis(fallback[1], fallback[0], False)]
