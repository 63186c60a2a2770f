"""`gnmt-tf export onnx` (checked with ONNX Runtime) and the TF-TRT path."""

import numpy as np
import pytest

from gnmt_tf.cli.main import main


@pytest.fixture(scope="module")
def onnx_dir(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("onnx")
    assert main(["export", "onnx", "--model", str(tiny_model_dir),
                 "--out", str(out)]) == 0
    return out


def _steps(step_onnx, decode_step, state, steps=3):
    """Runs `decode_step` in ONNX Runtime and TensorFlow from `state` (a batch
    of 2), feeding the new state back as a host search does; checks the
    log-probs and every new state tensor, and yields `(got, expected)`."""
    import tensorflow as tf

    ids = np.array([2, 2], np.int32)
    for _ in range(steps):
        expected = {k: v.numpy() for k, v in decode_step(
            ids=tf.constant(ids),
            **{k: tf.constant(v) for k, v in state.items()}).items()}
        names = [o.name for o in step_onnx.get_outputs()]
        got = dict(zip(names, step_onnx.run(None, {"ids": ids, **state})))
        np.testing.assert_allclose(got["log_probs"], expected["log_probs"],
                                   atol=1e-4)
        yield got, expected
        for key in state:
            if "next_" + key in got:
                np.testing.assert_allclose(got["next_" + key], expected[key],
                                           atol=1e-5, err_msg=key)
                state[key] = got["next_" + key]
        ids = got["log_probs"].argmax(-1).astype(np.int32)


def test_onnx_matches_tensorflow(onnx_dir, tiny_model_dir):
    import onnxruntime
    import tensorflow as tf

    from export.savedmodel import make_step_functions
    from gnmt_tf.model_dir import load_model

    assert (onnx_dir / "spm.model").exists()
    model, _, _ = load_model(tiny_model_dir)
    encode, decode_step = make_step_functions(model)
    encode_onnx = onnxruntime.InferenceSession(str(onnx_dir / "encode.onnx"))
    step_onnx = onnxruntime.InferenceSession(
        str(onnx_dir / "decode_step.onnx"))

    # Two sentences of different lengths: padding and masks go through too.
    source = np.array([[5, 9, 12, 7, 3], [8, 6, 3, 0, 0]], np.int32)
    expected = {k: v.numpy() for k, v in
                encode(source_ids=tf.constant(source)).items()}
    names = [o.name for o in encode_onnx.get_outputs()]
    state = dict(zip(names, encode_onnx.run(None, {"source_ids": source})))
    assert set(state) == set(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(state[key], value, atol=1e-5, err_msg=key)

    for got, expected in _steps(step_onnx, decode_step, state):
        np.testing.assert_allclose(got["attention"], expected["attention"],
                                   atol=1e-5)
        assert not got["attention"][1, 3:].any()  # padding gets nothing


def test_onnx_of_the_task_space_transformer(ts_model_dir, tmp_path):
    """encode (with the task as ids) and three cached decode steps agree
    with TensorFlow's; model.json describes the task inputs."""
    import json

    import onnxruntime
    import tensorflow as tf

    from export.onnx_export import export_onnx
    from export.savedmodel import make_step_functions, task_encode_function
    from gnmt_tf.model_dir import load_model

    paths = export_onnx(ts_model_dir, tmp_path / "onnx")
    meta = json.loads(paths["metadata"].read_text())
    assert [t["name"] for t in meta["task_inputs"]] == [
        "src_lang", "tgt_lang", "tags"]
    model, _, _ = load_model(ts_model_dir)
    encode_fn, specs = task_encode_function(model)
    encode, decode_step = make_step_functions(model, encode_fn=encode_fn,
                                              encode_specs=specs)
    encode_onnx = onnxruntime.InferenceSession(str(paths["encode"]))
    step_onnx = onnxruntime.InferenceSession(str(paths["decode_step"]))

    inputs = {"source_ids": np.array([[5, 9, 12, 7, 3], [8, 6, 3, 0, 0]],
                                     np.int32),
              "src_lang": np.array([0, 1], np.int32),     # en, de
              "tgt_lang": np.array([2, 3], np.int32),     # fr, cs
              "tags": np.array([[1, 0, 0, 0, 0, 0], [0] * 6], np.int32)}
    expected = {k: v.numpy() for k, v in encode(
        **{k: tf.constant(v) for k, v in inputs.items()}).items()}
    names = [o.name for o in encode_onnx.get_outputs()]
    state = dict(zip(names, encode_onnx.run(None, inputs)))
    assert set(state) == set(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(state[key], value, atol=1e-5, err_msg=key)
    for _ in _steps(step_onnx, decode_step, state):
        pass


def test_onnx_rejects_unknown_model_types(capsys, tmp_path):
    (tmp_path / "config.json").write_text(
        '{"model_type": "rnn_search", "model": {}, "train": {}}')
    assert main(["export", "onnx", "--model", str(tmp_path),
                 "--out", str(tmp_path / "onnx")]) == 2
    assert "unknown model type 'rnn_search'" in capsys.readouterr().err


def test_tensorrt_argument_checks(tmp_path):
    from export.tensorrt import convert_tensorrt

    with pytest.raises(ValueError, match="precision"):
        convert_tensorrt(tmp_path, tmp_path / "o", precision="INT4")
    with pytest.raises(ValueError, match="calibration"):
        convert_tensorrt(tmp_path, tmp_path / "o", precision="INT8")


def test_tensorrt_converts_on_a_gpu(tiny_model_dir, tmp_path, settings):
    """Runs only where TF-TRT can (a GPU with TensorRT)."""
    import tensorflow as tf

    from export.tensorrt import tensorrt_problem

    problem = tensorrt_problem()
    if problem:
        pytest.skip(problem)
    saved = tmp_path / "tiny" / "1"
    assert main(["export", "savedmodel", "--model", str(tiny_model_dir),
                 "--out", str(saved)]) == 0
    assert main(["export", "tensorrt", "--model", str(saved),
                 "--out", str(tmp_path / "trt"), "--precision", "FP16"]) == 0
    serve = tf.saved_model.load(str(tmp_path / "trt")).signatures[
        "serving_default"]
    out = serve(text=tf.constant(settings.sentences[:2]))["translations"]
    assert out.shape[0] == 2
