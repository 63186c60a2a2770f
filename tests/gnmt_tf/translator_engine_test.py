"""`Translator.from_model_dir` picks its search: what the host search runs
goes to the model's float32 TFLite export where the directory carries one
(the shipped models), with the in-process search's results."""

import re

import numpy as np
import pytest

from gnmt_tf import search_engine, tflite_cache
from gnmt_tf.translator import SearchOptions, Translator
from reference_decoding import float_tolerance

SHIPPED = "multi30k-transformer"
TASK = dict(src_lang="en", tgt_lang="de", tags=["caption"])
SENTENCES = ["A man in a blue shirt is standing on a ladder.",
             "Two dogs play in the snow.", "",
             "A little girl climbs into a wooden playhouse."]


@pytest.fixture(scope="module")
def auto():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(search_engine.ENGINE_ENV, "auto")
        return Translator.from_model_dir(SHIPPED)


@pytest.fixture(scope="module")
def in_process():
    return Translator.from_model_dir(SHIPPED, engine="graph")


def _counting(monkeypatch, host):
    calls = []
    translate_nbest = host.translate_nbest

    def counted(*args, **kwargs):
        calls.append(args)
        return translate_nbest(*args, **kwargs)

    monkeypatch.setattr(host, "translate_nbest", counted)
    return calls


def test_auto_sends_plain_requests_to_the_shipped_export(
        auto, in_process, monkeypatch):
    assert auto.tflite_search is not None
    assert in_process.tflite_search is None and not in_process.compiles_search
    calls = _counting(monkeypatch, auto.tflite_search)
    for options in (SearchOptions(beam_size=4, num_hypotheses=2),
                    SearchOptions(decoder="greedy")):
        got = auto.translate_nbest(SENTENCES, options, **TASK)
        want = in_process.translate_nbest(SENTENCES, options, **TASK)
        assert [[h.text for h in n] for n in got] == [
            [h.text for h in n] for n in want]
        assert got[2][0].text == "" and all(n[0].text for n in got[:2])
        scores = [h.score for n in want for h in n]
        np.testing.assert_allclose(
            [h.score for n in got for h in n], scores,
            atol=float_tolerance(np.float32, max(map(abs, scores)),
                                 terms=in_process.model.max_target_length))
    assert len(calls) == 2


def test_requests_the_host_search_does_not_run_stay_in_process(
        auto, in_process, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("sent to the TFLite export")

    monkeypatch.setattr(auto.tflite_search, "translate_nbest", refuse)
    one = SENTENCES[:1]
    exact = SearchOptions(beam_size=4, early_stopping="exact")
    assert auto.translate(one, exact, **TASK) == in_process.translate(
        one, exact, **TASK)
    constrained = auto.translate_nbest(one, SearchOptions(beam_size=4),
                                       constraints=[["Hemd"]], **TASK)
    assert "Hemd" in constrained[0][0].text


def test_bad_requests_get_the_translators_own_errors(auto, in_process):
    for task, sentences, error in (
            (dict(TASK, tgt_lang="xx"), SENTENCES, ValueError),
            (TASK, ["word " * 400], ValueError),
            (TASK, [b"bytes"], TypeError)):
        with pytest.raises(error) as want:
            in_process.translate(sentences, **task)
        with pytest.raises(error, match=re.escape(str(want.value))):
            auto.translate(sentences, **task)


def test_the_engine_decides(ts_model_dir, monkeypatch, tmp_path):
    monkeypatch.setenv(search_engine.ENGINE_ENV, "auto")
    # No export in the directory: in process, whatever earlier runs cached.
    assert Translator.from_model_dir(ts_model_dir).tflite_search is None
    monkeypatch.setenv(tflite_cache.CACHE_ENV, str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="no float32 TFLite export at hand"):
        Translator.from_model_dir(ts_model_dir, engine="tflite")
    with pytest.raises(ValueError, match="takes none of shortlist"):
        Translator.from_model_dir(SHIPPED, engine="tflite", shortlist=None)
    with pytest.raises(ValueError, match="unknown engine 'fast'"):
        Translator.from_model_dir(SHIPPED, engine="fast")
    # In-process arguments keep every search in process.
    assert Translator.from_model_dir(
        SHIPPED, jit_compile_search=False).tflite_search is None
    assert Translator.from_model_dir(
        SHIPPED, precision="mixed_bfloat16").tflite_search is None
    monkeypatch.setenv(search_engine.ENGINE_ENV, "graph")
    graph = Translator.from_model_dir(SHIPPED)
    assert graph.tflite_search is None and not graph.compiles_search
    assert Translator.from_model_dir(SHIPPED,
                                     engine="tflite").tflite_search is not None
