"""fast_align in NumPy: a reparameterised IBM Model 2 word aligner.

Re-implements Dyer, Chahuneau & Smith (2013), "A Simple, Fast, and Effective
Reparameterization of IBM Model 2" (NAACL), following the reference tool
(github.com/clab/fast_align) step by step, so that the same options give the
same alignments:

- lexical table `t(f | e)` over co-occurring pairs only, plus a null word;
  a pair missing from the table has probability 1e-9 (the table is empty,
  hence uniform, in the first iteration);
- with `favor_diagonal`, `p(a_j = i) ∝ exp(-λ |i/n - j/m|)` for the `n`
  source words and null probability `p0`; without it, uniform IBM Model 1;
- `iterations` counts the final Viterbi pass like the original's `-I`: the
  default 5 runs four EM updates before aligning;
- with `optimize_tension`, λ takes eight gradient steps after every EM
  iteration but the first, reproducing the reference's arithmetic exactly:
  its `ComputeZ(i, n, m)` argument order in `ComputeDLogZ`
  (clab/fast_align#11) and its 0-based target position in the posterior
  feature. On Multi30k en-de (2,000 pairs, `-d -o -v`) λ rises from 4 to
  7.67 forward and 7.91 reverse, as in the original's logs.
  `exact_tension_gradient` uses the true gradient instead;
- with `variational_bayes`, the M-step is the mean-field update with a
  symmetric Dirichlet prior `alpha` (digamma as in the reference).

The corpus is integer-encoded once (4 bytes a token). EM then streams over it
in chunks of sentences that share a (target length, source length) shape, so
each chunk's computation is a handful of dense `[B, m, n + 1]` array
operations and the working memory is bounded by `chunk_size`. The lookup
indices of chunks are cached while they fit in `cache_bytes`.

Example:

    >>> aligner = FastAlign(iterations=5)
    >>> links = aligner.fit_align([("das Haus", "the house"),
    ...                            ("das Buch", "the book"),
    ...                            ("ein Buch", "a book")])
"""

import array
import collections
import itertools
import math
from typing import Iterable, Iterator, List, Sequence, Tuple, Union

import numpy as np

Link = Tuple[int, int]
Sentence = Union[str, Sequence[str]]

_NULL = 0  # id of the null word on the conditioning side
_UNSEEN = 2**31 - 1  # id given to words not seen by `fit`
_MISSING_PROB = 1e-9  # t(f | e) of a pair absent from the table (reference)
_PRIOR_CACHE_BYTES = 64 << 20


# --- Diagonal alignment prior (mirrors the reference's da.h) ---------------
# Arguments follow da.h: i = target position (1-based), j = source position,
# m = target length, n = source length. exp and pow go through the C library,
# as in the reference: NumPy's vectorised exp may differ in the last bit,
# which flips the many exact ties between equidistant source positions.
# The arrays here are per sentence shape, so this costs little.

_libm_exp = np.frompyfunc(math.exp, 1, 1)
_libm_pow = np.frompyfunc(math.pow, 2, 1)


def _exp(x):
    return np.asarray(_libm_exp(x), dtype=np.float64)


def _pow(x, y):
    return np.asarray(_libm_pow(x, np.asarray(y, np.float64)), dtype=np.float64)

def _feature(i, j, m, n):
    j = np.asarray(j, np.float64)
    i = np.asarray(i, np.float64)
    return -np.abs(j / n - i / m)


def _compute_z(i, m, n, tension):
    """Normaliser sum_j exp(tension * feature) via two geometric series."""
    i, m, n = (np.asarray(x, np.int64) for x in (i, m, n))
    floor = (i.astype(np.float64) * n / m).astype(np.int64)
    ceil = floor + 1
    ratio = _exp(-tension / n)
    # The reference computes `n - floor` in unsigned arithmetic.
    num_top = (n - floor) % 2**32
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        top = _exp(_feature(i, ceil, m, n) * tension) * (
            1.0 - _pow(ratio, num_top)) / (1.0 - ratio)
        bottom = _exp(_feature(i, floor, m, n) * tension) * (
            1.0 - _pow(ratio, floor)) / (1.0 - ratio)
    return np.where(floor > 0, bottom, 0.0) + np.where(num_top > 0, top, 0.0)


