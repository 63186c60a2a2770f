"""TFLite export of GNMT and the host-side search that drives it. (Parity
with `Translator`: `tests/harness/model_family_test.py`, for every model
family.)"""

import pytest


@pytest.fixture(scope="session")
def tflite_float32(gnmt):
    """`(model_path, vocabulary_path)` of the tiny GNMT as float32 TFLite
    (`gnmt-tf export tflite`, with its `model.json`)."""
    return (gnmt.tflite_dir / "model_float32.tflite",
            gnmt.tflite_dir / "spm.model")


@pytest.fixture(scope="session")
def tflite_translator(gnmt):
    return gnmt.tflite


def test_signatures(tflite_translator, fresh_process):
    signatures = tflite_translator.interpreter.get_signature_list()
    saved = fresh_process["signatures"]
    for name in ("encode", "decode_step"):
        assert set(signatures[name]["inputs"]) == set(saved[name]["inputs"])
        assert set(signatures[name]["outputs"]) == set(saved[name]["outputs"])
    runtime = tflite_translator.runtime
    encode = runtime.encode_runner.get_input_details()["source_ids"]
    assert encode["shape_signature"].tolist() == [1, -1]
    # Any source length: the host pads a batch to its longest source only.
    memory = runtime.step_runner.get_input_details()["memory"]
    assert memory["shape_signature"].tolist() == [-1, -1, 32]  # H = 32
    assert runtime.max_source_length is None
    assert tflite_translator.max_source_length == 128  # model.json's
    state = runtime.encode([[5, 6, 2]], {})
    assert state["memory"].shape == (1, 3, 32)


def test_fixed_shapes_search_as_the_default(gnmt, tflite_translator,
                                            settings, tmp_path):
    """`--fixed-shapes`: the state at 128 source positions, zero-padded by
    the host; masked positions get exactly zero attention, so the search
    is the default export's."""
    from gnmt_tf.cli.main import main
    from gnmt_tf.tflite_translator import TFLiteTranslator

    assert main(["export", "tflite", "--model", str(gnmt.model_dir),
                 "--out", str(tmp_path), "--fixed-shapes"]) == 0
    fixed = TFLiteTranslator(tmp_path / "model_float32.tflite")
    memory = fixed.runtime.step_runner.get_input_details()["memory"]
    assert memory["shape_signature"].tolist() == [-1, 128, 32]
    assert fixed.runtime.encode([[5, 6, 2]], {})["memory"].shape == (
        1, 128, 32)
    for beam_size in (1, 3):
        got = fixed.translate_nbest(settings.sentences, beam_size=beam_size,
                                    num_hypotheses=beam_size)
        want = tflite_translator.translate_nbest(
            settings.sentences, beam_size=beam_size, num_hypotheses=beam_size)
        assert [h.text for n in got for h in n] == [
            h.text for n in want for h in n]
        assert [h.score for n in got for h in n] == pytest.approx(
            [h.score for n in want for h in n], abs=1e-4)


def test_nbest_is_sorted(tflite_translator, settings):
    hyps = tflite_translator.translate_nbest(
        settings.sentences[:1], beam_size=3, num_hypotheses=3)[0]
    assert len(hyps) == 3
    scores = [h.score for h in hyps]
    assert scores == sorted(scores, reverse=True)


def test_bad_input(tflite_translator):
    with pytest.raises(ValueError, match="at most 127"):
        tflite_translator.translate(["the dog " * 100])
    with pytest.raises(TypeError, match="input 2 is bytes"):
        tflite_translator.translate(["a dog", b"a cat"])
    with pytest.raises(ValueError, match="num_hypotheses"):
        tflite_translator.translate_nbest(["a dog"], beam_size=2,
                                          num_hypotheses=3)


def test_log_softmax_through_softmax_equals_log_softmax():
    # The float exports' log-softmax (XNNPACK's SOFTMAX, a max and a log)
    # against TensorFlow's, to float32 rounding of the row's log-sum-exp;
    # rows flat (the largest probability ~1/V), peaked (~1) and far from 0.
    import numpy as np
    import tensorflow as tf

    from gnmt_tf.export.tflite import log_softmax_through_softmax

    rng = np.random.default_rng(0)
    logits = np.stack([np.zeros(8000), rng.normal(0, 1, 8000),
                       rng.normal(0, 8, 8000), rng.normal(300, 20, 8000)])
    logits[1, 17] = 40.0  # one token nearly certain
    logits = logits.astype(np.float32)
    got = log_softmax_through_softmax(tf.constant(logits)).numpy()
    want = tf.nn.log_softmax(logits).numpy()
    eps = np.finfo(np.float32).eps
    scale = np.abs(logits).max(axis=1, keepdims=True) + np.log(8000)
    np.testing.assert_array_less(np.abs(got - want),
                                 np.broadcast_to(8 * eps * scale, got.shape))
    assert np.all(np.isfinite(got))
    # The probabilities sum to 1 to the same error: each is off by a
    # factor exp(error) (the error grows with the logits' magnitude, as
    # the logits' own rounding does).
    total = np.exp(got.astype(np.float64)).sum(1)
    np.testing.assert_array_less(np.abs(total - 1), 8 * eps * scale[:, 0])


