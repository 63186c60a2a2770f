"""The example family (`tests/harness/example_family`), declared outside
`gnmt_tf` by an entry point, goes through every registered exporter by the
command line, as a user's own family would. (The harness's checks run on it
too: `model_family_test.py`, `[example_gru]`.)"""

import pytest

from model_families import _cli


def _greedy(translator, sentences, tflite=False):
    from gnmt_tf.translator import SearchOptions

    if tflite:
        hyps = translator.translate_nbest(sentences, beam_size=1)
    else:
        hyps = translator.translate_nbest(sentences, SearchOptions(beam_size=1))
    return [h[0].text for h in hyps], [h[0].score for h in hyps]


def test_example_family_goes_through_every_exporter(model_families, tmp_path,
                                                    capsys):
    from gnmt_tf.cli.main import main
    from gnmt_tf.export.exporters import EXPORTERS
    from gnmt_tf.export.tensorrt import tensorrt_problem
    from gnmt_tf.host_translator import HostTranslator

    family = model_families("example_gru")
    model_dir = str(family.model_dir)
    sentences = [s for s in family.family.sentences if s.strip()]
    texts, scores = _greedy(family.translator, sentences)
    assert all(texts)
    # A new exporter must be added here too.
    assert set(EXPORTERS) == {"savedmodel", "tflite", "onnx", "qat",
                              "tensorrt"}
    # savedmodel, tflite: through `gnmt-tf export` (the harness's exports).
    assert (family.savedmodel / "saved_model.pb").exists()
    _cli("export", "tflite", "--model", model_dir, "--out", tmp_path / "lite",
         "--quantization", "dynamic_range")
    for path in (family.tflite_dir / "model_float32.tflite",
                 tmp_path / "lite" / "model_dynamic_range.tflite"):
        got_texts, _ = _greedy(HostTranslator.from_path(path), sentences,
                               tflite=True)
        assert [bool(t) for t in got_texts] == [True] * len(sentences)
    # onnx: searched on the host, the in-process model's translations.
    _cli("export", "onnx", "--model", model_dir, "--out", tmp_path / "onnx")
    got_texts, got_scores = _greedy(
        HostTranslator.from_path(tmp_path / "onnx"), sentences, tflite=True)
    assert got_texts == texts
    assert got_scores == pytest.approx(scores, abs=1e-3)  # float32, as TFLite
    # qat: the family declares no quantization-aware variant: one line.
    capsys.readouterr()
    assert main(["export", "qat", "--model", model_dir, "--out",
                 str(tmp_path / "qat"), "--steps", "1"]) == 2
    error = capsys.readouterr().err
    assert "'example_gru' has no quantization-aware variant" in error
    assert len(error.strip().splitlines()) == 1
    # tensorrt: converts the SavedModel where a GPU and TensorRT are.
    code = main(["export", "tensorrt", "--model", str(family.savedmodel),
                 "--out", str(tmp_path / "trt"), "--precision", "FP32"])
    assert code == (2 if tensorrt_problem() else 0)
