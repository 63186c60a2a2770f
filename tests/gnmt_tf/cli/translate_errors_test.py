"""`gnmt-tf translate` fails with one line and exit status 2, never a
traceback, and never writes over its input: a beam too large to search, a
TFLite file without its vocabulary, a broken ONNX export, an output that
is the file on stdin.

In-process through `gnmt_tf.cli.main.main`, with the shipped models' int8
TFLite export where a model is needed (no TensorFlow model to load).
"""

import shutil
import sys

import pytest

from gnmt_tf.checks import MAX_BEAM_SIZE
from tests.gnmt_tf.cli.cli_runner import run
from gnmt_tf.pretrained import tflite_path

SHIPPED = "multi30k-gnmt-en-de"


def assert_one_line_error(code, err, message):
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gnmt-tf translate: error: "), err
    assert message in lines[0], err


@pytest.mark.parametrize("flag", ["--beam-size", "--n-best"])
def test_a_beam_too_large_is_refused_by_the_parser(flag, capsys):
    code, out, err = run(["translate", "--tflite", SHIPPED, flag, "100000"],
                         capsys)
    assert_one_line_error(code, err, f"argument {flag}: must be an integer "
                                     f"in [1, {MAX_BEAM_SIZE}], got '100000'")
    assert out == ""


def test_the_library_takes_any_beam_the_command_line_refuses():
    """The bound is the command line's: an exact search over a toy
    vocabulary (tests/harness) takes a beam of thousands."""
    from gnmt_tf.translator import SearchOptions

    assert SearchOptions(beam_size=MAX_BEAM_SIZE + 1).beam_size == (
        MAX_BEAM_SIZE + 1)
    with pytest.raises(ValueError, match="beam_size must be an integer >= 1"):
        SearchOptions(beam_size=0)


@pytest.fixture
def tflite_alone(tmp_path):
    """The shipped GNMT's int8 TFLite file in a folder of its own."""
    path = tmp_path / "model_int8.tflite"
    shutil.copyfile(tflite_path(SHIPPED), path)
    return path


def test_a_tflite_file_without_its_vocabulary(tflite_alone, capsys):
    code, out, err = run(["translate", "--tflite", tflite_alone], capsys)
    assert_one_line_error(code, err, f"{tflite_alone.parent / 'spm.model'}: "
                                     "no such file: the SentencePiece "
                                     "vocabulary of")
    assert out == ""


def test_a_tflite_file_with_a_broken_vocabulary(tflite_alone, capsys):
    (tflite_alone.parent / "spm.model").write_text("not a model\n")
    code, _, err = run(["translate", "--tflite", tflite_alone], capsys)
    assert_one_line_error(code, err, "spm.model is not a SentencePiece model")


def test_a_truncated_tflite_file(tflite_alone, capsys):
    data = tflite_alone.read_bytes()
    tflite_alone.write_bytes(data[:len(data) // 50])
    code, _, err = run(["translate", "--tflite", tflite_alone], capsys)
    assert_one_line_error(code, err, f"{tflite_alone} is not a TFLite model")


def test_a_truncated_onnx_export(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["source_ids"], ["memory"])], "g",
        [helper.make_tensor_value_info("source_ids", TensorProto.INT32,
                                       [1, None])],
        [helper.make_tensor_value_info("memory", TensorProto.INT32,
                                       [1, None])])
    data = helper.make_model(graph).SerializeToString()
    for name in ("encode.onnx", "decode_step.onnx"):
        (tmp_path / name).write_bytes(data[:len(data) // 2])
    shutil.copyfile(tflite_path(SHIPPED).parent / "spm.model",
                    tmp_path / "spm.model")
    assert onnx.load_from_string(data)  # whole, it loads
    code, out, err = run(["translate", "--onnx", tmp_path], capsys)
    assert_one_line_error(code, err, f"{tmp_path / 'encode.onnx'}: ONNX "
                                     "Runtime cannot load it (truncated")
    assert out == ""


@pytest.mark.parametrize("flags", [[], ["--format", "text", "--tgt-lang",
                                        "de"]])
def test_output_that_is_the_file_on_stdin_is_refused(flags, tmp_path,
                                                     monkeypatch, capsys):
    source = tmp_path / "in.txt"
    source.write_text("A dog runs.\n")
    with open(source, encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        code, out, err = run(["translate", "--tflite", SHIPPED, "--output",
                              source] + flags, capsys)
    assert_one_line_error(code, err, f"output {source} is the same file as "
                                     "standard input")
    assert source.read_text() == "A dog runs.\n"


def test_output_beside_a_stdin_file_is_written(tmp_path, monkeypatch,
                                               capsys):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("A dog runs.\n")
    with open(source, encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        code, _, err = run(["translate", "--tflite", SHIPPED, "--output",
                            target], capsys)
    assert code == 0, err
    assert target.read_text() == "Ein Hund rennt.\n"


def _memory_error():
    raise MemoryError()


def _resource_exhausted():
    import tensorflow as tf

    raise tf.errors.ResourceExhaustedError(
        None, None, "OOM when allocating tensor with shape[100000,8000]")


@pytest.mark.parametrize("exhaust", [_memory_error, _resource_exhausted])
def test_running_out_of_memory_is_one_line(exhaust, monkeypatch, capsys):
    from gnmt_tf.cli import translate

    monkeypatch.setattr(translate, "run", lambda args: exhaust())
    code, _, err = run(["translate", "--model", SHIPPED], capsys)
    assert_one_line_error(code, err, "out of memory: lower --batch-size")
