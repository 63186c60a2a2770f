"""The host-side decoders through `Translator.translate_nbest`, on the tiny
trained GNMT model: exact, bucket and sepbeam search against the in-graph
searches, and glossary terms that appear in the output."""

import pytest

from gnmt_tf.decoding.exact_search import exact_translate
from gnmt_tf.model_dir import load_model
from gnmt_tf.translator import SearchOptions, Translator


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    model, subwords, _ = load_model(tiny_model_dir)
    return Translator(model, subwords, max_source_length=40)


@pytest.fixture(scope="module")
def sentences(toy_corpus):
    return [en for en, _ in toy_corpus[:3]]


def test_dfs_is_exact_search(translator, sentences):
    # The tiny model is too flat for a proof within a test's budget: the
    # same budget gives exact_translate's output, score and all.
    dfs = translator.translate_nbest(sentences + [" "], SearchOptions(
        decoder="dfs", max_expansions=40))
    assert dfs[-1][0].text == ""
    for sentence, got in zip(sentences, dfs):
        exact = exact_translate(translator, sentence, max_expansions=40)
        assert (got[0].text, got[0].score) == (exact.text, exact.score)


def test_bucket_starts_from_the_greedy_output(translator, sentences):
    greedy = translator.translate_nbest(sentences, SearchOptions(
        decoder="greedy", beam_size=1))
    for budget in (1, 30):
        bucket = translator.translate_nbest(sentences, SearchOptions(
            decoder="bucket", max_expansions=budget))
        for got, first in zip(bucket, greedy):
            # Greedy's score is its log-probability, as bucket's.
            assert got[0].score >= first[0].score - 1e-4


def test_sepbeam_of_one_model_is_beam_search(translator, sentences):
    options = dict(beam_size=3, num_hypotheses=2, length_penalty=0.6,
                   coverage_penalty=0.2)
    beam = translator.translate_nbest(sentences, SearchOptions(**options))
    sep = translator.translate_nbest(sentences, SearchOptions(
        decoder="sepbeam", **options))
    assert [[h.text for h in hyps] for hyps in sep] == [
        [h.text for h in hyps] for hyps in beam]
    for got, expected in zip(sep, beam):
        assert [h.score for h in got] == pytest.approx(
            [h.score for h in expected], abs=1e-4)
    # Two copies of the model: the same beams, the same combined scores.
    twice = translator.translate_nbest(sentences, SearchOptions(
        decoder="sepbeam", **options), members=[translator])
    assert [h[0].text for h in twice] == [h[0].text for h in beam]


def test_constraints_put_every_term_in_the_output(translator, sentences):
    plain = translator.translate(sentences, SearchOptions(beam_size=4))
    # Toy-corpus words the plain outputs lack: one word, and one phrase.
    nouns = ["Pferd", "Katze", "Hund", "Frau"]
    # (Substrings: the model may glue a subword to a forced term.)
    absent = next(w for w in nouns if w not in plain[0])
    other = next(w for w in nouns if w not in plain[2])
    terms = [[absent], [], "kleiner " + other]
    got = translator.translate_nbest(sentences, SearchOptions(beam_size=4),
                                     constraints=[[t] if isinstance(t, str)
                                                  else t for t in terms])
    assert absent in got[0][0].text
    assert got[1][0].text == plain[1]  # no terms: the plain search
    assert terms[2] in got[2][0].text


@pytest.mark.parametrize("options, kwargs, message", [
    (dict(decoder="dfs"), dict(constraints=[["x"]]), "beam \\(or greedy\\)"),
    (dict(coverage_penalty=0.2), dict(constraints=[["x"]]),
     "coverage penalty"),
    (dict(), dict(constraints=[]), "1 sentences"),
    (dict(), dict(members=["m"]), "sepbeam"),
])
def test_bad_combinations_are_refused(translator, options, kwargs, message):
    with pytest.raises(ValueError, match=message):
        translator.translate_nbest(["a dog"], SearchOptions(**options),
                                   **kwargs)


def test_host_decoders_are_refused_in_a_graph(translator):
    with pytest.raises(ValueError, match="cannot run in a graph"):
        translator.search_fn(SearchOptions(decoder="bucket"))(
            __import__("tensorflow").constant(["a dog"]))
