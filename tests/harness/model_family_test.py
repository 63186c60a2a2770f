"""The checks every model family passes (`model_families.FAMILIES`), in the
spirit of keras-hub's shared `TestCase.run_*_test`: the cached step against
the teacher-forced pass, `Translator`'s beam search against brute force, the
SavedModel in a fresh process, the float32 TFLite host search and the
quantization-aware variant against its int8 export.

`family` (`qat_family`) is each family's (with a QAT variant's)
`model_families.FamilyArtifacts`, made once per session.
"""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

from model_families import search_key
from reference_decoding import INT8_LOG_PROB_STEP
from reference_decoding import brute_force
from reference_decoding import cached_and_full
from reference_decoding import float_tolerance
from reference_decoding import grid_step
from reference_decoding import sequence_log_probs
from reference_decoding import teacher_forcing


def _teacher_forcing_rows(family):
    """Every non-blank example sentence with its task, the next one (of any
    request) as its target: padded sources and targets of several lengths,
    and mixed tasks where the family has tasks."""
    rows = [(task, s) for task, sentences in family.family.requests
            for s in sentences if s.strip()]
    targets = family.translator.subwords.encode([s for _, s in rows])
    return [(task, source, targets[(i + 1) % len(rows)])
            for i, (task, source) in enumerate(rows)]


def test_qat_dir_exports_its_weights_as_a_float_model(qat_family, tmp_path):
    """`gnmt-tf export tflite --model QAT_DIR` without `--int8`: the QAT
    model's fine-tuned weights without its fake quantization, so the
    float32 file searches as a `Translator` of those weights does, and
    ``dynamic_range`` stores them as int8."""
    from gnmt_tf.export.qat import load_float_from_qat, variables_by_name
    from gnmt_tf.export.tflite import int8_report
    from gnmt_tf.tflite_translator import TFLiteTranslator
    from gnmt_tf.translator import Translator
    from model_families import _cli

    model, subwords, _ = load_float_from_qat(qat_family.qat_dir)
    own = variables_by_name(model)
    qat = variables_by_name(qat_family.qat_translator.model)
    assert set(own) == set(variables_by_name(qat_family.model))
    assert set(own) < set(qat)  # the ranges stay behind
    for name, variable in own.items():
        np.testing.assert_array_equal(variable.numpy(), qat[name].numpy())
    for quantization in ("float32", "dynamic_range"):
        _cli("export", "tflite", "--model", qat_family.qat_dir, "--out",
             tmp_path, "--quantization", quantization)
    search = dict(beam_size=2)
    requests = qat_family.family.requests
    texts, scores = _translations(Translator(model, subwords), requests,
                                  search)
    got_texts, got_scores = _translations(
        TFLiteTranslator(tmp_path / "model_float32.tflite"), requests,
        search, tflite=True)
    assert got_texts == texts
    assert got_scores == pytest.approx(scores, abs=1e-3)  # as float32 above
    # The converter stores int8 only weights of >= 1024 entries.
    large = any(v.shape.num_elements() >= 1024 and len(v.shape) == 2
                for v in own.values())
    report = int8_report(tmp_path / "model_dynamic_range.tflite")
    assert bool(report.get("int8")) == large
    dynamic = TFLiteTranslator(tmp_path / "model_dynamic_range.tflite")
    got_texts, _ = _translations(dynamic, requests, search, tflite=True)
    assert [bool(t) for t in got_texts] == [bool(t) for t in texts]


def _translations(translator, requests, search, tflite=False):
    """`(texts, scores)` of the best hypotheses, requests in order."""
    from gnmt_tf.translator import SearchOptions

    texts, scores = [], []
    for task, sentences in requests:
        if tflite:
            hyps = translator.translate_nbest(list(sentences), **search,
                                              **task)
        else:
            hyps = translator.translate_nbest(
                list(sentences), SearchOptions(**search), **task)
        texts += [h[0].text for h in hyps]
        scores += [h[0].score for h in hyps]
    return texts, scores


# --- (a) the decoding state ----------------------------------------------------


def test_cached_step_matches_full_pass(family):
    """`step` on its own state gives the teacher-forced log-probs and
    attention at every real position (a KV cache or recurrent state that
    loses, shifts or mixes up anything moves them)."""
    features = teacher_forcing(family.translator,
                               _teacher_forcing_rows(family))
    step_lp, full_lp, step_att, full_att = cached_and_full(
        family.model, features, family.family.step_attention)
    assert step_lp.dtype == full_lp.dtype == np.float32
    tolerance = float_tolerance(np.float32, np.abs(full_lp).max())
    np.testing.assert_allclose(step_lp, full_lp, rtol=0, atol=tolerance)
    np.testing.assert_allclose(step_att, full_att, rtol=0,
                               atol=float_tolerance(np.float32))


