"""Tests for gnmt_tf.alignment.fast_align."""

import math
import random

import numpy as np
import pytest

from gnmt_tf.alignment import fast_align
from gnmt_tf.alignment.fast_align import FastAlign

TOY = [("das Haus", "the house"), ("das Buch", "the book"),
       ("ein Buch", "a book")]


def _reference(pairs, reverse=False, favor_diagonal=False, iterations=5,
               variational_bayes=False, alpha=0.01, optimize_tension=False,
               p0=0.08, tension=4.0, use_null=True):
    """Loop-for-loop transcription of the reference tool's main()."""
    def feature(i, j, m, n):
        return -abs(j / n - i / m)

    def z(i, m, n, lam):  # the reference's closed form (tested below)
        return float(fast_align._compute_z(i, m, n, lam))

    def dlogz(i, m, n, lam):  # da.h: ComputeZ's arguments swapped (#11)
        total = sum(feature(i, j, m, n) * math.exp(feature(i, j, m, n) * lam)
                    for j in range(1, n + 1))
        return total / z(i, n, m, lam)

    table, counts, final_lam = {}, {}, tension
    sizes = {}
    toks = 0
    corpus = [(t.split(), s.split()) if reverse else (s.split(), t.split())
              for s, t in pairs]
    for src, trg in corpus:
        sizes[len(trg), len(src)] = sizes.get((len(trg), len(src)), 0) + 1
        toks += len(trg)
    out = []
    for it in range(iterations):
        final = it == iterations - 1
        emp = 0.0
        for src, trg in corpus:
            m, n = len(trg), len(src)
            links = []
            for j, f in enumerate(trg):
                probs = []
                if use_null:
                    a = p0 if favor_diagonal else 1.0 / (n + 1)
                    probs.append(table.get((None, f), 1e-9) * a)
                az = (z(j + 1, m, n, final_lam) / (1 - p0)
                      if favor_diagonal else 0)
                for i in range(1, n + 1):
                    a = (math.exp(feature(j + 1, i, m, n) * final_lam) / az
                         if favor_diagonal else 1.0 / (n + use_null))
                    probs.append(table.get((src[i - 1], f), 1e-9) * a)
                if final:
                    best = max(range(len(probs)), key=lambda k: (probs[k], -k))
                    i = best - use_null
                    if i >= 0:
                        links.append((j, i) if reverse else (i, j))
                    continue
                total = sum(probs)
                for k, p in enumerate(probs):
                    e = None if (use_null and k == 0) else src[k - use_null]
                    counts[e, f] = counts.get((e, f), 0.0) + p / total
                    if e is not None or not use_null:
                        emp += feature(j, k + 1 - use_null, m, n) * p / total
            if final:
                out.append(links)
        if final:
            break
        if favor_diagonal and optimize_tension and it > 0:
            emp /= toks
            for _ in range(8):
                mod = sum(c * dlogz(j, m, n, final_lam)
                          for (m, n), c in sizes.items()
                          for j in range(1, m + 1))
                final_lam += (emp - mod / toks) * 20.0
                final_lam = min(max(final_lam, 0.1), 14.0)
        rows = {}
        for (e, f), c in counts.items():
            rows[e] = rows.get(e, 0.0) + c + (alpha if variational_bayes else 0)
        if variational_bayes:
            table = {k: math.exp(float(fast_align._digamma(c + alpha))
                                 - float(fast_align._digamma(rows[k[0]])))
                     for k, c in counts.items()}
        else:
            table = {k: c / rows[k[0]] for k, c in counts.items()}
        counts = {}
    return out, final_lam


def _random_corpus(seed, size=40, lengths=(1, 7)):
    rng = random.Random(seed)
    lexicon = {f"s{k}": f"t{k}" for k in range(12)}
    pairs = []
    for _ in range(size):
        words = [rng.choice(sorted(lexicon))
                 for _ in range(rng.randint(*lengths))]
        target = [lexicon[w] for w in words]
        if rng.random() < 0.5 and len(target) > 1:
            k = rng.randrange(len(target) - 1)
            target[k], target[k + 1] = target[k + 1], target[k]
        if rng.random() < 0.3:
            target.append(f"x{rng.randrange(3)}")
        pairs.append((" ".join(words), " ".join(target)))
    return pairs


def test_toy_corpus_learns_the_lexicon():
    aligner = FastAlign(iterations=10, favor_diagonal=False)
    links = aligner.fit_align(TOY)
    assert links == [[(0, 0), (1, 1)]] * 3
    assert aligner.translation_prob("das", "the") > 0.9
    assert aligner.translation_prob("Haus", "house") > 0.5
    assert aligner.translation_prob("Buch", "book") > 0.9
    assert aligner.translation_prob("ein", "a") > 0.5
    assert aligner.translation_prob("das", "book") < 0.1


@pytest.mark.parametrize("options", [
    {},
    {"favor_diagonal": True},
    {"favor_diagonal": True, "optimize_tension": True, "iterations": 6},
    {"favor_diagonal": True, "variational_bayes": True, "reverse": True},
    {"variational_bayes": True, "alpha": 0.5, "iterations": 3},
    {"use_null": False, "favor_diagonal": True, "iterations": 4},
    {"iterations": 1, "favor_diagonal": True},
    # Longer sentences: the tension rises (to 8.97) instead of falling to 0.1.
    {"favor_diagonal": True, "optimize_tension": True, "iterations": 6,
     "variational_bayes": True, "lengths": (8, 20)},
])
def test_matches_loop_reference(options):
    options = dict(options)
    pairs = _random_corpus(seed=len(options),
                           lengths=options.pop("lengths", (1, 7)))
    expected, expected_tension = _reference(pairs, **options)
    kwargs = dict(options)
    kwargs["use_null_word"] = kwargs.pop("use_null", True)
    kwargs.setdefault("favor_diagonal", False)
    kwargs.setdefault("optimize_tension", False)
    aligner = FastAlign(**kwargs)
    assert aligner.fit_align(pairs) == expected
    assert aligner.tension_ == pytest.approx(expected_tension)


