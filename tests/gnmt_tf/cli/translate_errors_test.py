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
from gnmt_tf.cli.main import main
from gnmt_tf.pretrained import tflite_path

SHIPPED = "multi30k-gnmt-en-de"


def run(argv, capsys):
    """`(exit status, stdout, stderr)` of `gnmt-tf ARGV`."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


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


def test_search_options_refuse_a_beam_too_large():
    from gnmt_tf.translator import SearchOptions

    SearchOptions(beam_size=MAX_BEAM_SIZE)
    with pytest.raises(ValueError, match=r"beam_size must be an integer in "
                                         rf"\[1, {MAX_BEAM_SIZE}\]"):
        SearchOptions(beam_size=MAX_BEAM_SIZE + 1)