# --- (b) search ----------------------------------------------------------------


def test_beam_search_matches_brute_force(family):
    """`Translator`'s beam search, with a beam that keeps every hypothesis,
    finds the outputs of at most 3 tokens that scoring all of them finds
    (GNMT length and coverage penalties on): the beams' states are
    reordered and tiled right."""
    import tensorflow as tf

    from gnmt_tf.translator import SearchOptions

    translator = family.translator
    task, sentences = family.family.requests[0]
    sentence = sentences[0]
    task_ids = {k: tf.constant([v])
                for k, v in translator.task_ids(**task).items()}
    source_length = int(translator.tokenize(tf.constant([sentence]),
                                            task_ids)[1][0])
    vocabulary = translator.subwords.vocabulary_size
    alpha, beta, best = 0.6, 0.2, 3
    expected = brute_force(translator, sentence, task, 3, alpha, beta, best)
    # 3 steps: ceil(ratio * source length) = ceil(2.5). A beam of V (V - 1)
    # keeps every extension of the second step.
    options = SearchOptions(
        beam_size=vocabulary * (vocabulary - 1), num_hypotheses=best,
        length_penalty=alpha, coverage_penalty=beta, early_stopping="none",
        max_length_ratio=2.5 / source_length)
    got = translator.translate_nbest([sentence], options, **task)[0]
    scores = [score for _, score in expected]
    tolerance = float_tolerance(np.float32, abs(scores[0]), terms=3)
    assert [h.score for h in got] == pytest.approx(scores, abs=tolerance)
    assert scores[0] - scores[1] > tolerance, "near tie: pick another sentence"
    eos = translator.eos_id
    assert got[0].text == translator.subwords.decode(
        [[i for i in expected[0][0] if i != eos]])[0]


# --- (c) SavedModel ---------------------------------------------------------------


def test_savedmodel_in_a_fresh_process_matches_translator(family):
    """`serving_default` and `translate_with_options`, loaded in a new
    interpreter, translate a batch (tasks mixed, a blank row) as the
    in-process `Translator` does."""
    settings = family.family.savedmodel
    fresh = family.fresh
    default = {k: settings[k] for k in ("beam_size", "length_penalty",
                                        "coverage_penalty")}
    searches = {"serving_default": default}
    for search in family.family.compiled_searches():
        searches[",".join(map(str, search_key(search)))] = search
    for name, search in searches.items():
        got = (fresh["serving_default"] if name == "serving_default"
               else fresh["with_options"][name])
        texts, scores = _translations(family.translator,
                                      family.family.requests, search)
        assert got["translations"] == texts, name
        assert got["scores"] == pytest.approx(scores, abs=1e-4), name
    # The model says something, and a blank row stays blank.
    blank = [i for i, s in enumerate(family.family.sentences)
             if not s.strip()]
    assert blank and all(not texts[i] and scores[i] == 0.0 for i in blank)
    assert all(t for i, t in enumerate(texts) if i not in blank)


def test_savedmodel_host_loop_matches_greedy_search(family):
    """A greedy search driven from the host over the exported `encode` and
    `decode_step` (fresh process) gives the in-graph greedy search's
    translations and scores."""
    texts, scores = _translations(family.translator, family.family.requests,
                                  dict(beam_size=1))
    host = family.fresh["host_greedy"]
    compared = 0
    for k, row in enumerate(host["rows"]):
        if host["margins"][k] < 1e-4:
            # A near-tie in an argmax: the host loop (its own padding and
            # batch) and the in-graph search may break it differently.
            continue
        compared += 1
        assert host["translations"][k] == texts[row]
        assert host["scores"][k] == pytest.approx(scores[row], abs=1e-4)
    assert compared >= len(host["rows"]) // 2


def test_savedmodel_rejects_bad_requests(family):
    """Invalid UTF-8, an over-long sentence and a beam size not compiled
    in fail the request with INVALID_ARGUMENT (a message, not a crash)."""
    errors = family.fresh["errors"]
    assert errors["utf8"] is not None
    assert "input too long" in errors["too_long"]
    assert "beam_size must be one of" in errors["beam_size"]


def test_savedmodel_uses_only_allowed_ops(family):
    """Every op of the export is in `gnmt_tf/export/allowed_ops.txt` (servable by
    a stock model server)."""
    from gnmt_tf.export.ops import disallowed_ops

    assert disallowed_ops(family.savedmodel) == []