def test_exact_tension_gradient_follows_the_data():
    monotone = [(" ".join(f"s{k + d}" for d in range(4)),
                 " ".join(f"t{k + d}" for d in range(4))) for k in range(30)]
    exact = FastAlign(exact_tension_gradient=True, iterations=6).fit(monotone)
    assert exact.tension_ > 4.0
    # The reference scores a link by the 0-based target position, so on
    # four-word sentences even the diagonal scores -1/4 and the tension falls.
    assert FastAlign(iterations=6).fit(monotone).tension_ < 4.0


def test_chunking_and_cache_do_not_change_results():
    pairs = _random_corpus(seed=7, size=60)
    big = FastAlign(variational_bayes=True).fit_align(pairs)
    small = FastAlign(variational_bayes=True, chunk_size=16,
                      cache_bytes=0).fit_align(pairs)
    assert big == small


def test_training_alignments_stream_in_corpus_order():
    pairs = _random_corpus(seed=11, size=50)
    aligner = FastAlign(chunk_size=64)
    expected = aligner.fit_align(pairs)
    assert list(aligner.training_alignments()) == expected
    assert list(aligner._links(aligner._train_corpus, aligner._viterbi(
        aligner._train_corpus, cached=True), block=7)) == expected
    assert aligner.align(pairs) == expected


def test_align_new_pairs_and_unseen_words():
    aligner = FastAlign(iterations=6).fit(TOY * 3)
    assert aligner.align([("das Buch", "the book")]) == [[(0, 0), (1, 1)]]
    # Unseen words get t = 1e-9 and follow the diagonal prior.
    assert aligner.align([("ein Zelt", "a tent")]) == [[(0, 0), (1, 1)]]
    assert aligner.align([(["das"], ["the"])]) == [[(0, 0)]]


def test_reverse_reports_source_target_order():
    pairs = [("a b c", "x y"), ("a b", "x y"), ("c", "z")]
    links = FastAlign(reverse=True).fit_align(pairs)
    for (source, target), sentence in zip(pairs, links):
        for i, j in sentence:
            assert i < len(source.split()) and j < len(target.split())


def test_digamma_and_normaliser():
    digamma = fast_align._digamma
    assert float(digamma(1.0)) == pytest.approx(-0.5772156649, abs=1e-9)
    assert float(digamma(0.01)) == pytest.approx(-100.5608, abs=1e-3)
    for i, m, n in [(1, 5, 7), (3, 3, 2), (4, 9, 9)]:
        direct = sum(math.exp(-4.0 * abs(j / n - i / m))
                     for j in range(1, n + 1))
        z = fast_align._compute_z(i, m, n, 4.0)
        assert float(z) == pytest.approx(direct)


@pytest.mark.parametrize("m, n", [(1, 1), (3, 3), (7, 7), (4, 9), (9, 4),
                                  (12, 5)])
def test_dlogz_is_the_reference_closed_form(m, n):
    for i in range(1, m + 1):
        for lam in (0.5, 4.0, 11.0):
            feats = [-abs(j / n - i / m) for j in range(1, n + 1)]
            weighted = sum(f * math.exp(f * lam) for f in feats)
            dlogz = float(fast_align._compute_dlogz(i, m, n, lam))
            swapped_z = float(fast_align._compute_z(i, n, m, lam))
            assert dlogz * swapped_z == pytest.approx(weighted, rel=1e-9)
            if m == n:  # then the swap is harmless: the prior's E[feature]
                expected = weighted / sum(math.exp(f * lam) for f in feats)
                assert dlogz == pytest.approx(expected, rel=1e-9)
                assert dlogz <= 0.0


def test_statistics_are_recorded():
    aligner = FastAlign().fit(_random_corpus(seed=3))
    history = aligner.history_
    assert len(history) == 4
    assert history[-1]["log_likelihood"] > history[0]["log_likelihood"]
    assert 0.1 <= aligner.tension_ <= 14.0
    assert np.isfinite(aligner.mean_length_ratio_)
    assert history[0]["tension_steps"] == []
    for before, after in zip(history[1:], history[2:]):
        steps = after["tension_steps"]
        assert len(steps) == 8
        assert steps[0][0] == before["tension"]


def test_errors():
    with pytest.raises(ValueError, match="pair 2: empty target"):
        FastAlign().fit([("a", "b"), ("a", "")])
    with pytest.raises(ValueError, match="empty corpus"):
        FastAlign().fit([])
    with pytest.raises(RuntimeError, match="before fit"):
        FastAlign().align(TOY)
    with pytest.raises(RuntimeError, match="before fit"):
        next(FastAlign().training_alignments())
    with pytest.raises(ValueError, match="iterations"):
        FastAlign(iterations=0)
    with pytest.raises(ValueError, match="alpha"):
        FastAlign(variational_bayes=True, alpha=0.0)