def test_unknown_quantization():
    from gnmt_tf.export.tflite import convert

    with pytest.raises(ValueError, match="unknown quantization"):
        convert(None, "int4")


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["dynamic_range", "float16"])
def test_quantized_export(tiny_model_dir, tflite_float32, tmp_path,
                          settings, quantization):
    from gnmt_tf.tflite_translator import TFLiteTranslator
    from gnmt_tf.cli.main import main

    assert main(["export", "tflite", "--model", str(tiny_model_dir),
                 "--out", str(tmp_path), "--quantization", quantization]) == 0
    model_path = tmp_path / f"model_{quantization}.tflite"
    assert model_path.stat().st_size < tflite_float32[0].stat().st_size
    translator = TFLiteTranslator(model_path, tmp_path / "spm.model")
    texts = translator.translate(settings.sentences, beam_size=2)
    assert len(texts) == len(settings.sentences)
    assert all(isinstance(t, str) for t in texts)


def test_translate_cli(tflite_float32, tflite_translator, settings, tmp_path,
                       capsys):
    from gnmt_tf.cli.main import main

    source = tmp_path / "src.txt"
    source.write_text("".join(s + "\n" for s in settings.sentences))
    output = tmp_path / "hyp.txt"
    model = str(tflite_float32[0])
    assert main(["translate", "--tflite", model, "--beam-size", "2",
                 "-i", str(source), "-o", str(output)]) == 0
    assert output.read_text().splitlines() == tflite_translator.translate(
        settings.sentences, beam_size=2)
    capsys.readouterr()
    # model.json says the export translates en->de only.
    assert main(["translate", "--tflite", model, "--src-lang", "fr",
                 "-i", str(source)]) == 2
    assert "cannot honour --src-lang fr" in capsys.readouterr().err


def test_from_export_dir(tflite_float32, tflite_translator, settings,
                         tmp_path):
    import shutil

    from gnmt_tf import TFLiteTranslator

    folder = tflite_float32[0].parent
    translator = TFLiteTranslator.from_export_dir(folder)
    assert translator.translate(settings.sentences[:2], beam_size=2) == \
        tflite_translator.translate(settings.sentences[:2], beam_size=2)
    with pytest.raises(FileNotFoundError, match="no .tflite file"):
        TFLiteTranslator.from_export_dir(tmp_path)
    for name in ("model_float32.tflite", "model_int8.tflite"):
        shutil.copyfile(tflite_float32[0], tmp_path / name)
    with pytest.raises(ValueError, match="holds 2 .tflite files"):
        TFLiteTranslator.from_export_dir(tmp_path)


def test_search_signature_searches_as_the_host_loop(gnmt, settings, tmp_path,
                                                    monkeypatch):
    """GNMT's whole search as a signature (`--search-beam-size`): a
    sentence translated alone at that beam takes no host step and gets the
    host loop's translation over the same file, its score to float32
    rounding (sums of up to twice the source's length of log-probs)."""
    import numpy as np

    from gnmt_tf.cli.main import main
    from gnmt_tf.tflite_translator import TFLiteTranslator
    from reference_decoding import float_tolerance

    assert main(["export", "tflite", "--model", str(gnmt.model_dir),
                 "--out", str(tmp_path), "--search-beam-size", "3"]) == 0
    translator = TFLiteTranslator(tmp_path / "model_float32.tflite")
    assert translator.runtime.search_beam_sizes == (3,)
    steps = []
    step = translator.runtime.step
    monkeypatch.setattr(translator.runtime, "step",
                        lambda *a, **k: steps.append(1) or step(*a, **k))
    for penalties in (dict(), dict(length_penalty=0.6, coverage_penalty=0.2)):
        translator.graph_search = False
        want = translator.translate_nbest(settings.sentences, beam_size=3,
                                          batch_size=1, **penalties)
        looped = len(steps)
        translator.graph_search = True
        got = translator.translate_nbest(settings.sentences, beam_size=3,
                                         batch_size=1, **penalties)
        assert len(steps) == looped > 0
        assert [n[0].text for n in got] == [n[0].text for n in want]
        for sentence, g, w in zip(settings.sentences, got, want):
            # The output limit: twice the source ids (end token included).
            limit = 2 * (len(translator.sentencepiece.encode(sentence)) + 1)
            assert g[0].score == pytest.approx(w[0].score, abs=float_tolerance(
                np.float32, abs(w[0].score), terms=limit))
