"""The modified Kneser-Ney ARPA estimator: hand-computed values, a
normalised distribution for every context (queried through kenlm), and
lmplz's own output where lmplz is installed."""

import itertools
import math
import shutil
import subprocess

import pytest

from gnmt_tf.lm.arpa import estimate
from gnmt_tf.lm.arpa import estimate_arpa

CORPUS = [s.split() for s in (
    "a b c", "a b", "b c a", "c a b c", "a a b", "b b c c", "a c",
    "c b a", "a b c a b", "b")]


def test_bigram_values_by_hand():
    """Bigram model of "a b" and "a". Too few counts for the discount
    formula: lmplz's fallback D_1 = 0.5, D_2 = 1 apply.

    Unigram (continuation) counts: a 1 (only <s> precedes it), b 1 (a),
    </s> 2 (a, b): total 4, backoff mass 0.5 + 0.5 + 1 = 2, so b() = 1/2,
    spread uniformly over a, b, </s>, <unk>. Bigrams (raw counts): a is
    followed by b and </s> once each: u = 0.5 / 2, b(a) = 1/2.
    """
    tables = estimate([["a", "b"], ["a"]], 2)
    unigram = {"a": 0.5 / 4 + 0.5 / 4, "b": 0.5 / 4 + 0.5 / 4,
               "</s>": 1.0 / 4 + 0.5 / 4, "<unk>": 0.5 / 4}
    for word, p in unigram.items():
        assert tables[0][(word,)][0] == pytest.approx(math.log10(p))
    assert sum(unigram.values()) == pytest.approx(1.0)
    assert tables[0][("<s>",)][0] == 0.0  # lmplz's: never queried
    assert tables[0][("a",)][1] == pytest.approx(math.log10(0.5))
    assert tables[1][("a", "b")][0] == pytest.approx(
        math.log10(0.25 + 0.5 * unigram["b"]))
    assert tables[1][("a", "</s>")][0] == pytest.approx(
        math.log10(0.25 + 0.5 * unigram["</s>"]))
    # "b" is no context of a bigram but </s>: its backoff is b(b) = 1/2
    # too; "<s> a" (count 2, D_2 = 1): u = 1/2, b(<s>) = 1/2.
    assert tables[1][("<s>", "a")][0] == pytest.approx(
        math.log10(0.5 + 0.5 * unigram["a"]))


@pytest.mark.parametrize("order", [2, 3, 4])
def test_every_context_is_a_distribution(tmp_path, order):
    """Through kenlm: sum_w p(w | h) = 1 over the vocabulary (</s> and
    <unk> included) for seen and unseen contexts of every length."""
    kenlm = pytest.importorskip("kenlm")
    path = tmp_path / "lm.arpa"
    estimate_arpa(CORPUS, order, path)
    model = kenlm.Model(str(path))
    assert model.order == order
    vocab = ["a", "b", "c", "</s>", "<unk>"]
    contexts = [()] + [c for n in (1, 2, 3) for c in
                       itertools.product(["a", "b", "c", "zz"], repeat=n)]
    for bos in (True, False):
        for context in contexts:
            state, out = kenlm.State(), kenlm.State()
            (model.BeginSentenceWrite if bos else model.NullContextWrite)(
                state)
            for w in context:
                model.BaseScore(state, w, out)
                state, out = out, state
            total = sum(10 ** model.BaseScore(state, w, out) for w in vocab)
            assert total == pytest.approx(1.0, abs=1e-5), (bos, context)


def test_matches_lmplz(tmp_path):
    """The same log-probabilities and backoffs as kenlm's lmplz (where it
    is installed), on a Zipfian corpus large enough for lmplz's own
    discounts (lmplz refuses too few counts; this module falls back)."""
    lmplz = shutil.which("lmplz")
    if lmplz is None:
        pytest.skip("lmplz (kenlm's estimator) is not installed")
    import random

    rng = random.Random(0)
    words = [f"w{i}" for i in range(300)]
    zipf = [1.0 / (i + 1) for i in range(300)]
    corpus = [rng.choices(words, zipf, k=rng.randint(1, 12))
              for _ in range(1500)]
    ours = estimate(corpus, 3)
    text = "".join(" ".join(s) + "\n" for s in corpus)
    arpa = subprocess.run([lmplz, "-o", "3", "-S", "100M", "-T",
                           str(tmp_path)], input=text, capture_output=True,
                          text=True, check=True).stdout
    theirs, order = {}, 0
    for line in arpa.splitlines():
        if line.startswith("\\") and line.endswith("-grams:"):
            order = int(line[1])
        elif order and line.strip() and not line.startswith("\\"):
            parts = line.split("\t")
            theirs[tuple(parts[1].split())] = (
                float(parts[0]), float(parts[2]) if len(parts) > 2 else None)
    mine = {ngram: value for table in ours for ngram, value in table.items()}
    assert set(mine) == set(theirs)
    for ngram, (prob, backoff) in theirs.items():
        assert mine[ngram][0] == pytest.approx(prob, abs=1e-6), ngram
        assert (mine[ngram][1] or 0.0) == pytest.approx(backoff or 0.0,
                                                         abs=1e-6), ngram


@pytest.mark.parametrize("sentences,order,match", [
    ([["a", "<s>"]], 2, "bad LM token"),
    ([["a b"]], 2, "bad LM token"),
    ([["a"]], 1, "order must be an int >= 2"),
    ([], 2, "no sentences"),
])
def test_bad_input(sentences, order, match):
    with pytest.raises(ValueError, match=match):
        estimate(sentences, order)