def _arithmetico_geometric(a_1, g_1, r, d, n):
    """sum_{k<n} (a_1 + k d) g_1 r^k, as da.h writes it.

    The second term is subtracted: (r - 1) S telescopes to
    a_n g_{n+1} - a_1 g_1 - d (g_{n+1} - g_2) / (r - 1). Adding it instead
    (clab/fast_align#20, not merged) turns the model feature positive (0.21
    instead of -0.17 at lambda 4 on Multi30k), so every tension step lowers
    lambda, down to its 0.1 floor.
    """
    g_np1 = g_1 * _pow(r, n)
    a_n = d * (n - 1) + a_1
    rm1 = r - 1
    return (a_n * g_np1 - a_1 * g_1) / rm1 - d * (g_np1 - g_1 * r) / (rm1 * rm1)


def _compute_dlogz(i, m, n, tension):
    """The reference's d log Z / d tension: the closed-form
    sum_j feature * exp(tension * feature) over source positions, divided by
    `ComputeZ(i, n, m)` with da.h's swapped arguments (clab/fast_align#11),
    so it is the prior's expected feature only when m == n."""
    i, m, n = (np.asarray(x, np.int64) for x in (i, m, n))
    z = _compute_z(i, n, m, tension)  # argument order as in the reference
    floor = (i.astype(np.float64) * n / m).astype(np.int64)
    ceil = floor + 1
    ratio = _exp(-tension / n)
    d = -1.0 / n
    num_top = (n - floor) % 2**32
    with np.errstate(over="ignore", under="ignore", invalid="ignore",
                     divide="ignore"):
        f_top = _feature(i, ceil, m, n)
        top = _arithmetico_geometric(f_top, _exp(f_top * tension), ratio, d,
                                     num_top)
        f_bottom = _feature(i, floor, m, n)
        bottom = _arithmetico_geometric(f_bottom, _exp(f_bottom * tension),
                                        ratio, d, floor)
    return (np.where(num_top > 0, top, 0.0)
            + np.where(floor > 0, bottom, 0.0)) / z


def _expected_feature(aligned_mass, tension):
    """Sum over target positions of E_prior[feature], weighted by the
    posterior mass on non-null links: the exact gradient's model term."""
    total = 0.0
    for (m, n), mass in aligned_mass.items():
        feat = _feature(np.arange(1, m + 1)[:, None],
                        np.arange(1, n + 1)[None, :], m, n)
        weights = np.exp(feat * tension)
        total += float((mass * (feat * weights).sum(1) / weights.sum(1)).sum())
    return total


def _digamma(x):
    """Digamma by recurrence up to 7 and an asymptotic series (reference)."""
    x = np.array(x, dtype=np.float64)
    result = np.zeros_like(x)
    for _ in range(8):
        small = x < 7
        if not small.any():
            break
        result -= np.where(small, 1.0 / x, 0.0)
        x += small
    x = x - 0.5
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    return (result + np.log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4
            + (31.0 / 8064.0) * xx4 * xx2 - (127.0 / 30720.0) * xx4 * xx4)


# --- Corpus ----------------------------------------------------------------

