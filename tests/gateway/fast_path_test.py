"""`ModelBackend` on a model that carries its float32 TFLite export (the
shipped one): searched there, aligned in process, with the in-process
search's results."""

import numpy as np
import pytest

from gnmt_tf.gateway.backends import ModelBackend
from gnmt_tf.translation import SearchOptions
from reference_decoding import float_tolerance

SHIPPED = "multi30k-transformer"
OPTIONS = SearchOptions(beam_size=4)
SENTENCES = ["A man in a blue shirt is standing on a ladder.", "",
             "Two dogs play in the snow.",
             "A little girl climbs into a wooden playhouse."]


@pytest.fixture(scope="module")
def fast():
    return ModelBackend.from_model_dir(SHIPPED, OPTIONS, engine="auto")


@pytest.fixture(scope="module")
def in_process():
    return ModelBackend.from_model_dir(SHIPPED, OPTIONS, engine="graph")


def test_searched_on_the_export_with_the_in_process_results(
        fast, in_process, monkeypatch):
    assert fast.translator.tflite_search is not None
    assert in_process.translator.tflite_search is None
    host = fast.translator.tflite_search
    calls = []
    search = host.search_sentences
    monkeypatch.setattr(host, "search_sentences",
                        lambda *a, **k: calls.append(a) or search(*a, **k))
    got = fast(SENTENCES, "en", "de", ["caption"])
    want = in_process(SENTENCES, "en", "de", ["caption"])
    assert len(calls) == 1
    assert got[1].text == want[1].text == ""
    for mine, theirs in zip(got, want):
        assert mine.text == theirs.text
        assert mine.source_pieces == theirs.source_pieces
        assert mine.target_pieces == theirs.target_pieces
        # The same teacher-forced pass over the same subwords.
        np.testing.assert_allclose(
            mine.alignment, theirs.alignment,
            atol=float_tolerance(np.float32, 1.0,
                                 terms=len(theirs.source_pieces) + 1))
        # The teacher-forced pass's log-probabilities against the search's.
        np.testing.assert_allclose(
            mine.score, theirs.score,
            atol=float_tolerance(np.float32, abs(theirs.score),
                                 terms=len(theirs.target_pieces) + 1))
    assert all(result.text for result in got[::2])


def test_options_the_export_does_not_run_stay_in_process(
        fast, in_process, monkeypatch):
    import dataclasses

    def refuse(*args, **kwargs):
        raise AssertionError("sent to the TFLite export")

    monkeypatch.setattr(fast.translator.tflite_search, "search_sentences",
                        refuse)
    exact = dataclasses.replace(OPTIONS, early_stopping="exact")
    monkeypatch.setattr(fast, "options", exact)
    monkeypatch.setattr(in_process, "options", exact)
    got = fast(SENTENCES[:1], "en", "de", ["caption"])
    assert got[0].text == in_process(SENTENCES[:1], "en", "de",
                                     ["caption"])[0].text
