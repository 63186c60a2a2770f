"""`gnmt-tf export onnx` (checked with ONNX Runtime) and the TF-TRT path."""

import numpy as np
import pytest

from gnmt_tf.cli.main import main


def _check_steps(runtime, step_functions, source, task, steps=3):
    """Runs `encode` and `steps` decode steps on `source` (a batch of 2)
    through ONNX Runtime (the host translator's `OnnxRuntime`) and through
    TensorFlow's `(encode, decode_step)` (`step_functions`), feeding the new
    state back as the host search does; checks the state, log-probs and
    attention, and returns the last step's attention. A growing cache,
    which `encode` leaves out, starts empty in the runtime's state and gains
    a position a step."""
    import tensorflow as tf

    encode, decode_step = step_functions
    expected = {k: v.numpy() for k, v in encode(
        source_ids=tf.constant(source),
        **{k: tf.constant(v) for k, v in task.items()}).items()}
    state = runtime.encode(source, task)
    growing = set(state) - set(expected)
    assert all(state[key].shape[:2] == (2, 0) for key in growing)
    for key, value in expected.items():
        np.testing.assert_allclose(state[key], value, atol=1e-5, err_msg=key)
    ids = np.array([2, 2], np.int32)
    for step in range(steps):
        expected = {k: v.numpy() for k, v in decode_step(
            ids=tf.constant(ids),
            **{k: tf.constant(v) for k, v in state.items()}).items()}
        log_probs, attention, changed = runtime.step(ids, state)
        np.testing.assert_allclose(log_probs, expected["log_probs"],
                                   atol=1e-4)
        np.testing.assert_allclose(attention, expected["attention"],
                                   atol=1e-5)
        assert changed and set(changed) <= set(state)
        for key, value in changed.items():
            np.testing.assert_allclose(value, expected[key], atol=1e-5,
                                       err_msg=key)
        state.update(changed)
        assert {state[key].shape[1] for key in growing} <= {step + 1}
        ids = log_probs.argmax(-1).astype(np.int32)
    return attention


def test_onnx_matches_tensorflow(onnx_dir, tiny_model_dir):
    from gnmt_tf.export.step_functions import make_step_functions
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.onnx_runtime import OnnxRuntime

    assert (onnx_dir / "spm.model").exists()
    model, _, _ = load_model(tiny_model_dir)
    # Two sentences of different lengths: padding and masks go through too.
    source = np.array([[5, 9, 12, 7, 3], [8, 6, 3, 0, 0]], np.int32)
    attention = _check_steps(OnnxRuntime(onnx_dir),
                             make_step_functions(model), source, {})
    assert not attention[1, 3:].any()  # padding gets nothing


def test_onnx_of_the_task_space_transformer(ts_model_dir, ts_onnx_paths):
    """encode (with the task as ids) and three cached decode steps agree
    with TensorFlow's; model.json describes the task inputs and the
    source limit. The KV cache grows (none in `encode`)."""
    import json

    from gnmt_tf.export.step_functions import make_step_functions, task_encode_function
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.onnx_runtime import OnnxRuntime

    paths = ts_onnx_paths
    meta = json.loads(paths["metadata"].read_text())
    assert [t["name"] for t in meta["task_inputs"]] == [
        "src_lang", "tgt_lang", "tags"]
    assert meta["max_source_length"] == 16 + 1  # max_sequence_length + end
    assert meta["growing_cache"] and meta["max_output_length"] == 16
    model, _, _ = load_model(ts_model_dir)
    encode_fn, specs = task_encode_function(model)
    steps = make_step_functions(model, encode_fn=encode_fn,
                                encode_specs=specs, growing_cache=True)
    runtime = OnnxRuntime(paths["encode"].parent)
    assert {f"layer_{i}__past_{kind}" for i in range(2)
            for kind in ("key", "value")} <= set(runtime._empty_state)
    source = np.array([[5, 9, 12, 7, 3], [8, 6, 3, 0, 0]], np.int32)
    task = {"src_lang": np.array([0, 1], np.int32),     # en, de
            "tgt_lang": np.array([2, 3], np.int32),     # fr, cs
            "tags": np.array([[1, 0, 0, 0, 0, 0], [0] * 6], np.int32)}
    _check_steps(runtime, steps, source, task)


def test_onnx_rejects_unknown_model_types(capsys, tmp_path):
    (tmp_path / "config.json").write_text(
        '{"model_type": "rnn_search", "model": {}, "train": {}}')
    assert main(["export", "onnx", "--model", str(tmp_path),
                 "--out", str(tmp_path / "onnx")]) == 2
    assert "unknown model type 'rnn_search'" in capsys.readouterr().err


def test_tensorrt_argument_checks(tmp_path):
    from gnmt_tf.export.tensorrt import convert_tensorrt

    with pytest.raises(ValueError, match="precision"):
        convert_tensorrt(tmp_path, tmp_path / "o", precision="INT4")
    with pytest.raises(ValueError, match="calibration"):
        convert_tensorrt(tmp_path, tmp_path / "o", precision="INT8")


def test_tensorrt_converts_on_a_gpu(tiny_model_dir, tmp_path, settings):
    """Runs only where TF-TRT can (a GPU with TensorRT)."""
    import tensorflow as tf

    from gnmt_tf.export.tensorrt import tensorrt_problem

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