def _run_starts(ordered: np.ndarray) -> np.ndarray:
    """Mask of the first element of each run of equal values."""
    first = np.empty(len(ordered), bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return first


def _distinct(keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and the position of each key among them."""
    order = np.argsort(keys)
    ordered = keys[order]
    first = _run_starts(ordered)
    inverse = np.empty(len(keys), np.int32)
    inverse[order] = np.cumsum(first, dtype=np.int32) - 1
    return ordered[first], inverse


def _merge_sorted(arrays) -> np.ndarray:
    """Distinct values of several sorted arrays, sorted."""
    merged = np.concatenate(arrays)
    merged.sort(kind="stable")
    return merged[_run_starts(merged)]


def _tokens(sentence: Sentence) -> Sequence[str]:
    return sentence.split() if isinstance(sentence, str) else sentence


class _Corpus:
    """Integer-encoded sentence pairs grouped into same-shape chunks.

    "cond" is the side the model conditions on (source unless reversed) and
    "gen" the side it generates. Each chunk is a list of batches
    `(m, n, sentence_ids)`, where all sentences have `m` generated and `n`
    conditioning tokens.
    """

    def __init__(self, cond_ids, cond_len, gen_ids, gen_len, chunk_size):
        self.cond_ids, self.gen_ids = cond_ids, gen_ids
        self.cond_len, self.gen_len = cond_len, gen_len
        self.cond_off = np.concatenate([[0], np.cumsum(cond_len)[:-1]])
        self.gen_off = np.concatenate([[0], np.cumsum(gen_len)[:-1]])
        self.chunks = self._make_chunks(chunk_size)

    def __len__(self):
        return len(self.cond_len)

    def _make_chunks(self, chunk_size):
        order = np.lexsort((self.cond_len, self.gen_len))
        m_sorted, n_sorted = self.gen_len[order], self.cond_len[order]
        changes = (np.diff(m_sorted) != 0) | (np.diff(n_sorted) != 0)
        cuts = np.flatnonzero(changes) + 1
        chunks, current, size = [], [], 0
        for ids in np.split(order, cuts):
            if len(ids) == 0:
                continue
            m, n = int(self.gen_len[ids[0]]), int(self.cond_len[ids[0]])
            per_sentence = m * (n + 1)
            step = max(1, chunk_size // per_sentence)
            for start in range(0, len(ids), step):
                batch = ids[start:start + step]
                if current and size + len(batch) * per_sentence > chunk_size:
                    chunks.append(current)
                    current, size = [], 0
                current.append((m, n, batch))
                size += len(batch) * per_sentence
        if current:
            chunks.append(current)
        return chunks

    def keys(self, chunk, use_null: bool) -> np.ndarray:
        """Flat int64 `(e << 32) | f` keys of all candidate links of a chunk."""
        parts = []
        for m, n, ids in chunk:
            cond = self.cond_ids[self.cond_off[ids][:, None] + np.arange(n)]
            gen = self.gen_ids[self.gen_off[ids][:, None] + np.arange(m)]
            if use_null:
                cond = np.concatenate(
                    [np.full((len(ids), 1), _NULL, cond.dtype), cond], axis=1)
            keys = (cond[:, None, :].astype(np.int64) << 32) | gen[:, :, None]
            parts.append(keys.ravel())  # [B, m, n + use_null]
        return np.concatenate(parts)


# --- Aligner ---------------------------------------------------------------

class FastAlign:
    """Word aligner with the model and options of `fast_align`.

    Args:
        reverse: bool. Condition on the target and generate the source (`-r`).
            Links are still reported as `(source_index, target_index)`.
        favor_diagonal: bool. Use the diagonal alignment prior (`-d`).
        iterations: int. Number of passes including the final Viterbi one
            (`-I`, default 5).
        variational_bayes: bool. Dirichlet prior on `t(f | e)` (`-v`).
        alpha: float. Dirichlet concentration for `variational_bayes` (`-a`).
        optimize_tension: bool. Re-estimate the diagonal tension (`-o`).
        exact_tension_gradient: bool. With `optimize_tension`, use the exact
            gradient of the expected log-likelihood (the prior's own
            normaliser, 1-based target positions) instead of the
            reference's arithmetic, which swaps `ComputeZ`'s arguments
            (clab/fast_align#11) and scores links by the 0-based target
            position. Off by default to reproduce the original tool's
            alignments.
        p0: float. Null alignment probability with the diagonal prior (`-p`).
        tension: float. Starting diagonal tension lambda (`-T`).
        use_null_word: bool. Allow alignment to null (`-N` turns it off).
        chunk_size: int. Candidate links processed per step (memory bound).
        cache_bytes: int. Memory for cached table indices between iterations.

    After `fit`: `tension_` (final lambda), `mean_length_ratio_`, and
    `history_`, one dict of statistics per EM pass. With tension
    optimisation, its `tension_steps` lists the `(tension, model_feature)`
    of each gradient step, the pairs the reference logs as
    `model al-feat: F (tension=T)`, and `tension` is the value after them.
    """

    def __init__(self, reverse: bool = False, favor_diagonal: bool = True,
                 iterations: int = 5, variational_bayes: bool = False,
                 alpha: float = 0.01, optimize_tension: bool = True,
                 p0: float = 0.08, tension: float = 4.0,
                 use_null_word: bool = True,
                 exact_tension_gradient: bool = False,
                 chunk_size: int = 1 << 21,
                 cache_bytes: int = 256 << 20):
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        if variational_bayes and alpha <= 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        if not 0.0 <= p0 < 1.0:
            raise ValueError(f"p0 must be in [0, 1), got {p0}")
        if tension <= 0:
            raise ValueError(f"tension must be > 0, got {tension}")
        self.reverse = reverse
        self.favor_diagonal = favor_diagonal
        self.iterations = iterations
        self.variational_bayes = variational_bayes
        self.alpha = alpha
        self.optimize_tension = optimize_tension
        self.p0 = p0
        self.tension = tension
        self.use_null_word = use_null_word
        self.exact_tension_gradient = exact_tension_gradient
        self.chunk_size = chunk_size
        self.cache_bytes = cache_bytes
        self._prior_cache, self._prior_cache_tension = {}, None
        self._fitted = False

    # Encoding -------------------------------------------------------------

    def _encode(self, pairs, grow: bool) -> _Corpus:
        cond_ids, gen_ids = array.array("i"), array.array("i")
        cond_len, gen_len = array.array("i"), array.array("i")
        if grow:  # ids are handed out on first sight; 0 is the null word
            cond_vocab = collections.defaultdict(itertools.count(1).__next__)
            gen_vocab = collections.defaultdict(itertools.count(0).__next__)
        else:
            cond_vocab, gen_vocab = self._cond_vocab, self._gen_vocab
        for number, (source, target) in enumerate(pairs, start=1):
            source, target = _tokens(source), _tokens(target)
            if not source or not target:
                raise ValueError(f"pair {number}: empty "
                                 f"{'source' if not source else 'target'}")
            cond, gen = (target, source) if self.reverse else (source, target)
            if grow:
                cond_ids.extend([cond_vocab[w] for w in cond])
                gen_ids.extend([gen_vocab[w] for w in gen])
            else:
                cond_ids.extend([cond_vocab.get(w, _UNSEEN) for w in cond])
                gen_ids.extend([gen_vocab.get(w, _UNSEEN) for w in gen])
            cond_len.append(len(cond))
            gen_len.append(len(gen))
        if not cond_len:
            raise ValueError("empty corpus")
        if grow:
            self._cond_vocab = dict(cond_vocab)
            self._gen_vocab = dict(gen_vocab)
        return _Corpus(np.frombuffer(cond_ids, np.int32),
                       np.frombuffer(cond_len, np.int32).astype(np.int64),
                       np.frombuffer(gen_ids, np.int32),
                       np.frombuffer(gen_len, np.int32).astype(np.int64),
                       self.chunk_size)

    # Model pieces ---------------------------------------------------------

    def _prior(self, m: int, n: int, tension: float) -> np.ndarray:
        """`[m, n + use_null]` alignment probabilities, null in column 0."""
        if self._prior_cache_tension != tension:
            self._prior_cache, self._prior_cache_tension = {}, tension
            self._prior_cache_bytes = 0
        prior = self._prior_cache.get((m, n))
        if prior is None:
            prior = self._compute_prior(m, n, tension)
            if self._prior_cache_bytes + prior.nbytes <= _PRIOR_CACHE_BYTES:
                self._prior_cache[m, n] = prior
                self._prior_cache_bytes += prior.nbytes
        return prior

    def _compute_prior(self, m: int, n: int, tension: float) -> np.ndarray:
        null = int(self.use_null_word)
        if not self.favor_diagonal:
            return np.full((m, n + null), 1.0 / (n + null))
        j = np.arange(1, m + 1)[:, None]
        i = np.arange(1, n + 1)[None, :]
        az = _compute_z(j, m, n, tension) / (1.0 - self.p0)
        prior = _exp(_feature(j, i, m, n) * tension) / az
        if null:
            prior = np.concatenate([np.full((m, 1), self.p0), prior], axis=1)
        return prior

    def _lookup(self, keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Table indices of keys and whether each key is in the table."""
        idx = np.searchsorted(self._keys, keys)
        np.minimum(idx, len(self._keys) - 1, out=idx)
        return idx, self._keys[idx] == keys

    def _build_table(self, corpus: _Corpus) -> None:
        # A chunk is represented by its sorted distinct keys plus each
        # candidate's position among them: lookups then search only the
        # distinct keys, and counts are summed per distinct key in O(chunk)
        # rather than O(table). Chunks' distinct keys are merged every few
        # chunks (timsort merges sorted runs in linear time), bounding memory
        # by the table size. Chunk lookups are kept while `cache_bytes` lasts.
        table, pending, pending_size = np.empty(0, np.int64), [], 0
        kept, cached = {}, 0
        for number, chunk in enumerate(corpus.chunks):
            distinct, inverse = _distinct(
                corpus.keys(chunk, self.use_null_word))
            size = inverse.nbytes + 4 * len(distinct)
            if cached + size <= self.cache_bytes:
                kept[number] = (distinct, inverse)
                cached += size
            pending.append(distinct)
            pending_size += len(distinct)
            if pending_size > 4 * self.chunk_size:
                table = _merge_sorted([table] + pending)
                pending, pending_size = [], 0
        self._keys = _merge_sorted([table] + pending)
        self._rows = (self._keys >> 32).astype(np.int32)
        self._probs = None  # empty table: every pair gets _MISSING_PROB
        self._cache = {number: (self._table_index(distinct), inverse)
                       for number, (distinct, inverse) in kept.items()}

    def _table_index(self, keys: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self._keys, keys)
        return idx.astype(np.int32 if len(self._keys) < 2**31 else np.int64)

    def _chunk_index(self, corpus: _Corpus, number: int
                     ) -> Tuple[np.ndarray, np.ndarray]:
        """Table indices of a chunk's distinct keys, and each candidate's
        position among the distinct keys."""
        if number in self._cache:
            return self._cache[number]
        distinct, inverse = _distinct(
            corpus.keys(corpus.chunks[number], self.use_null_word))
        return self._table_index(distinct), inverse

    def _normalize(self, counts: np.ndarray) -> np.ndarray:
        rows = self._rows
        if self.variational_bayes:
            totals = np.bincount(rows, weights=counts + self.alpha)
            totals[totals == 0] = 1.0
            return np.exp(_digamma(counts + self.alpha)
                          - _digamma(totals)[rows])
        totals = np.bincount(rows, weights=counts)
        totals[totals == 0] = 1.0
        return counts / totals[rows]

    def _model_feature(self, shape_counts, tokens: float, tension: float):
        m, n, count = shape_counts
        reps = np.repeat(np.arange(len(m)), m)
        j = np.arange(len(reps)) - np.repeat(np.cumsum(m) - m, m) + 1
        dlogz = _compute_dlogz(j, m[reps], n[reps], tension)
        return float((count[reps] * dlogz).sum() / tokens)

    # Training -------------------------------------------------------------

    def _em_pass(self, corpus: _Corpus, tension: float):
        null = int(self.use_null_word)
        counts = np.zeros(len(self._keys))
        loglik = null_mass = emp_feat = 0.0
        priors = {}
        aligned_mass = {}  # (m, n) -> [m] posterior mass on non-null links
        # The reference uses the 0-based target position in the posterior
        # feature but the 1-based one in the prior.
        first = 1 if self.exact_tension_gradient else 0
        for number, chunk in enumerate(corpus.chunks):
            table_idx, inverse = self._chunk_index(corpus, number)
            t_probs = (None if self._probs is None
                       else self._probs[table_idx][inverse])
            posts = np.empty(len(inverse))
            offset = 0
            for m, n, ids in chunk:
                if (m, n) not in priors:
                    priors[m, n] = (self._prior(m, n, tension), _feature(
                        np.arange(first, m + first)[:, None],
                        np.arange(1, n + 1)[None, :], m, n))
                    aligned_mass[m, n] = np.zeros(m)
                prior, feat = priors[m, n]
                size = len(ids) * prior.size
                if t_probs is None:
                    probs = np.broadcast_to(_MISSING_PROB * prior,
                                            (len(ids),) + prior.shape)
                else:
                    probs = t_probs[offset:offset + size].reshape(
                        (len(ids),) + prior.shape) * prior
                totals = probs.sum(axis=2, keepdims=True)  # [B, m, 1]
                post = probs / totals  # [B, m, n + null]
                loglik += float(np.log(totals).sum())
                if null:
                    null_mass += float(post[:, :, 0].sum())
                aligned = post[:, :, null:].sum(axis=0)  # [m, n]
                emp_feat += float((aligned * feat).sum())
                aligned_mass[m, n] += aligned.sum(axis=1)
                posts[offset:offset + size] = post.ravel()
                offset += size
            counts[table_idx] += np.bincount(inverse, weights=posts,
                                             minlength=len(table_idx))
        return counts, loglik, null_mass, emp_feat, aligned_mass

    def fit(self, pairs: Iterable[Tuple[Sentence, Sentence]]) -> "FastAlign":
        """Estimates the model on sentence pairs.

        Args:
            pairs: iterable of `(source, target)`, each a whitespace-tokenised
                string or a sequence of tokens. Read once.
        """
        corpus = self._encode(pairs, grow=True)
        self._train(corpus)
        self._train_corpus = corpus
        return self

    def fit_align(self, pairs: Iterable[Tuple[Sentence, Sentence]]
                  ) -> List[List[Link]]:
        """Fits on `pairs` and returns their Viterbi alignments, which is
        what the original tool prints."""
        return list(self.fit(pairs).training_alignments())

    def training_alignments(self) -> Iterator[List[Link]]:
        """Yields the Viterbi alignment of each training pair, in order.

        Holds 4 bytes per target token instead of a list per sentence, so a
        caller can stream a large corpus's alignments to a file.
        """
        if not self._fitted:
            raise RuntimeError(
                "FastAlign.training_alignments called before fit")
        corpus = self._train_corpus
        return self._links(corpus, self._viterbi(corpus, cached=True))

    def _train(self, corpus: _Corpus) -> None:
        self._build_table(corpus)
        tokens = float(corpus.gen_len.sum())
        shapes, shape_counts = np.unique(
            np.stack([corpus.gen_len, corpus.cond_len], axis=1), axis=0,
            return_counts=True)
        shape_counts = (shapes[:, 0], shapes[:, 1], shape_counts)
        self.mean_length_ratio_ = float(
            (corpus.gen_len / corpus.cond_len).mean())
        tension = self.tension
        self.history_ = []
        for iteration in range(self.iterations - 1):
            counts, loglik, null_mass, emp_feat, aligned_mass = self._em_pass(
                corpus, tension)
            emp_feat /= tokens
            steps = []
            if self.favor_diagonal and self.optimize_tension and iteration > 0:
                for _ in range(8):
                    if self.exact_tension_gradient:
                        mod_feat = _expected_feature(aligned_mass,
                                                     tension) / tokens
                    else:
                        mod_feat = self._model_feature(shape_counts, tokens,
                                                       tension)
                    steps.append((tension, mod_feat))
                    tension += (emp_feat - mod_feat) * 20.0
                    tension = min(max(tension, 0.1), 14.0)
            self._probs = self._normalize(counts)
            self.history_.append({
                "log_likelihood": loglik,
                "perplexity": math.pow(2.0, -loglik / math.log(2) / tokens),
                "posterior_p0": null_mass / tokens,
                "posterior_feature": emp_feat,
                "tension": tension,
                "tension_steps": steps,
            })
        self.tension_ = tension
        self._fitted = True

    # Alignment ------------------------------------------------------------

    def align(self, pairs: Iterable[Tuple[Sentence, Sentence]]
              ) -> List[List[Link]]:
        """Viterbi alignments of sentence pairs under the fitted model.

        Returns one list of `(source_index, target_index)` links per pair, in
        the order the reference prints them (by generated-side position).
        Words unseen in `fit` are aligned through the prior (t = 1e-9).
        """
        if not self._fitted:
            raise RuntimeError("FastAlign.align called before fit")
        corpus = self._encode(pairs, grow=False)
        return list(self._links(corpus, self._viterbi(corpus, cached=False)))

    def _viterbi(self, corpus: _Corpus, cached: bool) -> np.ndarray:
        """Best conditioning position of every generated token (-1: null),
        flat in corpus order."""
        null = int(self.use_null_word)
        best_flat = np.empty(len(corpus.gen_ids), np.int32)
        for number, chunk in enumerate(corpus.chunks):
            if cached:  # every key of the training corpus is in the table
                table_idx, inverse = self._chunk_index(corpus, number)
                found = None
            else:
                distinct, inverse = _distinct(
                    corpus.keys(chunk, self.use_null_word))
                table_idx, found = self._lookup(distinct)
            if self._probs is None:
                t_probs = np.full(len(inverse), _MISSING_PROB)
            else:
                distinct_probs = self._probs[table_idx]
                if found is not None:
                    distinct_probs[~found] = _MISSING_PROB
                t_probs = distinct_probs[inverse]
            offset = 0
            for m, n, ids in chunk:
                prior = self._prior(m, n, self.tension_)
                size = len(ids) * prior.size
                probs = t_probs[offset:offset + size].reshape(
                    (len(ids),) + prior.shape) * prior
                offset += size
                # argmax keeps the first maximum, as the reference's strict >.
                best = probs.argmax(axis=2) - null  # [B, m]
                best_flat[corpus.gen_off[ids][:, None] + np.arange(m)] = best
        return best_flat

    def _links(self, corpus: _Corpus, best_flat: np.ndarray,
               block: int = 4096) -> Iterator[List[Link]]:
        for first in range(0, len(corpus), block):
            offsets = corpus.gen_off[first:first + block]
            lengths = corpus.gen_len[first:first + block]
            lo = offsets[0]
            best = best_flat[lo:offsets[-1] + lengths[-1]]
            linked = best >= 0
            gen_pos = (np.arange(len(best))
                       - np.repeat(offsets - lo, lengths))[linked].tolist()
            cond_pos = best[linked].tolist()
            links = list(zip(gen_pos, cond_pos) if self.reverse
                         else zip(cond_pos, gen_pos))
            ends = np.cumsum(np.add.reduceat(linked, offsets - lo)).tolist()
            start = 0
            for end in ends:
                yield links[start:end]
                start = end

    def lexical_table(self, top_k: int = None
                      ) -> Iterator[Tuple[str, str, float]]:
        """Yields the learnt `t(generated | conditioning)` entries as
        `(conditioning_word, generated_word, probability)`.

        Entries of one conditioning word come together, most probable
        first; the null word is left out. With `top_k`, at most that many
        per conditioning word. With `reverse=True` the conditioning side is
        the target.
        """
        if not self._fitted:
            raise RuntimeError("FastAlign.lexical_table called before fit")
        if self._probs is None:  # one pass: no estimate yet
            return
        cond_words = {i: w for w, i in self._cond_vocab.items()}
        gen_words = {i: w for w, i in self._gen_vocab.items()}
        cond = self._rows
        gen = (self._keys & 0xFFFFFFFF).astype(np.int64)
        # Rows by conditioning id, then by descending probability.
        order = np.lexsort((-self._probs, cond))
        starts = np.flatnonzero(_run_starts(cond[order]))
        ends = np.append(starts[1:], len(order))
        for start, end in zip(starts.tolist(), ends.tolist()):
            e = int(cond[order[start]])
            if e == _NULL:
                continue
            stop = end if top_k is None else min(end, start + top_k)
            for idx in order[start:stop].tolist():
                yield (cond_words[e], gen_words[int(gen[idx])],
                       float(self._probs[idx]))

    def translation_prob(self, source_word: str, target_word: str) -> float:
        """`t(generated | conditioning)` for a word pair, or 1e-9 if absent.

        Arguments are in corpus order; with `reverse=True` this returns
        `t(source_word | target_word)`. `None` as the conditioning word
        stands for the null word.
        """
        if not self._fitted:
            raise RuntimeError("FastAlign.translation_prob called before fit")
        cond, gen = ((target_word, source_word) if self.reverse
                     else (source_word, target_word))
        e = _NULL if cond is None else self._cond_vocab.get(cond, _UNSEEN)
        f = self._gen_vocab.get(gen, _UNSEEN)
        idx, found = self._lookup(np.array([(e << 32) | f], np.int64))
        if not found[0] or self._probs is None:
            return _MISSING_PROB
        return float(self._probs[idx[0]])
