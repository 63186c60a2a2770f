"""Estimates a modified Kneser-Ney n-gram model and writes it as ARPA.

kenlm's pip package only queries models; its estimator (`lmplz`) is a C++
program outside the wheel that needs Boost to build, and NLTK's `nltk.lm`
estimates models but cannot write ARPA. So this module estimates one itself,
following lmplz's algorithm (Heafield et al. 2013, "Scalable Modified
Kneser-Ney Language Model Estimation"; Chen & Goodman 1998):

- counts: the highest order keeps raw counts; a lower-order n-gram's count
  is its number of distinct one-word left extensions (continuation count),
  except n-grams starting with `<s>`, which cannot be extended (raw count);
- three discounts per order from the counts of counts (`t_k`: n-grams of
  adjusted count exactly k), `D_k = k - (k + 1) * Y * t_{k+1} / t_k`,
  `Y = t_1 / (t_1 + 2 t_2)`
  (lmplz's fallback 0.5, 1, 1.5 where the counts are too few);
- interpolation: `p(w | h) = (a(hw) - D(a(hw))) / a(h.) + b(h) p(w | h')`
  with `b(h) = sum_k D_k N_k(h.) / a(h.)`, down to the uniform distribution
  over the vocabulary (`<unk>` included, `<s>` excluded).

On a 1500-sentence Zipfian corpus every probability and backoff of a 3-gram
model equals lmplz's to 1e-6 (`tests/gnmt_tf/lm/arpa_test.py`, which runs
where lmplz is installed).

The ARPA file stores the interpolated `p(w | h)` of every seen n-gram and
`b(h)` as its backoff, so a query for an unseen n-gram (`b(h) p(w | h')`)
gives the same interpolated value. Counts are held in Python dicts: fine for
Multi30k-sized corpora (a few hundred thousand tokens), not for WMT.
"""

import collections
import math

from gnmt_tf.io_utils import atomic_write

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)


def _discounts(adjusted):
    """`(D_1, D_2, D_3+)` of one order from its adjusted counts."""
    t = collections.Counter(c for c in adjusted.values() if c <= 4)
    try:
        y = t[1] / (t[1] + 2 * t[2])
        ds = tuple(k - (k + 1) * y * t[k + 1] / t[k] for k in (1, 2, 3))
    except ZeroDivisionError:
        return FALLBACK_DISCOUNTS
    if not all(0 < d <= k for k, d in zip((1, 2, 3), ds)):
        return FALLBACK_DISCOUNTS
    return ds


def estimate(sentences, order):
    """Modified Kneser-Ney estimates of `sentences`.

    Args:
      sentences: iterable of token lists (str tokens without whitespace;
        `<s>`, `</s>` and `<unk>` are reserved).
      order: int >= 2 (kenlm reads no unigram-only models).

    Returns:
      `[{ngram: (log10 prob, log10 backoff or None)}]` per order (index
      `n - 1`), ngrams as tuples of str.

    Raises:
      ValueError: a bad order, a reserved token or whitespace in a token,
        or no sentences.
    """
    if not isinstance(order, int) or order < 2:
        raise ValueError(f"order must be an int >= 2 (kenlm reads no "
                         f"unigram models), got {order!r}")
    raw = [collections.Counter() for _ in range(order)]
    for tokens in sentences:
        for token in tokens:
            if token in (BOS, EOS, UNK) or not token or token.split() != [token]:
                raise ValueError(f"bad LM token {token!r} (reserved, empty or "
                                 "with whitespace)")
        seq = (BOS, *tokens, EOS)
        for end in range(1, len(seq)):
            for n in range(1, order + 1):
                start = end - n + 1
                if start < 0:
                    break
                if n == order or start == 0:  # the raw counts lmplz keeps
                    raw[n - 1][seq[start:end + 1]] += 1
    if not any(raw):
        raise ValueError("no sentences to estimate a language model from")
    # Adjusted counts: continuation counts below the highest order.
    adjusted = [collections.Counter() for _ in range(order)]
    adjusted[order - 1] = raw[order - 1]
    for n in range(order - 1, 0, -1):
        for ngram in adjusted[n]:
            adjusted[n - 1][ngram[1:]] += 1
        for ngram, count in raw[n - 1].items():
            if ngram[0] == BOS and n > 1:
                adjusted[n - 1][ngram] = count
    vocab = [w for (w,) in adjusted[0]] + ([UNK] if (UNK,) not in
                                           adjusted[0] else [])
    # Per order: u(w | h) and the backoff mass b(h) of each context.
    result = []
    lower = {}
    for n in range(1, order + 1):
        counts = adjusted[n - 1]
        d = (0.0, *_discounts(counts))
        totals = collections.Counter()
        mass = collections.Counter()
        for ngram, c in counts.items():
            totals[ngram[:-1]] += c
            mass[ngram[:-1]] += d[min(c, 3)]
        probs = {}
        for ngram, c in counts.items():
            h = ngram[:-1]
            u = (c - d[min(c, 3)]) / totals[h]
            b = mass[h] / totals[h]
            below = 1.0 / len(vocab) if n == 1 else lower[ngram[1:]]
            probs[ngram] = u + b * below
        if n == 1:
            b = mass[()] / totals[()]
            probs.setdefault((UNK,), b / len(vocab))
        result.append((probs, {h: mass[h] / totals[h] for h in totals}))
        lower = probs
    out = []
    for n, (probs, _) in enumerate(result, 1):
        backoffs = result[n][1] if n < order else {}
        table = {ngram: (math.log10(p), math.log10(backoffs[ngram])
                         if ngram in backoffs and backoffs[ngram] > 0
                         else (0.0 if n < order else None))
                 for ngram, p in probs.items()}
        if n == 1:
            b = backoffs.get((BOS,), 0.0)
            # lmplz's convention: log p(<s>) = 0 (never queried).
            table[(BOS,)] = (0.0, math.log10(b) if b > 0 else 0.0)
        out.append(table)
    return out


def write_arpa(tables, path):
    """Writes `estimate`'s tables as an ARPA file (atomically)."""
    with atomic_write(path) as f:
        f.write("\n\\data\\\n")
        for n, table in enumerate(tables, 1):
            f.write(f"ngram {n}={len(table)}\n")
        for n, table in enumerate(tables, 1):
            f.write(f"\n\\{n}-grams:\n")
            for ngram in sorted(table):
                prob, backoff = table[ngram]
                line = f"{prob:.7g}\t{' '.join(ngram)}"
                if backoff is not None:
                    line += f"\t{backoff:.7g}"
                f.write(line + "\n")
        f.write("\n\\end\\\n")


def estimate_arpa(sentences, order, path):
    """`estimate` then `write_arpa`; returns the n-gram count per order."""
    tables = estimate(sentences, order)
    write_arpa(tables, path)
    return [len(t) for t in tables]