# --- (d) TFLite ----------------------------------------------------------------------


def test_tflite_matches_translator(family):
    """The float32 TFLite model, searched on the host, translates as the
    in-process `Translator` under each of the family's searches."""
    for search in family.family.searches:
        texts, scores = _translations(family.translator,
                                      family.family.requests, search)
        got_texts, got_scores = _translations(
            family.tflite, family.family.requests, search, tflite=True)
        assert got_texts == texts, search
        # Other kernels, same float32 arithmetic: a few ulps a term, some
        # 10-20 terms (layers and tokens) a score.
        assert got_scores == pytest.approx(scores, abs=1e-3), search
    # The equality above is not trivial only if the outputs depend on the
    # input: distinct best hypotheses by text or by score (a tiny model can
    # say one text for most inputs, with scores that still differ).
    assert len(set(zip(texts, np.round(scores, 2)))) > 2, \
        "the outputs do not depend on the input"


# --- (e) quantization-aware variant ------------------------------------------------


def test_qat_cached_step_matches_full_pass(qat_family):
    """The fine-tuned QAT model's `step` computes what its teacher-forced
    pass computes, up to the fake-quant rounding.

    The two compute the same sums in other shapes, so a value within float
    rounding of a rounding boundary of a fake-quant grid may round the
    other way in one of them (seen on AVX-512 machines). Such a flip moves
    that position's logits by whole steps of their grid (log-softmax at
    most doubles that) and leaves the others alone; a state bug moves every
    position.
    """
    translator = qat_family.qat_translator
    features = teacher_forcing(translator, _teacher_forcing_rows(qat_family))
    step_lp, full_lp, step_att, full_att = cached_and_full(
        translator.model, features, qat_family.family.step_attention)
    logits = translator.model(features).numpy()
    step = grid_step(logits[features["target_in_ids"].numpy() != 0])
    error = np.maximum(np.abs(step_lp - full_lp).max(-1),
                       np.abs(step_att - full_att).max(-1))
    flipped = error > float_tolerance(np.float32, np.abs(full_lp).max())
    assert flipped.mean() <= 0.1, error
    assert np.abs(step_lp - full_lp).max() <= 4 * step, step


def test_int8_tflite_matches_qat_model(qat_family):
    """The int8 TFLite export of the fine-tuned QAT model scores what it
    outputs as the QAT model scores it, and mostly outputs what the QAT
    model does (greedy).

    int8 arithmetic is not the fake-quant float arithmetic: each token's
    log-prob may differ by the int8 LogSoftmax's grid step (1/16 nat: half
    a step of rounding, plus the int8 layers before it), and where the tiny
    model's top two tokens are closer than that the outputs part ways.
    """
    import math

    requests = qat_family.family.requests
    translator, int8 = qat_family.qat_translator, qat_family.int8
    # One sentence per `encode` call: an int8 encoder's states depend on the
    # other sentences of its batch (gnmt_tf/export/tflite.py `convert`).
    assert int8.runtime.encode_batch_size == 1
    eos = int8.eos_id
    rows, scores = [], []
    for task, sentences in requests:
        prefix, arrays = int8.task_arrays(**task)
        for sentence in sentences:
            if not sentence.strip():
                continue
            source = list(prefix) + int8.sentencepiece.encode(sentence) + [
                eos]
            [(ids, score)] = int8.search(source, beam_size=1, task=arrays)
            limit = min(math.ceil(2.0 * len(source)),
                        int8.max_output_length or math.inf)
            rows.append((task, sentence,
                         list(ids) + [eos] * (len(ids) < limit)))
            scores.append(score)
    expected = sequence_log_probs(translator, rows)
    for (_, sentence, ids), got, want in zip(rows, scores, expected):
        assert abs(got - want) <= len(ids) * INT8_LOG_PROB_STEP, (
            sentence, ids, got, want)
    texts, _ = _translations(translator, requests, dict(beam_size=1))
    got_texts, got_scores = _translations(int8, requests, dict(beam_size=1),
                                          tflite=True)
    real = [i for i, s in enumerate(qat_family.family.sentences) if s.strip()]
    assert sum(got_texts[i] == texts[i] for i in real) >= len(real) / 2, (
        got_texts, texts)
    for i, sentence in enumerate(qat_family.family.sentences):
        if not sentence.strip():
            assert texts[i] == got_texts[i] == "" and got_scores[i] == 0.0
